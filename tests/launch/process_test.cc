// End to end through the real binary with a stand-in server (tests/launch/standin_vllm.py, which
// records its argv and environment): start -> wait (ready) -> status -> second start refused ->
// logs -> stop -> no orphan -> stop again (idempotent). Loopback only, bounded times.
#include <signal.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "launch/launch_test_util.h"
#include "launch/process.h"

namespace ppdeploy::launch {
namespace {

using ::testing::HasSubstr;
using testing::FreeLoopbackPort;
using testing::ReadAll;
using testing::RunPpdeploy;
using testing::TempDir;

const std::string kStandin = std::string(PPDEPLOY_SOURCE_DIR) + "/tests/launch/standin_vllm.py";

std::map<std::string, std::string> StandinEnv(const TempDir& dir, int port, std::map<std::string, std::string> extra) {
  std::map<std::string, std::string> env{{"RUNTIME", "bare"},
                                         {"VLLM_BIN", kStandin},
                                         {"HOST", "127.0.0.1"},
                                         {"PORT", std::to_string(port)},
                                         {"STANDIN_RECORD", dir.path() + "/record.json"},
                                         {"PPDEPLOY_RUN_DIR", dir.path() + "/run"}};
  for (auto& [k, v] : extra) env[k] = v;
  return env;
}

/// Kills whatever a test left running in its run directory (the process group of the recorded pid),
/// so a failed assertion leaves no stand-in behind.
class RunDirGuard {
 public:
  explicit RunDirGuard(std::string run_dir) : run_dir_(std::move(run_dir)) {}
  ~RunDirGuard() {
    try {
      if (auto s = ReadRunState(run_dir_); s && s->pid > 0) StopProcessGroup(s->Identity(), 0);
    } catch (...) {
    }
  }

 private:
  std::string run_dir_;
};

/// Alive in the sense of kill(pid, 0), zombies excluded (a reparented child may wait for its
/// reaper).
bool Alive(int pid) { return kill(pid, 0) == 0 && ProcessAlive(pid); }

TEST(ProcessEndToEndTest, StartWaitStatusRefuseStopIdempotent) {
  TempDir dir;
  RunDirGuard guard(dir.path() + "/run");
  const int port = FreeLoopbackPort();
  auto env = StandinEnv(dir, port, {{"STANDIN_READY_DELAY_S", "1"}});

  auto start = RunPpdeploy({"start"}, env, dir.path());
  ASSERT_EQ(start.rc, 0) << start.out << start.err;
  EXPECT_THAT(start.out, HasSubstr("started: pid"));

  auto wait = RunPpdeploy({"wait", "--timeout", "30", "--interval", "0.2"}, env, dir.path());
  ASSERT_EQ(wait.rc, 0) << wait.out << wait.err;
  EXPECT_THAT(wait.out, HasSubstr("ready:"));
  EXPECT_THAT(wait.out, HasSubstr("models: glm-5.3-cybersec"));

  // The stand-in recorded the argv and environment it was given.
  auto record = nlohmann::json::parse(ReadAll(dir.path() + "/record.json"));
  auto state = ReadRunState(dir.path() + "/run");
  ASSERT_TRUE(state);
  const int pid = state->pid;
  EXPECT_EQ(record["pid"].get<int>(), pid);
  EXPECT_EQ(record["pgid"].get<int>(), pid);  // own process group (new session)
  std::vector<std::string> argv = record["argv"];
  ASSERT_GE(argv.size(), 2u);
  EXPECT_EQ(argv[0], "serve");
  EXPECT_EQ(argv[1], "/models/GLM-5.3-CyberSec-W4A16");
  std::vector<std::string> want_argv(state->argv.begin() + 1, state->argv.end());
  EXPECT_EQ(argv, want_argv);
  EXPECT_EQ(std::count(argv.begin(), argv.end(), "--pipeline-parallel-size"), 1);
  EXPECT_EQ(record["env"]["VLLM_PP_LAYER_PARTITION"], "41,37");
  EXPECT_EQ(record["env"]["VLLM_USE_V2_MODEL_RUNNER"], "1");
  EXPECT_EQ(record["env"]["CUDA_VISIBLE_DEVICES"], "0,1,2,3,4,5,6,7");
  const int child = record["child_pid"].get<int>();
  EXPECT_TRUE(Alive(pid));
  EXPECT_TRUE(Alive(child));

  auto status = RunPpdeploy({"status"}, env, dir.path());
  EXPECT_EQ(status.rc, 0);
  EXPECT_THAT(status.out, HasSubstr("running: pid " + std::to_string(pid)));
  EXPECT_THAT(status.out, HasSubstr("health ok"));

  auto again = RunPpdeploy({"start"}, env, dir.path());
  EXPECT_EQ(again.rc, 1);
  EXPECT_THAT(again.err, HasSubstr("already running: pid " + std::to_string(pid)));

  auto logs = RunPpdeploy({"logs", "--tail", "50"}, env, dir.path());
  EXPECT_EQ(logs.rc, 0);
  EXPECT_THAT(logs.out, HasSubstr("standin: serving glm-5.3-cybersec"));

  auto stop = RunPpdeploy({"stop", "--grace", "10"}, env, dir.path());
  EXPECT_EQ(stop.rc, 0) << stop.out << stop.err;
  EXPECT_THAT(stop.out, HasSubstr("stopped: pid " + std::to_string(pid)));
  EXPECT_THAT(stop.out, HasSubstr("(SIGTERM)"));
  EXPECT_FALSE(Alive(pid));
  EXPECT_FALSE(Alive(child));  // no orphan left in the process group

  auto stop2 = RunPpdeploy({"stop"}, env, dir.path());
  EXPECT_EQ(stop2.rc, 0);
  EXPECT_THAT(stop2.out, HasSubstr("not running"));
  auto status2 = RunPpdeploy({"status", "--format", "json"}, env, dir.path());
  EXPECT_EQ(nlohmann::json::parse(status2.out)["state"], "stopped");
}

TEST(ProcessEndToEndTest, StopEscalatesToSigkill) {
  TempDir dir;
  RunDirGuard guard(dir.path() + "/run");
  auto env = StandinEnv(dir, FreeLoopbackPort(), {{"STANDIN_IGNORE_TERM", "1"}});
  ASSERT_EQ(RunPpdeploy({"start"}, env, dir.path()).rc, 0);
  ASSERT_EQ(RunPpdeploy({"wait", "--timeout", "30", "--interval", "0.2"}, env, dir.path()).rc, 0);
  auto state = ReadRunState(dir.path() + "/run");
  ASSERT_TRUE(state);
  auto stop = RunPpdeploy({"stop", "--grace", "0.5"}, env, dir.path());
  EXPECT_EQ(stop.rc, 0) << stop.out << stop.err;
  EXPECT_THAT(stop.out, HasSubstr("SIGKILL after the grace period"));
  EXPECT_FALSE(Alive(state->pid));
}

TEST(ProcessEndToEndTest, WaitReportsDeathWithLogTail) {
  TempDir dir;
  RunDirGuard guard(dir.path() + "/run");
  auto env = StandinEnv(dir, FreeLoopbackPort(), {{"STANDIN_READY_DELAY_S", "100"}, {"STANDIN_EXIT_AFTER_S", "1"}});
  ASSERT_EQ(RunPpdeploy({"start"}, env, dir.path()).rc, 0);
  auto wait = RunPpdeploy({"wait", "--timeout", "30", "--interval", "0.2"}, env, dir.path());
  EXPECT_EQ(wait.rc, 1);
  EXPECT_THAT(wait.err, HasSubstr("died"));
  EXPECT_THAT(wait.err, HasSubstr("exiting with status 3"));
  EXPECT_EQ(RunPpdeploy({"stop"}, env, dir.path()).rc, 0);
}

TEST(ProcessEndToEndTest, WaitTimesOut) {
  TempDir dir;
  RunDirGuard guard(dir.path() + "/run");
  auto env = StandinEnv(dir, FreeLoopbackPort(), {{"STANDIN_READY_DELAY_S", "100"}});
  ASSERT_EQ(RunPpdeploy({"start"}, env, dir.path()).rc, 0);
  auto wait = RunPpdeploy({"wait", "--timeout", "4", "--interval", "0.2"}, env, dir.path());
  EXPECT_EQ(wait.rc, 1);
  EXPECT_THAT(wait.err, HasSubstr("not ready after"));
  // The stand-in answers 503 while "loading" (unless python was still starting when time ran out).
  EXPECT_THAT(wait.err, ::testing::AnyOf(HasSubstr("/health answered 503"), HasSubstr("connect")));
  auto stop = RunPpdeploy({"stop", "--grace", "5"}, env, dir.path());
  EXPECT_EQ(stop.rc, 0);
}

TEST(ProcessEndToEndTest, StartFailsForMissingExecutableAndDryRunStartsNothing) {
  TempDir dir;
  RunDirGuard guard(dir.path() + "/run");
  auto env = StandinEnv(dir, FreeLoopbackPort(), {{"VLLM_BIN", dir.path() + "/no-such-vllm"}});
  auto dry = RunPpdeploy({"start", "--dry-run"}, env, dir.path());
  EXPECT_EQ(dry.rc, 0);
  EXPECT_THAT(dry.out, HasSubstr("dry run: nothing started"));
  EXPECT_FALSE(ReadRunState(dir.path() + "/run"));
  auto r = RunPpdeploy({"start"}, env, dir.path());
  EXPECT_EQ(r.rc, 1);
  EXPECT_THAT(r.err, HasSubstr("no-such-vllm"));
  EXPECT_FALSE(ReadRunState(dir.path() + "/run"));  // no state left behind
  auto status = RunPpdeploy({"status"}, env, dir.path());
  EXPECT_EQ(status.rc, 0);
  EXPECT_THAT(status.out, HasSubstr("stopped"));
}

TEST(ProcessEndToEndTest, LogsFollowEndsWhenTheServerExits) {
  TempDir dir;
  RunDirGuard guard(dir.path() + "/run");
  auto env = StandinEnv(dir, FreeLoopbackPort(), {{"STANDIN_EXIT_AFTER_S", "1.5"}});
  ASSERT_EQ(RunPpdeploy({"start"}, env, dir.path()).rc, 0);
  auto logs = RunPpdeploy({"logs", "--follow"}, env, dir.path());
  EXPECT_EQ(logs.rc, 0);
  EXPECT_THAT(logs.out, HasSubstr("exiting with status 3"));
}

TEST(ProcessTest, TailFileLastLines) {
  TempDir dir;
  {
    std::ofstream f(dir.path() + "/log");
    f << "a\nb\nc\n";
  }
  EXPECT_EQ(TailFile(dir.path() + "/log", 2), "b\nc\n");
  EXPECT_EQ(TailFile(dir.path() + "/log", 5), "a\nb\nc\n");
  EXPECT_EQ(TailFile(dir.path() + "/log", 0), "a\nb\nc\n");
  EXPECT_EQ(TailFile(dir.path() + "/missing", 2), "");
}

}  // namespace
}  // namespace ppdeploy::launch
