// The seed's launch gates (docs/seed.md §8) as pure functions over the resolved deployment and the
// planner's plan of it: pass and fail path of each, with the seed's figures, and vLLM's exact
// get_pp_indices error texts (docs/vllm-rules.md §1.4).
#include "launch/gates.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "deploy_test_util.h"
#include "launch/prepare.h"
#include "report/plan_render.h"
#include "test_util.h"

namespace ppdeploy::launch {
namespace {

using ppdeploy::testing::ResolvedWith;
using ::testing::HasSubstr;
using ::testing::Not;

std::string Joined(const GateResult& r) { return fmt::format("{}", fmt::join(r.messages, "\n")); }

const GateResult& Gate(const PreparedLaunch& p, const std::string& name) {
  for (const auto& g : p.gates.results)
    if (g.name == name) return g;
  throw std::runtime_error("no gate " + name);
}

std::string AllGates(const PreparedLaunch& p) {
  std::string s;
  for (const auto& g : p.gates.results) s += g.name + ": " + Joined(g) + "\n";
  return s;
}

// --- DSA PP gate: docs/seed.md §1/§8: PP=4 degenerates 20% without speculation, 45% with MTP k=3.
TEST(DsaPpGateTest, PassesAtPp2AndForNonDsa) {
  EXPECT_EQ(CheckDsaPpGate(2, true, false, {}).status, GateStatus::kPass);
  EXPECT_EQ(CheckDsaPpGate(1, true, false, {}).status, GateStatus::kPass);
  EXPECT_EQ(CheckDsaPpGate(4, false, false, {}).status, GateStatus::kPass);
}

TEST(DsaPpGateTest, EscapeHatchWarnsTwiceAndAdvisesDegen) {
  auto r = CheckDsaPpGate(4, true, true, {});
  EXPECT_EQ(r.status, GateStatus::kWarn);
  ASSERT_EQ(r.messages.size(), 2u);
  EXPECT_THAT(r.messages[0], HasSubstr("WARNING"));
  EXPECT_THAT(r.messages[0], HasSubstr("45%"));
  EXPECT_THAT(r.messages[1], HasSubstr("WARNING"));
  EXPECT_THAT(r.messages[1], HasSubstr("ppdeploy degen"));
}

// The refusal's alternatives are the planner's, not hard-coded figures: PP <= 2 layouts on the
// same 8 GPUs, TP4/PP2 with the optimiser's split (41,37 for the seed, docs/seed.md §6) first.
TEST(DsaPpGateTest, RefusalListsPlannedAlternatives) {
  PreparedLaunch p = PrepareLaunch(ResolvedWith({{"pp_size", "4"}, {"tp_size", "2"}}));
  const GateResult& g = Gate(p, "dsa-pp");
  EXPECT_EQ(g.status, GateStatus::kFail);
  std::string text = Joined(g);
  EXPECT_THAT(text, HasSubstr("20% of answers with speculation off"));
  EXPECT_THAT(text, HasSubstr("45% with MTP k=3"));
  EXPECT_THAT(text, HasSubstr("ALLOW_UNVERIFIED_PP=1"));
  auto alternatives = PlanPpAlternatives(p.deployment);
  ASSERT_FALSE(alternatives.empty());
  EXPECT_EQ(alternatives[0].settings, "TP_SIZE=4 PP_SIZE=2 PP_LAYER_PARTITION=41,37");
  // The planner's own figure for that layout (the same PlanLayout `plan` runs), listed in the gate.
  PreparedLaunch seed = PrepareLaunch(ResolvedWith());
  EXPECT_EQ(alternatives[0].kv_tokens, seed.plan.pool.kv_tokens);
  EXPECT_THAT(text, HasSubstr("1. TP_SIZE=4 PP_SIZE=2 PP_LAYER_PARTITION=41,37: KV pool " +
                              WithThousands(seed.plan.pool.kv_tokens) + " tokens"));
}

// --- Layer split (seed check_pp_layer_partition over vLLM's get_pp_indices).
TEST(LayerPartitionDecisionTest, SeedDefaultPasses) {
  auto c = DecidePartition("41,37", 2, 78);
  EXPECT_EQ(c.check.status, GateStatus::kPass);
  EXPECT_TRUE(c.pass_env);
  EXPECT_EQ(c.partition, std::vector<int>({41, 37}));
  EXPECT_THAT(Joined(c.check), HasSubstr("[0,41) [41,78)"));
}

TEST(LayerPartitionDecisionTest, VllmTextsForWrongSumCountAndField) {
  auto sum = DecidePartition("41,38", 2, 78);
  EXPECT_EQ(sum.check.status, GateStatus::kFail);
  EXPECT_THAT(Joined(sum.check), HasSubstr("sum(partitions)=79 does not match num_hidden_layers=78."));
  auto count = DecidePartition("41,37,0", 2, 78);
  EXPECT_EQ(count.check.status, GateStatus::kFail);
  EXPECT_THAT(Joined(count.check), HasSubstr("len(partitions)=3 does not match pp_size=2."));
  EXPECT_THAT(Joined(count.check), HasSubstr("vLLM's default split for PP_SIZE=2 is 39,39"));
  auto x = DecidePartition("41,x", 2, 78);
  EXPECT_EQ(x.check.status, GateStatus::kFail);
  EXPECT_THAT(Joined(x.check), HasSubstr("Invalid partition string: 41,x"));
}

TEST(LayerPartitionDecisionTest, NegativeRefusedThoughVllmWouldAcceptIt) {
  auto c = DecidePartition("-1,79", 2, 78);
  EXPECT_EQ(c.check.status, GateStatus::kFail);
  EXPECT_THAT(Joined(c.check), HasSubstr("-1"));
}

TEST(LayerPartitionDecisionTest, PythonSpellingsWarn) {
  auto c = DecidePartition(" 41,+37", 2, 78);
  EXPECT_EQ(c.check.status, GateStatus::kWarn);
  EXPECT_THAT(Joined(c.check), HasSubstr("'+37' is read by vLLM (Python int()) as 37"));
  EXPECT_TRUE(c.pass_env);
}

TEST(LayerPartitionDecisionTest, IgnoredAtPp1AndDefaultWhenUnset) {
  auto c = DecidePartition("41,37", 1, 78);
  EXPECT_EQ(c.check.status, GateStatus::kWarn);
  EXPECT_FALSE(c.pass_env);
  EXPECT_THAT(Joined(c.check), HasSubstr("ignored with PP_SIZE=1"));
  auto d = DecidePartition("", 4, 78);
  EXPECT_EQ(d.check.status, GateStatus::kPass);
  EXPECT_FALSE(d.pass_env);
  EXPECT_EQ(d.partition, std::vector<int>({19, 20, 20, 19}));  // docs/vllm-rules.md §1.4 table
}

// --- Index-share safety: docs/seed.md §6/§7 (39,39 forces 39, 40, 41 on rank 1; 41,37 forces 41).
TEST(IndexShareGateTest, ForcedLayersNeedFixB) {
  IndexShareFacts f{true, {{}, {39, 40, 41}}};
  auto with_fix = CheckIndexShareSafety(f, true, "0.30-custom");
  EXPECT_EQ(with_fix.status, GateStatus::kPass);
  EXPECT_THAT(Joined(with_fix), HasSubstr("rank 1: [39, 40, 41]"));
  auto without = CheckIndexShareSafety(f, false, "0.21");
  EXPECT_EQ(without.status, GateStatus::kFail);
  EXPECT_THAT(Joined(without), HasSubstr("rank 1: [39, 40, 41]"));
  EXPECT_THAT(Joined(without), HasSubstr("no Fix B"));
}

TEST(IndexShareGateTest, SafeSplitOrNonDsaPasses) {
  EXPECT_EQ(CheckIndexShareSafety({true, {{}, {}}}, false, "0.21").status, GateStatus::kPass);  // 42,36
  EXPECT_EQ(CheckIndexShareSafety({false, {{}, {41}}}, false, "0.21").status, GateStatus::kPass);
}

TEST(IndexShareGateTest, FactsComeFromThePlannersAnalysis) {
  auto facts = [](const std::string& split) {
    PreparedLaunch p = PrepareLaunch(ResolvedWith({{"pp_layer_partition", split}}));
    return IndexShareFactsOf(p.deployment, p.plan);
  };
  EXPECT_TRUE(facts("41,37").dsa_with_index_sharing);
  EXPECT_EQ(facts("41,37").forced_layers_per_rank,
            (std::vector<std::vector<int>>{{}, {41}}));  // docs/seed.md §6 preflight
  EXPECT_EQ(facts("39,39").forced_layers_per_rank[1], (std::vector<int>{39, 40, 41}));
  EXPECT_TRUE(facts("42,36").forced_layers_per_rank[1].empty());
  EXPECT_EQ(facts("45,33").forced_layers_per_rank[1], (std::vector<int>{45}));  // docs/seed.md §7 counter-example
  // docs/seed.md §7 diagnostic switch: HF_OVERRIDES='{"index_topk_freq":1}' makes every layer compute.
  PreparedLaunch all = PrepareLaunch(ResolvedWith({{"hf_overrides", R"({"index_topk_freq": 1})"}}));
  EXPECT_FALSE(IndexShareFactsOf(all.deployment, all.plan).dsa_with_index_sharing);
}

// Issue 15: HF_OVERRIDES='{"index_topk_freq":0}' was allowed and ignored by the planner. vLLM
// would divide by it (max(i - offset + 1, 0) % freq); the override reaches the config and is refused.
TEST(IndexShareGateTest, OverridesThePlannerCannotApplyAreRefused) {
  EXPECT_THAT(ppdeploy::testing::ErrorOf([] {
                ResolvedWith({{"hf_overrides", R"({"index_topk_freq": 0})"}});
              }),
              HasSubstr("index_topk_freq"));
}

// --- Runner and speculation (seed resolve_defaults, check_pp_mtp_compat, check_pp_ngram_compat).
// "auto" is the default deployment's (the seed's FORCE_V2_RUNNER empty); since issue 23 item 4, ""
// is vLLM's own default and pins nothing, at any PP size.
TEST(V2RunnerTest, AutoPinsOneWhenPpAboveOne) {
  const VllmProfile& custom = FindVllmProfile("0.30-custom");
  EXPECT_EQ(DecideV2Runner("auto", 2, custom).v2_env, std::optional<int>(1));
  EXPECT_EQ(DecideV2Runner("auto", 1, custom).v2_env, std::nullopt);
  EXPECT_EQ(DecideV2Runner("", 2, custom).v2_env, std::nullopt);
  EXPECT_EQ(DecideV2Runner("", 2, custom).check.status, GateStatus::kPass);
  auto off = DecideV2Runner("0", 2, custom);
  EXPECT_EQ(off.v2_env, std::optional<int>(0));
  EXPECT_EQ(off.check.status, GateStatus::kWarn);
  EXPECT_EQ(DecideV2Runner("1", 1, custom).v2_env, std::optional<int>(1));
  EXPECT_EQ(DecideV2Runner("1", 1, FindVllmProfile("0.8")).check.status, GateStatus::kFail);
  EXPECT_EQ(DecideV2Runner("auto", 2, FindVllmProfile("0.8")).v2_env, std::nullopt);
}

TEST(SpeculationTest, AutoChoosesMtpWhereSupportedAndDowngradesElsewhere) {
  auto custom = DecideSpeculation("auto", 2, 1, true, FindVllmProfile("0.30-custom"));
  EXPECT_EQ(custom.method, "mtp");
  EXPECT_EQ(custom.check.status, GateStatus::kPass);
  auto upstream = DecideSpeculation("auto", 2, 1, true, FindVllmProfile("0.26"));
  EXPECT_EQ(upstream.method, "none");
  EXPECT_EQ(upstream.check.status, GateStatus::kPass);
  EXPECT_THAT(Joined(upstream.check), HasSubstr("downgraded to none"));
  EXPECT_EQ(DecideSpeculation("auto", 1, 1, false, FindVllmProfile("0.26")).method, "mtp");
  EXPECT_EQ(DecideSpeculation("auto", 2, 0, true, FindVllmProfile("0.30-custom")).method, "none");
}

TEST(SpeculationTest, ExplicitMtpWithPpFailsWithoutSupport) {
  // docs/seed.md §10: the v0.28 image crashed on PP + MTP; docs/vllm-rules.md §1.11 (#32150) for upstream.
  auto r = DecideSpeculation("mtp", 2, 1, true, FindVllmProfile("0.28-custom"));
  EXPECT_EQ(r.check.status, GateStatus::kFail);
  EXPECT_THAT(Joined(r.check), HasSubstr("does not support PP + speculative decoding"));
  EXPECT_EQ(DecideSpeculation("mtp", 2, 1, true, FindVllmProfile("0.30-custom")).check.status, GateStatus::kPass);
  EXPECT_EQ(DecideSpeculation("mtp", 1, 0, false, FindVllmProfile("0.30-custom")).check.status, GateStatus::kFail);
}

TEST(SpeculationTest, NgramUnderV2RunnerFails) {
  auto r = DecideSpeculation("ngram", 2, 1, true, FindVllmProfile("0.30-custom"));
  EXPECT_EQ(r.check.status, GateStatus::kFail);
  EXPECT_THAT(Joined(r.check), HasSubstr("not supported by the V2 model runner"));
  EXPECT_EQ(DecideSpeculation("ngram", 1, 1, false, FindVllmProfile("0.30-custom")).check.status, GateStatus::kPass);
}

// --- TP2 needs --disable-custom-all-reduce (docs/seed.md §8).
TEST(CustomAllReduceTest, AddedWithNoticeAtTp2) {
  const VllmProfile& v = FindVllmProfile("0.30-custom");
  auto tp2 = DecideCustomAllReduce(2, false, v);
  EXPECT_TRUE(tp2.disable_custom_all_reduce);
  EXPECT_EQ(tp2.check.status, GateStatus::kPass);
  EXPECT_THAT(Joined(tp2.check), HasSubstr("--disable-custom-all-reduce added"));
  EXPECT_FALSE(DecideCustomAllReduce(4, false, v).disable_custom_all_reduce);
  EXPECT_TRUE(DecideCustomAllReduce(4, true, v).disable_custom_all_reduce);
}

// --- Memory: the gate acts on the planner's typed problems, never on their text.
TEST(MemoryGateTest, WeightsOverBudgetFail) {
  LayoutPlan plan;
  plan.problems.push_back({PlanProblem::Kind::kWeightsOverBudget, "any text at all", 0, 100, 80});
  auto r = CheckMemory(plan);
  EXPECT_EQ(r.status, GateStatus::kFail);
  EXPECT_THAT(Joined(r), HasSubstr("any text at all"));
  LayoutPlan other;
  other.problems.push_back({PlanProblem::Kind::kGpuCount, "weights need everything", -1, 12, 8});
  EXPECT_EQ(CheckMemory(other).status, GateStatus::kPass);  // not a memory problem, whatever it says
}

TEST(MemoryGateTest, MaxModelLenAbovePoolNamesLargestThatFits) {
  // Seed: TP4/PP2 41,37 pool 729,280 tokens; 1M context does not fit there.
  PreparedLaunch p = PrepareLaunch(ResolvedWith({{"max_model_len", "1048576"}}));
  const GateResult& g = Gate(p, "memory");
  EXPECT_EQ(g.status, GateStatus::kFail);
  // Issue 23 item 3: the gate names the plan's one limit (LayoutPlan::limit), as `plan` prints it.
  EXPECT_THAT(Joined(g), HasSubstr("The largest max_model_len that fits: " + LimitText(p.plan)));
  EXPECT_EQ(LimitText(p.plan).rfind(WithThousands(p.plan.limit.largest), 0), 0u) << LimitText(p.plan);
  PreparedLaunch ok = PrepareLaunch(ResolvedWith());
  EXPECT_EQ(Gate(ok, "memory").status, GateStatus::kPass);
  EXPECT_THAT(Joined(Gate(ok, "memory")), HasSubstr("1.39x concurrency"));  // docs/seed.md §6: 1.39x at 524,288
}

TEST(MemoryGateTest, SeedTp8Pp1At352000Passes) {
  // docs/seed.md §5 / §11: the seed ran TP8/PP1 at MAX_MODEL_LEN=352,000 (386,943 tokens); issue 13 found
  // the gate refusing it (-15.4%). Planned with the seed calibration, the low end of the range
  // still holds one 352,000-token request.
  PreparedLaunch p = PrepareLaunch(ResolvedWith({{"tp_size", "8"}, {"pp_size", "1"}, {"max_model_len", "352000"}}));
  const GateResult& g = Gate(p, "memory");
  EXPECT_EQ(g.status, GateStatus::kPass) << Joined(g);
  EXPECT_THAT(Joined(g), HasSubstr("<= the largest max_model_len that fits, " + LimitText(p.plan)));
  EXPECT_GE(p.plan.pool_lo.largest_max_model_len, 352000);
  EXPECT_NEAR(p.plan.pool.kv_tokens, 386943, 386943 * 0.01);
}

TEST(MemoryGateTest, AboveTheLowEndOfTheRangeWarns) {
  // Issue 23 item 3 (the seed: `plan` said 728,704 fits, `MAX_MODEL_LEN=728704 ppdeploy cmd` was refused by the
  // range's low end): the gate decides on the point estimate, as `plan` does, and warns between the low end and
  // the point. (The DSA workspace grows with max_model_len, so the pool moves with it: iterate to a fixed point.)
  std::int64_t mml = 600000;
  for (int i = 0; i < 20; ++i) {
    PreparedLaunch p = PrepareLaunch(ResolvedWith({{"max_model_len", std::to_string(mml)}}));
    const std::int64_t lo = p.plan.limit.largest_lo, v = p.plan.limit.largest;
    ASSERT_LT(lo, v);
    if (mml > lo && mml <= v) {
      const GateResult& g = Gate(p, "memory");
      EXPECT_EQ(g.status, GateStatus::kWarn) << Joined(g);
      EXPECT_THAT(Joined(g), HasSubstr("fits the point estimate but not the low end of the range"));
      EXPECT_TRUE(p.plan.feasible);
      EXPECT_FALSE(p.gates.Refused()) << AllGates(p);
      return;
    }
    mml = (lo + v) / 2 / 64 * 64;
  }
  FAIL() << "no max_model_len between the low end and the prediction";
}

// --- All gates together, on the real planner.
TEST(RunGatesTest, SeedDefaultPassesWithMtpResolvedOnce) {
  PreparedLaunch p = PrepareLaunch(ResolvedWith());
  EXPECT_FALSE(p.gates.Refused()) << AllGates(p);
  EXPECT_EQ(p.deployment.spec_method, "mtp");
  EXPECT_EQ(p.deployment.num_spec_tokens, 3);
  EXPECT_EQ(p.deployment.planner.num_speculative_tokens, 3);  // the plan counts the MTP layer
  EXPECT_EQ(p.deployment.v2_runner_env, std::optional<int>(1));
  EXPECT_TRUE(p.deployment.pass_partition_env);
  ASSERT_EQ(p.gates.results.size(), 9u);
}

TEST(RunGatesTest, Pp4Tp2RefusedAndHatchPasses) {
  EXPECT_TRUE(PrepareLaunch(ResolvedWith({{"pp_size", "4"}, {"tp_size", "2"}})).gates.Refused());
  PreparedLaunch allowed = PrepareLaunch(ResolvedWith({{"pp_size", "4"},
                                                       {"tp_size", "2"},
                                                       {"allow_unverified_pp", "1"},
                                                       {"pp_layer_partition", "20,20,20,18"},
                                                       {"max_model_len", "1048576"},
                                                       {"spec_method", "none"},
                                                       {"disable_custom_all_reduce", "1"}}));
  EXPECT_FALSE(allowed.gates.Refused()) << AllGates(allowed);
  EXPECT_EQ(allowed.gates.results[0].status, GateStatus::kWarn);
}

TEST(RunGatesTest, PlannerFailureIsARefusalNotACrash) {
  // vLLM 0.10 predates DSA (#25896, 2025-09-30): the planner cannot plan the seed model there.
  PreparedLaunch p = PrepareLaunch(ResolvedWith({{"vllm_version", "0.10"}, {"kv_cache_dtype", "fp8"}}));
  EXPECT_TRUE(p.gates.Refused());
  EXPECT_THAT(Joined(Gate(p, "memory")), HasSubstr("predates DeepSeek Sparse Attention"));
  EXPECT_FALSE(p.rendered.steps.empty());  // the preview is still rendered
}

TEST(GpuCountGateTest, LayoutMustFitTheGpusGiven) {
  auto gpus = [](std::map<std::string, std::string> s) {
    PreparedLaunch p = PrepareLaunch(ResolvedWith(s));
    return Gate(p, "gpus");
  };
  auto four = gpus({{"gpus", "0,1,2,3"}});
  EXPECT_EQ(four.status, GateStatus::kFail);
  EXPECT_THAT(Joined(four), HasSubstr("TP4 x PP2 needs 8 GPUs; the deployment has 4"));
  EXPECT_EQ(gpus({}).status, GateStatus::kPass);
  EXPECT_EQ(gpus({{"tp_size", "8"}}).status, GateStatus::kFail);  // 16 GPUs on one node of 8
  EXPECT_EQ(gpus({{"tp_size", "8"}, {"nodes", "a,b"}}).status, GateStatus::kPass);
  EXPECT_EQ(gpus({{"tp_size", "8"}, {"nodes", "2"}}).status, GateStatus::kWarn);  // no host names
  EXPECT_EQ(gpus({{"tp_size", "2"}, {"pp_size", "2"}, {"pp_layer_partition", ""}}).status, GateStatus::kWarn);  // idle
}

TEST(PatternFixGateTest, MergesUserOverridesAndNeedsTheCheckpointCheck) {
  // Issue 8: one --hf-overrides whose JSON merges the user's keys with the pattern.
  IndexShareFacts f;
  f.dsa_with_index_sharing = true;
  f.forced_layers_per_rank = {{}, {41}};
  f.pattern = "FFFSSSF";
  const std::string user = R"({"max_position_embeddings": 1048576})";
  std::string merged;
  auto unchecked = CheckIndexSharePatternFix(f, user, "/nonexistent/glm", false, &merged);
  EXPECT_EQ(unchecked.status, GateStatus::kFail);  // the checkpoint could not be checked
  EXPECT_EQ(merged, R"({"index_topk_pattern":"FFFSSSF","max_position_embeddings":1048576})");
  auto waived = CheckIndexSharePatternFix(f, user, "/nonexistent/glm", true, &merged);
  EXPECT_EQ(waived.status, GateStatus::kWarn);
  EXPECT_NE(waived.messages.back().find("WARNING"), std::string::npos);
  IndexShareFacts checked = f;
  checked.checkpoint_checked = true;
  EXPECT_EQ(CheckIndexSharePatternFix(checked, user, "/m", true, &merged).status, GateStatus::kPass);
  checked.checkpoint_problems = {"layer 41: model.layers.41.self_attn.indexer.wk.weight is missing"};
  auto missing = CheckIndexSharePatternFix(checked, user, "/m", true, &merged);
  EXPECT_EQ(missing.status, GateStatus::kFail);
  EXPECT_NE(missing.messages[1].find("layer 41"), std::string::npos);
  // Never silently replace a user's own pattern.
  EXPECT_EQ(CheckIndexSharePatternFix(checked, R"({"index_topk_pattern": "FFFFFFF"})", "/m", true, &merged).status,
            GateStatus::kFail);
}

}  // namespace
}  // namespace ppdeploy::launch
