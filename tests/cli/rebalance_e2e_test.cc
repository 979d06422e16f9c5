// Issue 14 end to end, without a GPU: `ppdeploy rebalance run 41,37` from a control arm started at 39,39.
// The stand-in `vllm` (tests/launch/standin_ab_vllm.sh) asks the planner for the split it is given, becomes
// `ppdeploy sim --boot-plan` with that pool and a vLLM-style per-rank boot log, and leaves the seed's measured
// per-GPU memory (docs/seed.md §6) for the stand-in `nvidia-smi` (PPDEPLOY_NVIDIA_SMI). Every check runs at a
// handful of trials and short lengths (CI: 2 loaded cores).
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/async_run.h"
#include "launch/launch_test_util.h"
#include "memory/pool.h"

namespace ppdeploy {
namespace {

using launch::testing::FreeLoopbackPort;
using launch::testing::ReadAll;
using launch::testing::RunPpdeploy;
using launch::testing::RunResult;
using launch::testing::TempDir;
using ::testing::HasSubstr;
using ::testing::Not;

const std::string kTests = std::string(PPDEPLOY_SOURCE_DIR) + "/tests/launch";

// Small checks: 4 degeneration trials of <= 128 tokens (the sim's loop needs 64 to be called degenerate),
// one 1K needle, 2 bench requests per level of 8 tokens.
const std::vector<std::string> kSmall = {"--interval",
                                         "0.2",
                                         "--timeout",
                                         "60",
                                         "--grace",
                                         "5",
                                         "--trials",
                                         "4",
                                         "--degen-max-tokens",
                                         "128",
                                         "--needle-lengths",
                                         "1K",
                                         "--bench-requests",
                                         "2",
                                         "--bench-output-len",
                                         "8",
                                         "--no-arg-check",
                                         "--probe-max-tokens",
                                         "64"};

nlohmann::json ReadJson(const std::string& path) { return nlohmann::json::parse(ReadAll(path)); }

// The seed's pool for a split as `ppdeploy plan` predicts it (the same resolver `start` records).
std::int64_t PlannedPool(const std::string& split, const std::string& cwd) {
  auto r = RunPpdeploy({"plan", "--no-enumerate", "--no-optimize", "--format", "json"}, {{"PP_LAYER_PARTITION", split}},
                       cwd);
  return nlohmann::json::parse(r.out)["detailed"][0]["kv_tokens"].get<std::int64_t>();
}

using Env = std::map<std::string, std::string>;

class AbFixture {
 public:
  explicit AbFixture(std::map<std::string, std::string> extra = {}) {
    env_ = {{"RUNTIME", "bare"},
            {"VLLM_BIN", kTests + "/standin_ab_vllm.sh"},
            {"PPDEPLOY_SIM", PPDEPLOY_BINARY},
            {"PPDEPLOY_NVIDIA_SMI", kTests + "/standin_nvidia_smi.sh"},
            {"STANDIN_DIR", dir_.path()},
            {"HOST", "127.0.0.1"},
            {"PORT", std::to_string(FreeLoopbackPort())}};
    for (auto& [k, v] : extra) env_[k] = v;
  }
  ~AbFixture() {
    for (const char* run_dir : {".ppdeploy/run", ".ppdeploy/ab/41-37"})
      Run({"stop", "--grace", "2", "--run-dir", run_dir});
  }
  const std::string& dir() const { return dir_.path(); }
  const std::map<std::string, std::string>& env() const { return env_; }
  std::string Path(const std::string& rel) const { return dir_.path() + "/" + rel; }
  RunResult Run(const std::vector<std::string>& args) const { return RunPpdeploy(args, env_, dir_.path()); }
  std::vector<std::string> Rebalance(const std::vector<std::string>& args) const {
    std::vector<std::string> a = {"rebalance"};
    a.insert(a.end(), args.begin(), args.end());
    a.insert(a.end(), kSmall.begin(), kSmall.end());
    return a;
  }
  // The control arm: 39,39, started and waited for as a user would.
  void StartControl() const {
    auto env = env_;
    env["PP_LAYER_PARTITION"] = "39,39";
    auto start = RunPpdeploy({"start"}, env, dir_.path());
    ASSERT_EQ(start.rc, 0) << start.out << start.err;
    auto wait = RunPpdeploy({"wait", "--timeout", "60", "--interval", "0.2"}, env, dir_.path());
    ASSERT_EQ(wait.rc, 0) << wait.out << wait.err << ReadAll(Path(".ppdeploy/run/vllm.log"));
  }

 private:
  TempDir dir_;
  std::map<std::string, std::string> env_;
};

TEST(RebalanceEndToEndTest, RunFrom3939To4137ShowsBothPoolsMemoryReadyTimesAndDegenerationAndExitsZero) {
  AbFixture ab;
  ASSERT_NO_FATAL_FAILURE(ab.StartControl());
  const std::int64_t plan_a = PlannedPool("39,39", ab.dir()), plan_b = PlannedPool("41,37", ab.dir());
  // preflight without a split: the optimiser's best for the control's TP4/PP2 is the seed's 41,37 (docs/seed.md §6),
  // gated and planned without touching the service.
  auto preflight = ab.Run({"rebalance", "preflight"});
  ASSERT_EQ(preflight.rc, 0) << preflight.out << preflight.err;
  EXPECT_THAT(preflight.out, HasSubstr("the split optimiser's best for TP4/PP2 is 41,37"));
  EXPECT_THAT(preflight.out, HasSubstr(fmt::format("planned pool: control {} tokens -> 41,37 {} tokens",
                                                   WithThousands(plan_a), WithThousands(plan_b))));
  // The gates run before the serving arm is stopped: a split of 80 layers (the model has 78) is refused and
  // the control keeps serving.
  auto refused = ab.Run(ab.Rebalance({"boot", "40,40"}));
  EXPECT_EQ(refused.rc, 1) << refused.out << refused.err;
  EXPECT_EQ(ReadJson(ab.Path(".ppdeploy/run/state.json"))["stopped_time_unix_ms"], 0);
  EXPECT_THAT(ab.Run({"status"}).out, HasSubstr("health"));

  auto run = ab.Run(ab.Rebalance({"run", "41,37"}));
  ASSERT_EQ(run.rc, 0) << run.out << run.err;

  // One directory per arm: the resolved request, the boot log, the run state and the verify result.
  for (const char* arm : {"control", "41-37"})
    for (const char* f : {"request.json", "vllm.log", "state.json", "verify.json"})
      EXPECT_TRUE(std::filesystem::exists(ab.Path(std::string(".ppdeploy/ab/") + arm + "/" + f))) << arm << "/" << f;
  const auto a = ReadJson(ab.Path(".ppdeploy/ab/control/verify.json"));
  const auto b = ReadJson(ab.Path(".ppdeploy/ab/41-37/verify.json"));

  // Both pools: the boot logs' measured pools are the planner's for each split (the stand-in boots with
  // them), the 597,760-class and 729,280-class pools of the seed (docs/seed.md §6: measured 597,760 -> 729,280).
  EXPECT_NEAR(static_cast<double>(plan_a), 597'760.0, 597'760 * 0.002);
  EXPECT_NEAR(static_cast<double>(plan_b), 729'280.0, 729'280 * 0.002);
  EXPECT_EQ(a["kv_pool"]["logged_tokens"], plan_a);
  EXPECT_EQ(a["kv_pool"]["predicted_tokens"], plan_a);
  EXPECT_EQ(b["kv_pool"]["logged_tokens"], plan_b);
  EXPECT_EQ(b["kv_pool"]["predicted_tokens"], plan_b);
  EXPECT_THAT(a["kv_pool"]["logged_source"].get<std::string>(), HasSubstr("boot log .ppdeploy/run/vllm.log"));
  EXPECT_THAT(b["kv_pool"]["logged_source"].get<std::string>(), HasSubstr("boot log .ppdeploy/ab/41-37/vllm.log"));
  EXPECT_THAT(run.out, HasSubstr(fmt::format("| KV pool, logged (tokens) | {} (plan {}) | {} (plan {}) | B |",
                                             WithThousands(plan_a), WithThousands(plan_a), WithThousands(plan_b),
                                             WithThousands(plan_b))));
  EXPECT_THAT(run.out, HasSubstr("== preflight:41-37: done (exit 0); not repeated"));
  // The boot log's blocks: pool / block size (vLLM's own arithmetic, 64-token blocks for fp8_ds_mla).
  EXPECT_EQ(b["facts"]["boot_log"]["block_size"], 64);
  EXPECT_EQ(b["facts"]["boot_log"]["num_gpu_blocks"], plan_b / 64);
  EXPECT_THAT(run.out, HasSubstr("| concurrency at max_model_len (x) | 1.14x at 524,288 | 1.39x at 524,288 | B |"));
  // The /metrics facts agree with the boot log (vllm:cache_config_info num_gpu_blocks x block_size).
  EXPECT_EQ(b["facts"]["metrics"]["kv_pool_tokens"], plan_b);
  EXPECT_EQ(b["facts"]["metrics"]["block_size"], 64);

  // Per-GPU memory from the stand-in nvidia-smi (docs/seed.md §6: GPUs 0-3 / 4-7 72,430 / 80,118 -> 79,441 / 79,343 MiB
  // of 81,920; tightest headroom 1,802 -> 2,479 MiB).
  EXPECT_THAT(a["memory"]["source"].get<std::string>(),
              HasSubstr("--query-gpu=index,memory.used,memory.total --format=csv (PPDEPLOY_NVIDIA_SMI=" + kTests +
                        "/standin_nvidia_smi.sh)"));
  ASSERT_EQ(a["memory"]["ranks"].size(), 8u);
  EXPECT_EQ(a["memory"]["ranks"][4]["used_bytes"], 80118LL << 20);
  EXPECT_EQ(b["memory"]["ranks"][0]["used_bytes"], 79441LL << 20);
  EXPECT_EQ(a["facts"]["nvidia_smi"]["tightest_headroom_mib"], 1802);
  EXPECT_EQ(b["facts"]["nvidia_smi"]["tightest_headroom_mib"], 2479);
  EXPECT_THAT(run.out, HasSubstr("| tightest headroom (MiB) | 1,802 | 2,479 | B |"));
  EXPECT_THAT(run.out, HasSubstr("| GPU 4 memory used (MiB) | 80,118 | 79,343 |"));

  // Ready times, from `wait` (each arm's run state), with their source.
  ASSERT_TRUE(a.contains("ready_s") && b.contains("ready_s")) << a.dump() << b.dump();
  EXPECT_THAT(a["ready_source"].get<std::string>(), HasSubstr("ppdeploy wait"));
  EXPECT_THAT(run.out, HasSubstr("| ready time (s) |"));
  EXPECT_THAT(run.out, Not(HasSubstr("| ready time (s) | missing")));

  // The degeneration rows, the boot log's per-stage available KV (docs/seed.md §6: PP1 binds at 15.56 GiB for 39,39).
  EXPECT_THAT(run.out,
              HasSubstr("| degeneration rate | 0/4 (0.0%) | 0/4 (0.0%) | tie | no | Fisher exact, two-sided |"));
  EXPECT_THAT(run.out, HasSubstr("| available KV, PP1 (GiB) | 15.56 |"));
  EXPECT_THAT(run.out, HasSubstr("Result: B (41,37) is not worse than A (control 39,39)."));

  // Each fact group says where it came from.
  for (const auto* r : {&a, &b}) {
    EXPECT_THAT((*r)["facts"]["boot_log"]["source"].get<std::string>(), HasSubstr("boot log"));
    EXPECT_THAT((*r)["facts"]["metrics"]["source"].get<std::string>(), HasSubstr("/metrics"));
    EXPECT_THAT((*r)["facts"]["nvidia_smi"]["source"].get<std::string>(), HasSubstr("/standin_nvidia_smi.sh"));
    EXPECT_THAT((*r)["facts"]["metrics"]["step_time_ms"]["series"].get<std::string>(),
                HasSubstr("vllm:inter_token_latency_seconds"));
  }
  // The verdict files, and the flow's record of which arm serves.
  const auto state = ReadJson(ab.Path(".ppdeploy/ab/state.json"));
  EXPECT_EQ(state["serving"], "41-37");
  EXPECT_EQ(state["steps"]["verdict:41-37"]["exit"], 0);
  EXPECT_TRUE(std::filesystem::exists(ab.Path(".ppdeploy/ab/verdict-41-37.html")));

  // restore: the control arm serves again from its recorded request.
  auto restore = ab.Run({"rebalance", "restore", "--interval", "0.2", "--timeout", "60", "--grace", "2"});
  EXPECT_EQ(restore.rc, 0) << restore.out << restore.err;
  EXPECT_EQ(ReadJson(ab.Path(".ppdeploy/ab/state.json"))["serving"], "control");
  EXPECT_THAT(ReadAll(ab.Path(".ppdeploy/run/vllm.log")), HasSubstr("unevenly partitioned: [39,39]"));
}

TEST(RebalanceEndToEndTest, DegeneratingNewArmExitsTwoAndTheRowNamesTheWorseArmWithFisherP) {
  AbFixture ab(Env{{"STANDIN_DEGENERATE_SPLIT", "41,37"}});
  ASSERT_NO_FATAL_FAILURE(ab.StartControl());
  auto run = ab.Run(ab.Rebalance({"run", "41,37"}));
  ASSERT_EQ(run.rc, 2) << run.out << run.err;
  // 0/4 vs 4/4: Fisher exact two-sided p = 2 / C(8,4) = 2/70 = 0.0286 (one-sided 1/70 = 0.0143).
  EXPECT_THAT(run.out,
              HasSubstr("| degeneration rate | 0/4 (0.0%) | 4/4 (100.0%) | A | yes | Fisher exact, two-sided | "
                        "0.0286 |"));
  EXPECT_THAT(run.out, HasSubstr("one-sided p = 0.0143; worse: B (41,37)"));
  EXPECT_THAT(run.out, HasSubstr("Result: B (41,37) is worse than A (control 39,39):"));
  EXPECT_THAT(run.out, HasSubstr("- degeneration: B 4/4 (100.0%) vs A 0/4 (0.0%) (Fisher exact two-sided p = 0.0286)"));
  // verdict alone recomputes the same answer from the two results (nothing is measured again).
  auto verdict = ab.Run({"rebalance", "verdict", "--format", "json"});
  EXPECT_EQ(verdict.rc, 2) << verdict.err;
  EXPECT_EQ(nlohmann::json::parse(verdict.out)["judgement"]["b_worse"], true);
}

// Reads a step's status from the A/B state ("" while there is none).
std::string StepStatus(const AbFixture& ab, const std::string& step) {
  const std::string path = ab.Path(".ppdeploy/ab/state.json");
  if (!std::filesystem::exists(path)) return "";
  auto j = nlohmann::json::parse(ReadAll(path), nullptr, false);
  if (j.is_discarded() || !j.contains("steps") || !j["steps"].contains(step)) return "";
  return j["steps"][step].value("status", "");
}

TEST(RebalanceEndToEndTest, KilledDuringVerifyOfTheNewArmResumesWithoutRemeasuringTheControl) {
  AbFixture ab(Env{{"STANDIN_ITL_MS", "20"}});  // both arms decode at 20 ms per token
  ASSERT_NO_FATAL_FAILURE(ab.StartControl());
  {
    testing::AsyncPpdeploy flow(ab.Rebalance({"run", "41,37"}), ab.env(), ab.dir(), "flow1");
    ASSERT_TRUE(flow.started());
    ASSERT_TRUE(flow.WaitUntil([&] { return StepStatus(ab, "verify:41-37") == "running"; }, 120))
        << flow.Out() << flow.Err();
    flow.Signal(SIGKILL);  // a fault: no chance to record anything
    EXPECT_EQ(flow.Wait(10), 128 + SIGKILL);
  }
  const std::string control = ReadAll(ab.Path(".ppdeploy/ab/control/verify.json"));
  ASSERT_FALSE(control.empty());
  EXPECT_EQ(StepStatus(ab, "control"), "done");
  EXPECT_EQ(StepStatus(ab, "verify:41-37"), "running");

  auto again = ab.Run(ab.Rebalance({"run", "41,37"}));
  ASSERT_EQ(again.rc, 0) << again.out << again.err;
  EXPECT_THAT(again.out, HasSubstr("== control: done (exit 0"));
  EXPECT_THAT(again.out, HasSubstr("== boot:41-37: done (exit 0); not repeated"));
  EXPECT_THAT(again.out, HasSubstr("== verify:41-37\n"));
  EXPECT_EQ(ReadAll(ab.Path(".ppdeploy/ab/control/verify.json")), control);  // not measured again
  EXPECT_EQ(StepStatus(ab, "verify:41-37"), "done");
  const auto b = ReadJson(ab.Path(".ppdeploy/ab/41-37/verify.json"));
  EXPECT_EQ(b["verify"]["missing"], nlohmann::json::array());
}

TEST(RebalanceEndToEndTest, CtrlCDuringVerifyExits130AndKeepsTheFinishedSteps) {
  AbFixture ab(Env{{"STANDIN_ITL_MS", "20"}});
  ASSERT_NO_FATAL_FAILURE(ab.StartControl());
  testing::AsyncPpdeploy flow(ab.Rebalance({"run", "41,37"}), ab.env(), ab.dir(), "flow");
  ASSERT_TRUE(flow.WaitUntil(
      [&] {
        return StepStatus(ab, "verify:41-37") == "running" &&
               std::filesystem::exists(ab.Path(".ppdeploy/ab/41-37/verify.json"));
      },
      120))
      << flow.Out() << flow.Err();
  flow.Signal(SIGINT);
  ASSERT_EQ(flow.Wait(30), 130) << flow.Out() << flow.Err();
  EXPECT_EQ(StepStatus(ab, "verify:41-37"), "interrupted");
  EXPECT_EQ(StepStatus(ab, "control"), "done");
  // The new arm's partial result is on disk and says which steps are missing.
  const auto b = ReadJson(ab.Path(".ppdeploy/ab/41-37/verify.json"));
  EXPECT_FALSE(b["verify"]["missing"].empty()) << b.dump(2);
  EXPECT_EQ(b["verify"]["steps"]["server"]["status"], "ok");
}

// Issue 23 item 8: a candidate that cannot boot left nothing serving (the control had been stopped for it) while
// the state said the control served. The control is booted again and the state says so.
TEST(RebalanceEndToEndTest, Issue23CandidateThatCannotBootRestoresTheControlAndTheStateSaysSo) {
  AbFixture ab(Env{{"STANDIN_FAIL_SPLIT", "41,37"}});
  ASSERT_NO_FATAL_FAILURE(ab.StartControl());
  const int control_pid = ReadJson(ab.Path(".ppdeploy/run/state.json"))["pid"];
  auto run = ab.Run(ab.Rebalance({"run", "41,37"}));
  EXPECT_EQ(run.rc, 1) << run.out << run.err;
  EXPECT_THAT(run.err, HasSubstr("the 41,37 arm did not boot; restarting the control arm"));
  EXPECT_THAT(run.err, HasSubstr("the new arm did not boot; the control arm serves again"));
  const auto state = ReadJson(ab.Path(".ppdeploy/ab/state.json"));
  EXPECT_EQ(state["serving"], "control");
  EXPECT_EQ(state["steps"]["boot:41-37"]["status"], "failed");
  EXPECT_EQ(state["steps"]["boot:41-37"]["note"], "the new arm did not boot; the control arm serves again");
  // A new control server, started from its recorded request (39,39), answers.
  const auto control = ReadJson(ab.Path(".ppdeploy/run/state.json"));
  EXPECT_NE(control["pid"], control_pid);
  EXPECT_EQ(control["stopped_time_unix_ms"], 0);
  EXPECT_THAT(ab.Run({"status"}).out, HasSubstr("health"));
  EXPECT_THAT(ReadAll(ab.Path(".ppdeploy/run/vllm.log")), HasSubstr("unevenly partitioned: [39,39]"));
}

// Issue 23 item 8: after Ctrl-C during the candidate's boot every rerun failed with "already running". The
// candidate's boot holds (the stand-in waits for a release file) until after the interruption; the rerun waits
// for the server already started and finishes the flow.
TEST(RebalanceEndToEndTest, Issue23CtrlCDuringTheCandidatesBootThenARerunResumes) {
  AbFixture ab(Env{{"STANDIN_HOLD_SPLIT", "41,37"}});
  ASSERT_NO_FATAL_FAILURE(ab.StartControl());
  {
    testing::AsyncPpdeploy flow(ab.Rebalance({"run", "41,37"}), ab.env(), ab.dir(), "flow");
    ASSERT_TRUE(flow.WaitUntil(
        [&] {
          return StepStatus(ab, "boot:41-37") == "running" &&
                 std::filesystem::exists(ab.Path(".ppdeploy/ab/41-37/state.json"));
        },
        120))
        << flow.Out() << flow.Err();
    flow.Signal(SIGINT);
    ASSERT_EQ(flow.Wait(60), 130) << flow.Out() << flow.Err();
  }
  EXPECT_EQ(StepStatus(ab, "boot:41-37"), "interrupted");
  std::ofstream(ab.Path("release")) << "";
  auto again = ab.Run(ab.Rebalance({"run", "41,37"}));
  ASSERT_EQ(again.rc, 0) << again.out << again.err;
  EXPECT_THAT(again.out, HasSubstr("already runs"));
  EXPECT_THAT(again.out, HasSubstr("waiting for it instead of starting it again"));
  EXPECT_THAT(again.err + again.out, Not(HasSubstr("already running")));
  EXPECT_EQ(StepStatus(ab, "boot:41-37"), "done");
  EXPECT_EQ(ReadJson(ab.Path(".ppdeploy/ab/state.json"))["serving"], "41-37");
}

// Issue 23 item 8: request errors (50% HTTP 500 on the candidate) never entered the verdict, and with
// `--skip probes` the flow ended with exit 1 and no verdict. The failed requests are a row of the verdict and make
// the candidate worse, with `--skip probes` and with the probes.
TEST(RebalanceEndToEndTest, Issue23CandidateWithHalfItsRequestsFailingIsWorseWithOrWithoutProbes) {
  AbFixture ab(
      Env{{"STANDIN_ARM_SPLIT", "41,37"}, {"STANDIN_ARM_ARGS", "--fault-rate 0.5 --fault-kinds 500 --seed 7"}});
  ASSERT_NO_FATAL_FAILURE(ab.StartControl());
  auto args = ab.Rebalance({"run", "41,37"});
  args.insert(args.end(), {"--skip", "probes"});
  auto run = ab.Run(args);
  ASSERT_EQ(run.rc, 2) << run.out << run.err;
  EXPECT_THAT(run.out, HasSubstr("Result: B (41,37) is worse than A (control 39,39):"));
  EXPECT_THAT(run.out, HasSubstr("- request errors: B "));
  EXPECT_THAT(run.out, HasSubstr("| request errors | 0/"));
  const auto b = ReadJson(ab.Path(".ppdeploy/ab/41-37/verify.json"));
  ASSERT_TRUE(b.contains("requests")) << b.dump(2);
  EXPECT_GT(b["requests"]["bench"]["failed"].get<int>() + b["requests"]["degeneration"]["failed"].get<int>(), 0);
  // Measured again with the probes: still worse.
  auto verify = ab.Run(ab.Rebalance({"verify", "--force"}));
  EXPECT_EQ(verify.rc, 0) << verify.out << verify.err;
  auto verdict = ab.Run({"rebalance", "verdict", "--format", "json"});
  EXPECT_EQ(verdict.rc, 2) << verdict.err;
  const auto j = nlohmann::json::parse(verdict.out);
  EXPECT_EQ(j["judgement"]["b_worse"], true);
  EXPECT_THAT(j["judgement"]["reasons"].dump(), HasSubstr("request errors"));
}

}  // namespace
}  // namespace ppdeploy
