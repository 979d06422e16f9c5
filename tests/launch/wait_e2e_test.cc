// Issue 11 end to end: `RUNTIME=bare ppdeploy start` with a stand-in `vllm` that prints the seed's
// 41,37 boot-log lines and serves the OpenAI API (by becoming `ppdeploy sim`), then `ppdeploy wait`.
// The pool `wait` predicts is the one `plan` and `cmd` show, the recorded request keeps MTP k=3,
// and the calibration `wait` writes reproduces the logged pool when fed back to `plan`.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "launch/launch_test_util.h"
#include "launch/process.h"

namespace ppdeploy::launch {
namespace {

using testing::FreeLoopbackPort;
using ::testing::HasSubstr;
using testing::ReadAll;
using testing::RunPpdeploy;
using testing::TempDir;

const std::string kStandin = std::string(PPDEPLOY_SOURCE_DIR) + "/tests/launch/standin_boot_vllm.sh";

// The seed's 41,37 boot (docs/seed.md §5, §6): measured pool 729,280 tokens at max_model_len 524,288
// (1.39x); PP0 binds (derived check of §6: ~19.35 GiB available on PP0). Lines in vLLM's format
// (docs/vllm-rules.md §2); only local rank 0 of each node prints the available memory.
const char* kBootLog =
    "(APIServer pid=1) INFO 10-21 09:00:00 [api_server.py:1000] vLLM API server version 0.30.0+custom\n"
    "(Worker_PP0_TP0 pid=11) INFO 10-21 09:07:00 [gpu_worker.py:349] Available KV cache memory: 19.35 GiB\n"
    "(EngineCore_DP0 pid=10) INFO 10-21 09:07:01 [kv_cache_utils.py:1300] GPU KV cache size: 729,280 tokens, "
    "Maximum concurrency for 524,288 tokens per request: 1.39x\n";

TEST(WaitEndToEndTest, WaitPredictsThePlansPoolAndWritesACalibrationThatReproducesIt) {
  TempDir dir;
  const std::string run_dir = dir.path() + "/run";
  {
    std::ofstream f(dir.path() + "/boot.log");
    f << kBootLog;
  }
  const int port = FreeLoopbackPort();
  std::map<std::string, std::string> env{{"RUNTIME", "bare"},
                                         {"VLLM_BIN", kStandin},
                                         {"PPDEPLOY_SIM", PPDEPLOY_BINARY},
                                         {"STANDIN_BOOT_LOG", dir.path() + "/boot.log"},
                                         {"HOST", "127.0.0.1"},
                                         {"PORT", std::to_string(port)},
                                         {"PPDEPLOY_RUN_DIR", run_dir}};
  auto start = RunPpdeploy({"start"}, env, dir.path());
  ASSERT_EQ(start.rc, 0) << start.out << start.err;
  auto wait = RunPpdeploy({"wait", "--timeout", "120", "--interval", "0.2"}, env, dir.path());
  auto stop = RunPpdeploy({"stop", "--grace", "5"}, env, dir.path());
  ASSERT_EQ(wait.rc, 0) << wait.out << wait.err << ReadAll(run_dir + "/vllm.log");
  EXPECT_EQ(stop.rc, 0) << stop.out << stop.err;

  // The recorded request resolves to MTP k=3 (the seed's `auto` on its v0.30 image).
  auto state = nlohmann::json::parse(ReadAll(run_dir + "/state.json"));
  EXPECT_EQ(state["schema"], "ppdeploy.run-state/3");
  EXPECT_EQ(state["resolved"]["spec_method"], "mtp");
  EXPECT_EQ(state["resolved"]["num_speculative_tokens"], 3);
  EXPECT_EQ(state["resolved"]["layer_partition"], nlohmann::json::array({41, 37}));

  // wait's prediction is plan's and cmd's number, and within the planner's tolerance of the log.
  auto plan = nlohmann::json::parse(
      RunPpdeploy({"plan", "--no-enumerate", "--no-optimize", "--format", "json"}, {}, dir.path()).out);
  const std::int64_t predicted = plan["detailed"][0]["kv_tokens"];
  EXPECT_EQ(state["resolved"]["predicted_kv_tokens"], predicted);
  EXPECT_THAT(wait.out, HasSubstr("KV pool: logged 729,280 tokens, predicted " + WithThousands(predicted)));
  EXPECT_THAT(wait.out, HasSubstr("speculation mtp k=3"));
  EXPECT_NEAR(static_cast<double>(predicted), 729'280.0, 729'280 * 0.01);  // calibrated plan: +-1%

  // The calibration wait wrote, fed back to plan, reproduces the logged pool.
  const std::string cal = run_dir + "/calibration.json";
  auto back = RunPpdeploy({"plan", "--calibration", cal, "--no-enumerate", "--no-optimize", "--format", "json"}, {},
                          dir.path());
  ASSERT_EQ(back.rc, 0) << back.out << back.err;
  auto j = nlohmann::json::parse(back.out);
  EXPECT_EQ(j["detailed"][0]["kv_tokens"], 729'280) << ReadAll(cal);
  auto c = nlohmann::json::parse(ReadAll(cal));
  EXPECT_EQ(c["num_speculative_tokens"], 3);  // fitted with MTP on, as it ran
}

}  // namespace
}  // namespace ppdeploy::launch
