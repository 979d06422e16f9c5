// Issue 23 item 7: `calibrate` printed "within rounding" for 18,829 predicted blocks against an allowed
// 18,976..18,977 (only the logged pool was compared with the interval), and repeated one warning once per
// rank. The logs are constructed in the line formats of the real boots they are modelled on (cited per test).
#include <gtest/gtest.h>

#include <algorithm>

#include "calibration/check.h"
#include "deploy_test_util.h"
#include "vllm/log_parser.h"

namespace ppdeploy {
namespace {

// DEV-MLA-18, vllm recipes PR #115 (8 x H200, TP8): 46.80 GiB available, 715,072 tokens = 11,173 blocks of 64,
// inside the rounding interval 11,172..11,174 (tests/calibration/log_facts_test.cc KimiK2Tp8).
const char* kKimiLog =
    "(Worker_TP0 pid=591236) INFO 11-06 12:08:54 [gpu_worker.py:349] Available KV cache memory: 46.80 GiB\n"
    "(EngineCore_DP0 pid=591074) INFO 11-06 12:08:55 [kv_cache_utils.py:1229] GPU KV cache size: 715,072 tokens\n";

Deployment Kimi() {
  return testing::DeploymentWith({{"model", "kimi-k2"},
                                  {"gpu", "h200"},
                                  {"vllm_version", "0.11"},
                                  {"max_model_len", "262144"},
                                  {"calibration", ""},
                                  {"spec_method", "none"},
                                  {"kv_cache_dtype", "auto"}});
}

TEST(RoundingVerdictTest, BothInsideIsWithinRounding) {
  Deployment d = Kimi();
  LogCalibration c = CalibrateFromLog(ParseBootLog(kKimiLog), d, LayoutSpec{8, 1, 1, {}});
  CalibrationCheck k = CheckCalibration(c, d);
  EXPECT_TRUE(k.predicted_within);
  EXPECT_TRUE(k.logged_within);
  EXPECT_TRUE(k.within_rounding);
}

TEST(RoundingVerdictTest, APredictionOutsideTheIntervalIsNotWithinRounding) {
  // The planner's prediction held off the interval (a fixed pool of 11,000 blocks) while the logged pool lies
  // inside it: the case of issue 23 item 7, where the logged pool alone decided "within rounding".
  Deployment d = Kimi();
  LogCalibration c = CalibrateFromLog(ParseBootLog(kKimiLog), d, LayoutSpec{8, 1, 1, {}});
  d.num_gpu_blocks_override = 11000;
  CalibrationCheck k = CheckCalibration(c, d);
  EXPECT_EQ(k.predicted_blocks, 11000);
  EXPECT_EQ(k.blocks_lo, 11172);
  EXPECT_EQ(k.blocks_hi, 11174);
  EXPECT_TRUE(k.logged_within);
  EXPECT_FALSE(k.predicted_within);
  EXPECT_FALSE(k.within_rounding);
}

TEST(RoundingVerdictTest, RanksInferredFromThePoolAreWarnedOnce) {
  // A PP2 boot in the vLLM 0.19 formats of the seed's log (docs/seed.md §6: 41,37 -> 729,280 tokens) where no
  // worker printed its available memory: both ranks are inferred from the pool, and the warning that each is
  // assumed to bind names both ranks once.
  const char* log =
      "(APIServer pid=1) INFO 08-21 18:00:00 [entrypoints/utils.py:233] non-default args: {'max_model_len': 524288, "
      "'tensor_parallel_size': 4, 'pipeline_parallel_size': 2, 'gpu_memory_utilization': 0.95}\n"
      "(EngineCore_DP0 pid=2) INFO 08-21 18:00:11 [distributed/utils.py:1] Hidden layers were unevenly "
      "partitioned: [41,37]. This can be manually overridden using the VLLM_PP_LAYER_PARTITION environment "
      "variable\n"
      "(EngineCore_DP0 pid=2) INFO 08-21 18:03:01 [v1/core/kv_cache_utils.py:1319] GPU KV cache size: 729,280 "
      "tokens\n";
  Deployment d = testing::DeploymentWith({{"calibration", ""}});
  LogCalibration c = CalibrateFromLog(ParseBootLog(log), d, LayoutSpec{4, 2, 1, {41, 37}});
  ASSERT_EQ(c.ranks.size(), 2u);
  EXPECT_TRUE(c.ranks[0].inferred);
  EXPECT_TRUE(c.ranks[1].inferred);
  const auto n = std::count_if(c.warnings.begin(), c.warnings.end(),
                               [](const std::string& w) { return w.find("printed nothing") != std::string::npos; });
  EXPECT_EQ(n, 1) << ::testing::PrintToString(c.warnings);
  EXPECT_NE(std::find(c.warnings.begin(), c.warnings.end(),
                      "PP ranks 0, 1: 2 ranks printed nothing; each is assumed to bind, so each figure is a lower "
                      "bound"),
            c.warnings.end())
      << ::testing::PrintToString(c.warnings);
}

}  // namespace
}  // namespace ppdeploy
