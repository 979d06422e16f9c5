// Bytes per token per layer (docs/vllm-rules.md §1.1-1.2, §1.13; docs/seed.md §3).
#include "memory/kv.h"

#include <gtest/gtest.h>

#include "layout/planner.h"
#include "model/presets.h"
#include "test_util.h"

namespace ppdeploy {
namespace {

ModelConfig Preset(const char* name) { return FindModelPreset(name)->Parse(); }
std::int64_t AttnBytes(const ModelConfig& m, KvCacheDtype dt, const char* vllm = "0.26", const char* gpu = "h100") {
  return AttentionBytesPerTokenPerLayer(m, ResolveKvDtype(m, dt, FindVllmProfile(vllm), FindGpu(gpu)), 1);
}

TEST(KvTest, MlaBytesPerLayer) {
  auto v32 = Preset("deepseek-v3.2");
  EXPECT_EQ(AttnBytes(v32, KvCacheDtype::kFp8DsMla), 656);   // flashmla_sparse.py docstring
  EXPECT_EQ(AttnBytes(v32, KvCacheDtype::kBfloat16), 1152);  // (512 + 64) x 2
  EXPECT_EQ(AttnBytes(v32, KvCacheDtype::kAuto), 1152);      // auto = bf16 model dtype (N)
  EXPECT_EQ(IndexerBytesPerTokenPerLayer(v32), 132);         // 128 + 4 x (128 / 128)
  // fp8 on DSA: FLASHMLA_SPARSE (Hopper) -> fp8_ds_mla; FLASHINFER_MLA_SPARSE (Blackwell) -> standard fp8.
  EXPECT_EQ(AttnBytes(v32, KvCacheDtype::kFp8, "0.26", "h100"), 656);
  EXPECT_EQ(AttnBytes(v32, KvCacheDtype::kFp8, "0.26", "b200"), 576);
  // v0.11.0: auto -> fp8_ds_mla for DeepSeek-V3.2.
  EXPECT_EQ(AttnBytes(v32, KvCacheDtype::kAuto, "0.11"), 656);
  auto v3 = Preset("deepseek-v3");
  EXPECT_EQ(AttnBytes(v3, KvCacheDtype::kFp8), 576);  // dense MLA standard fp8
  EXPECT_EQ(
      testing::ErrorOf([&] { AttnBytes(v3, KvCacheDtype::kFp8DsMla); }).rfind("--kv-cache-dtype fp8_ds_mla is", 0), 0u);
}

TEST(KvTest, GqaHeadsDivideThenReplicate) {
  auto llama = Preset("llama-3.1-8b");  // 8 KV heads x 128
  EffectiveKv bf16{"bfloat16", 2, ""};
  EXPECT_EQ(AttentionBytesPerTokenPerLayer(llama, bf16, 1), 2 * 8 * 128 * 2);
  EXPECT_EQ(AttentionBytesPerTokenPerLayer(llama, bf16, 4), 2 * 2 * 128 * 2);
  EXPECT_EQ(AttentionBytesPerTokenPerLayer(llama, bf16, 16), 2 * 1 * 128 * 2);  // max(1, 8/16)
}

Deployment SeedDeployment() {
  Deployment d;
  d.model = Preset("glm-5.3-w4a16");
  d.weights = EstimateWeights(d.model);
  d.gpu = FindGpu("a100-80gb");
  d.vllm = FindVllmProfile("0.30-custom");
  d.kv_cache_dtype = KvCacheDtype::kFp8DsMla;
  d.num_speculative_tokens = 3;
  d.max_model_len = 524288;
  d.gpu_memory_utilization = 0.95;
  return d;
}

TEST(KvTest, PerGpuBytesPerToken) {
  // docs/seed.md §3 derived check: TP8/PP1 with MTP = 79 x 656 + 22 x 132 = 54,728 B.
  Deployment d = SeedDeployment();
  EffectiveKv kv = ResolveKvDtype(d.model, d.kv_cache_dtype, d.vllm, d.gpu);
  EXPECT_EQ(StageKvBytesPerToken(d, kv, 8, {78}, 0, {}), 79 * 656 + 22 * 132);
  EXPECT_EQ(StageKvBytesPerToken(d, kv, 8, {78}, 0, {}), 54728);
  // Before 2026-06-19 every DSA layer owns an indexer cache: 79 x 788.
  d.vllm.index_share = IndexShareMode::kNone;
  EXPECT_EQ(StageKvBytesPerToken(d, kv, 8, {78}, 0, {}), 79 * 788);

  // DeepSeek-V3 bf16: 61 x 1152 = 70,272 B (docs/vllm-rules.md §1.13).
  Deployment v3 = d;
  v3.model = Preset("deepseek-v3");
  v3.num_speculative_tokens = 0;
  v3.vllm = FindVllmProfile("0.26");
  EffectiveKv bf16 = ResolveKvDtype(v3.model, KvCacheDtype::kAuto, v3.vllm, FindGpu("h100"));
  EXPECT_EQ(StageKvBytesPerToken(v3, bf16, 8, {61}, 0, {}), 70272);
  // DeepSeek-V3.2 fp8_ds_mla: 61 x (656 + 132) = 48,068 B; with MTP 48,856.
  Deployment v32 = v3;
  v32.model = Preset("deepseek-v3.2");
  EffectiveKv ds = ResolveKvDtype(v32.model, KvCacheDtype::kFp8DsMla, v32.vllm, FindGpu("h100"));
  EXPECT_EQ(StageKvBytesPerToken(v32, ds, 8, {61}, 0, {}), 48068);
  v32.num_speculative_tokens = 1;
  EXPECT_EQ(StageKvBytesPerToken(v32, ds, 8, {61}, 0, {}), 48856);
}

TEST(KvTest, Glm52Pp4PerRankTable) {
  // docs/vllm-rules.md §1.13: GLM-5.2, PP=4 [19,20,20,19], fp8_ds_mla, no MTP: 13,388 / 13,780 / 13,780 / 12,992.
  Deployment d = SeedDeployment();
  d.num_speculative_tokens = 0;
  EffectiveKv kv = ResolveKvDtype(d.model, d.kv_cache_dtype, d.vllm, d.gpu);
  std::vector<int> p{19, 20, 20, 19};
  EXPECT_EQ(StageKvBytesPerToken(d, kv, 2, p, 0, {}), 13388);
  EXPECT_EQ(StageKvBytesPerToken(d, kv, 2, p, 1, {}), 13780);
  EXPECT_EQ(StageKvBytesPerToken(d, kv, 2, p, 2, {}), 13780);
  EXPECT_EQ(StageKvBytesPerToken(d, kv, 2, p, 3, {}), 12992);
  d.num_speculative_tokens = 1;
  EXPECT_EQ(StageKvBytesPerToken(d, kv, 2, p, 3, {}), 13780);  // "Rank 3 would be 13,780 with MTP added"
}

TEST(KvTest, ForcedLayersAddTheirIndexerCaches) {
  // Issue 8: at 39,39 the PP1 page with fix B is larger by exactly 3 x 132 x 64 bytes.
  Deployment d = SeedDeployment();
  EffectiveKv kv = ResolveKvDtype(d.model, d.kv_cache_dtype, d.vllm, d.gpu);
  std::int64_t with = StageKvBytesPerToken(d, kv, 4, {39, 39}, 1, {39, 40, 41}) * 64;
  std::int64_t without = StageKvBytesPerToken(d, kv, 4, {39, 39}, 1, {}) * 64;
  EXPECT_EQ(with - without, 3 * 132 * 64);
  // docs/seed.md §6: PP1 at 39,39 = 40 attention layers (39 + MTP) and 13 indexer caches = 27,956 B/token.
  EXPECT_EQ(with / 64, 40 * 656 + 13 * 132);
}

TEST(KvTest, DefaultBlockSizes) {
  auto v32 = Preset("deepseek-v3.2");
  auto v3 = Preset("deepseek-v3");
  auto llama = Preset("llama-3.1-8b");
  auto kv = [&](const ModelConfig& m, KvCacheDtype d, const char* v, const char* g) {
    return DefaultBlockSize(m, ResolveKvDtype(m, d, FindVllmProfile(v), FindGpu(g)), FindVllmProfile(v), FindGpu(g));
  };
  EXPECT_EQ(kv(v32, KvCacheDtype::kAuto, "0.26", "h100"), 64);  // DSA indexer [64]
  EXPECT_EQ(kv(v3, KvCacheDtype::kAuto, "0.11", "h200"), 64);   // "Forcing kv cache block size to 64 for FlashMLA"
  EXPECT_EQ(kv(v3, KvCacheDtype::kAuto, "0.10", "l4"), 16);     // Triton MLA on Ada (DEV-MLA-01)
  EXPECT_EQ(kv(v3, KvCacheDtype::kAuto, "0.26", "h100"), 16);   // FLASH_ATTN_MLA MultipleOf(16)
  EXPECT_EQ(kv(llama, KvCacheDtype::kAuto, "0.26", "h100"), 16);
}

}  // namespace
}  // namespace ppdeploy
