// get_pp_indices mirror: vllm/distributed/utils.py (vllm-rules.md §1.4).
#include "layout/partition.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace ppdeploy {
namespace {
using testing::ErrorOf;
using V = std::vector<int>;

TEST(PartitionTest, DefaultSplitMatchesVllmExamples) {
  // vllm-rules.md §1.4 table.
  EXPECT_EQ(DefaultPartition(61, 2), (V{31, 30}));
  EXPECT_EQ(DefaultPartition(61, 3), (V{20, 21, 20}));
  EXPECT_EQ(DefaultPartition(61, 4), (V{15, 15, 16, 15}));
  EXPECT_EQ(DefaultPartition(61, 8), (V{7, 7, 8, 8, 8, 8, 8, 7}));
  EXPECT_EQ(DefaultPartition(78, 4), (V{19, 20, 20, 19}));
  EXPECT_EQ(DefaultPartition(78, 8), (V{9, 10, 10, 10, 10, 10, 10, 9}));
  EXPECT_EQ(DefaultPartition(78, 2), (V{39, 39}));
  EXPECT_EQ(DefaultPartition(27, 2), (V{14, 13}));  // DeepSeek-V2-Lite PP2 (DEV-MLA-01)
}

TEST(PartitionTest, LastRankNeverGetsTheRemainder) {
  for (int layers = 1; layers <= 128; ++layers)
    for (int pp = 1; pp <= std::min(layers, 16); ++pp) {
      V p = DefaultPartition(layers, pp);
      int sum = 0;
      for (int v : p) sum += v;
      EXPECT_EQ(sum, layers);
      EXPECT_EQ(p.back(), layers / pp) << layers << "/" << pp;
    }
}

TEST(PartitionTest, VllmErrorTexts) {
  EXPECT_EQ(ErrorOf([] { ParsePartition("15,x,16", 3, 61); }), "Invalid partition string: 15,x,16");
  EXPECT_EQ(ErrorOf([] { ParsePartition("20,20,21", 4, 61); }), "len(partitions)=3 does not match pp_size=4.");
  EXPECT_EQ(ErrorOf([] { ParsePartition("15,15,15,15", 4, 61); }),
            "sum(partitions)=60 does not match num_hidden_layers=61.");
  EXPECT_EQ(ErrorOf([] { ParsePartition("41,,37", 3, 78); }), "Invalid partition string: 41,,37");
  EXPECT_EQ(ErrorOf([] { ParsePartition("", 1, 78); }), "Invalid partition string: ");
}

TEST(PartitionTest, PythonIntSemantics) {
  // int() accepts surrounding whitespace, a sign and '_' between digits.
  EXPECT_EQ(ParsePartition(" 41 ,+37", 2, 78), (V{41, 37}));
  EXPECT_EQ(ParsePartition("4_1,37", 2, 78), (V{41, 37}));
  EXPECT_EQ(ParsePartition("041,037", 2, 78), (V{41, 37}));
  EXPECT_EQ(ErrorOf([] { ParsePartition("4__1,37", 2, 78); }), "Invalid partition string: 4__1,37");
  EXPECT_EQ(ErrorOf([] { ParsePartition("_41,37", 2, 78); }), "Invalid partition string: _41,37");
  EXPECT_EQ(ErrorOf([] { ParsePartition("41.0,37", 2, 78); }), "Invalid partition string: 41.0,37");
  // vLLM does not reject negative entries; ppdeploy's planning check does.
  V neg = ParsePartition("80,-2", 2, 78);
  EXPECT_EQ(neg, (V{80, -2}));
  EXPECT_EQ(ErrorOf([&] { ValidatePartitionForPlanning(neg); }),
            "layer partition 80,-2: entry 2 is -2 (a stage cannot hold a negative number of layers)");
  EXPECT_EQ(ErrorOf([] { ParsePartition("99999999999999999999999,1", 2, 78); }),
            "sum(partitions)=100000000000000000000000 does not match num_hidden_layers=78.");
}

TEST(PartitionTest, RankRanges) {
  V p{41, 37};
  EXPECT_EQ(RankRange(p, 0).start, 0);
  EXPECT_EQ(RankRange(p, 0).end, 41);
  EXPECT_EQ(RankRange(p, 1).start, 41);
  EXPECT_EQ(RankRange(p, 1).end, 78);
}

}  // namespace
}  // namespace ppdeploy
