// One writer per run directory (launch/run_lock.h, docs/safety.md): a held lock makes a second taker fail
// naming the holder's pid; the lock ends with its holder; a spawned server never inherits it; and two
// concurrent `ppdeploy start`s on one run directory, 20 times over, never leave two servers (issue 24: 4 of 9
// tries started two before the lock).
#include "launch/run_lock.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include "core/error.h"
#include "launch/identity.h"
#include "launch/launch_test_util.h"
#include "launch/process.h"

namespace ppdeploy::launch {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;

std::string AcquireError(const std::string& run_dir) {
  try {
    RunLock lock = RunLock::Acquire(run_dir, "second", 0);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(RunLockTest, ASecondTakerNamesTheHolder) {
  TempDir dir;
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t holder = fork();
  ASSERT_GE(holder, 0);
  if (holder == 0) {  // the holder: takes the lock, says so, waits to be killed
    RunLock lock = RunLock::Acquire(dir.path() + "/run", "start", 0);
    if (write(ready[1], "x", 1) != 1) _exit(2);
    pause();
    _exit(0);
  }
  char c = 0;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  EXPECT_EQ(AcquireError(dir.path() + "/run"),
            fmt::format("{0} is in use: pid {1} (ppdeploy start) holds {0}/ppdeploy.lock; try again when it is done",
                        dir.path() + "/run", holder));
  kill(holder, SIGKILL);
  waitpid(holder, nullptr, 0);
  EXPECT_EQ(AcquireError(dir.path() + "/run"), "");  // released with its holder's death: no stale lock
  close(ready[0]);
  close(ready[1]);
}

TEST(RunLockTest, HeldTwiceInOneProcessSaysSo) {
  TempDir dir;
  RunLock lock = RunLock::Acquire(dir.path(), "rebalance", 0);
  EXPECT_THAT(AcquireError(dir.path()), HasSubstr("is already locked by this ppdeploy (rebalance)"));
}

TEST(RunLockTest, ASpawnedServerDoesNotInheritTheLock) {
  TempDir dir;
  ProcessIdentity server;
  {
    RunLock lock = RunLock::Acquire(dir.path(), "start", 0);
    server = IdentityOfSpawned(SpawnDetached({"sleep", "30"}, {}, dir.path() + "/log"));
  }
  EXPECT_EQ(AcquireError(dir.path()), "");  // the server lives on without holding it
  EXPECT_TRUE(StopProcessGroup(server, 5000).was_running);
}

TEST(RunLockTest, ASymlinkedLockFileIsRefused) {
  TempDir dir;
  std::ofstream(dir.path() + "/elsewhere") << "keep\n";
  std::filesystem::create_symlink(dir.path() + "/elsewhere", dir.path() + "/ppdeploy.lock");
  EXPECT_THAT(AcquireError(dir.path()), HasSubstr("cannot open the run directory's lock"));
  EXPECT_EQ(testing::ReadAll(dir.path() + "/elsewhere"), "keep\n");
}

// Live processes whose environment holds `marker` (the stand-in servers of one repetition).
std::vector<int> ProcessesWithEnv(const std::string& marker) {
  std::vector<int> pids;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string env = testing::ReadAll(e.path().string() + "/environ");
    const auto st = ReadProcStat(std::stoi(name));
    if (st && st->Live() && env.find(marker + '\0') != std::string::npos) pids.push_back(std::stoi(name));
  }
  return pids;
}

TEST(RunLockTest, ConcurrentStartsNeverLeaveTwoServers) {
  TempDir dir;
  const std::string standin = dir.path() + "/vllm";
  std::ofstream(standin) << "#!/bin/sh\nexec sleep 60\n";
  std::filesystem::permissions(standin, std::filesystem::perms::owner_all);
  for (int rep = 0; rep < 20; ++rep) {
    const std::string run = dir.path() + "/run" + std::to_string(rep);
    const std::string marker = "PPD_LOCK_TEST=" + run;
    std::map<std::string, std::string> env{
        {"RUNTIME", "bare"},       {"VLLM_BIN", standin},
        {"HOST", "127.0.0.1"},     {"PORT", std::to_string(testing::FreeLoopbackPort())},
        {"PPDEPLOY_RUN_DIR", run}, {"PPD_LOCK_TEST", run}};
    pid_t a = testing::SpawnPpdeploy({"start"}, env, dir.path(), run + ".a.out", run + ".a.err");
    pid_t b = testing::SpawnPpdeploy({"start"}, env, dir.path(), run + ".b.out", run + ".b.err");
    int sa = 0, sb = 0;
    waitpid(a, &sa, 0);
    waitpid(b, &sb, 0);
    const int ok = (WIFEXITED(sa) && WEXITSTATUS(sa) == 0) + (WIFEXITED(sb) && WEXITSTATUS(sb) == 0);
    const std::vector<int> servers = ProcessesWithEnv(marker);
    for (int pid : servers)
      if (pid > 1) kill(pid, SIGKILL);  // the stand-ins of this repetition (found by their environment)
    EXPECT_EQ(ok, 1) << "repetition " << rep << ":\n"
                     << testing::ReadAll(run + ".a.err") << testing::ReadAll(run + ".b.err");
    ASSERT_EQ(servers.size(), 1u) << "repetition " << rep << ": two servers on one run directory";
    const std::string refused = testing::ReadAll(run + ".a.err") + testing::ReadAll(run + ".b.err");
    EXPECT_THAT(refused, ::testing::AnyOf(HasSubstr("already running: pid"), HasSubstr("is in use: pid")));
  }
}

}  // namespace
}  // namespace ppdeploy::launch
