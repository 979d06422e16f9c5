// Issue 24: DecidePartition with one stage still reads the text by vLLM's rule (so "41 37" is refused as
// with two stages), and a 0-layer stage is warned by name. vLLM's get_pp_indices
// (vllm/distributed/utils.py) parses `[int(x) for x in text.split(",")]` and checks only the count and the
// sum, so a 0 entry starts a rank without decoder layers.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "deploy/resolve.h"

namespace ppdeploy {
namespace {

using ::testing::HasSubstr;

std::string Joined(const CheckResult& c) {
  std::string s;
  for (const auto& m : c.messages) s += m + "\n";
  return s;
}

TEST(PartitionDecisionTest, OneStageRefusesTextThatIsNoSplit) {
  for (const char* text : {"41 37", "41;37",
                           "41\xef\xbc\x8c"
                           "37",
                           " ", "41,38"}) {
    auto c = DecidePartition(text, 1, 78, "flag --partition");
    EXPECT_EQ(c.check.status, CheckStatus::kFail) << text;
    EXPECT_THAT(Joined(c.check), HasSubstr("pp_layer_partition (flag --partition): ")) << text;
    EXPECT_TRUE(c.partition.empty()) << text;
  }
  auto space = DecidePartition("41 37", 1, 78, "flag --partition");
  EXPECT_THAT(Joined(space.check), HasSubstr("Invalid partition string: 41 37 (field 1 of 1, \"41 37\""));
}

TEST(PartitionDecisionTest, OneStageKeepsAWellFormedSplitIgnoredAndSaysSo) {
  auto whole = DecidePartition("78", 1, 78, "flag --partition");
  EXPECT_EQ(whole.check.status, CheckStatus::kWarn);
  EXPECT_FALSE(whole.pass_env);
  EXPECT_EQ(whole.partition, std::vector<int>({78}));
  ASSERT_EQ(whole.warnings.size(), 1u);
  EXPECT_EQ(whole.warnings[0],
            "pp_layer_partition (flag --partition): PP_LAYER_PARTITION=78 is ignored with PP_SIZE=1 (vLLM reads it "
            "only with pipeline parallelism); not passed");
  auto other = DecidePartition("41,37", 1, 78);  // another layout's split: ignored, as before
  EXPECT_EQ(other.check.status, CheckStatus::kWarn);
  auto none = DecidePartition("", 1, 78);
  EXPECT_EQ(none.check.status, CheckStatus::kPass);
  EXPECT_TRUE(none.warnings.empty());
}

TEST(PartitionDecisionTest, AZeroLayerStageIsWarnedByName) {
  auto c = DecidePartition("0,78", 2, 78);
  EXPECT_EQ(c.check.status, CheckStatus::kWarn);
  EXPECT_TRUE(c.pass_env);  // vLLM accepts it: passed as given
  ASSERT_EQ(c.warnings.size(), 1u);
  EXPECT_EQ(c.warnings[0],
            "layer split: segment 1 is 0: PP rank 0 holds no layer (vLLM's get_pp_indices accepts it; that "
            "stage's GPUs only pass the hidden states on)");
  auto last = DecidePartition("41,37,0", 3, 78);
  ASSERT_EQ(last.warnings.size(), 1u);
  EXPECT_THAT(last.warnings[0], HasSubstr("segment 3 is 0: PP rank 2 holds no layer"));
  EXPECT_TRUE(DecidePartition("41,37", 2, 78).warnings.empty());
}

}  // namespace
}  // namespace ppdeploy
