// The one limit function (issue 23 items 1-3 and 7): LayoutPlan::limit, the check vLLM applies in the
// version row, the largest max_model_len at the point estimate and at the low end, the binding rank; the
// memory gate of `cmd` / `start` and `plan` agree on it.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/units.h"
#include "deploy_test_util.h"
#include "launch/prepare.h"
#include "layout/planner.h"
#include "report/plan_render.h"
#include "test_util.h"
#include "vllm34076_fixture.h"

namespace ppdeploy {
namespace {

using launch::GateResult;
using launch::GateStatus;
using launch::PreparedLaunch;
using ::testing::HasSubstr;

const GateResult& MemoryGate(const PreparedLaunch& p) {
  for (const auto& g : p.gates.results)
    if (g.name == "memory") return g;
  throw std::runtime_error("no memory gate");
}

std::string Joined(const GateResult& r) { return fmt::format("{}", fmt::join(r.messages, "\n")); }

// plan, cmd --format json (its "plan" element is LayoutToJson of the prepared plan) and the memory gate agree:
// the same largest max_model_len and feasibility, and the gate refuses exactly what the plan calls a problem.
void ExpectOneAnswer(const PreparedLaunch& p) {
  const LayoutPlan& plan = p.plan;
  const nlohmann::json j = LayoutToJson(plan);
  EXPECT_EQ(j["largest_max_model_len"], plan.limit.largest);
  EXPECT_EQ(j["max_model_len_limit"]["largest"], plan.limit.largest);
  EXPECT_EQ(j["max_model_len_limit"]["decided_on"], "point");
  EXPECT_EQ(j["feasible"], plan.feasible);
  EXPECT_EQ(plan.limit.fits, plan.max_model_len <= plan.limit.largest);
  const GateResult& g = MemoryGate(p);
  EXPECT_EQ(g.status == GateStatus::kFail, !plan.feasible) << Joined(g);
  EXPECT_THAT(Joined(g), HasSubstr(LimitText(plan)));
}

// GLM-4.7 (Glm4MoeForCausalLM; the shape of GLM-4.5/4.6) from the public config values: 92 layers, hidden 5120,
// 96 heads, 8 KV heads x 128, 160 experts (8 per token, 1 shared, moe_intermediate 1536), 3 dense layers
// (intermediate 12288), vocab 151,552, 1 MTP layer; the FP8 checkpoint's block-wise fp8 [128, 128].
std::string WriteGlm47Config() {
  const std::string dir = testing::TempPath("glm47", "model");
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/config.json") << R"({
  "architectures": ["Glm4MoeForCausalLM"], "model_type": "glm4_moe",
  "num_hidden_layers": 92, "hidden_size": 5120, "num_attention_heads": 96, "num_key_value_heads": 8,
  "head_dim": 128, "partial_rotary_factor": 0.5, "attention_bias": true, "use_qk_norm": true,
  "first_k_dense_replace": 3, "n_routed_experts": 160, "n_shared_experts": 1, "num_experts_per_tok": 8,
  "moe_intermediate_size": 1536, "intermediate_size": 12288, "vocab_size": 151552,
  "num_nextn_predict_layers": 1, "max_position_embeddings": 202752, "torch_dtype": "bfloat16",
  "tie_word_embeddings": false, "rms_norm_eps": 1e-05, "rope_theta": 1000000,
  "quantization_config": {"quant_method": "fp8", "activation_scheme": "dynamic", "weight_block_size": [128, 128]}
})";
  return dir;
}

// vllm#32105 (comment of 2026-01-28, nightly 58996f3 ~ v0.15, A100): `--model zai-org/GLM-4.7-FP8
// --pipeline-parallel-size 8 --max-num-seqs 128 --gpu-memory-utilization 0.925 --max-model-len 202752`:
// "(71.16 GiB KV cache is needed, which is larger than the available KV cache memory (28.57 GiB). Based on the
// available memory, the estimated maximum model length is 81392."
std::map<std::string, std::string> Glm47Pp8Flags() {
  return {{"model", WriteGlm47Config()},
          {"gpu", "a100-80gb"},
          {"gpus", "all"},
          {"gpus_per_node", "8"},
          {"tp_size", "1"},
          {"pp_size", "8"},
          {"pp_layer_partition", ""},
          {"vllm_version", "0.15"},
          {"max_model_len", "202752"},
          {"max_num_seqs", "128"},
          {"gpu_memory_utilization", "0.925"},
          {"spec_method", "none"},
          {"kv_cache_dtype", "auto"},
          {"calibration", ""}};
}

// Issue 23 item 1: the whole-model check of v0.14-0.15 compares with the SMALLEST worker's memory, as vLLM's
// message quotes it, not PP rank 0's (40.96 GiB, 116,720 before the fix).
TEST(LimitTest, Glm47Pp8WholeModelCheckQuotesTheSmallestWorker) {
  PreparedLaunch p = launch::PrepareLaunch(testing::ResolvedWith(Glm47Pp8Flags()));
  ASSERT_TRUE(p.plan_error.empty()) << p.plan_error;
  const LayoutPlan& plan = p.plan;
  EXPECT_EQ(plan.limit.check, LimitCheck::kWholeModel);
  std::int64_t min_avail = INT64_MAX;
  for (const auto& r : plan.ranks) min_avail = std::min(min_avail, r.available_kv.bytes);
  EXPECT_EQ(plan.limit.available_bytes, min_avail);
  EXPECT_EQ(plan.ranks[plan.limit.binding_rank].available_kv.bytes, min_avail);
  EXPECT_NE(plan.limit.binding_rank, 0);
  EXPECT_GE(ToGiB(plan.limit.available_bytes), 28.5);
  EXPECT_LE(ToGiB(plan.limit.available_bytes), 28.8);
  // 71.16 GiB = 202,752 tokens x 92 layers x 2 x 8 KV heads x 128 x 2 B: the whole model.
  EXPECT_EQ(plan.limit.needed_bytes, 202752LL * 92 * 4096);
  EXPECT_NEAR(static_cast<double>(plan.limit.largest), 81392.0, 81392 * 0.01);
  const PlanProblem* pr = plan.Problem(PlanProblem::Kind::kMaxModelLenTooLarge);
  ASSERT_NE(pr, nullptr);
  EXPECT_THAT(pr->message, HasSubstr("(71.16 GiB KV cache is needed"));
  EXPECT_THAT(pr->message, HasSubstr(fmt::format("on PP rank {}", plan.limit.binding_rank)));
  EXPECT_EQ(pr->have, plan.limit.largest);
  EXPECT_FALSE(plan.feasible);
  ExpectOneAnswer(p);
}

// Issue 23 item 2: `cmd` printed "[pass] memory ... launch allowed" while its JSON carried plan.feasible: false.
// A reboot at the plan's figure passes the gate; one block above it does not.
TEST(LimitTest, Glm47Pp8GateRefusesWhatPlanReportsAndAcceptsItsFigure) {
  auto flags = Glm47Pp8Flags();
  PreparedLaunch p = launch::PrepareLaunch(testing::ResolvedWith(flags));
  EXPECT_TRUE(p.gates.Refused());
  EXPECT_EQ(MemoryGate(p).status, GateStatus::kFail);
  flags["max_model_len"] = std::to_string(p.plan.limit.largest);
  PreparedLaunch at = launch::PrepareLaunch(testing::ResolvedWith(flags));
  EXPECT_TRUE(at.plan.feasible);
  EXPECT_NE(MemoryGate(at).status, GateStatus::kFail) << Joined(MemoryGate(at));
  ExpectOneAnswer(at);
  flags["max_model_len"] = std::to_string(at.plan.limit.largest + 16);
  PreparedLaunch above = launch::PrepareLaunch(testing::ResolvedWith(flags));
  EXPECT_FALSE(above.plan.feasible);
  EXPECT_EQ(MemoryGate(above).status, GateStatus::kFail);
  ExpectOneAnswer(above);
}

// Issue 23 item 3, the seed: `plan` printed "largest max_model_len that fits: 728,704" and the PP > 2 gate offered
// it, but `MAX_MODEL_LEN=728704 ppdeploy cmd` was refused by the range's low end. The gate decides on the point
// estimate (and warns above the low end); one block above it is refused.
TEST(LimitTest, SeedPlansFigureIsAccepted) {
  PreparedLaunch seed = launch::PrepareLaunch(testing::ResolvedWith());
  ExpectOneAnswer(seed);
  const std::int64_t largest = seed.plan.limit.largest;
  EXPECT_GT(largest, seed.plan.limit.largest_lo);  // estimated: a range
  PreparedLaunch at = launch::PrepareLaunch(testing::ResolvedWith({{"max_model_len", std::to_string(largest)}}));
  EXPECT_TRUE(at.plan.feasible);
  EXPECT_FALSE(at.gates.Refused()) << Joined(MemoryGate(at));
  EXPECT_GE(at.plan.limit.largest, largest);
  ExpectOneAnswer(at);
  PreparedLaunch above = launch::PrepareLaunch(testing::ResolvedWith({{"max_model_len", "1048576"}}));
  EXPECT_FALSE(above.plan.feasible);
  EXPECT_TRUE(above.gates.Refused());
  ExpectOneAnswer(above);
}

// Issue 23 item 3, Gemma-class hybrid on 2 x H100: `plan` said 443,616 while the gate refused 262,144 by "blocks //
// groups x block size" at the low end (80,752). Now both use vLLM's per-request block need of every group.
TEST(LimitTest, GemmaHybridOnTwoH100AgreesWithTheGate) {
  std::map<std::string, std::string> flags = {
      {"model", std::string(PPDEPLOY_SOURCE_DIR) + "/tests/data/hf-configs/google__gemma-3-27b-it.json"},
      {"gpu", "h100-80gb"},
      {"gpus", "all"},
      {"gpus_per_node", "2"},
      {"tp_size", "2"},
      {"pp_size", "1"},
      {"pp_layer_partition", ""},
      {"vllm_version", "0.19"},
      {"max_model_len", "131072"},
      {"spec_method", "none"},
      {"kv_cache_dtype", "auto"},
      {"calibration", ""}};
  PreparedLaunch p = launch::PrepareLaunch(testing::ResolvedWith(flags));
  ASSERT_TRUE(p.plan_error.empty()) << p.plan_error;
  ASSERT_GT(p.plan.kv_groups.groups.size(), 1u);
  EXPECT_TRUE(p.plan.limit.hybrid);
  ExpectOneAnswer(p);
  // The low end is the same check at the low end of the memory, not the logged "blocks // groups x B" figure.
  EXPECT_GT(p.plan.limit.largest_lo, p.plan.pool_lo.kv_tokens);
  for (std::int64_t mml : {p.plan.limit.largest, p.plan.limit.largest + 64}) {
    flags["max_model_len"] = std::to_string(mml);
    PreparedLaunch q = launch::PrepareLaunch(testing::ResolvedWith(flags));
    ExpectOneAnswer(q);
  }
}

// Issue 23 item 3, mixed-GPU PP2 on 0.15 (vllm#34076: Qwen3-Coder-30B-A3B-FP8, 16,32 on an RTX 5070 Ti + RTX 5090 D,
// 262,144): `cmd` refused by the pool (123,712) and `plan` by the whole-model check (41,232). Now one figure.
TEST(LimitTest, MixedGpuPp2OnV015AgreesWithTheGate) {
  std::map<std::string, std::string> flags = testing::Vllm34076Flags();
  PreparedLaunch p = launch::PrepareLaunch(testing::ResolvedWith(flags));
  ASSERT_TRUE(p.plan_error.empty()) << p.plan_error;
  EXPECT_EQ(p.plan.limit.check, LimitCheck::kWholeModel);
  EXPECT_EQ(p.plan.limit.binding_rank, 0);  // the 16 GB stage
  EXPECT_FALSE(p.plan.feasible);
  ExpectOneAnswer(p);
  const PlanProblem* pr = p.plan.Problem(PlanProblem::Kind::kMaxModelLenTooLarge);
  ASSERT_NE(pr, nullptr);
  EXPECT_EQ(pr->have, p.plan.limit.largest);
  flags["max_model_len"] = std::to_string(p.plan.limit.largest);
  PreparedLaunch at = launch::PrepareLaunch(testing::ResolvedWith(flags));
  ExpectOneAnswer(at);
  EXPECT_TRUE(at.plan.feasible);
}

// Issue 23 item 7: under the 0.8 row (the executor's min(available) for every worker) the binding rank was always
// printed as PP rank 0; it is the rank with the least memory.
TEST(LimitTest, V08BindingRankIsTheSmallestWorker) {
  PoolInputs in;
  in.combine = PoolCombine::kV08MinMemory;
  in.block_size = 16;
  in.max_model_len = 4096;
  in.available_bytes = {10LL << 30, 6LL << 30, 8LL << 30};
  in.bytes_per_token = {1000, 1200, 1000};
  const PoolResult r = ComputePool(in);
  EXPECT_EQ(r.num_blocks_per_rank[0], r.num_blocks_per_rank[1]);
  EXPECT_EQ(r.binding_rank, 1);
}

// Issue 23 item 7: headroom with --gpu-total-gib: nvidia-smi's total moves with the torch-visible total.
TEST(LimitTest, HeadroomFollowsGpuTotalGib) {
  Deployment a100 = testing::DeploymentWith();
  Deployment bigger = testing::DeploymentWith({{"gpu_total_gib", "89.25"}});
  EXPECT_EQ(bigger.gpu.nvidia_smi_mib - a100.gpu.nvidia_smi_mib, 10 * 1024);
}

}  // namespace
}  // namespace ppdeploy
