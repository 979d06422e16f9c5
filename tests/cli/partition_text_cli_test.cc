// Issue 24: a layer split that is no split is refused with --pp 1 as with --pp 2, a 0-layer stage is
// said by name, and plan and preflight take the same splits. The rule is vLLM's get_pp_indices
// (`[int(x) for x in VLLM_PP_LAYER_PARTITION.split(",")]`, then the count and sum checks;
// vllm/distributed/utils.py), applied by the one parser (layout/partition.h ParsePartition).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cli_runner.h"

namespace ppdeploy {
namespace {
using ::testing::HasSubstr;
using testing::RunPpdeploy;

TEST(PartitionTextCliTest, TextThatIsNoSplitIsRefusedWithOneStageToo) {
  // Before: exit 0, the text ignored without a word (PP_SIZE=1 does not pass the split to vLLM).
  for (const std::string text : {"'41 37'", "'41;37'",
                                 "'41\xef\xbc\x8c"
                                 "37'",
                                 "' '"}) {
    auto r = RunPpdeploy("plan --pp 1 --partition " + text);
    EXPECT_EQ(r.exit_code, 1) << text << "\n" << r.output;
    EXPECT_THAT(r.output, HasSubstr("ppdeploy: error: pp_layer_partition (flag --partition): Invalid partition "
                                    "string: "))
        << text;
    // Without --pp the stage count comes from the text: one field, the same refusal.
    auto n = RunPpdeploy("plan --partition " + text);
    EXPECT_EQ(n.exit_code, 1) << text << "\n" << n.output;
  }
  auto full = RunPpdeploy(
      "plan --pp 1 --partition '41\xef\xbc\x8c"
      "37'");
  EXPECT_THAT(full.output, HasSubstr("(U+FF0C), is neither a decimal digit nor whitespace"));  // named
}

TEST(PartitionTextCliTest, AWholeModelSplitWithOneStageIsIgnoredAndSaidSo) {
  auto r = RunPpdeploy("plan --pp 1 --partition 78");
  // Issue 23 item 7: the seed's weights do not fit TP4/PP1 ("problem:"), so plan exits 2 (README: a check found a
  // problem); the split is still ignored and said so.
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("warning: pp_layer_partition (flag --partition): PP_LAYER_PARTITION=78 is ignored "
                                  "with PP_SIZE=1"));
}

TEST(PartitionTextCliTest, AZeroLayerStageIsWarnedByName) {
  // vLLM's get_pp_indices checks only the count and the sum: 0,78 starts, with rank 0 holding no layer.
  auto r = RunPpdeploy("plan --partition 0,78");
  EXPECT_EQ(r.exit_code, 2) << r.output;  // issue 23 item 7: PP rank 1's 78 layers do not fit ("problem:")
  EXPECT_THAT(r.output, HasSubstr("warning: layer split: segment 1 is 0: PP rank 0 holds no layer"));
  auto t = RunPpdeploy("plan --partition 41,37,0");
  EXPECT_THAT(t.output, HasSubstr("warning: layer split: segment 3 is 0: PP rank 2 holds no layer"));
  auto p = RunPpdeploy("preflight --partition 0,78");
  EXPECT_THAT(p.output, HasSubstr("ppdeploy: warning: layer split: segment 1 is 0"));
}

TEST(PartitionTextCliTest, PreflightSaysAnEmptySplitIsVllmsDefault) {
  auto r = RunPpdeploy("preflight --partition ''");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("ppdeploy: warning: pp_layer_partition (flag --partition) is empty: read as unset, "
                                  "so VLLM_PP_LAYER_PARTITION is not passed and vLLM uses its default split 39,39"));
}

TEST(PartitionTextCliTest, PlanAndPreflightTakeTheSameOneStageSplit) {
  // Before: plan accepted --partition 78 and preflight refused it ("give two or more stages").
  auto plan = RunPpdeploy("plan --partition 78");
  EXPECT_EQ(plan.exit_code, 2) << plan.output;  // planned (issue 23 item 7: exit 2, its weights do not fit)
  auto pre = RunPpdeploy("preflight --partition 78");
  EXPECT_EQ(pre.exit_code, 0) << pre.output;
  EXPECT_THAT(pre.output, HasSubstr("split 78"));
  // And both refuse what the parser refuses.
  EXPECT_EQ(RunPpdeploy("preflight --partition '78 '").exit_code, 0);  // int('78 ') is 78 in Python
  EXPECT_EQ(RunPpdeploy("preflight --partition '7 8'").exit_code, 1);
  EXPECT_EQ(RunPpdeploy("plan --partition '7 8'").exit_code, 1);
}

TEST(PartitionTextCliTest, AnEmptyVllmVersionIsRefusedNotDefaulted) {
  auto r = RunPpdeploy("plan --vllm ''");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(r.output, "ppdeploy: error: vllm_version (flag --vllm): expected a non-empty value, got \"\"\n");
}

}  // namespace
}  // namespace ppdeploy
