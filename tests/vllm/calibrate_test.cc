// Calibration from the real boot logs in shared/reference/boot-logs-examples.json (raw lines
// copied verbatim): the planner's prediction of each logged pool lies within the rounding of the
// logged GiB.
#include "vllm/calibrate.h"

#include <gtest/gtest.h>

#include "deploy_test_util.h"
#include "layout/planner.h"
#include "test_util.h"

namespace ppdeploy {
namespace {

Deployment For(const char* model, const char* gpu, const char* vllm, std::int64_t mml) {
  return testing::DeploymentWith({{"model", model},
                                  {"gpu", gpu},
                                  {"vllm_version", vllm},
                                  {"max_model_len", std::to_string(mml)},
                                  {"calibration", ""},
                                  {"spec_method", "none"},
                                  {"kv_cache_dtype", "auto"}});
}

TEST(CalibrateTest, DeepSeekV2LiteTp2Pp2PerRankLines) {
  // DEV-MLA-01, vllm PR #20665 (L4, TP2/PP2, max_model_len 1024).
  const char* log =
      "(VllmWorker rank=3 pid=19834) INFO 07-09 09:47:45 [gpu_worker.py:233] Available KV cache memory: 11.33 GiB\n"
      "(VllmWorker rank=2 pid=19833) INFO 07-09 09:47:45 [gpu_worker.py:233] Available KV cache memory: 11.33 GiB\n"
      "(VllmWorker rank=1 pid=19832) INFO 07-09 09:47:45 [gpu_worker.py:233] Available KV cache memory: 12.13 GiB\n"
      "(VllmWorker rank=0 pid=19831) INFO 07-09 09:47:45 [gpu_worker.py:233] Available KV cache memory: 12.13 GiB\n"
      "INFO 07-09 09:47:46 [kv_cache_utils.py:716] GPU KV cache size: 807,792 tokens\n"
      "INFO 07-09 09:47:46 [kv_cache_utils.py:720] Maximum concurrency for 1,024 tokens per request: 788.86x\n"
      "INFO 07-09 09:47:46 [kv_cache_utils.py:716] GPU KV cache size: 807,792 tokens\n"
      "INFO 07-09 09:47:46 [kv_cache_utils.py:720] Maximum concurrency for 1,024 tokens per request: 788.86x\n";
  Deployment d = For("deepseek-v2-lite", "l4", "0.10", 1024);
  LogCalibration c = CalibrateFromLog(ParseBootLog(log), d, LayoutSpec{2, 2, 1, {}});
  ASSERT_EQ(c.ranks.size(), 2u);
  EXPECT_DOUBLE_EQ(c.ranks[0].available_kv_gib, 12.13);  // ranks 0,1 = PP0 (rank // TP)
  EXPECT_DOUBLE_EQ(c.ranks[1].available_kv_gib, 11.33);
  EXPECT_EQ(c.block_size, 16);
  EXPECT_EQ(c.logged_blocks, 50487);
  CalibrationCheck k = CheckCalibration(c, d);
  EXPECT_EQ(k.bytes_per_token, (std::vector<std::int64_t>{14 * 1152, 13 * 1152}));
  EXPECT_TRUE(k.within_rounding) << k.blocks_lo << ".." << k.blocks_hi;
}

TEST(CalibrateTest, KimiK2Tp8) {
  // DEV-MLA-18, vllm recipes PR #115 (8 x H200, TP8).
  const char* log =
      "(Worker_TP0 pid=591236) INFO 11-06 12:08:54 [gpu_worker.py:349] Available KV cache memory: 46.80 GiB\n"
      "(EngineCore_DP0 pid=591074) INFO 11-06 12:08:55 [kv_cache_utils.py:1229] GPU KV cache size: 715,072 tokens\n";
  Deployment d = For("kimi-k2", "h200", "0.11", 262144);
  LogCalibration c = CalibrateFromLog(ParseBootLog(log), d, LayoutSpec{8, 1, 1, {}});
  CalibrationCheck k = CheckCalibration(c, d);
  EXPECT_EQ(k.bytes_per_token[0], 70272);
  EXPECT_TRUE(k.within_rounding);
  EXPECT_EQ(k.predicted_kv_tokens, 715072);
}

TEST(CalibrateTest, Llama8bV0) {
  // DEV-GQA-02, vllm issue #10517 (RTX 3090, V0 ~0.6.4): kv_cache_size=3.81GiB, 1952 GPU blocks.
  const char* log =
      "Loading model weights took 14.9888 GB\n"
      "Memory profiling results: total_gpu_memory=23.58GiB initial_memory_usage=15.34GiB peak_torch_memory=17.06GiB "
      "memory_usage_post_profile=15.35GiB non_torch_memory=0.35GiB kv_cache_size=3.81GiB gpu_memory_utilization=0.90\n"
      "GPU blocks: 1952, # CPU blocks: 2048\n"
      "Maximum concurrency for 20000 tokens per request: 1.56x\n";
  Deployment d = For("llama-3.1-8b", "rtx-3090", "0.8", 20000);
  LogCalibration c = CalibrateFromLog(ParseBootLog(log), d, LayoutSpec{1, 1, 1, {}});
  EXPECT_DOUBLE_EQ(c.ranks[0].available_kv_gib, 3.81);
  CalibrationCheck k = CheckCalibration(c, d);
  EXPECT_EQ(k.bytes_per_token[0], 32 * 2 * 8 * 128 * 2);  // 131,072 B/token
  EXPECT_EQ(c.logged_blocks, 1952);
  EXPECT_TRUE(k.within_rounding) << k.blocks_lo << ".." << k.blocks_hi;
}

TEST(CalibrateTest, NotEnoughKvErrorQwen3Coder480b) {
  // DEV-GQA-17, vllm recipes PR #12 (H20, DP8 + EP, TP1): 62.00 GiB needed for 262,144 tokens,
  // 48.66 GiB available, "the estimated maximum model length is 205728".
  const char* log =
      "ValueError: To serve at least one request with the models's max seq len (262144), (62.00 GiB KV cache is "
      "needed, "
      "which is larger than the available KV cache memory (48.66 GiB). Based on the available memory, the estimated "
      "maximum model length is 205728. Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when "
      "initializing the engine.\n";
  // The model is not a preset: its config.json as the log's note gives it (62 layers, 8 KV heads x 128).
  nlohmann::json cfg = {{"architectures", {"Qwen3MoeForCausalLM"}},
                        {"num_hidden_layers", 62},
                        {"hidden_size", 6144},
                        {"num_attention_heads", 96},
                        {"num_key_value_heads", 8},
                        {"head_dim", 128},
                        {"num_experts", 160},
                        {"num_experts_per_tok", 8},
                        {"moe_intermediate_size", 2560},
                        {"vocab_size", 151936},
                        {"max_position_embeddings", 262144},
                        {"torch_dtype", "bfloat16"}};
  Deployment d = For("llama-3.1-8b", "h20", "0.10", 262144);
  d.model = ParseModelConfig(cfg, "qwen3-coder-480b/config.json");
  d.weights = EstimateWeights(d.model);
  BootLog log_parsed = ParseBootLog(log);
  ASSERT_TRUE(log_parsed.not_enough_kv);
  LogCalibration c = CalibrateFromLog(log_parsed, d, LayoutSpec{1, 1, 8, {}});
  EXPECT_DOUBLE_EQ(c.ranks[0].available_kv_gib, 48.66);
  CalibrationCheck k = CheckCalibration(c, d);
  EXPECT_EQ(k.bytes_per_token[0], 253952);  // 62 x 2 x 8 x 128 x 2
  // 62.00 GiB needed = 262,144 x 253,952 B: vLLM's own figure.
  EXPECT_NEAR(262144.0 * 253952 / (1 << 30), 62.00, 0.005);
  Deployment cd = d;
  cd.calibration = c.calibration;
  LayoutPlan p = PlanLayout(cd, LayoutSpec{1, 1, 8, {}});
  EXPECT_FALSE(p.feasible);
  // vLLM's estimate 205,728 lies within the rounding of 48.66 GiB (+/- 0.005 GiB = +/- 21 tokens... blocks of 16).
  EXPECT_NEAR(p.pool.largest_max_model_len, 205728, 48);
}

TEST(CalibrateTest, InfersTheBindingRankWhenOnlyRank0Printed) {
  // Since 2025-10-24 only local rank 0 prints "Available KV cache memory" (vllm-rules.md §2). The
  // seed's 39,39 boot: PP0 21.95 GiB printed, pool 597,760 -> PP1 inferred from its own page.
  const char* log =
      "(Worker_PP0_TP0 pid=11) INFO 10-20 10:00:00 [gpu_worker.py:349] Available KV cache memory: 21.95 GiB\n"
      "(EngineCore_DP0 pid=10) INFO 10-20 10:00:01 [kv_cache_utils.py:1300] GPU KV cache size: 597,760 tokens, "
      "Maximum concurrency for 524,288 tokens per request: 1.14x\n";
  Deployment d = testing::DeploymentWith({{"calibration", ""}});
  LogCalibration c = CalibrateFromLog(ParseBootLog(log), d, LayoutSpec{4, 2, 1, {39, 39}});
  ASSERT_EQ(c.ranks.size(), 2u);
  EXPECT_FALSE(c.ranks[0].inferred);
  EXPECT_TRUE(c.ranks[1].inferred);
  EXPECT_EQ(c.logged_blocks, 9340);
  // 9,340 x 64 x 27,956 B = 15.563 GiB (seed §6 derived check), +/- half a page.
  EXPECT_NEAR(c.ranks[1].available_kv_gib, 15.5636, 0.001);
  CalibrationCheck k = CheckCalibration(c, d);
  EXPECT_TRUE(k.within_rounding);
  EXPECT_EQ(k.predicted_kv_tokens, 597760);
}

TEST(CalibrateTest, GarbageLogIsAClearError) {
  Deployment d = testing::DeploymentWith({{"calibration", ""}});
  EXPECT_EQ(testing::ErrorOf([&] { CalibrateFromLog(ParseBootLog("\x01\x02 nothing here\n"), d, LayoutSpec{}); }),
            "the log has no \"Available KV cache memory\" line and no \"GPU KV cache size\" line to infer it from");
}

// Logged version strings resolve through the one version table's rule (data/vllm/versions.json).
TEST(CalibrateTest, LoggedVersionsResolveToRows) {
  EXPECT_EQ(ResolveVllmVersion("0.10.1.dev101+gbda9d0535").profile->name, "0.10");  // DEV-MLA-01
  EXPECT_EQ(ResolveVllmVersion("0.11.0").profile->name, "0.11");
  EXPECT_EQ(ResolveVllmVersion("0.26.1rc1.dev693").profile->name, "0.26");  // vllm-rules §5.1
  // Every release line from 0.5 has a row of its own (issue 12); 0.9.x is no longer planned with 0.8's.
  EXPECT_EQ(ResolveVllmVersion("0.9.2").profile->name, "0.9");
  EXPECT_TRUE(ResolveVllmVersion("0.9.2").exact);
  EXPECT_EQ(ResolveVllmVersion("0.9.2").patch, 2);
  EXPECT_EQ(TryResolveVllmVersion("main"), std::nullopt);
}

}  // namespace
}  // namespace ppdeploy
