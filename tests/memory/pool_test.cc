// vLLM block arithmetic against measured pools: docs/seed.md §3, §5, §6 and the real boot logs in
// the boot-log examples (docs/sources.md §3). Available memory is logged with two decimals, so each
// check takes the block interval that [GiB - 0.005, GiB + 0.005] allows and requires the measured
// block count inside it.
#include "memory/pool.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/units.h"
#include "layout/planner.h"
#include "model/presets.h"
#include "test_util.h"

namespace ppdeploy {
namespace {

struct Interval {
  std::int64_t lo, hi;
};

PoolInputs Inputs(std::vector<std::int64_t> avail, std::vector<std::int64_t> bpt, int block, std::int64_t mml,
                  TokensFormula f = TokensFormula::kConcurrencyTimesMaxModelLen) {
  PoolInputs in;
  in.available_bytes = std::move(avail);
  in.bytes_per_token = std::move(bpt);
  in.block_size = block;
  in.max_model_len = mml;
  in.tokens_formula = f;
  return in;
}

// Pool block interval when each rank's available GiB is known to two decimals.
Interval BlockInterval(const std::vector<double>& gib, const std::vector<std::int64_t>& bpt, int block,
                       double minus_mib = 0) {
  std::vector<std::int64_t> lo, hi;
  for (double g : gib) {
    lo.push_back(GiBToBytes(g - 0.005) - MiBToBytes(minus_mib));
    hi.push_back(GiBToBytes(g + 0.005) - MiBToBytes(minus_mib));
  }
  return {ComputePool(Inputs(lo, bpt, block, 1 << 20)).num_gpu_blocks,
          ComputePool(Inputs(hi, bpt, block, 1 << 20)).num_gpu_blocks};
}

TEST(PoolTest, SeedTp8Pp1At17_26GiB) {
  // docs/seed.md §3: TP8/PP1, 54,728 B/token (79 x 656 + 22 x 132), block 64, 17.26 GiB -> 338,688 tokens = 5,292
  // blocks.
  Interval iv = BlockInterval({17.26}, {54728}, 64);
  EXPECT_LE(iv.lo, 5292);
  EXPECT_GE(iv.hi, 5292);
  auto r = ComputePool(Inputs({5292LL * 64 * 54728}, {54728}, 64, 524288, TokensFormula::kBlocksTimesBlockSize));
  EXPECT_EQ(r.kv_tokens, 338688);
  // With the article's own 54,596 B/token (21 indexer layers) the measured pool falls outside:
  // the 0.22% "error" was the MTP layer's indexer cache (docs/seed.md §3 derived check).
  Interval wrong = BlockInterval({17.26}, {54596}, 64);
  EXPECT_GT(wrong.lo, 5292);
}

TEST(PoolTest, Seed3939Pp1At15_56GiB) {
  // docs/seed.md §6: 597,760 tokens = 9,340 blocks, bound by PP1 with 40 x 656 + 13 x 132 = 27,956 B/token.
  Interval iv = BlockInterval({15.56}, {27956}, 64);
  EXPECT_LE(iv.lo, 9340);
  EXPECT_GE(iv.hi, 9340);
  auto r = ComputePool(Inputs({9340LL * 64 * 27956}, {27956}, 64, 524288));
  EXPECT_EQ(r.kv_tokens, 597760);
  EXPECT_NEAR(r.max_concurrency, 1.14, 0.005);  // "1.14x" (docs/seed.md §6)
}

TEST(PoolTest, Seed4137Pp0From21_95GiBMinusTwoMoeLayers) {
  // docs/seed.md §6 derived check: PP0 at 41,37 = 41 x 656 + 12 x 132 = 28,480 B/token; available
  // 21.95 GiB - 2 x 1,332.6 MiB -> measured 729,280 tokens = 11,395 blocks.
  Interval iv = BlockInterval({21.95}, {28480}, 64, 2 * 1332.6);
  EXPECT_LE(iv.lo, 11395);
  EXPECT_GE(iv.hi, 11395);
  auto r = ComputePool(Inputs({11395LL * 64 * 28480}, {28480}, 64, 524288));
  EXPECT_EQ(r.kv_tokens, 729280);
  EXPECT_NEAR(r.max_concurrency, 1.39, 0.005);  // "1.39x"
  EXPECT_EQ(CapacityLogText(r, 524288, true),
            "GPU KV cache size: 729,280 tokens, Maximum concurrency for 524,288 tokens per request: 1.39x");
}

TEST(PoolTest, FloatTruncationAt352000) {
  // docs/seed.md §5: TP8/PP1 v0.30, 6,046 blocks at max_model_len 352,000 -> 386,943 tokens:
  // int(6046 / cdiv(352000, 64) * 352000) = int(386943.99...) (docs/vllm-rules.md §1.12, #41069).
  auto r = ComputePool(Inputs({6046LL * 64 * 54728}, {54728}, 64, 352000));
  EXPECT_EQ(r.num_gpu_blocks, 6046);
  EXPECT_EQ(r.blocks_per_request, 5500);
  EXPECT_EQ(r.kv_tokens, 386943);
  // The older formula (num_blocks x block_size) gives 386,944.
  EXPECT_EQ(
      ComputePool(Inputs({6046LL * 64 * 54728}, {54728}, 64, 352000, TokensFormula::kBlocksTimesBlockSize)).kv_tokens,
      386944);
}

TEST(PoolTest, MinOverRanksAndNullBlock) {
  auto r = ComputePool(Inputs({1000 * 64 * 100, 800 * 64 * 100}, {100, 120}, 64, 6400));
  EXPECT_EQ(r.num_blocks_per_rank, (std::vector<std::int64_t>{1000, 666}));
  EXPECT_EQ(r.num_gpu_blocks, 666);
  EXPECT_EQ(r.binding_rank, 1);
  EXPECT_EQ(r.usable_tokens, 665 * 64);
  EXPECT_EQ(r.largest_max_model_len, 666 * 64);
  PoolInputs o = Inputs({1000 * 64 * 100}, {100}, 64, 6400);
  o.num_gpu_blocks_override = 5000;  // makes no memory: logged as given
  EXPECT_EQ(ComputePool(o).num_gpu_blocks, 5000);
  // Negative available memory gives zero blocks, not a crash.
  EXPECT_EQ(ComputePool(Inputs({-5}, {100}, 64, 64)).num_gpu_blocks, 0);
}

Deployment Bare(const char* model, const char* vllm, const char* gpu) {
  Deployment d;
  d.model = FindModelPreset(model)->Parse();
  d.weights = EstimateWeights(d.model);
  d.vllm = FindVllmProfile(vllm);
  d.gpu = FindGpu(gpu);
  return d;
}

TEST(PoolTest, RealLogDeepSeekV2LiteTp2Pp2) {
  // DEV-MLA-01 (vllm PR #20665, July 2025, L4, TP2/PP2, max_model_len 1,024): per-rank available
  // 12.13 GiB (stage 0) and 11.33 GiB (stage 1) -> "GPU KV cache size: 807,792 tokens",
  // "Maximum concurrency for 1,024 tokens per request: 788.86x".
  Deployment d = Bare("deepseek-v2-lite", "0.10", "l4");
  EffectiveKv kv = ResolveKvDtype(d.model, KvCacheDtype::kAuto, d.vllm, d.gpu);
  int block = DefaultBlockSize(d.model, kv, d.vllm, d.gpu);
  EXPECT_EQ(block, 16);
  std::vector<int> split = DefaultPartition(27, 2);  // [14, 13]
  std::vector<std::int64_t> bpt{StageKvBytesPerToken(d, kv, 2, split, 0, {}),
                                StageKvBytesPerToken(d, kv, 2, split, 1, {})};
  EXPECT_EQ(bpt, (std::vector<std::int64_t>{14 * 1152, 13 * 1152}));
  Interval iv = BlockInterval({12.13, 11.33}, bpt, block);
  EXPECT_LE(iv.lo, 807792 / 16);
  EXPECT_GE(iv.hi, 807792 / 16);
  auto r = ComputePool(Inputs({50487LL * 16 * bpt[0], GiBToBytes(11.33)}, bpt, block, 1024, d.vllm.tokens_formula));
  EXPECT_EQ(r.kv_tokens, 807792);
  EXPECT_EQ(r.binding_rank, 0);
  EXPECT_EQ(fmt::format("{:.2f}", r.max_concurrency), "788.86");
}

TEST(PoolTest, RealLogKimiK2Tp8) {
  // DEV-MLA-18 (vllm recipes PR #115, Nov 2025, 8 x H200, TP8): "Available KV cache memory: 46.80 GiB",
  // "GPU KV cache size: 715,072 tokens"; 61 layers x 576 x 2 B = 70,272 B/token, FlashMLA block 64.
  Deployment d = Bare("kimi-k2", "0.11", "h200");
  EffectiveKv kv = ResolveKvDtype(d.model, KvCacheDtype::kAuto, d.vllm, d.gpu);
  int block = DefaultBlockSize(d.model, kv, d.vllm, d.gpu);
  EXPECT_EQ(block, 64);
  std::int64_t bpt = StageKvBytesPerToken(d, kv, 8, {61}, 0, {});
  EXPECT_EQ(bpt, 70272);
  Interval iv = BlockInterval({46.80}, {bpt}, block);
  EXPECT_LE(iv.lo, 715072 / 64);
  EXPECT_GE(iv.hi, 715072 / 64);
  auto r = ComputePool(Inputs({GiBToBytes(46.80)}, {bpt}, block, 262144, d.vllm.tokens_formula));
  EXPECT_EQ(r.kv_tokens, 715072);  // the point value lands exactly
}

// A 0-layer stage (issue 15: "forces the pool to 0 although the other stage has 4,921 blocks").
// vllm/v1/core/kv_cache_utils.py get_kv_cache_configs (#33698 onwards): each worker's groups are
// `_project_kv_cache_groups_to_worker(global groups, worker spec)`, which keeps the global
// UniformTypeKVCacheSpecs for a worker with none of its layers; get_kv_cache_config_from_groups then
// gives that worker `available // page_size_bytes` of the global spec (all layers), and the pool is
// the minimum over workers. A plain single spec instead reaches `assert group_size > 0`.
TEST(PoolTest, ZeroLayerStageWithDsaDividesByTheGlobalPage) {
  PoolInputs in = Inputs({GiBToBytes(60), GiBToBytes(20)}, {0, 50000}, 64, 524288);
  in.dsa = true;
  in.combine = PoolCombine::kPerRankMin;
  PoolResult r = ComputePool(in);
  // Rank 0: 60 GiB / (64 x 50,000 B of all layers) = 20,132 blocks; rank 1: 20 GiB / (64 x 50,000) = 6,710.
  EXPECT_EQ(r.num_blocks_per_rank,
            (std::vector<std::int64_t>{GiBToBytes(60) / (64 * 50000), GiBToBytes(20) / (64 * 50000)}));
  EXPECT_EQ(r.num_blocks_per_rank[1], 6710);
  EXPECT_EQ(r.num_gpu_blocks, 6710);  // not 0
  EXPECT_EQ(r.binding_rank, 1);
  // The stage without layers binds when it has less memory.
  in.available_bytes = {GiBToBytes(10), GiBToBytes(20)};
  EXPECT_EQ(ComputePool(in).num_gpu_blocks, GiBToBytes(10) / (64 * 50000));
  EXPECT_EQ(ComputePool(in).binding_rank, 0);
}

TEST(PoolTest, ZeroLayerStageWithOneSpecIsRefused) {
  PoolInputs in = Inputs({GiBToBytes(60), GiBToBytes(20)}, {35136, 0}, 64, 4096);  // DeepSeek-V3 MLA, not DSA
  in.combine = PoolCombine::kPerRankMin;
  EXPECT_EQ(testing::ErrorOf([&] { ComputePool(in); }),
            "PP rank 1 holds no attention layer (a stage with 0 layers and no MTP layer): vLLM cannot size its KV "
            "cache and stops at start-up (vllm/v1/core/kv_cache_utils.py get_kv_cache_config_from_groups: "
            "AssertionError \"group_size must be greater than 0\"); give every stage at least one layer");
  in.combine = PoolCombine::kV08MinMemory;  // v0.8: is_kv_cache_type_uniform({}) is False -> NotImplementedError
  EXPECT_NE(testing::ErrorOf([&] { ComputePool(in); }).find("PP rank 1 holds no attention layer"), std::string::npos);
}

TEST(PoolTest, ZeroLayerStageThroughThePlanner) {
  // DeepSeek-V3.2 (DSA) on 0.30-custom, 8 x H200 per stage, split 0,61 without MTP: stage 0 holds
  // only the embedding; its blocks come from the page of all 61 layers, like vLLM's global spec.
  Deployment d = Bare("deepseek-v3.2", "0.30-custom", "h200");
  d.max_model_len = 131072;
  LayoutPlan p = PlanLayout(d, {8, 2, 1, {0, 61}});
  ASSERT_EQ(p.ranks.size(), 2u);
  EXPECT_EQ(p.ranks[0].bytes_per_token, 0);
  EXPECT_GT(p.pool.num_gpu_blocks, 0);
  EXPECT_EQ(p.pool.num_blocks_per_rank[0], p.ranks[0].available_kv.bytes / (p.block_size * p.ranks[1].bytes_per_token));
  // DeepSeek-V3 (MLA, one spec) with a 0-layer stage is refused with the reason.
  Deployment v3 = Bare("deepseek-v3", "0.30-custom", "h200");
  v3.max_model_len = 131072;
  EXPECT_NE(testing::ErrorOf([&] {
              PlanLayout(v3, {8, 2, 1, {61, 0}});
            }).find("PP rank 1 holds no attention layer"),
            std::string::npos);
}

TEST(PoolTest, ThousandsSeparator) {
  EXPECT_EQ(WithThousands(0), "0");
  EXPECT_EQ(WithThousands(999), "999");
  EXPECT_EQ(WithThousands(1000), "1,000");
  EXPECT_EQ(WithThousands(1199872), "1,199,872");
  EXPECT_EQ(WithThousands(-1234), "-1,234");
}

}  // namespace
}  // namespace ppdeploy
