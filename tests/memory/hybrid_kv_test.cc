// vLLM's hybrid KV-cache manager, DCP, the pre-MLA layout and old release lines, each against vLLM's
// own numbers (issue 12 acceptance):
// - Gemma-2/3 sliding windows, gpt-oss (sinks + sliding window), Llama-4 chunked attention: runs of
//   llm-d-planner's vLLM 0.19.0 H100 campaign (tests/data/llmd-v0.19/facts.json, cited by run and
//   log line), planned from the logged available memory.
// - a linear-attention / mamba hybrid: a public vLLM 0.10.2 boot log of Qwen3-Next-80B-A3B TP2 on
//   H200 (docs/memory-overheads.md §2-§3 source id:7292846353): "Setting attention block size to 544
//   tokens", "Padding mamba page size by 1.49%", 44.59 GiB -> "GPU KV cache size: 973,760 tokens",
//   "Maximum concurrency for 262,144 tokens per request: 14.77x".
// - DCP on Kimi-K2: 715,072 tokens at TP8 (the boot-log examples (docs/sources.md §3) DEV-MLA-18, 46.80 GiB) and
//   5,721,088 at TP8 + DCP8 (issue 12), the dcp_world_size multiplier of v0.10 .. 2026-04-27.
// - pre-MLA DeepSeek-V2-Lite (issue 12: the log shows 5,373 blocks where the MLA layout gives 19,105).
// - the 0.7.x split and lm_head (vllm#12895: vLLM 0.7.2, DeepSeek-R1 PP3, the last stage runs out).
// - the 0.15 whole-model fit check (vllm#34076: vLLM 0.15.2rc1, Qwen3-Coder-30B-A3B PP2 16,32 on an
//   RTX 5070 Ti + RTX 5090 D: "24.0 GiB KV cache is needed ... (3.18 GiB) ... 34736").
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/units.h"
#include "deploy_test_util.h"
#include "layout/planner.h"
#include "test_util.h"
#include "vllm34076_fixture.h"

namespace ppdeploy {
namespace {

using ::testing::HasSubstr;

std::string Config(const char* file) { return std::string(PPDEPLOY_SOURCE_DIR) + "/tests/data/hf-configs/" + file; }

// The planner's deployment for a model on one stage of GPUs, known-memory mode: every PP rank has
// exactly `avail_gib` (a calibration at this very layout reproduces the logged figure).
struct Known {
  std::map<std::string, std::string> flags;
  std::vector<double> avail_gib;
};

Deployment Resolve(std::map<std::string, std::string> flags) {
  flags.emplace("calibration", "");
  flags.emplace("spec_method", "none");
  flags.emplace("gpus", "all");
  flags.emplace("pp_layer_partition", "");
  flags.emplace("kv_cache_dtype", "auto");
  return testing::DeploymentWith(flags);
}

LayoutPlan PlanKnown(Deployment d, LayoutSpec spec, const std::vector<double>& avail_gib) {
  Calibration c;
  c.source = "test";
  c.tensor_parallel_size = spec.tensor_parallel_size;
  c.pipeline_parallel_size = spec.pipeline_parallel_size;
  c.layer_partition = spec.layer_partition;
  c.gpu_memory_utilization = d.gpu_memory_utilization;
  c.max_model_len = d.effective_max_model_len();
  c.total_gib = d.gpu.total_gib;
  for (size_t r = 0; r < avail_gib.size(); ++r) {
    CalibrationRank cr;
    cr.pp_rank = static_cast<int>(r);
    cr.available_kv_gib = avail_gib[r];
    c.ranks.push_back(cr);
  }
  d.calibration = c;
  return PlanLayout(d, spec);
}

struct Interval {
  std::int64_t lo, hi;
};
Interval Blocks(const Deployment& d, const LayoutSpec& spec, std::vector<double> gib) {
  std::vector<double> lo = gib, hi = gib;
  for (auto& v : lo) v -= 0.005;
  for (auto& v : hi) v += 0.005;
  return {PlanKnown(d, spec, lo).pool.num_gpu_blocks, PlanKnown(d, spec, hi).pool.num_gpu_blocks};
}

// The logged token figure and concurrency at a given pool size, under the plan's groups.
PoolResult AtBlocks(const LayoutPlan& p, const Deployment& d, std::int64_t blocks) {
  PoolInputs in;
  in.available_bytes = {blocks * p.ranks[0].page_bytes};
  in.bytes_per_token = {p.ranks[0].bytes_per_token};
  in.block_bytes = {p.ranks[0].page_bytes};
  in.block_size = p.block_size;
  in.max_model_len = p.max_model_len;
  in.tokens_formula = d.vllm.tokens_formula;
  in.num_groups = static_cast<int>(p.kv_groups.groups.size());
  in.min_block_size = p.kv_groups.min_block_size();
  in.blocks_per_request = p.pool.blocks_per_request;
  in.decode_context_parallel_size = d.decode_context_parallel_size;
  return ComputePool(in);
}

std::map<std::string, std::string> H100Run(const char* config, int tp) {
  return {{"model", Config(config)},
          {"gpu", "h100"},
          {"gpu_total_gib", "79.19"},
          {"vllm_version", "0.19.0"},
          {"tp_size", std::to_string(tp)},
          {"pp_size", "1"},
          {"gpus_per_node", std::to_string(tp)},
          {"max_model_len", "8192"},
          {"gpu_memory_utilization", "0.95"}};
}

TEST(HybridKvTest, Gemma3SlidingWindowGroupsAndPadding) {
  // facts.json run google-gemma-3-27b-it--h100-80gb--tp1pp1dp1--8192: available 19.53 GiB, 15,997 blocks,
  // 36,560 tokens, 4.46x, "Add 8 padding layers, may waste at most 15.38% KV cache memory".
  Deployment d = Resolve(H100Run("google__gemma-3-27b-it.json", 1));
  ASSERT_EQ(d.model.model_type, "gemma3_text");  // the nested text_config
  EXPECT_EQ(d.model.num_key_value_heads, 16);
  EXPECT_EQ(d.model.CountLayers(LayerKind::kSlidingWindow), 52);  // sliding_window_pattern 6: every 6th full
  EXPECT_EQ(d.model.CountLayers(LayerKind::kFull), 10);
  EXPECT_EQ(d.model.layers[5].kind, LayerKind::kFull);
  EXPECT_EQ(d.model.layers[0].window, 1024);
  LayoutSpec spec{1, 1, 1, {}};
  LayoutPlan p = PlanKnown(d, spec, {19.53});
  EXPECT_EQ(p.kv_groups.grouping, KvGrouping::kHybrid);
  EXPECT_EQ(p.kv_groups.groups.size(), 7u);  // 1 full group + 6 sliding groups of 10 layers (8 padding)
  EXPECT_EQ(p.kv_groups.group_size, 10);
  EXPECT_EQ(p.kv_groups.padding_layers, 8);
  EXPECT_EQ(fmt::format("{:.2f}", p.kv_groups.padding_waste_pct), "15.38");
  EXPECT_EQ(p.ranks[0].page_bytes, 10 * 16 * 2 * 16 * 128 * 2);  // group_size x (B x 2 x 16 heads x 128 x bf16)
  Interval iv = Blocks(d, spec, {19.53});
  EXPECT_LE(iv.lo, 15997);
  EXPECT_GE(iv.hi, 15997);
  // 512 full-attention blocks + 6 x 513 sliding blocks (cdiv(min(1023 + 8192, 8192), 16) + 1).
  EXPECT_EQ(p.pool.blocks_per_request, 512 + 6 * 513);
  PoolResult at = AtBlocks(p, d, 15997);
  EXPECT_EQ(at.kv_tokens, 36560);  // 15,997 // 7 x 16: derived, not tokens of KV
  EXPECT_TRUE(at.tokens_derived);
  EXPECT_EQ(fmt::format("{:.2f}", at.max_concurrency), "4.46");

  // gemma-3-4b: 34 layers (5 full), "Add 1 padding layers, may waste at most 3.45%", 204,817 blocks
  // from 62.51 GiB, 468,144 tokens, 57.05x (facts.json run google-gemma-3-4b-it--h100-80gb--tp1pp1dp1--8192).
  Deployment d4 = Resolve(H100Run("google__gemma-3-4b-it.json", 1));
  LayoutPlan p4 = PlanKnown(d4, spec, {62.51});
  EXPECT_EQ(p4.kv_groups.padding_layers, 1);
  EXPECT_EQ(fmt::format("{:.2f}", p4.kv_groups.padding_waste_pct), "3.45");
  Interval iv4 = Blocks(d4, spec, {62.51});
  EXPECT_LE(iv4.lo, 204817);
  EXPECT_GE(iv4.hi, 204817);
  PoolResult at4 = AtBlocks(p4, d4, 204817);
  EXPECT_EQ(at4.kv_tokens, 468144);
  EXPECT_EQ(fmt::format("{:.2f}", at4.max_concurrency), "57.05");
}

TEST(HybridKvTest, Gemma2AlternatingSlidingWindow) {
  // facts.json run google-gemma-2-9b-it--h100-80gb--tp1pp1dp1--8192: 54.12 GiB, 21,110 blocks,
  // 168,880 tokens, 20.6x. Gemma-2 has no layer_types: transformers alternates, sliding first.
  Deployment d = Resolve(H100Run("google__gemma-2-9b-it.json", 1));
  EXPECT_EQ(d.model.layers[0].kind, LayerKind::kSlidingWindow);
  EXPECT_EQ(d.model.layers[1].kind, LayerKind::kFull);
  EXPECT_EQ(d.model.layers[0].window, 4096);
  LayoutSpec spec{1, 1, 1, {}};
  LayoutPlan p = PlanKnown(d, spec, {54.12});
  EXPECT_EQ(p.kv_groups.groups.size(), 2u);
  EXPECT_EQ(p.kv_groups.padding_layers, 0);
  Interval iv = Blocks(d, spec, {54.12});
  EXPECT_LE(iv.lo, 21110);
  EXPECT_GE(iv.hi, 21110);
  PoolResult at = AtBlocks(p, d, 21110);
  EXPECT_EQ(at.kv_tokens, 168880);
  EXPECT_EQ(fmt::format("{:.2f}", at.max_concurrency), "20.60");
}

TEST(HybridKvTest, GptOssSinksAndSlidingWindow) {
  // facts.json run openai-gpt-oss-20b--h100-80gb--tp2pp1dp1--8192 (util 0.9): 59.32 GiB per TP rank,
  // 323,972 blocks, 2,591,776 tokens, 316.07x. layer_types alternates sliding (128) and full; the
  // learned attention sinks add no KV.
  auto flags = H100Run("openai__gpt-oss-20b.json", 2);
  flags["gpu_memory_utilization"] = "0.9";
  Deployment d = Resolve(flags);
  EXPECT_TRUE(d.model.attention_sinks);
  EXPECT_EQ(d.model.layer_pattern, "layer_types");
  EXPECT_EQ(d.model.CountLayers(LayerKind::kSlidingWindow), 12);
  EXPECT_EQ(d.model.n_routed_experts, 32);
  EXPECT_EQ(d.model.num_experts_per_tok, 4);
  LayoutSpec spec{2, 1, 1, {}};
  LayoutPlan p = PlanKnown(d, spec, {59.32});
  EXPECT_EQ(p.kv_groups.groups.size(), 2u);
  EXPECT_EQ(p.ranks[0].page_bytes, 12 * 16 * 2 * 4 * 64 * 2);  // 8 KV heads / TP2 x 64
  Interval iv = Blocks(d, spec, {59.32});
  EXPECT_LE(iv.lo, 323972);
  EXPECT_GE(iv.hi, 323972);
  PoolResult at = AtBlocks(p, d, 323972);
  EXPECT_EQ(at.kv_tokens, 2591776);
  EXPECT_EQ(fmt::format("{:.2f}", at.max_concurrency), "316.07");
}

TEST(HybridKvTest, Llama4ChunkedLocalAttention) {
  // facts.json run meta-llama-llama-4-scout--h100-80gb--tp4pp1dp1--8192 (not FAILED): 16.75 GiB per
  // rank, 91,495 blocks, 365,968 tokens, 44.68x. No config.json of Llama-4-Scout was found; this is
  // transformers' Llama4TextConfig (whose defaults are Scout's) with the fields llm-d-planner's
  // results_predicted.csv lists for the run (48 layers, 8 KV heads x 128, chunked attention 8192):
  // RoPE layers use chunked local attention, every 4th (NoPE) layer full attention (vLLM llama4.py).
  nlohmann::json cfg = {{"architectures", {"Llama4ForConditionalGeneration"}},
                        {"model_type", "llama4"},
                        {"text_config",
                         {{"model_type", "llama4_text"},
                          {"num_hidden_layers", 48},
                          {"num_key_value_heads", 8},
                          {"head_dim", 128},
                          {"attention_chunk_size", 8192}}},
                        {"vision_config", {{"model_type", "llama4_vision_model"}}},
                        {"torch_dtype", "bfloat16"}};
  Deployment d = Resolve(H100Run("meta-llama__Llama-3.1-8B-Instruct.json", 4));
  d.model = ParseModelConfig(cfg, "Llama-4-Scout (Llama4TextConfig defaults)");
  d.weights = EstimateWeights(d.model);
  EXPECT_EQ(d.model.CountLayers(LayerKind::kChunkedLocal), 36);
  EXPECT_EQ(d.model.layers[3].kind, LayerKind::kFull);
  EXPECT_EQ(d.model.n_routed_experts, 16);
  EXPECT_TRUE(d.model.multimodal);
  LayoutSpec spec{4, 1, 1, {}};
  LayoutPlan p = PlanKnown(d, spec, {16.75});
  EXPECT_EQ(p.kv_groups.groups.size(), 4u);  // 1 full + 3 chunked groups of 12 layers
  Interval iv = Blocks(d, spec, {16.75});
  EXPECT_LE(iv.lo, 91495);
  EXPECT_GE(iv.hi, 91495);
  // 512 full + 3 x cdiv(min(8192 + 8192, 8192), 16) chunked blocks per request.
  EXPECT_EQ(p.pool.blocks_per_request, 4 * 512);
  PoolResult at = AtBlocks(p, d, 91495);
  EXPECT_EQ(at.kv_tokens, 365968);
  EXPECT_EQ(fmt::format("{:.2f}", at.max_concurrency), "44.68");
  // Where a version caches chunked attention as full (the hybrid manager off for it), one group:
  Deployment old = d;
  old.vllm = FindVllmProfile("0.11");
  EXPECT_EQ(PlanKnown(old, spec, {16.75}).kv_groups.groups.size(), 1u);
}

TEST(HybridKvTest, Qwen3NextLinearAttentionHybrid) {
  // Public vLLM 0.10.2 log (docs/memory-overheads.md source id:7292846353): Qwen3-Next-80B-A3B-Instruct,
  // TP2 on H200, max_model_len 262,144, no prefix caching, "Available KV cache memory: 44.59 GiB".
  Deployment d = Resolve({{"model", Config("Qwen__Qwen3-Next-80B-A3B-Thinking.json")},
                          {"gpu", "h200"},
                          {"vllm_version", "0.10.2"},
                          {"tp_size", "2"},
                          {"pp_size", "1"},
                          {"gpus_per_node", "2"},
                          {"max_model_len", "262144"},
                          {"gpu_memory_utilization", "0.9"}});
  EXPECT_EQ(d.model.CountLayers(LayerKind::kLinear), 36);  // full_attention_interval 4
  EXPECT_EQ(d.model.linear.kind, StateKind::kGatedDeltaNet);
  // gated_delta_net_state_shape at TP2: conv (3, (128 x 16 x 2 + 128 x 32) / 2) + ssm (32 / 2, 128, 128), bf16.
  EXPECT_EQ(d.model.LinearStateBytes(2, 2), 3 * 4096 * 2 + 16 * 128 * 128 * 2);  // 548,864 B
  LayoutSpec spec{2, 1, 1, {}};
  LayoutPlan p = PlanKnown(d, spec, {44.59});
  // "Setting attention block size to 544 tokens": 16 x cdiv(548,864, 16 x 1,024 B/token).
  EXPECT_EQ(p.block_size, 544);
  ASSERT_FALSE(p.kv_notes.empty());
  EXPECT_THAT(p.kv_notes.front(), HasSubstr("padded by 1.49%"));  // "Padding mamba page size by 1.49%"
  EXPECT_EQ(p.kv_groups.groups.size(), 4u);                       // 1 attention + 3 mamba groups of 12
  EXPECT_EQ(p.pool.num_gpu_blocks, 7162);                         // floor(44.59 GiB / (12 x 557,056 B))
  EXPECT_EQ(p.pool.kv_tokens, 973760);            // 7,162 // 4 groups x 544: "GPU KV cache size: 973,760 tokens"
  EXPECT_EQ(p.pool.blocks_per_request, 482 + 3);  // cdiv(262,144, 544) + one state block per mamba group
  EXPECT_EQ(fmt::format("{:.2f}", p.pool.max_concurrency), "14.77");
  Interval iv = Blocks(d, spec, {44.59});
  EXPECT_LE(iv.lo, 7162);
  EXPECT_GE(iv.hi, 7162);
}

TEST(HybridKvTest, DcpOnKimiK2) {
  // DEV-MLA-18 (vllm recipes #115, 8 x H200, TP8, vLLM nightly 2025-11): 46.80 GiB, 715,072 tokens =
  // 11,173 blocks of 64. Issue 12: TP8 + DCP8 logs 5,721,088 tokens = 11,174 blocks x 64 x 8, inside
  // the rounding interval of the same 46.80 GiB (DCP reuses the TP ranks: weights and memory alike).
  std::map<std::string, std::string> flags = {{"model", "kimi-k2"},
                                              {"gpu", "h200"},
                                              {"vllm_version", "0.11.1"},
                                              {"tp_size", "8"},
                                              {"pp_size", "1"},
                                              {"max_model_len", "262144"},
                                              {"gpu_memory_utilization", "0.9"}};
  Deployment d1 = Resolve(flags);
  flags["dcp_size"] = "8";
  Deployment d8 = Resolve(flags);
  LayoutSpec spec{8, 1, 1, {}};
  LayoutPlan p1 = PlanKnown(d1, spec, {46.80});
  LayoutPlan p8 = PlanKnown(d8, spec, {46.80});
  EXPECT_TRUE(p8.feasible) << (p8.problems.empty() ? "" : p8.problems[0].message);
  EXPECT_EQ(p1.pool.num_gpu_blocks, p8.pool.num_gpu_blocks);  // the per-GPU block count is unchanged
  EXPECT_EQ(p1.pool.kv_tokens, 715072);
  Interval iv = Blocks(d8, spec, {46.80});
  EXPECT_LE(iv.lo, 11174);
  EXPECT_GE(iv.hi, 11174);
  PoolResult at = AtBlocks(p8, d8, 11174);
  EXPECT_EQ(at.kv_tokens, 5721088);       // 11,174 // 1 group x 64 x dcp_world_size 8
  EXPECT_EQ(at.blocks_per_request, 512);  // cdiv(cdiv(262,144, 8), 64)
  EXPECT_THAT(p8.capacity_log, HasSubstr("Multiplying the GPU KV cache size by the dcp_world_size 8."));
  // Since #41069 the figure is int(concurrency x max_model_len): the same 5,721,088.
  Deployment d26 = d8;
  d26.vllm = FindVllmProfile("0.26");
  EXPECT_EQ(AtBlocks(p8, d26, 11174).kv_tokens, 5721088);
  // A longest request 8 x longer than without DCP.
  EXPECT_EQ(p8.pool.largest_max_model_len, p8.pool.num_gpu_blocks * 64 * 8);
  // Refusals, each naming what refuses: a version without the flag, and the seed's sparse MLA (DSA).
  Deployment d10 = d8;
  d10.vllm = FindVllmProfile("0.10");
  LayoutPlan p10 = PlanKnown(d10, spec, {46.80});
  ASSERT_NE(p10.Problem(PlanProblem::Kind::kDcpUnsupported), nullptr);
  EXPECT_THAT(p10.Problem(PlanProblem::Kind::kDcpUnsupported)->message,
              HasSubstr("has no --decode-context-parallel-size"));
  Deployment seed = testing::DeploymentWith({{"dcp_size", "4"}, {"calibration", ""}});
  LayoutPlan ps = PlanLayout(seed, LayoutSpec{4, 2, 1, {41, 37}});
  ASSERT_NE(ps.Problem(PlanProblem::Kind::kDcpUnsupported), nullptr);
  EXPECT_THAT(ps.Problem(PlanProblem::Kind::kDcpUnsupported)->message, HasSubstr("cannot return the softmax LSE"));
  // DSA on Blackwell with standard fp8 KV (FLASHINFER_MLA_SPARSE, #46076) is allowed from the row that has it.
  Deployment bw = testing::DeploymentWith({{"model", "deepseek-v3.2"},
                                           {"gpu", "b200"},
                                           {"vllm_version", "0.30"},
                                           {"kv_cache_dtype", "fp8"},
                                           {"dcp_size", "8"},
                                           {"tp_size", "8"},
                                           {"pp_size", "1"},
                                           {"pp_layer_partition", ""},
                                           {"calibration", ""},
                                           {"spec_method", "none"},
                                           {"max_model_len", "131072"},
                                           {"gpus", "all"}});
  EXPECT_EQ(PlanLayout(bw, LayoutSpec{8, 1, 1, {}}).Problem(PlanProblem::Kind::kDcpUnsupported), nullptr);
  bw.vllm = FindVllmProfile("0.24");
  EXPECT_NE(PlanLayout(bw, LayoutSpec{8, 1, 1, {}}).Problem(PlanProblem::Kind::kDcpUnsupported), nullptr);
  // GQA: vllm/config/model.py wants tp > num_key_value_heads (Llama-3.1-8B has 8).
  Deployment gqa = Resolve({{"model", "llama-3.1-8b"},
                            {"gpu", "h100"},
                            {"tp_size", "8"},
                            {"pp_size", "1"},
                            {"dcp_size", "2"},
                            {"vllm_version", "0.30"}});
  LayoutPlan pg = PlanLayout(gqa, LayoutSpec{8, 1, 1, {}});
  ASSERT_NE(pg.Problem(PlanProblem::Kind::kDcpUnsupported), nullptr);
  EXPECT_THAT(pg.Problem(PlanProblem::Kind::kDcpUnsupported)->message,
              HasSubstr("tensor_parallel_size (8) > num_key_value_heads (8)"));
}

TEST(HybridKvTest, PreMlaDeepSeekV2Lite) {
  // Issue 12: vLLM < 0.7.1 caches DeepSeek-V2-Lite as MHA; the log shows 5,373 blocks where the MLA
  // layout gives 19,105 at the same memory. At TP4, MHA = 2 x 16/4 heads x 256 (q/k/v padded to
  // 256 before #12067) x bf16 = 4,096 B per layer and token; MLA = (512 + 64) x 2 = 1,152.
  std::map<std::string, std::string> flags = {
      {"model", "deepseek-v2-lite"}, {"gpu", "a100-80gb"},     {"tp_size", "4"}, {"pp_size", "1"},
      {"vllm_version", "0.6.6"},     {"max_model_len", "8192"}};
  Deployment pre = Resolve(flags);
  EXPECT_FALSE(pre.mla_kv);
  EXPECT_EQ(pre.engine, Engine::kV0);
  flags["vllm_version"] = "0.8.5";
  Deployment mla = Resolve(flags);
  EXPECT_TRUE(mla.mla_kv);
  LayoutSpec spec{4, 1, 1, {}};
  // Any available memory that gives the MLA layout 19,105 blocks gives the pre-MLA layout 5,373.
  const std::int64_t mla_block = 16 * 27 * 1152, pre_block = 16 * 27 * 4096;
  EXPECT_EQ(PlanLayout(mla, spec).ranks[0].page_bytes, mla_block);
  EXPECT_EQ(PlanLayout(pre, spec).ranks[0].page_bytes, pre_block);
  for (std::int64_t avail : {19105 * mla_block, 19106 * mla_block - 1}) {
    EXPECT_EQ(avail / mla_block, 19105);
    EXPECT_EQ(avail / pre_block, 5373);
  }
  // 0.7.0 (#12067: head qk_nope + qk_rope = 192, v padded to it) and 0.7.1 (MLA, #12601).
  flags["vllm_version"] = "0.7.0";
  Deployment v070 = Resolve(flags);
  EXPECT_FALSE(v070.mla_kv);
  EXPECT_EQ(PlanLayout(v070, spec).ranks[0].page_bytes, 16 * 27 * 2 * 4 * 192 * 2);
  flags["vllm_version"] = "0.7.1";
  EXPECT_TRUE(Resolve(flags).mla_kv);
  // VLLM_MLA_DISABLE=1 on a later release: the MHA layout with 192-wide heads.
  flags["vllm_version"] = "0.8.5";
  flags["mla_disable"] = "1";
  Deployment off = Resolve(flags);
  EXPECT_FALSE(off.mla_kv);
  EXPECT_EQ(PlanLayout(off, spec).ranks[0].page_bytes, 16 * 27 * 2 * 4 * 192 * 2);
}

TEST(HybridKvTest, V07LastStageSplitAndLmHeadOnEveryRank) {
  // vllm#12895 (vLLM 0.7.2, DeepSeek-R1 BF16, TP8 x PP3 on A100, max_model_len 4096): "the last node
  // consistently uses more GPU memory" and runs out. Before #13839 get_pp_indices put the remainder
  // on the last stage (61 = 20 + 20 + 21); before #13833 DeepSeek built lm_head on every PP rank.
  const VllmProfile& v07 = FindVllmProfile("0.7.2");
  EXPECT_EQ(DefaultSplit(v07, 61, 3), (std::vector<int>{20, 20, 21}));
  EXPECT_EQ(DefaultSplit(FindVllmProfile("0.8"), 61, 3), (std::vector<int>{20, 21, 20}));  // docs/vllm-rules.md §1.4
  EXPECT_EQ(DefaultSplit(v07, 61, 4), (std::vector<int>{15, 15, 15, 16}));
  std::map<std::string, std::string> flags = {
      {"model", "deepseek-v3"},  {"gpu", "a100-80gb"},      {"tp_size", "8"},       {"pp_size", "3"},
      {"vllm_version", "0.7.2"}, {"max_model_len", "4096"}, {"gpus_per_node", "8"}, {"nodes", "3"}};
  Deployment d = Resolve(flags);
  LayoutPlan p = PlanLayout(d, LayoutSpec{8, 3, 1, {}});
  EXPECT_EQ(p.partition, (std::vector<int>{20, 20, 21}));
  EXPECT_EQ(p.pool.binding_rank, 2);  // the last stage binds, as reported
  // lm_head on every rank: stage 0 holds the head as well as the embedding.
  Deployment d8 = d;
  d8.vllm = FindVllmProfile("0.8");
  const std::vector<int> split{20, 20, 21};
  std::int64_t head = StageWeightsBytes(d, 8, 1, split, 1, {}) - StageWeightsBytes(d8, 8, 1, split, 1, {});
  EXPECT_GT(head, 0);
  EXPECT_EQ(head, PerGpuBytes(d.weights.lm_head.items.empty() ? d.weights.embedding : d.weights.lm_head,
                              ShardParams{8, 8, d.model.num_key_value_heads, d.model.vocab_size}, false, 0));
  // With #13839's split and lm_head on the last rank only (0.9 pools per rank), the middle stage
  // with 21 layers binds instead.
  flags["vllm_version"] = "0.9";
  LayoutPlan p8 = PlanLayout(Resolve(flags), LayoutSpec{8, 3, 1, {}});
  EXPECT_EQ(p8.partition, (std::vector<int>{20, 21, 20}));
  EXPECT_EQ(p8.pool.binding_rank, 1);
}

TEST(HybridKvTest, V015WholeModelFitCheck) {
  // vllm#34076 (vLLM 0.15.2rc1, 2026-02-08): Qwen3-Coder-30B-A3B-FP8, PP2 with VLLM_PP_LAYER_PARTITION=16,32
  // on an RTX 5070 Ti (stage 0) + RTX 5090 D (stage 1), max_model_len 262,144: "(24.0 GiB KV cache is
  // needed, which is larger than the available KV cache memory (3.18 GiB). Based on the available memory,
  // the estimated maximum model length is 34736." 24.0 GiB = 262,144 x 48 layers x 2 x 4 KV heads x 128 x 2 B:
  // the whole model, checked against stage 0 (#29431; fixed by #33698). Qwen3-30B-A3B has the same
  // attention shape (48 layers, 4 KV heads x 128).
  // The FP8 checkpoint's quantization_config (block-wise fp8 [128, 128]): its weights fit the 16 GB stage.
  std::map<std::string, std::string> flags = testing::Vllm34076Flags();
  ResolvedDeployment r = testing::ResolvedWith(flags);
  ASSERT_EQ(r.planner.stage_gpus.size(), 2u);
  EXPECT_EQ(r.planner.stage_gpus[0].name, "rtx-5070-ti");
  LayoutPlan p = PlanKnown(r.planner, r.layout, {3.18, 20.0});
  const PlanProblem* pr = p.Problem(PlanProblem::Kind::kMaxModelLenTooLarge);
  ASSERT_NE(pr, nullptr) << (p.problems.empty() ? "no problem" : p.problems[0].message) << " avail "
                         << ToGiB(p.ranks[0].available_kv.bytes);
  EXPECT_EQ(pr->pp_rank, 0);
  EXPECT_THAT(pr->message, HasSubstr("(24.0 GiB KV cache is needed"));
  EXPECT_THAT(pr->message, HasSubstr("available KV cache memory (3.18 GiB)"));
  // vLLM's estimate 34,736 lies within what 3.18 GiB +/- 0.005 allows for the whole model's 98,304 B/token.
  LayoutPlan plo = PlanKnown(r.planner, r.layout, {3.175, 20.0}), phi = PlanKnown(r.planner, r.layout, {3.185, 20.0});
  ASSERT_NE(plo.Problem(PlanProblem::Kind::kMaxModelLenTooLarge), nullptr);
  ASSERT_NE(phi.Problem(PlanProblem::Kind::kMaxModelLenTooLarge), nullptr);
  std::int64_t lo = plo.Problem(PlanProblem::Kind::kMaxModelLenTooLarge)->have;
  std::int64_t hi = phi.Problem(PlanProblem::Kind::kMaxModelLenTooLarge)->have;
  EXPECT_LE(lo, 34736);
  EXPECT_GE(hi, 34736);
  // From 0.16 the check is per worker: stage 0's 16 layers need 8.0 GiB (the figure a per-stage planner gives).
  flags["vllm_version"] = "0.16";
  ResolvedDeployment r16 = testing::ResolvedWith(flags);
  LayoutPlan pl16 = PlanKnown(r16.planner, r16.layout, {3.18, 20.0});
  const PlanProblem* p16 = pl16.Problem(PlanProblem::Kind::kMaxModelLenTooLarge);
  ASSERT_NE(p16, nullptr);
  EXPECT_THAT(p16->message, HasSubstr("(8.0 GiB KV cache is needed"));
  // Mixed GPU types: each stage's budget is its own GPU's (0.9 x 15.47 vs 0.9 x 31.37 GiB).
  LayoutPlan est = PlanLayout(r.planner, r.layout);
  EXPECT_LT(est.ranks[0].requested_bytes, est.ranks[1].requested_bytes);
}

TEST(HybridKvTest, GroupingRulesOfKvCacheUtils) {
  auto layer = [](const char* name, KvSpecType t, std::int64_t bpt, int window = 0) {
    return KvLayer{name, KvSpec{t, 16, bpt, 0, 0, window, "bfloat16"}};
  };
  // Uniform: one group. UniformType (DSA latent + indexer): one group whose page is the sum.
  KvCacheGroups u =
      GroupKvCacheSpecs({layer("a", KvSpecType::kFullAttention, 100), layer("b", KvSpecType::kFullAttention, 100)}, {});
  EXPECT_EQ(u.grouping, KvGrouping::kUniform);
  std::vector<KvLayer> dsa = {layer("l0.attn", KvSpecType::kMla, 656),
                              {"l0.idx", KvSpec{KvSpecType::kMla, 16, 132, 0, 0, 0, "indexer uint8"}}};
  EXPECT_EQ(GroupKvCacheSpecs(dsa, {}).grouping, KvGrouping::kUniformType);
  WorkerKv w = ProjectKvGroupsToWorker(GroupKvCacheSpecs(dsa, {}), dsa, KvLimits{1024, 8192, 1}, false, false);
  EXPECT_EQ(w.block_bytes, 16 * (656 + 132));
  // gpt-oss + eagle (#29303): 12 sliding + 13 full -> one group each (13 < 12 x 1.25), one padding layer.
  std::vector<KvLayer> ge;
  for (int i = 0; i < 12; ++i) ge.push_back(layer(fmt::format("s{}", i).c_str(), KvSpecType::kSlidingWindow, 100, 128));
  for (int i = 0; i < 13; ++i) ge.push_back(layer(fmt::format("f{}", i).c_str(), KvSpecType::kFullAttention, 100));
  KvGroupingOptions r125{true, true, 1.25};
  KvCacheGroups g = GroupKvCacheSpecs(ge, r125);
  EXPECT_EQ(g.groups.size(), 2u);
  EXPECT_EQ(g.padding_layers, 1);
  // Before #29303 the minimum decides: 13 full layers make two groups (12 + 1, 11 padding).
  KvCacheGroups gmin = GroupKvCacheSpecs(ge, KvGroupingOptions{true, true, 0});
  EXPECT_EQ(gmin.groups.size(), 3u);
  EXPECT_EQ(gmin.padding_layers, 11);
  // Different page sizes: the smaller grows its block size (unify_kv_cache_spec_page_size); a ratio
  // that does not divide is vLLM's NotImplementedError.
  KvCacheGroups pg = GroupKvCacheSpecs(
      {layer("a", KvSpecType::kFullAttention, 200), layer("b", KvSpecType::kSlidingWindow, 100, 64)}, {});
  EXPECT_EQ(pg.min_block_size(), 16);
  EXPECT_EQ(pg.groups[1].spec.block_size, 32);
  EXPECT_THAT(testing::ErrorOf([&] {
                GroupKvCacheSpecs(
                    {layer("a", KvSpecType::kFullAttention, 300), layer("b", KvSpecType::kSlidingWindow, 200, 64)}, {});
              }),
              HasSubstr("not divisible by the maximum page size"));
  // Sliding window need: (cdiv(min(W - 1 + mbt, L), B) + 1) pages; chunked: cdiv(min(C + mbt, L), B).
  KvSpec sw{KvSpecType::kSlidingWindow, 16, 100, 0, 0, 4096, "x"};
  EXPECT_EQ(MaxMemoryUsageBytes(sw, KvLimits{131072, 8192, 1}), (CeilDiv(4095 + 8192, 16) + 1) * 1600);
  KvSpec ck{KvSpecType::kChunkedLocal, 16, 100, 0, 0, 8192, "x"};
  EXPECT_EQ(MaxMemoryUsageBytes(ck, KvLimits{131072, 8192, 1}), CeilDiv(8192 + 8192, 16) * 1600);
}

}  // namespace
}  // namespace ppdeploy
