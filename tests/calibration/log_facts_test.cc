// Calibration from the real boot logs in the boot-log examples (docs/sources.md §3) (raw lines
// copied verbatim): the planner's prediction of each logged pool lies within the rounding of the
// logged GiB.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "calibration/check.h"
#include "core/units.h"
#include "deploy_test_util.h"
#include "layout/planner.h"
#include "test_util.h"
#include "vllm/log_parser.h"
#include "vllm34076_fixture.h"

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

TEST(CalibrateTest, KimiK2Tp8Dcp8) {
  // Issue 12: Kimi-K2-Thinking at TP8 + DCP8 on the DEV-MLA-18 machine (8 x H200) logs 5,721,088 tokens after
  // "Multiplying the GPU KV cache size by the dcp_world_size 8." Constructed in the format of DEV-MLA-18's lines:
  // the multiplier line sets DCP 8, so the pool is 5,721,088 / (64 x 8) = 11,174 blocks, inside the rounding of
  // the same 46.80 GiB (DCP reuses the TP ranks).
  const char* log =
      "(Worker_TP0 pid=591236) INFO 11-06 12:08:54 [gpu_worker.py:349] Available KV cache memory: 46.80 GiB\n"
      "(EngineCore_DP0 pid=591074) INFO 11-06 12:08:55 [kv_cache_utils.py:1225] Multiplying the GPU KV cache size by "
      "the dcp_world_size 8.\n"
      "(EngineCore_DP0 pid=591074) INFO 11-06 12:08:55 [kv_cache_utils.py:1229] GPU KV cache size: 5,721,088 tokens\n";
  Deployment d = For("kimi-k2", "h200", "0.11", 262144);
  LogCalibration c = CalibrateFromLog(ParseBootLog(log), d, LayoutSpec{8, 1, 1, {}});
  EXPECT_EQ(c.decode_context_parallel_size, 8);
  EXPECT_EQ(c.logged_blocks, 11174);
  CalibrationCheck k = CheckCalibration(c, d);
  EXPECT_TRUE(k.within_rounding) << k.blocks_lo << ".." << k.blocks_hi;
  // (46.80 -/+ 0.005 GiB) / 4,497,408 B per block (64 x 70,272 B) = 11,172.16 .. 11,174.54
  EXPECT_EQ(k.blocks_lo, 11172);
  EXPECT_EQ(k.blocks_hi, 11174);
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

TEST(CalibrateTest, V1ProfileColumnsAndBatchLimitsReachTheCalibration) {
  // llm-d-planner v0.19.0 H100 log meta-llama---h100-80gb--tp1pp1dp1--8192-dtbf16-kvfp8
  // (tests/data/llmd-v0.19/facts.json, lines 64, 375, 376, 378): the DEBUG profile line's
  // non-torch forward increase (0.25 GiB) and torch peak increase (1.89 GiB) and the launch's
  // max_num_seqs / max_num_batched_tokens go into the calibration, so FitConstants fits the
  // communication and workspace constants from them and the plan reproduces both columns.
  const char* log =
      "(APIServer pid=1) INFO 04-20 00:00:00 [utils.py:233] non-default args: {'model': "
      "'meta-llama/Llama-3.1-8B-Instruct', 'max_model_len': 8192, 'gpu_memory_utilization': 0.95, "
      "'kv_cache_dtype': 'fp8', 'max_num_seqs': 1024, 'max_num_batched_tokens': 8192}\n"
      "(EngineCore pid=2) DEBUG 04-20 00:01:00 [gpu_worker.py:1] Memory profiling takes 17.96 seconds. Total non KV "
      "cache memory: 17.12GiB; torch peak memory increase: 1.89GiB; non-torch forward increase memory: 0.25GiB; "
      "weights memory: 14.99GiB.\n"
      "(EngineCore pid=2) INFO 04-20 00:01:00 [gpu_worker.py:1] Available KV cache memory: 58.11 GiB\n"
      "(EngineCore pid=2) INFO 04-20 00:01:01 [kv_cache_utils.py:1] GPU KV cache size: 952,032 tokens\n";
  Deployment d = testing::DeploymentWith({{"model", "llama-3.1-8b"},
                                          {"gpu", "h100"},
                                          {"vllm_version", "0.19.0"},
                                          {"max_model_len", "8192"},
                                          {"calibration", ""},
                                          {"kv_cache_dtype", "fp8"},
                                          {"gpu_memory_utilization", "0.95"}});
  LogCalibration c = CalibrateFromLog(ParseBootLog(log), d, LayoutSpec{1, 1, 1, {}});
  ASSERT_EQ(c.calibration.ranks.size(), 1u);
  const CalibrationRank& r = c.calibration.ranks[0];
  ASSERT_TRUE(r.non_torch_gib.has_value());
  EXPECT_DOUBLE_EQ(*r.non_torch_gib, 0.25);
  ASSERT_TRUE(r.peak_activation_gib.has_value());
  EXPECT_DOUBLE_EQ(*r.peak_activation_gib, 1.89);
  EXPECT_EQ(c.calibration.max_num_seqs, 1024);
  EXPECT_EQ(c.calibration.max_num_batched_tokens, 8192);
  // The v1_profiled era has no consumed column.
  EXPECT_FALSE(r.weights_plus_non_torch_gib.has_value());
  CalibrationCheck k = CheckCalibration(c, d);
  EXPECT_TRUE(k.within_rounding) << k.blocks_lo << ".." << k.blocks_hi << " vs " << *c.logged_blocks;
  Deployment cd = d;
  cd.calibration = c.calibration;
  cd.max_num_seqs = 1024;
  cd.max_num_batched_tokens = 8192;
  LayoutPlan p = PlanLayout(cd, LayoutSpec{1, 1, 1, {}});
  EXPECT_NEAR(ToGiB(p.ranks[0].non_torch.bytes), 0.25, 0.01);
  // The model books 1.91 GiB here; the workspace factor it would take to match is negative and a
  // workspace cannot be, so the 0.02 GiB stays in the column and the residual absorbs it.
  EXPECT_NEAR(ToGiB(p.ranks[0].activation.bytes), 1.89, 0.03);
  EXPECT_NEAR(ToGiB(p.ranks[0].available_kv.bytes), 58.11, 0.006);
}

TEST(CalibrateTest, NConsumedProfileLineGivesTheConsumedColumn) {
  // The n_consumed profiler's DEBUG line (vLLM since 2026-07-20, #49208: "total consumed (from
  // mem_get_info)") is the weights + non-torch column the calibration fits from.
  const char* log =
      "(Worker_TP0 pid=2) DEBUG 08-01 00:00:00 [gpu_worker.py:1] Memory profiling takes 31.20 seconds. Total non KV "
      "cache memory: 63.53GiB; torch peak memory increase: 2.04GiB; total consumed (from mem_get_info): 61.49GiB; "
      "weights memory: 55.87GiB.\n"
      "(Worker_TP0 pid=2) INFO 08-01 00:00:01 [gpu_worker.py:1] Available KV cache memory: 10.00 GiB\n";
  Deployment d = For("llama-3.1-8b", "h100", "0.19.0", 8192);
  LogCalibration c = CalibrateFromLog(ParseBootLog(log), d, LayoutSpec{1, 1, 1, {}});
  ASSERT_TRUE(c.calibration.ranks[0].weights_plus_non_torch_gib.has_value());
  EXPECT_DOUBLE_EQ(*c.calibration.ranks[0].weights_plus_non_torch_gib, 61.49);
  EXPECT_FALSE(c.calibration.ranks[0].non_torch_gib.has_value());
}

// The Qwen3-Coder-480B of DEV-GQA-17 (vllm recipes PR #12, H20, DP8 + EP, TP1): its config.json as the
// example's note gives it (62 layers, 8 KV heads x 128).
Deployment Qwen3Coder480bOnH20() {
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
  return d;
}

TEST(CalibrateTest, NotEnoughKvRefusalGivesTheAvailableKvMemory) {
  // DEV-GQA-17 verbatim: vLLM refused to start (62.00 GiB KV needed for 262,144 tokens, 48.66 GiB available,
  // estimated maximum model length 205,728). The boot failed, but the refusal states the worker's available
  // KV memory: it is the stage's figure, and the planner reproduces vLLM's need and estimate from it.
  const char* log =
      "ValueError: To serve at least one request with the models's max seq len (262144), (62.00 GiB KV cache is "
      "needed, "
      "which is larger than the available KV cache memory (48.66 GiB). Based on the available memory, the estimated "
      "maximum model length is 205728. Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when "
      "initializing the engine.\n";
  BootLog parsed = ParseBootLog(log, LogParseOptions{"qwen3-coder.log", 0});
  ASSERT_TRUE(parsed.not_enough_kv);
  EXPECT_EQ(parsed.status, BootStatus::kFailed);
  EXPECT_TRUE(HasCalibrationFigures(parsed));
  Deployment d = Qwen3Coder480bOnH20();
  LogCalibration c = CalibrateFromLog(parsed, d, LayoutSpec{1, 1, 8, {}});
  ASSERT_EQ(c.ranks.size(), 1u);
  EXPECT_DOUBLE_EQ(c.ranks[0].available_kv_gib, 48.66);
  EXPECT_TRUE(c.ranks[0].from_refusal);
  EXPECT_EQ(c.refusal_pp_rank, 0);
  EXPECT_EQ(c.max_model_len, 262144);  // the refusal's max seq len
  EXPECT_TRUE(c.writable());
  EXPECT_EQ(c.failure.substr(0, 90),
            "qwen3-coder.log:1: boot 1 of 1 failed: ValueError: To serve at least one request with the ");
  ASSERT_FALSE(c.used.empty());
  EXPECT_EQ(c.used[0],
            "available KV, PP rank 0: 48.66 GiB from vLLM's not-enough-KV refusal (62.00 GiB needed for 262144 "
            "tokens, 48.66 GiB available, estimated maximum model length 205728)");
  CalibrationCheck k = CheckCalibration(c, d);
  EXPECT_EQ(k.refusal_needed_bytes, 262144LL * 253952);  // 62 x 2 x 8 x 128 x 2 B/token = 62.00 GiB
  EXPECT_LE(k.max_model_len_lo, 205728);
  EXPECT_GE(k.max_model_len_hi, 205728);
  EXPECT_LT(k.max_model_len_hi - k.max_model_len_lo, 64);  // +/- 0.005 GiB is +/- 21 tokens of 253,952 B
  EXPECT_TRUE(k.refusal_reproduced);
}

// vllm#34076 (vLLM 0.15.2rc1.dev93, 2026-02-08): Qwen3-Coder-30B-A3B-FP8, PP2 with VLLM_PP_LAYER_PARTITION=16,32
// on an RTX 5070 Ti (stage 0) + RTX 5090 D (stage 1); its one error line, verbatim. Qwen3-30B-A3B has the same
// attention shape (48 layers, 4 KV heads x 128): 24.0 GiB = 262,144 x 48 x 2 x 4 x 128 x 2 B, the whole model.
const char* kPp2Refusal =
    "(EngineCore_DP0 pid=1094) ValueError: To serve at least one request with the models's max seq len (262144), "
    "(24.0 GiB KV cache is needed, which is larger than the available KV cache memory (3.18 GiB). Based on the "
    "available memory, the estimated maximum model length is 34736. Try increasing `gpu_memory_utilization` or "
    "decreasing `max_model_len` when initializing the engine.\n";

ResolvedDeployment Qwen3CoderPp2(const char* vllm) { return testing::ResolvedWith(testing::Vllm34076Flags(vllm)); }

TEST(CalibrateTest, RefusalAtPp2GoesToTheStageWhoseNeedItStates) {
  // The 0.15 row compares the whole model's KV (24.0 GiB) with each worker, in rank order: both stages need
  // 24.0 GiB, so the refusal is PP rank 0's (the first); PP rank 1 was never checked and printed nothing, so
  // the refusal is checked but no calibration file can come from this log.
  ResolvedDeployment r = Qwen3CoderPp2("0.15.2rc1");
  BootLog parsed = ParseBootLog(kPp2Refusal, LogParseOptions{"vllm-34076.log", 0});
  LogCalibration c = CalibrateFromLog(parsed, r.planner, r.layout);
  EXPECT_EQ(c.refusal_pp_rank, 0);
  ASSERT_EQ(c.ranks.size(), 2u);
  EXPECT_DOUBLE_EQ(c.ranks[0].available_kv_gib, 3.18);
  EXPECT_EQ(c.missing_ranks, (std::vector<int>{1}));
  EXPECT_FALSE(c.writable());
  CalibrationCheck k = CheckCalibration(c, r.planner);
  EXPECT_EQ(k.refusal_needed_bytes, 262144LL * 98304);  // 24.0 GiB
  EXPECT_LE(k.max_model_len_lo, 34736);
  EXPECT_GE(k.max_model_len_hi, 34736);
  EXPECT_TRUE(k.refusal_reproduced);

  // Under the 0.16 row (per-worker check) stage 0 needs 8.0 GiB and stage 1 16.0 GiB: the log's 24.0 GiB is
  // no stage's need, so the figure is not attributed, and the error says why.
  ResolvedDeployment r16 = Qwen3CoderPp2("0.16");
  std::string err = testing::ErrorOf([&] { CalibrateFromLog(parsed, r16.planner, r16.layout); });
  EXPECT_NE(err.find("vLLM's refusal states 24.00 GiB needed for one request of 262144 tokens, which matches no "
                     "stage's need (8.00, 16.00 GiB per PP rank)"),
            std::string::npos)
      << err;
}

TEST(CalibrateTest, V0MaxTokensRefusalGivesThePool) {
  // DEV-GQA-02 (vllm issue #10517, RTX 3090, V0 ~0.6.4): at max_model_len 29,000 V0 refused with "maximum
  // number of tokens that can be stored in KV cache (23648)" (the example's notes: 1,478 blocks of 16 =
  // 23,648 tokens). Constructed from those figures: the refusal alone gives the pool, and the binding rank's
  // available memory is inferred from it: [1478, 1479) x 16 x 131,072 B.
  const char* log =
      "Loading model weights took 14.9888 GB\n"
      "ValueError: The model's max seq len (29000) is larger than the maximum number of tokens that can be stored in "
      "KV cache (23648). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the "
      "engine.\n";
  Deployment d = For("llama-3.1-8b", "rtx-3090", "0.6", 29000);
  LogCalibration c = CalibrateFromLog(ParseBootLog(log), d, LayoutSpec{1, 1, 1, {}});
  EXPECT_EQ(c.max_model_len, 29000);
  EXPECT_EQ(c.logged_blocks, 1478);
  EXPECT_EQ(c.logged_kv_tokens, 23648);
  EXPECT_TRUE(c.ranks[0].inferred);
  EXPECT_NEAR(c.ranks[0].available_kv_gib, 1478.5 * 16 * 131072 / (1 << 30), 1e-9);  // 2.8877 GiB
  EXPECT_DOUBLE_EQ(*c.ranks[0].weights_gib, 14.9888);
  CalibrationCheck k = CheckCalibration(c, d);
  EXPECT_EQ(k.bytes_per_token[0], 131072);
  EXPECT_TRUE(k.within_rounding) << k.blocks_lo << ".." << k.blocks_hi;
}

// A run of llm-d-planner's vLLM 0.19.0 H100 campaign (tests/data/llmd-v0.19/facts.json; the logs at
// llm-d-incubation/llm-d-planner d3121e05, accuracy/results/v0.19.0/logs), planned as campaign_test.cc does.
ResolvedDeployment CampaignRun(const char* config, int tp, double util) {
  return testing::ResolvedWith({{"model", std::string(PPDEPLOY_SOURCE_DIR) + "/tests/data/hf-configs/" + config},
                                {"gpu", "h100"},
                                {"gpu_total_gib", "79.19"},
                                {"vllm_version", "0.19.0"},
                                {"tp_size", std::to_string(tp)},
                                {"pp_size", "1"},
                                {"pp_layer_partition", ""},
                                {"max_model_len", "8192"},
                                {"max_num_seqs", "1024"},
                                {"max_num_batched_tokens", "8192"},
                                {"gpu_memory_utilization", fmt::format("{}", util)},
                                {"kv_cache_dtype", "auto"},
                                {"spec_method", "none"},
                                {"calibration", ""},
                                {"gpus", "all"},
                                {"gpus_per_node", std::to_string(tp)}});
}

TEST(CalibrateTest, WeightsOnlyBootGivesTheWeightsFigure) {
  // facts.json run meta-llama-llama-3-1-8b---h100-80gb--tp1pp1dp2--8192.FAILED (status failed,
  // dp_local_rank_out_of_bounds): one worker died at start-up, the other loaded the weights (log line 348,
  // "Model loading took 14.99 GiB") before the boot was torn down. Two single lines of that log, verbatim.
  const char* log =
      "(Worker pid=1224) ERROR 04-22 01:41:58 [v1/executor/multiproc_executor.py:857] AssertionError: DP adjusted "
      "local rank 1 is out of bounds. \n"
      "(Worker pid=1219) INFO 04-22 01:42:12 [v1/worker/gpu_model_runner.py:4820] Model loading took 14.99 GiB "
      "memory and 12.838644 seconds\n";
  BootLog parsed = ParseBootLog(log, LogParseOptions{"dp2.log", 0});
  EXPECT_EQ(parsed.status, BootStatus::kFailed);
  ResolvedDeployment r = CampaignRun("meta-llama__Llama-3.1-8B-Instruct.json", 1, 0.9);
  LogCalibration c = CalibrateFromLog(parsed, r.planner, r.layout);
  EXPECT_TRUE(c.weights_only);
  EXPECT_FALSE(c.writable());
  ASSERT_EQ(c.ranks.size(), 1u);
  EXPECT_DOUBLE_EQ(*c.ranks[0].weights_gib, 14.99);
  EXPECT_EQ(c.failure,
            "dp2.log:1: boot 1 of 1 failed in Worker pid=1224: AssertionError: DP adjusted local rank 1 "
            "is out of bounds");
  EXPECT_EQ(c.used, (std::vector<std::string>{"weights, PP rank 0: 14.99 GiB (\"Model loading took\")"}));
  CalibrationCheck k = CheckCalibration(c, r.planner);
  ASSERT_EQ(k.planned_weights_bytes.size(), 1u);
  // The planner's weights: 8,030,261,248 bf16 parameters = 14.96 GiB, 0.03 GiB under vLLM's figure.
  EXPECT_NEAR(ToGiB(k.planned_weights_bytes[0]), 14.96, 0.005) << ToGiB(k.planned_weights_bytes[0]);
  EXPECT_FALSE(k.within_rounding);
}

TEST(CalibrateTest, BootThatFailedAfterItsPoolStillCalibrates) {
  // facts.json run openai-gpt-oss-20b--h100-80gb--tp1pp1dp1--8192.FAILED (oom_after_kv_allocation): the KV
  // pool was sized (log lines 386, 388: 58.47 GiB, 1,277,184 tokens), then the sampler warm-up ran out of
  // memory. Single lines of that log, verbatim: the figures before the failure are used, the failure is said.
  const char* log =
      "(EngineCore pid=248) INFO 04-22 00:58:54 [v1/worker/gpu_model_runner.py:4820] Model loading took 13.64 GiB "
      "memory and 14.749265 seconds\n"
      "(EngineCore pid=248) INFO 04-22 00:59:16 [v1/worker/gpu_worker.py:436] Available KV cache memory: 58.47 GiB\n"
      "(EngineCore pid=248) INFO 04-22 00:59:16 [v1/core/kv_cache_utils.py:1319] GPU KV cache size: 1,277,184 "
      "tokens\n"
      "(EngineCore pid=248) ERROR 04-22 00:59:56 [v1/engine/core.py:1108] RuntimeError: CUDA out of memory occurred "
      "when warming up sampler with 1024 dummy requests. Please try lowering `max_num_seqs` or "
      "`gpu_memory_utilization` when initializing the engine.\n";
  BootLog parsed = ParseBootLog(log, LogParseOptions{"gpt-oss.log", 0});
  EXPECT_EQ(parsed.status, BootStatus::kFailed);
  ResolvedDeployment r = CampaignRun("openai__gpt-oss-20b.json", 1, 0.95);
  LogCalibration c = CalibrateFromLog(parsed, r.planner, r.layout);
  EXPECT_TRUE(c.writable());
  EXPECT_DOUBLE_EQ(c.ranks[0].available_kv_gib, 58.47);
  EXPECT_EQ(c.logged_kv_tokens, 1277184);
  EXPECT_EQ(c.failure.substr(0, 75), "gpt-oss.log:4: boot 1 of 1 failed in EngineCore: RuntimeError: CUDA out of ");
  CalibrationCheck k = CheckCalibration(c, r.planner);
  // gpt-oss has two KV-cache groups (sliding window, full): 1,277,184 tokens = blocks // 2 x 16, so the
  // pool is 159,648 or 159,649 blocks; the planner's interval from 58.47 +/- 0.005 GiB holds it.
  EXPECT_EQ(c.logged_blocks, 159648);
  EXPECT_EQ(c.logged_blocks_span, 2);
  EXPECT_TRUE(k.within_rounding) << k.blocks_lo << ".." << k.blocks_hi << " logged " << *c.logged_blocks;
}

TEST(CalibrateTest, WeightsPlusNonTorchFromTheV0Profile) {
  // DEV-GQA-02's V0 lines (vllm issue #10517): weights 14.9888 GB + non_torch_memory 0.35 GiB = 15.34 GiB, the
  // one-liner's own initial_memory_usage=15.34GiB.
  const char* log =
      "Loading model weights took 14.9888 GB\n"
      "Memory profiling results: total_gpu_memory=23.58GiB initial_memory_usage=15.34GiB peak_torch_memory=17.06GiB "
      "memory_usage_post_profile=15.35GiB non_torch_memory=0.35GiB kv_cache_size=3.81GiB gpu_memory_utilization=0.90\n"
      "GPU blocks: 1952, # CPU blocks: 2048\n";
  Deployment d = For("llama-3.1-8b", "rtx-3090", "0.6", 20000);
  LogCalibration c = CalibrateFromLog(ParseBootLog(log), d, LayoutSpec{1, 1, 1, {}});
  ASSERT_TRUE(c.calibration.ranks[0].weights_plus_non_torch_gib);
  EXPECT_NEAR(*c.calibration.ranks[0].weights_plus_non_torch_gib, 15.34, 0.005);
  EXPECT_NE(
      std::find(c.used.begin(), c.used.end(), "weights + non-torch, PP rank 0: 15.34 GiB (the V0 memory profile)"),
      c.used.end());
  EXPECT_NE(std::find(c.used.begin(), c.used.end(), "pool: 1952 blocks (\"# GPU blocks\")"), c.used.end());
}

TEST(CalibrateTest, PlannerReproducesVllmsEstimatedMaxModelLen) {
  // Constructed: the 48.66 GiB that DEV-GQA-17's refusal reports, printed as the KV budget line of a boot that
  // started. Calibrated with it, the planner finds 262,144 infeasible and the longest feasible length within
  // one block of vLLM's own estimate (205,728 tokens); 62.00 GiB = 262,144 x 253,952 B is vLLM's figure.
  const char* log =
      "INFO 08-04 00:00:00 [gpu_worker.py:1] Available KV cache memory: 48.66 GiB\n"
      "INFO 08-04 00:00:01 [kv_cache_utils.py:1] GPU KV cache size: 205,728 tokens\n";
  Deployment d = Qwen3Coder480bOnH20();
  LogCalibration c = CalibrateFromLog(ParseBootLog(log), d, LayoutSpec{1, 1, 8, {}});
  EXPECT_DOUBLE_EQ(c.ranks[0].available_kv_gib, 48.66);
  CalibrationCheck k = CheckCalibration(c, d);
  EXPECT_EQ(k.bytes_per_token[0], 253952);  // 62 x 2 x 8 x 128 x 2
  EXPECT_NEAR(262144.0 * 253952 / (1 << 30), 62.00, 0.005);
  Deployment cd = d;
  cd.calibration = c.calibration;
  LayoutPlan p = PlanLayout(cd, LayoutSpec{1, 1, 8, {}});
  EXPECT_FALSE(p.feasible);
  EXPECT_NEAR(p.pool.largest_max_model_len, 205728, 48);
}

TEST(CalibrateTest, InfersTheBindingRankWhenOnlyRank0Printed) {
  // Since 2025-10-24 only local rank 0 prints "Available KV cache memory" (docs/vllm-rules.md §2). The
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
  // 9,340 x 64 x 27,956 B = 15.563 GiB (docs/seed.md §6 derived check), +/- half a page.
  EXPECT_NEAR(c.ranks[1].available_kv_gib, 15.5636, 0.001);
  CalibrationCheck k = CheckCalibration(c, d);
  EXPECT_TRUE(k.within_rounding);
  EXPECT_EQ(k.predicted_kv_tokens, 597760);
}

TEST(CalibrateTest, GarbageLogIsAClearError) {
  Deployment d = testing::DeploymentWith({{"calibration", ""}});
  EXPECT_EQ(
      testing::ErrorOf([&] {
        CalibrateFromLog(ParseBootLog("\x01\x02 nothing here\n", LogParseOptions{"garbage.log", 0}), d, LayoutSpec{});
      }),
      "garbage.log:1-1: the log has no \"Available KV cache memory\" line and no \"GPU KV cache size\" line to "
      "infer it from");
}

TEST(CalibrateTest, EachStageKeepsTheSmallestTpRank) {
  // DEV-MLA-01's lines (VllmWorker rank=N, vLLM 0.9-0.10 printed one line per worker) with ranks 1 and 3 changed
  // so that the ranks of a stage differ: vLLM sizes a stage's pool from its smallest rank, so PP0 = min(12.13,
  // 12.05) and PP1 = min(11.33, 11.40), whatever the order of the lines.
  const char* log =
      "(VllmWorker rank=3 pid=19834) INFO 07-09 09:47:45 [gpu_worker.py:233] Available KV cache memory: 11.40 GiB\n"
      "(VllmWorker rank=2 pid=19833) INFO 07-09 09:47:45 [gpu_worker.py:233] Available KV cache memory: 11.33 GiB\n"
      "(VllmWorker rank=0 pid=19831) INFO 07-09 09:47:45 [gpu_worker.py:233] Available KV cache memory: 12.13 GiB\n"
      "(VllmWorker rank=1 pid=19832) INFO 07-09 09:47:45 [gpu_worker.py:233] Available KV cache memory: 12.05 GiB\n"
      "INFO 07-09 09:47:46 [kv_cache_utils.py:716] GPU KV cache size: 807,792 tokens\n";
  Deployment d = For("deepseek-v2-lite", "l4", "0.10", 1024);
  LogCalibration c = CalibrateFromLog(ParseBootLog(log), d, LayoutSpec{2, 2, 1, {}});
  ASSERT_EQ(c.ranks.size(), 2u);
  EXPECT_DOUBLE_EQ(c.ranks[0].available_kv_gib, 12.05);
  EXPECT_EQ(c.ranks[0].source, "logged by VllmWorker rank=1, the smallest of 2 ranks");
  EXPECT_DOUBLE_EQ(c.ranks[1].available_kv_gib, 11.33);
  EXPECT_EQ(c.ranks[1].source, "logged by VllmWorker rank=2, the smallest of 2 ranks");
}

TEST(CalibrateTest, TwoBootsCalibrateFromTheLastBootOrTheOneAskedFor) {
  // The seed's two boots in one file (docs/seed.md §6: 39,39 -> 597,760 tokens, then 41,37 -> 729,280), constructed
  // in the 0.19 formats: the calibration is the last boot's and says so; boot 1 gives the 39,39 pool.
  auto boot = [](int pid, const char* split, const char* tokens) {
    std::string p = std::to_string(pid), e = std::to_string(pid + 1);
    return "(APIServer pid=" + p +
           ") INFO 08-21 18:00:00 [entrypoints/utils.py:233] non-default args: {'max_model_len': 524288, "
           "'tensor_parallel_size': 4, 'pipeline_parallel_size': 2, 'gpu_memory_utilization': 0.95}\n"
           "(EngineCore_DP0 pid=" +
           e +
           ") INFO 08-21 18:00:11 [distributed/utils.py:1] Hidden layers were unevenly "
           "partitioned: [" +
           split +
           "]. This can be manually overridden using the VLLM_PP_LAYER_PARTITION "
           "environment variable\n"
           "(Worker_PP0_TP0 pid=" +
           std::to_string(pid + 2) +
           ") INFO 08-21 18:03:00 [v1/worker/gpu_worker.py:436] Available KV cache memory: 21.95 GiB\n"
           "(EngineCore_DP0 pid=" +
           e + ") INFO 08-21 18:03:01 [v1/core/kv_cache_utils.py:1319] GPU KV cache size: " + tokens + " tokens\n";
  };
  std::string text = boot(100, "39,39", "597,760") + boot(200, "41,37", "729,280");
  Deployment d = testing::DeploymentWith({{"calibration", ""}});
  LogCalibration last = CalibrateFromLog(ParseBootLog(text, LogParseOptions{"restarts.log", 0}), d, LayoutSpec{});
  EXPECT_EQ(last.logged_kv_tokens, 729280);
  EXPECT_EQ(last.calibration.layer_partition, (std::vector<int>{41, 37}));
  ASSERT_FALSE(last.warnings.empty());
  EXPECT_EQ(last.warnings[0], "used boot 2 of 2 (restarts.log:5-8, complete, the last complete one)");
  LogCalibration first = CalibrateFromLog(ParseBootLog(text, LogParseOptions{"restarts.log", 1}), d, LayoutSpec{});
  EXPECT_EQ(first.logged_kv_tokens, 597760);
  EXPECT_EQ(first.logged_blocks, 9340);  // docs/seed.md §6: 597,760 tokens = 9,340 blocks of 64
  EXPECT_EQ(first.calibration.layer_partition, (std::vector<int>{39, 39}));
  EXPECT_EQ(testing::ErrorOf([&] {
              CalibrateFromLog(ParseBootLog(text, LogParseOptions{"restarts.log", 5}), d, LayoutSpec{});
            }),
            "restarts.log: boot 5 was asked for, the log holds 2 boots");
}

TEST(CalibrateTest, FailedBootIsRefusedWithFileLineAndCause) {
  // Constructed in the shape of a vLLM 0.19 start-up failure (multiproc_executor's logger.exception, then the
  // API server's RuntimeError); the root cause is the worker's refusal, not the RuntimeError.
  const char* log =
      "(APIServer pid=1) INFO 08-22 09:00:00 [entrypoints/utils.py:233] non-default args: {'tensor_parallel_size': 2}\n"
      "(Worker pid=61) ERROR 08-22 09:00:20 [v1/executor/multiproc_executor.py:857] WorkerProc failed to start.\n"
      "(Worker pid=61) ERROR 08-22 09:00:20 [v1/executor/multiproc_executor.py:857] ValueError: Free memory on device "
      "cuda:1 (60.87/79.19 GiB) on startup is less than desired GPU memory utilization (0.95, 75.23 GiB).\n"
      "(APIServer pid=1) RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): "
      "{}\n";
  Deployment d = testing::DeploymentWith({{"calibration", ""}});
  BootLog parsed = ParseBootLog(log, LogParseOptions{"gpu-busy.log", 0});
  EXPECT_EQ(testing::ErrorOf([&] { RequireUsableBoot(parsed); }),
            "gpu-busy.log:3: boot 1 of 1 failed in Worker pid=61: ValueError: Free memory on device cuda:1 "
            "(60.87/79.19 GiB) on startup is less than desired GPU memory utilization (0.95, 75.23 GiB); it logged "
            "no memory figure before it failed, so no calibration is written");
  EXPECT_EQ(testing::ErrorOf([&] { CalibrateFromLog(parsed, d, LayoutSpec{}); }),
            testing::ErrorOf([&] { RequireUsableBoot(parsed); }));
}

// A V0 boot at TP2/PP2 with Ray (the V0 memory profile block of docs/memory-overheads.md §1; the driver worker runs
// unprefixed in the engine as global rank 0, the Ray actors' prefixes carry no rank). `rank_lines` adds the
// parallel_state.py rank line each worker printed since ~v0.8; `weights` are the per-worker "Loading model
// weights took" figures (driver, pid 11, 12, 13). Constructed: values chosen so that the stages differ.
std::string V0RayBoot(bool rank_lines, const double (&weights)[4], const double (&kv)[4]) {
  const int pp_of[4] = {0, 0, 1, 1};
  std::string s;
  for (int r = 0; r < 4; ++r) {
    std::string prefix = r == 0 ? "" : "(RayWorkerWrapper pid=" + std::to_string(10 + r) + ", ip=10.0.0.2) ";
    if (rank_lines)
      s += prefix + "INFO 03-01 00:00:01 [parallel_state.py:1] rank " + std::to_string(r) +
           " in world size 4 is assigned as DP rank 0, PP rank " + std::to_string(pp_of[r]) + ", TP rank " +
           std::to_string(r % 2) + ", EP rank " + std::to_string(r % 2) + "\n";
    s += prefix +
         fmt::format("INFO 03-01 00:00:10 [model_runner.py:1] Loading model weights took {:.4f} GB\n", weights[r]);
  }
  for (int r = 0; r < 4; ++r) {
    std::string prefix = r == 0 ? "" : "(RayWorkerWrapper pid=" + std::to_string(10 + r) + ", ip=10.0.0.2) ";
    std::string head = prefix + "INFO 03-01 00:00:20 [worker.py:1] ";
    s +=
        head + "Memory profiling takes 3.10 seconds\r\n" + head +
        "the current vLLM instance can use total_gpu_memory (22.05GiB) x gpu_memory_utilization (0.90) = 19.84GiB\r\n" +
        head +
        fmt::format(
            "model weights take {:.2f}GiB; non_torch_memory takes 0.20GiB; PyTorch activation peak memory "
            "takes 0.80GiB; the rest of the memory reserved for KV Cache is {:.2f}GiB.\n",
            weights[r], kv[r]);
  }
  s += "INFO 03-01 00:00:21 [executor_base.py:1] # GPU blocks: 45000, # CPU blocks: 4096\n";
  return s;
}

TEST(CalibrateTest, V0RayWorkersAtPp2AreMappedByTheirRankLines) {
  const double weights[4] = {7.5, 7.5, 8.1, 8.1}, kv[4] = {11.30, 11.25, 10.60, 10.70};
  Deployment d = For("deepseek-v2-lite", "l4", "0.8", 1024);
  LogCalibration c = CalibrateFromLog(ParseBootLog(V0RayBoot(true, weights, kv)), d, LayoutSpec{2, 2, 1, {}});
  ASSERT_EQ(c.ranks.size(), 2u);
  EXPECT_DOUBLE_EQ(c.ranks[0].available_kv_gib, 11.25);  // min over the driver and pid 11
  EXPECT_EQ(c.ranks[0].source, "logged by RayWorkerWrapper pid=11 (V0 memory profile), the smallest of 2 ranks");
  EXPECT_DOUBLE_EQ(c.ranks[1].available_kv_gib, 10.60);
  EXPECT_DOUBLE_EQ(*c.calibration.ranks[1].model_loading_gib, 8.1);
  for (const auto& w : c.warnings) EXPECT_EQ(w.find("unknown"), std::string::npos) << w;
}

TEST(CalibrateTest, V0RayWorkersWithoutRankLinesArePlacedByTheirWeights) {
  const double weights[4] = {7.5, 7.5, 8.1, 8.1}, kv[4] = {11.30, 11.25, 10.60, 10.70};
  Deployment d = For("deepseek-v2-lite", "l4", "0.8", 1024);
  LogCalibration c = CalibrateFromLog(ParseBootLog(V0RayBoot(false, weights, kv)), d, LayoutSpec{2, 2, 1, {}});
  EXPECT_DOUBLE_EQ(c.ranks[0].available_kv_gib, 11.25);
  EXPECT_DOUBLE_EQ(c.ranks[1].available_kv_gib, 10.60);
  ASSERT_FALSE(c.warnings.empty());
  EXPECT_EQ(c.warnings[0],
            "the V0 workers print no rank: RayWorkerWrapper pid=11, RayWorkerWrapper pid=12, RayWorkerWrapper pid=13 "
            "placed by their weights (PP0 = the driver's 7.5000 GiB, PP1 = 8.1000 GiB)");

  // Weights that do not split 1 + 2 (PP0 gets the driver and one worker): the workers stay unplaced, said so.
  const double same[4] = {7.5, 7.5, 7.5, 8.1};
  LogCalibration u = CalibrateFromLog(ParseBootLog(V0RayBoot(false, same, kv)), d, LayoutSpec{2, 2, 1, {}});
  EXPECT_DOUBLE_EQ(u.ranks[0].available_kv_gib, 11.30);  // the driver only
  EXPECT_TRUE(u.ranks[1].inferred);                      // from the logged 45,000 blocks
  ASSERT_FALSE(u.warnings.empty());
  EXPECT_NE(u.warnings[0].find("the PP rank of RayWorkerWrapper pid=11, RayWorkerWrapper pid=12, RayWorkerWrapper "
                               "pid=13 is unknown"),
            std::string::npos)
      << u.warnings[0];
}

// Logged version strings resolve through the one version table's rule (data/vllm/versions.json).
TEST(CalibrateTest, LoggedVersionsResolveToRows) {
  EXPECT_EQ(ResolveVllmVersion("0.10.1.dev101+gbda9d0535").profile->name, "0.10");  // DEV-MLA-01
  EXPECT_EQ(ResolveVllmVersion("0.11.0").profile->name, "0.11");
  EXPECT_EQ(ResolveVllmVersion("0.26.1rc1.dev693").profile->name, "0.26");  // docs/vllm-rules.md §5.1
  // Every release line from 0.5 has a row of its own (issue 12); 0.9.x is no longer planned with 0.8's.
  EXPECT_EQ(ResolveVllmVersion("0.9.2").profile->name, "0.9");
  EXPECT_TRUE(ResolveVllmVersion("0.9.2").exact);
  EXPECT_EQ(ResolveVllmVersion("0.9.2").patch, 2);
  EXPECT_EQ(TryResolveVllmVersion("main"), std::nullopt);
}

}  // namespace
}  // namespace ppdeploy

namespace ppdeploy {
namespace {

// "Total non KV cache memory" (the V1 DEBUG profile line, every worker prints it; only the first worker
// prints "Available KV cache memory"). llm-d-planner v0.19.0 H100 run
// meta-llama-llama-3-1-8b---h100-80gb--tp1pp2dp1--8192 (tests/data/llmd-v0.19/facts.json; log lines 129,
// 670, 672, 673, 700, 704, 1330): util 0.95, PP0 non-KV 8.69 GiB (torch peak 1.10, non-torch 0.07, weights 7.51)
// and available 66.54 GiB; PP1 non-KV 9.60 GiB (torch peak 2.01) and no available line; pool
// 1,075,312 tokens. vLLM 0.19: available = total x util - non-KV (no CUDA-graph estimate subtracted before
// v0.21): PP0 79.19 (torch total, line 129) x 0.95 - 8.69 = 66.54 (the logged figure), PP1 75.23 - 9.60 = 65.63 GiB,
// which is the KV memory in use that PP1's own DEBUG summary reports (facts kv_cache_in_use_gib 65.63, line 1330).
TEST(CalibrateTest, TotalNonKvCacheMemoryChecksAndFillsAStage) {
  const char* log =
      "(APIServer pid=1) INFO 04-20 00:00:00 [utils.py:233] non-default args: {'model': "
      "'meta-llama/Llama-3.1-8B-Instruct', 'max_model_len': 8192, 'gpu_memory_utilization': 0.95, "
      "'pipeline_parallel_size': 2}\n"
      "(Worker_PP0 pid=3) DEBUG 04-20 00:01:00 [gpu_worker.py:1] Memory profiling takes 9.10 seconds. Total non KV "
      "cache memory: 8.69GiB; torch peak memory increase: 1.10GiB; non-torch forward increase memory: 0.07GiB; "
      "weights memory: 7.51GiB.\n"
      "(Worker_PP0 pid=3) INFO 04-20 00:01:00 [gpu_worker.py:1] Available KV cache memory: 66.54 GiB\n"
      "(Worker_PP1 pid=4) DEBUG 04-20 00:01:00 [gpu_worker.py:1] Memory profiling takes 9.20 seconds. Total non KV "
      "cache memory: 9.60GiB; torch peak memory increase: 2.01GiB; non-torch forward increase memory: 0.07GiB; "
      "weights memory: 7.51GiB.\n"
      "(EngineCore pid=2) INFO 04-20 00:01:01 [kv_cache_utils.py:1] GPU KV cache size: 1,075,312 tokens\n";
  Deployment d = testing::DeploymentWith({{"model", "llama-3.1-8b"},
                                          {"gpu", "h100"},
                                          {"vllm_version", "0.19.0"},
                                          {"max_model_len", "8192"},
                                          {"calibration", ""},
                                          {"kv_cache_dtype", "auto"},
                                          {"gpu_memory_utilization", "0.95"}});
  LogCalibration c = CalibrateFromLog(ParseBootLog(log), d, LayoutSpec{1, 2, 1, {}});
  ASSERT_EQ(c.ranks.size(), 2u);
  EXPECT_DOUBLE_EQ(c.ranks[0].available_kv_gib, 66.54);
  EXPECT_EQ(c.ranks[0].source, "logged by Worker_PP0");
  EXPECT_NEAR(c.ranks[1].available_kv_gib, 79.19 * 0.95 - 9.60, 1e-9);  // 65.6305
  EXPECT_FALSE(c.ranks[1].inferred);
  EXPECT_EQ(c.ranks[1].source,
            "derived: 79.19 GiB x 0.95 - \"Total non KV cache memory\" 9.60 GiB = 65.63 GiB (Worker_PP1)");
  auto has = [&](const std::string& line) { return std::find(c.used.begin(), c.used.end(), line) != c.used.end(); };
  EXPECT_TRUE(
      has("available KV, PP rank 1: 65.63 GiB derived: 79.19 GiB x 0.95 - \"Total non KV cache memory\" "
          "9.60 GiB = 65.63 GiB (Worker_PP1)"));
  EXPECT_TRUE(
      has("cross-check, PP rank 0: 79.19 GiB x 0.95 - \"Total non KV cache memory\" 8.69 GiB = 66.54 GiB "
          "(Worker_PP0) matches the logged available 66.54 GiB"));
  for (const auto& w : c.warnings) EXPECT_EQ(w.find("differs from the logged available"), std::string::npos) << w;
  // The logged pool lands inside the rounding interval of the figures used.
  CalibrationCheck k = CheckCalibration(c, d);
  EXPECT_TRUE(k.within_rounding) << k.blocks_lo << ".." << k.blocks_hi << " logged " << *c.logged_blocks;

  // A non-KV figure that does not match the logged available memory is a warning, not used.
  std::string bad = log;
  bad.replace(bad.find("66.54 GiB"), 9, "60.00 GiB");
  LogCalibration b = CalibrateFromLog(ParseBootLog(bad), d, LayoutSpec{1, 2, 1, {}});
  EXPECT_DOUBLE_EQ(b.ranks[0].available_kv_gib, 60.00);
  bool warned = false;
  for (const auto& w : b.warnings)
    warned |= w.find(
                  "PP rank 0: 79.19 GiB x 0.95 - \"Total non KV cache memory\" "
                  "8.69 GiB = 66.54 GiB (Worker_PP0) differs from the logged "
                  "available 60.00 GiB") != std::string::npos;
  EXPECT_TRUE(warned);
}

}  // namespace
}  // namespace ppdeploy
