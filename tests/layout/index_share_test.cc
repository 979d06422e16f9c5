// IndexShare analysis against the seed (docs/seed.md §6-§7) and docs/vllm-rules.md §1.3.
#include "layout/index_share.h"

#include <gtest/gtest.h>

#include "model/presets.h"

namespace ppdeploy {
namespace {
using V = std::vector<int>;

ModelConfig Seed() { return FindModelPreset("glm-5.3-w4a16")->Parse(); }

V FullLayers(const ModelConfig& m) {
  V out;
  for (int i = 0; i < m.num_hidden_layers; ++i)
    if (LayerIsFull(m, i)) out.push_back(i);
  return out;
}

TEST(IndexShareTest, SeedScheduleHas21FullLayers) {
  // docs/vllm-rules.md §1.3: freq 4 / offset 3 over 78 layers -> {0, 1, 2, 6, 10, ..., 74}, 21 layers
  // (SGLang resolve_dsa_indexer_layer_ids agrees).
  V expected{0, 1, 2};
  for (int i = 6; i <= 74; i += 4) expected.push_back(i);
  EXPECT_EQ(FullLayers(Seed()), expected);
  EXPECT_EQ(expected.size(), 21u);
  EXPECT_TRUE(LayerIsFull(Seed(), 78));  // MTP layer always has an indexer
}

TEST(IndexShareTest, StageOfLayers20To40ResolvesToAbsoluteIds) {
  // SGLang test quoted in docs/vllm-rules.md §1.3: layers 20-40 -> (22, 26, 30, 34, 38).
  auto r = AnalyzeIndexShare(Seed(), {20, 21, 37}, IndexShareMode::kFull, true);
  EXPECT_EQ(r.ranks[1].self_computing, (V{22, 26, 30, 34, 38}));
}

TEST(IndexShareTest, SeedSplitsForcedLayers) {
  // docs/seed.md §6 table and §7: rank1 forced layers per split.
  auto m = Seed();
  EXPECT_EQ(AnalyzeIndexShare(m, {39, 39}, IndexShareMode::kFull, true).forced, (V{39, 40, 41}));
  EXPECT_EQ(AnalyzeIndexShare(m, {40, 38}, IndexShareMode::kFull, true).forced, (V{40, 41}));
  auto r4137 = AnalyzeIndexShare(m, {41, 37}, IndexShareMode::kFull, true);
  EXPECT_EQ(r4137.forced, (V{41}));
  EXPECT_EQ(r4137.ranks[1].range.start, 41);
  EXPECT_EQ(r4137.ranks[1].range.end, 78);
  EXPECT_EQ(r4137.ranks[1].self_computing, (V{42, 46, 50, 54, 58, 62, 66, 70, 74}));
  EXPECT_EQ(r4137.ranks[1].residual_unsafe, 0);
  EXPECT_TRUE(r4137.ranks[0].forced.empty());  // rank0 never needs one: 0, 1, 2 self-compute
  auto r4236 = AnalyzeIndexShare(m, {42, 36}, IndexShareMode::kFull, true);
  EXPECT_TRUE(r4236.zero_dependency);
  EXPECT_TRUE(r4236.forced.empty());
}

TEST(IndexShareTest, CounterExample4533OldFormulaMissesLayer45) {
  // docs/seed.md §6/§7: at 45,33 layer 45 reuses layer 42's index, which lives on PP0. The old interval
  // formula rank*n//w (rank1 = [39,78)) sees 42 on the same rank and misses it.
  auto r = AnalyzeIndexShare(Seed(), {45, 33}, IndexShareMode::kFull, false);
  EXPECT_EQ(r.ranks[1].range.start, 45);
  EXPECT_EQ(r.ranks[1].forced, (V{45}));
  EXPECT_EQ(r.ranks[1].legacy_range.start, 39);
  EXPECT_EQ(r.ranks[1].legacy_forced, (V{39, 40, 41}));
  EXPECT_TRUE(r.legacy_disagrees);
  EXPECT_FALSE(r.safe);  // no fix declared
  EXPECT_EQ(r.ranks[1].residual_unsafe, 1);
}

TEST(IndexShareTest, Pp4PerRankLists) {
  auto r = AnalyzeIndexShare(Seed(), {20, 20, 20, 18}, IndexShareMode::kFull, true);
  ASSERT_EQ(r.ranks.size(), 4u);
  EXPECT_TRUE(r.ranks[0].forced.empty());
  EXPECT_EQ(r.ranks[1].forced, (V{20, 21}));  // first producer on rank1 is 22
  EXPECT_EQ(r.ranks[2].forced, (V{40, 41}));  // 42
  EXPECT_EQ(r.ranks[3].forced, (V{60, 61}));  // 62
  EXPECT_EQ(r.ranks[3].self_computing, (V{62, 66, 70, 74}));
}

TEST(IndexShareTest, Pp1AlwaysSafeAndNoSharingMeansNotApplicable) {
  EXPECT_TRUE(AnalyzeIndexShare(Seed(), {78}, IndexShareMode::kFull, false).safe);
  EXPECT_FALSE(AnalyzeIndexShare(Seed(), {39, 39}, IndexShareMode::kNone, false).applies);
}

TEST(IndexShareTest, PatternForFixB) {
  // Issue 8: 39,39 -> F at 0,1,2,6,...,38 and 39,40,41, then 42,46,...,74.
  auto m = Seed();
  std::string p = IndexTopkPattern(m, {39, 40, 41});
  ASSERT_EQ(p.size(), 78u);
  for (int i = 0; i < 78; ++i) {
    bool full = i <= 2 || (i >= 6 && (i - 2) % 4 == 0) || (i >= 39 && i <= 41);
    EXPECT_EQ(p[i], full ? 'F' : 'S') << i;
  }
  EXPECT_EQ(IndexTopkPattern(m, {}), IndexTopkPattern(m, {}));
  // A model with a pattern follows it.
  m.index_topk_pattern = std::string(78, 'F');
  EXPECT_TRUE(LayerIsFull(m, 39));
}

}  // namespace
}  // namespace ppdeploy
