// The identity check made before every signal (launch/identity.h, docs/safety.md): a process ppdeploy
// spawned passes it; a pid <= 1, a different start time, a missing field, a group ppdeploy did not create or
// another boot's id refuse it with a sentence that ends "nothing was signalled". The state file's pid is a
// range-checked integer (2^32 + 1 is refused, never read as 1).
#include "launch/identity.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include "core/error.h"
#include "launch/launch_test_util.h"
#include "launch/process.h"

namespace ppdeploy::launch {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;

/// A `sleep 30` spawned as a server is (its own session), stopped (SIGKILL to its group) at the end.
class SpawnedSleep {
 public:
  SpawnedSleep() : dir_(), id_(IdentityOfSpawned(SpawnDetached({"sleep", "30"}, {}, dir_.path() + "/log"))) {}
  ~SpawnedSleep() {
    if (id_.pid > 1 && waitpid(id_.pid, nullptr, WNOHANG) == 0) {  // still our unreaped child: its group is ours
      kill(-id_.pid, SIGKILL);
      waitpid(id_.pid, nullptr, 0);
    }
  }
  const ProcessIdentity& id() const { return id_; }

 private:
  TempDir dir_;
  ProcessIdentity id_;
};

TEST(IdentityTest, ReadsThisProcessFromProc) {
  const auto st = ReadProcStat(getpid());
  ASSERT_TRUE(st);
  EXPECT_EQ(st->pgrp, getpgrp());
  EXPECT_EQ(st->session, getsid(0));
  EXPECT_GE(st->start_ticks, 0);
  EXPECT_TRUE(st->Live());
  EXPECT_EQ(BootId().size(), 36u) << BootId();  // a UUID (random(4))
  EXPECT_FALSE(ReadProcStat(0));
  EXPECT_FALSE(ReadProcStat(-1));
}

TEST(IdentityTest, ASpawnedServerIsOursUntilItIsGone) {
  SpawnedSleep s;
  const ProcessIdentity& id = s.id();
  EXPECT_GT(id.pid, 1);
  EXPECT_EQ(id.pgid, id.pid);
  EXPECT_EQ(id.boot_id, BootId());
  const SignalTarget t = CheckSignalTarget(id);
  EXPECT_TRUE(t.ours) << t.refused;
  EXPECT_TRUE(t.leader_alive);
  const StopOutcome stop = StopProcessGroup(id, 5000);
  EXPECT_TRUE(stop.was_running);
  EXPECT_EQ(stop.refused, "");
  EXPECT_TRUE(CheckSignalTarget(id).gone);
  EXPECT_FALSE(StopProcessGroup(id, 0).was_running);  // idempotent
}

// A server that exited and left a child behind: its group is signalled only when the child carries the server's
// run token, because a group id that emptied can be taken by an unrelated daemon (fork, setsid, fork).
TEST(IdentityTest, ALeaderlessGroupIsOursOnlyWithTheRunToken) {
  for (bool with_token : {true, false}) {
    SCOPED_TRACE(with_token ? "with the run token" : "without a run token");
    TempDir dir;
    const std::string token = with_token ? NewRunToken() : "";
    const int pid = SpawnDetached({"sh", "-c", "sleep 30 & sleep 0.5"}, {}, dir.path() + "/log", token);
    const ProcessIdentity id = IdentityOfSpawned(pid, token);
    ASSERT_GE(id.start_ticks, 0);
    ASSERT_EQ(waitpid(pid, nullptr, 0), pid);  // the leader exits; its `sleep` lives on in the group
    ASSERT_TRUE(ProcessGroupAlive(id.pgid));
    const SignalTarget t = CheckSignalTarget(id);
    if (with_token) {
      EXPECT_TRUE(t.ours) << t.refused;
      EXPECT_FALSE(t.leader_alive);
    } else {
      EXPECT_FALSE(t.ours);
      EXPECT_THAT(t.refused, HasSubstr("no run token"));
      EXPECT_THAT(t.refused, HasSubstr("nothing was signalled"));
    }
    kill(-pid, SIGKILL);  // the group still holds this test's own `sleep`, so its id cannot have been reused
  }
}

TEST(IdentityTest, TheRunTokenIsInTheServersEnvironment) {
  SpawnedSleep s;
  EXPECT_FALSE(EnvironHas(s.id().pid, kRunTokenEnv, "x"));
  const std::string a = NewRunToken(), b = NewRunToken();
  EXPECT_EQ(a.size(), 32u);
  EXPECT_NE(a, b);
  TempDir dir;
  const int pid = SpawnDetached({"sleep", "30"}, {}, dir.path() + "/log", a);
  // posix_spawn returns once the child has entered execve, possibly before the kernel has laid out the new
  // image's environment (/proc/PID/environ reads empty in that window, seen on a loaded machine): poll.
  bool has_token = false;
  for (int i = 0; i < 500 && !has_token; ++i) {
    has_token = EnvironHas(pid, kRunTokenEnv, a);
    if (!has_token) usleep(10'000);
  }
  EXPECT_TRUE(has_token);
  EXPECT_FALSE(EnvironHas(pid, kRunTokenEnv, b));
  kill(-pid, SIGKILL);  // our unreaped child's group
  waitpid(pid, nullptr, 0);
}

TEST(IdentityTest, PidsBelowTwoAreNeverSignalled) {
  for (int pid : {1, 0, -1}) {
    const SignalTarget t = CheckSignalTarget({pid, 1, pid, BootId(), ""});
    EXPECT_FALSE(t.ours);
    EXPECT_FALSE(t.gone);
    EXPECT_THAT(t.refused, HasSubstr(fmt::format("pid {} is not a process ppdeploy may signal", pid)));
    EXPECT_THAT(t.refused, HasSubstr("nothing was signalled"));
  }
}

TEST(IdentityTest, EachMismatchRefusesWithItsReason) {
  SpawnedSleep s;
  ProcessIdentity id = s.id();
  auto refused = [](const ProcessIdentity& x) {
    const SignalTarget t = CheckSignalTarget(x);
    EXPECT_FALSE(t.ours);
    return t.refused;
  };
  ProcessIdentity recycled = id;
  recycled.start_ticks += 7;
  EXPECT_EQ(refused(recycled),
            fmt::format("pid {} is no longer the server ppdeploy started (start time differs); nothing was signalled",
                        id.pid));
  ProcessIdentity old = id;
  old.start_ticks = -1;
  old.pgid = 0;
  old.boot_id = "";
  EXPECT_THAT(refused(old), HasSubstr("does not record pid " + std::to_string(id.pid) +
                                      "'s start time, process group, boot id (an older ppdeploy wrote it)"));
  ProcessIdentity foreign_group = id;
  foreign_group.pgid = getpgrp();
  EXPECT_THAT(refused(foreign_group), HasSubstr("is not one ppdeploy created"));
  ProcessIdentity rebooted = id;
  rebooted.boot_id = "00000000-0000-0000-0000-000000000000";
  EXPECT_THAT(refused(rebooted), HasSubstr("boot id differs"));
  // None of them touched it.
  EXPECT_TRUE(CheckSignalTarget(id).ours);
  EXPECT_EQ(StopProcessGroup(recycled, 0).refused, refused(recycled));
  EXPECT_TRUE(ProcessAlive(id.pid, id.start_ticks));
}

void WriteState(const std::string& run_dir, const std::string& pid_json) {
  std::filesystem::create_directories(run_dir);
  std::ofstream(StatePath(run_dir)) << R"({"schema": "ppdeploy.run-state/2", "pid": )" << pid_json
                                    << R"(, "argv": [], "env": {}, "start_time_unix_ms": 1,
                                          "log_path": "vllm.log", "port": 8000})";
}

TEST(IdentityTest, StatePidIsRangeChecked) {
  TempDir dir;
  const std::string run = dir.path() + "/run";
  WriteState(run, "4294967297");  // 2^32 + 1: a cast to int reads 1
  try {
    ReadRunState(run);
    ADD_FAILURE() << "read";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("pid: value 4294967297 is out of range (a process id is 1 to 2147483647)"));
  }
  for (const char* bad : {"0", "-1", "\"12\"", "1.5"}) {
    WriteState(run, bad);
    EXPECT_THROW(ReadRunState(run), Error) << bad;
  }
}

TEST(IdentityTest, AnOldStateIsReadAndRefusedForSignalling) {
  TempDir dir;
  const std::string run = dir.path() + "/run";
  WriteState(run, std::to_string(getpid()));  // schema /2: no start time, group or boot id
  auto state = ReadRunState(run);
  ASSERT_TRUE(state);
  EXPECT_EQ(state->pid, getpid());
  EXPECT_EQ(state->pgid, 0);
  EXPECT_EQ(state->boot_id, "");
  EXPECT_TRUE(ProcessAlive(state->pid, state->proc_start_ticks));  // `status` still says running
  EXPECT_THAT(CheckSignalTarget(state->Identity()).refused, HasSubstr("an older ppdeploy wrote it"));
}

TEST(IdentityTest, StateRecordsTheIdentity) {
  TempDir dir;
  RunState s;
  s.SetIdentity({4242, 123456, 4242, "b0b0", "t0ken"});
  s.log_path = "vllm.log";
  s.port = 8000;
  s.start_time_unix_ms = 1;
  WriteRunState(dir.path(), s);
  auto back = ReadRunState(dir.path());
  ASSERT_TRUE(back);
  EXPECT_EQ(back->pid, 4242);
  EXPECT_EQ(back->proc_start_ticks, 123456);
  EXPECT_EQ(back->pgid, 4242);
  EXPECT_EQ(back->boot_id, "b0b0");
  EXPECT_EQ(back->run_token, "t0ken");
  EXPECT_THAT(testing::ReadAll(StatePath(dir.path())), HasSubstr("\"schema\": \"ppdeploy.run-state/3\""));
}

}  // namespace
}  // namespace ppdeploy::launch
