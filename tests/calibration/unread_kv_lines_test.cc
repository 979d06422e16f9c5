// Issue 24: when calibrate fails for want of a KV figure, it names the KV lines it saw but could not read
// (odd digit separators, a byte that is not text) with their line and byte, instead of "the log has no
// ... line". vLLM prints the pool as `GPU KV cache size: {num_tokens:,} tokens` (Python's ',' grouping;
// vllm/v1/core/kv_cache_utils.py), so "729_280" or "729,\xff280" is no line vLLM wrote.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "cli_runner.h"

namespace ppdeploy {
namespace {

using ::testing::HasSubstr;
using testing::RunPpdeploy;

std::string Write(const std::string& name, const std::string& text) {
  auto dir = std::filesystem::temp_directory_path() / ("ppdeploy-unread-kv-test-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / name).string();
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

// The seed's 41,37 boot in vLLM 0.19 line formats (tests/calibration/calibrate_cli_test.cc), with the given
// "Available KV cache memory" line (or none) and pool figure.
std::string Boot(bool available_line, const std::string& tokens) {
  return std::string(
             "(APIServer pid=100) INFO 08-21 18:00:00 [entrypoints/utils.py:233] non-default args: {'max_model_len': "
             "524288, 'tensor_parallel_size': 4, 'pipeline_parallel_size': 2, 'gpu_memory_utilization': 0.95}\n"
             "(EngineCore_DP0 pid=101) INFO 08-21 18:00:11 [distributed/utils.py:1] Hidden layers were unevenly "
             "partitioned: [41,37]. This can be manually overridden using the VLLM_PP_LAYER_PARTITION environment "
             "variable\n") +
         (available_line ? "(Worker_PP0_TP0 pid=102) INFO 08-21 18:03:00 [v1/worker/gpu_worker.py:436] Available KV "
                           "cache memory: 21.95 GiB\n"
                         : "") +
         "(EngineCore_DP0 pid=101) INFO 08-21 18:03:01 [v1/core/kv_cache_utils.py:1319] GPU KV cache size: " + tokens +
         " tokens\n";
}

TEST(UnreadKvLinesTest, ABinaryByteInThePoolLineIsNamedWithLineAndByte) {
  const std::string log = Write("ff.log", Boot(true,
                                               "729,\xff"
                                               "280"));
  auto r = RunPpdeploy("calibrate --log " + log + " --model glm-5.3-w4a16");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("could not be mapped"));
  EXPECT_THAT(r.output, HasSubstr("unread: " + log +
                                  ":4: malformed 'GPU KV cache size' line (invalid UTF-8 byte "
                                  "0xff at byte 23 of the message)"))
      << r.output;
  EXPECT_EQ(r.output.find('\xff'), std::string::npos);
}

TEST(UnreadKvLinesTest, OddDigitSeparatorsAreNamedInsteadOfNoLine) {
  const std::string log = Write("sep.log", Boot(false, "729_280"));
  auto r = RunPpdeploy("calibrate --log " + log + " --model glm-5.3-w4a16");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output,
              HasSubstr("the log has no \"Available KV cache memory\" line and no \"GPU KV cache size\" "
                        "line to infer it from; unread: " +
                        log + ":3: malformed 'GPU KV cache size' line (stops at byte 22 of the message: '_')"))
      << r.output;
}

}  // namespace
}  // namespace ppdeploy
