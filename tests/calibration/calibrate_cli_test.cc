// `ppdeploy calibrate` through the binary on logs with several boots (issue 15): the last complete boot by
// default and said so, --boot N for another, a failed boot reported with file, line and cause, exit 1 and no
// --out file. The logs are constructed in the vLLM 0.19 line formats with the seed's figures
// (docs/seed.md §6: 39,39 -> 597,760 tokens, 41,37 -> 729,280).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_runner.h"

namespace ppdeploy {
namespace {

using testing::RunPpdeploy;

std::string TempPath(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("ppdeploy-calibrate-cli-test-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

std::string Write(const std::string& name, const std::string& text) {
  std::string path = TempPath(name);
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

std::string Boot(int pid, const std::string& split, const std::string& tokens) {
  std::string p = std::to_string(pid), e = std::to_string(pid + 1), w = std::to_string(pid + 2);
  return "(APIServer pid=" + p +
         ") INFO 08-21 18:00:00 [entrypoints/utils.py:233] non-default args: {'max_model_len': 524288, "
         "'tensor_parallel_size': 4, 'pipeline_parallel_size': 2, 'gpu_memory_utilization': 0.95}\n"
         "(EngineCore_DP0 pid=" +
         e + ") INFO 08-21 18:00:11 [distributed/utils.py:1] Hidden layers were unevenly partitioned: [" + split +
         "]. This can be manually overridden using the VLLM_PP_LAYER_PARTITION environment variable\n"
         "(Worker_PP0_TP0 pid=" +
         w +
         ") INFO 08-21 18:03:00 [v1/worker/gpu_worker.py:436] Available KV cache memory: 21.95 GiB\n"
         "(EngineCore_DP0 pid=" +
         e + ") INFO 08-21 18:03:01 [v1/core/kv_cache_utils.py:1319] GPU KV cache size: " + tokens + " tokens\n";
}

const std::string kFailure =
    "(APIServer pid=300) INFO 08-22 09:00:00 [entrypoints/utils.py:233] non-default args: {'tensor_parallel_size': "
    "4}\n"
    "(Worker pid=61) ERROR 08-22 09:00:20 [v1/executor/multiproc_executor.py:857] WorkerProc failed to start.\n"
    "(Worker pid=61) ERROR 08-22 09:00:20 [v1/executor/multiproc_executor.py:857] ValueError: Free memory on device "
    "cuda:1 (60.87/79.19 GiB) on startup is less than desired GPU memory utilization (0.95, 75.23 GiB).\n";

TEST(CalibrateCliTest, LastCompleteBootByDefaultAndBootN) {
  std::string log = Write("two.log", Boot(100, "39,39", "597,760") + Boot(200, "41,37", "729,280"));
  auto r = RunPpdeploy("calibrate --log " + log + " --model glm-5.3-w4a16 --format json", false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["boot"]["index"], 2);
  EXPECT_EQ(j["boot"]["of"], 2);
  EXPECT_EQ(j["boot"]["chosen_by"], "the last complete boot");
  EXPECT_EQ(j["check"]["logged_kv_tokens"], 729280);
  EXPECT_EQ(j["calibration"]["layer_partition"], (nlohmann::json{41, 37}));
  EXPECT_EQ(j["boots"][0]["kv_tokens"], 597760);

  std::string out = TempPath("boot1.json");
  auto b1 = RunPpdeploy("calibrate --log " + log + " --model glm-5.3-w4a16 --boot 1 --out " + out);
  ASSERT_EQ(b1.exit_code, 0) << b1.output;
  EXPECT_NE(b1.output.find("boot 1 of 2 (" + log + ":1-4, complete, chosen with --boot)"), std::string::npos)
      << b1.output;
  EXPECT_NE(b1.output.find("logged 597,760"), std::string::npos) << b1.output;
  EXPECT_TRUE(std::filesystem::exists(out));

  auto bad = RunPpdeploy("calibrate --log " + log + " --model glm-5.3-w4a16 --boot 3");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_EQ(bad.output, "ppdeploy: error: " + log + ": boot 3 was asked for, the log holds 2 boots\n");
}

TEST(CalibrateCliTest, FailedBootIsReportedAndNothingIsWritten) {
  std::string log = Write("fail.log", Boot(100, "39,39", "597,760") + kFailure);
  std::string out = TempPath("never.json");
  auto r = RunPpdeploy("calibrate --log " + log + " --model glm-5.3-w4a16 --boot 2 --out " + out);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(
      r.output,
      "ppdeploy: error: " + log +
          ":7: boot 2 of 2 failed in Worker pid=61: ValueError: Free memory on device cuda:1 "
          "(60.87/79.19 GiB) on startup is less than desired GPU memory utilization (0.95, 75.23 "
          "GiB); it logged no memory figure before it failed, so no calibration is written (--boot N picks another "
          "boot)\n");
  EXPECT_FALSE(std::filesystem::exists(out));

  // Without --boot the complete boot 1 is used, and the output says that boot 2 failed.
  auto d = RunPpdeploy("calibrate --log " + log + " --model glm-5.3-w4a16");
  EXPECT_EQ(d.exit_code, 0) << d.output;
  EXPECT_NE(d.output.find("boot 1 of 2 (" + log + ":1-4, complete, the last complete one); boot 2 (" + log +
                          ":5-7) failed at line 7: ValueError: Free memory on device cuda:1"),
            std::string::npos)
      << d.output;

  // A log whose only boot failed: the error, exit 1.
  std::string only = Write("only-failed.log", kFailure);
  auto o = RunPpdeploy("calibrate --log " + only + " --model glm-5.3-w4a16");
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_NE(o.output.find(only + ":3: boot 1 of 1 failed in Worker pid=61: ValueError: Free memory"), std::string::npos)
      << o.output;
}

// Failed boots that still carry figures (issue 12). facts.json run meta-llama-llama-3-1-8b---h100-80gb--tp1pp1dp2--
// 8192.FAILED (tests/data/llmd-v0.19; llm-d-planner d3121e05): two single lines of its log, verbatim (the weights at
// log line 348). The weights are shown against the plan; no calibration file is written from them.
TEST(CalibrateCliTest, WeightsOnlyBootShowsTheWeightsAndWritesNothing) {
  std::string log = Write(
      "dp2.log",
      "(Worker pid=1224) ERROR 04-22 01:41:58 [v1/executor/multiproc_executor.py:857] AssertionError: DP adjusted "
      "local rank 1 is out of bounds. \n"
      "(Worker pid=1219) INFO 04-22 01:42:12 [v1/worker/gpu_model_runner.py:4820] Model loading took 14.99 GiB memory "
      "and 12.838644 seconds\n");
  const std::string args = "calibrate --log " + log + " --model " + PPDEPLOY_SOURCE_DIR +
                           "/tests/data/hf-configs/meta-llama__Llama-3.1-8B-Instruct.json --gpu h100 --gpu-total-gib "
                           "79.19 --vllm 0.19.0 --max-model-len 8192 --spec-method none";
  auto r = RunPpdeploy(args);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("    weights, PP rank 0: 14.99 GiB (\"Model loading took\")\n"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("warning: " + log +
                          ":1: boot 1 of 1 failed in Worker pid=1224: AssertionError: DP adjusted local rank 1 is out "
                          "of bounds; the figures it logged before failing are used"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("pool: predicted"), std::string::npos) << r.output;
  std::string out = TempPath("weights-only.json");
  auto w = RunPpdeploy(args + " --out " + out);
  EXPECT_EQ(w.exit_code, 1) << w.output;
  EXPECT_NE(w.output.find("no calibration written to " + out + ": the boot logged weights but no available-KV figure"),
            std::string::npos)
      << w.output;
  EXPECT_FALSE(std::filesystem::exists(out));
}

// vllm#34076 (vLLM 0.15.2rc1.dev93): its one error line, verbatim; the layout and GPUs as the report gives them
// (Qwen3-Coder-30B-A3B-FP8 through the qwen3-30b-a3b preset, same attention shape). The refusal is PP rank 0's, and
// the planner reproduces vLLM's 24.0 GiB need and its estimate of 34,736 tokens.
TEST(CalibrateCliTest, RefusalIsCheckedAndSaidSo) {
  std::string log = Write(
      "vllm-34076.log",
      "(EngineCore_DP0 pid=1094) ValueError: To serve at least one request with the models's max seq len (262144), "
      "(24.0 GiB KV cache is needed, which is larger than the available KV cache memory (3.18 GiB). Based on the "
      "available memory, the estimated maximum model length is 34736. Try increasing `gpu_memory_utilization` or "
      "decreasing `max_model_len` when initializing the engine.\n");
  auto r =
      RunPpdeploy("calibrate --log " + log +
                      " --model qwen3-30b-a3b --gpu rtx-5090 --stage-gpus rtx-5070-ti,rtx-5090 --gpus 2 "
                      "--gpus-per-node 2 --tp 1 --pp 2 --partition 16,32 --vllm 0.15.2rc1 --max-model-len 262144 "
                      "--gpu-memory-utilization 0.9 --spec-method none --hf-overrides "
                      "'{\"quantization_config\": {\"quant_method\": \"fp8\", \"weight_block_size\": [128, 128]}}' "
                      "--format json",
                  false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["check"]["refusal"]["pp_rank"], 0);
  EXPECT_EQ(j["check"]["refusal"]["predicted_needed_bytes"], 262144LL * 98304);  // 24.0 GiB
  EXPECT_EQ(j["check"]["refusal"]["logged_estimated_max_model_len"], 34736);
  EXPECT_LE(j["check"]["refusal"]["predicted_max_model_len_lo"].get<int>(), 34736);
  EXPECT_GE(j["check"]["refusal"]["predicted_max_model_len_hi"].get<int>(), 34736);
  EXPECT_EQ(j["check"]["refusal"]["reproduced"], true);
  EXPECT_EQ(j["ranks"][0]["from_refusal"], true);
  EXPECT_EQ(j["ranks"][0]["available_kv_gib"], 3.18);
  EXPECT_EQ(j["used"][0],
            "available KV, PP rank 0: 3.18 GiB from vLLM's not-enough-KV refusal (24.00 GiB needed for 262144 tokens, "
            "3.18 GiB available, estimated maximum model length 34736)");
}

}  // namespace
}  // namespace ppdeploy
