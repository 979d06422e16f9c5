// Issue 24: a record that another process's output cut mid-line and that the splitter rejoined with a
// tail from a later line is read, and said: which piece belongs where is a guess, so the figure read is
// shown. Also a malformed capacity line names the byte where reading stopped.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "vllm/log_parser.h"

namespace ppdeploy {
namespace {

using ::testing::HasSubstr;

std::string Joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += x + "\n";
  return s;
}

TEST(LogRejoinedWarnTest, ARejoinedRecordIsUsedAndWarned) {
  const std::string text =
      "(Worker_PP0_TP0 pid=102) INFO 08-21 18:03:00 [v1/worker/gpu_worker.py:436] Available KV cache memory: 21.9"
      "(Worker_PP1_TP0 pid=103) INFO 08-21 18:03:00 [v1/worker/gpu_worker.py:436] Available KV cache memory: 24.10 "
      "GiB\n"
      "5 GiB\n";
  BootLog log = ParseBootLog(text, LogParseOptions{"boot.log", 0});
  ASSERT_EQ(log.workers.size(), 2u);
  for (const auto& w : log.workers)
    EXPECT_EQ(w.available_kv_gib, w.key.find("PP0") != std::string::npos ? 21.95 : 24.10) << w.key;
  EXPECT_THAT(Joined(log.warnings),
              HasSubstr("boot.log:1: a record of Worker_PP0_TP0 was cut mid-line by another process's output and "
                        "rejoined with a tail from a later line; read as 'Available KV cache memory: 21.95 GiB'"));
}

TEST(LogRejoinedWarnTest, AMalformedCapacityLineNamesTheByte) {
  const std::string text =
      "(EngineCore_DP0 pid=101) INFO 08-21 18:03:01 [v1/core/kv_cache_utils.py:1319] GPU KV cache size: 729,\xff"
      "280 tokens\n"
      "(EngineCore_DP0 pid=101) INFO 08-21 18:03:01 [v1/core/kv_cache_utils.py:1319] GPU KV cache size: 729_280 "
      "tokens\n";
  BootLog log = ParseBootLog(text, LogParseOptions{"boot.log", 0});
  EXPECT_TRUE(log.kv_tokens.empty());
  EXPECT_THAT(Joined(log.warnings), HasSubstr("boot.log:1: malformed 'GPU KV cache size' line (invalid UTF-8 byte "
                                              "0xff at byte 23 of the message)"));
  EXPECT_THAT(Joined(log.warnings), HasSubstr("boot.log:2: malformed 'GPU KV cache size' line (stops at byte 22 of "
                                              "the message: '_')"));
  EXPECT_EQ(Joined(log.warnings).find('\xff'), std::string::npos);
}

}  // namespace
}  // namespace ppdeploy
