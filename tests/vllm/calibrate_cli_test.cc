// `ppdeploy calibrate` through the binary on logs with several boots (issue 15): the last complete boot by
// default and said so, --boot N for another, a failed boot reported with file, line and cause, exit 1 and no
// --out file. The logs are constructed in the vLLM 0.19 line formats with the seed's figures
// (/work/shared/seed/digest.en.md §6: 39,39 -> 597,760 tokens, 41,37 -> 729,280).
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
  EXPECT_EQ(r.output, "ppdeploy: error: " + log +
                          ":7: boot 2 of 2 failed in Worker pid=61: ValueError: Free memory on device cuda:1 "
                          "(60.87/79.19 GiB) on startup is less than desired GPU memory utilization (0.95, 75.23 "
                          "GiB); no calibration is written from a failed boot (--boot N picks another boot)\n");
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

}  // namespace
}  // namespace ppdeploy
