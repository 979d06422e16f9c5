// The seed's launch gates (digest §8) as pure functions: pass and fail path of each, with the
// seed's figures, and vLLM's exact get_pp_indices error texts (vllm-rules §1.4).
#include "launch/gates.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "launch/launch_test_util.h"
#include "launch/prepare.h"

namespace ppdeploy::launch {
namespace {

using ::testing::HasSubstr;
using testing::FakePlannerFacts;

std::string Joined(const GateResult& r) { return fmt::format("{}", fmt::join(r.messages, "\n")); }

LaunchProfile DefaultProfile(std::map<std::string, std::string> flags = {}) {
  SettingInputs in;
  in.defaults_text = BuiltinDefaultsText();
  in.defaults_source = "defaults";
  in.flags = std::move(flags);
  return BuildProfile(ResolveSettings(in));
}

// --- DSA PP gate: seed digest §1/§8: PP=4 degenerates 20% without speculation, 45% with MTP k=3.
TEST(DsaPpGateTest, PassesAtPp2AndForNonDsa) {
  EXPECT_EQ(CheckDsaPpGate(2, true, false).status, GateStatus::kPass);
  EXPECT_EQ(CheckDsaPpGate(1, true, false).status, GateStatus::kPass);
  EXPECT_EQ(CheckDsaPpGate(4, false, false).status, GateStatus::kPass);
}

TEST(DsaPpGateTest, RefusesPp4WithSeedFiguresAndThreeAlternatives) {
  auto r = CheckDsaPpGate(4, true, false);
  EXPECT_EQ(r.status, GateStatus::kFail);
  std::string text = Joined(r);
  EXPECT_THAT(text, HasSubstr("20% of answers with speculation off"));
  EXPECT_THAT(text, HasSubstr("45% with MTP k=3"));
  EXPECT_THAT(text, HasSubstr("  1. TP_SIZE=4 PP_SIZE=2 PP_LAYER_PARTITION=41,37"));
  EXPECT_THAT(text, HasSubstr("  2. TP_SIZE=8 PP_SIZE=1 MAX_MODEL_LEN=352000"));
  EXPECT_THAT(text, HasSubstr("  3. KV_CACHE_DTYPE=bfloat16 MAX_MODEL_LEN=262144"));
  EXPECT_THAT(text, HasSubstr("ALLOW_UNVERIFIED_PP=1"));
}

TEST(DsaPpGateTest, EscapeHatchWarnsTwiceAndAdvisesDegen) {
  auto r = CheckDsaPpGate(4, true, true);
  EXPECT_EQ(r.status, GateStatus::kWarn);
  ASSERT_EQ(r.messages.size(), 2u);
  EXPECT_THAT(r.messages[0], HasSubstr("WARNING"));
  EXPECT_THAT(r.messages[0], HasSubstr("45%"));
  EXPECT_THAT(r.messages[1], HasSubstr("WARNING"));
  EXPECT_THAT(r.messages[1], HasSubstr("ppdeploy degen"));
}

// --- Partition parsing mirrors vLLM's int() (vllm-rules §1.4).
TEST(PartitionTest, ParsesLikePythonInt) {
  using V = std::vector<std::int64_t>;
  EXPECT_EQ(ParsePartitionLikeVllm("41,37"), V({41, 37}));
  EXPECT_EQ(ParsePartitionLikeVllm(" 41,+37\t"), V({41, 37}));
  EXPECT_EQ(ParsePartitionLikeVllm("4_1,37"), V({41, 37}));
  EXPECT_EQ(ParsePartitionLikeVllm("-3,81"), V({-3, 81}));
  EXPECT_EQ(ParsePartitionLikeVllm("41,x"), std::nullopt);
  EXPECT_EQ(ParsePartitionLikeVllm("41,,37"), std::nullopt);
  EXPECT_EQ(ParsePartitionLikeVllm("_41,37"), std::nullopt);
  EXPECT_EQ(ParsePartitionLikeVllm("4__1,37"), std::nullopt);
  EXPECT_EQ(ParsePartitionLikeVllm("41_,37"), std::nullopt);
  EXPECT_EQ(ParsePartitionLikeVllm("4 1,37"), std::nullopt);
  EXPECT_EQ(ParsePartitionLikeVllm(""), std::nullopt);
  EXPECT_EQ(ParsePartitionLikeVllm("+"), std::nullopt);
}

// vllm-rules §1.4 table of default splits.
TEST(PartitionTest, DefaultSplitMatchesGetPpIndices) {
  using V = std::vector<int>;
  EXPECT_EQ(DefaultPartition(61, 2), V({31, 30}));
  EXPECT_EQ(DefaultPartition(61, 3), V({20, 21, 20}));
  EXPECT_EQ(DefaultPartition(61, 4), V({15, 15, 16, 15}));
  EXPECT_EQ(DefaultPartition(61, 8), V({7, 7, 8, 8, 8, 8, 8, 7}));
  EXPECT_EQ(DefaultPartition(78, 4), V({19, 20, 20, 19}));
  EXPECT_EQ(DefaultPartition(78, 8), V({9, 10, 10, 10, 10, 10, 10, 9}));
  EXPECT_EQ(DefaultPartition(78, 2), V({39, 39}));
}

TEST(LayerPartitionGateTest, SeedDefaultPasses) {
  auto c = CheckLayerPartition("41,37", 2, 78);
  EXPECT_EQ(c.result.status, GateStatus::kPass);
  EXPECT_TRUE(c.pass_env);
  EXPECT_EQ(c.partition, std::vector<int>({41, 37}));
  EXPECT_THAT(Joined(c.result), HasSubstr("[0,41) [41,78)"));
}

TEST(LayerPartitionGateTest, WrongSumUsesVllmText) {
  auto c = CheckLayerPartition("41,38", 2, 78);
  EXPECT_EQ(c.result.status, GateStatus::kFail);
  EXPECT_THAT(Joined(c.result), HasSubstr("sum(partitions)=79 does not match num_hidden_layers=78."));
}

TEST(LayerPartitionGateTest, WrongCountUsesVllmText) {
  auto c = CheckLayerPartition("41,37,0", 2, 78);
  EXPECT_EQ(c.result.status, GateStatus::kFail);
  EXPECT_THAT(Joined(c.result), HasSubstr("len(partitions)=3 does not match pp_size=2."));
}

TEST(LayerPartitionGateTest, NonIntegerAndEmptySegmentUseVllmText) {
  auto x = CheckLayerPartition("41,x", 2, 78);
  EXPECT_EQ(x.result.status, GateStatus::kFail);
  EXPECT_THAT(Joined(x.result), HasSubstr("Invalid partition string: 41,x"));
  EXPECT_THAT(Joined(x.result), HasSubstr("segment 2 'x' is not an integer"));
  auto e = CheckLayerPartition("41,,37", 2, 78);
  EXPECT_EQ(e.result.status, GateStatus::kFail);
  EXPECT_THAT(Joined(e.result), HasSubstr("Invalid partition string: 41,,37"));
  EXPECT_THAT(Joined(e.result), HasSubstr("segment 2 is empty"));
}

TEST(LayerPartitionGateTest, NegativeRefusedThoughVllmWouldAcceptIt) {
  auto c = CheckLayerPartition("-1,79", 2, 78);
  EXPECT_EQ(c.result.status, GateStatus::kFail);
  EXPECT_THAT(Joined(c.result), HasSubstr("stage 0 has -1 layers; only non-negative integers"));
}

TEST(LayerPartitionGateTest, PythonSpellingsWarn) {
  auto c = CheckLayerPartition(" 41,+37", 2, 78);
  EXPECT_EQ(c.result.status, GateStatus::kWarn);
  EXPECT_THAT(Joined(c.result), HasSubstr("'+37' is read by vLLM (Python int()) as 37"));
  EXPECT_TRUE(c.pass_env);
}

TEST(LayerPartitionGateTest, IgnoredAtPp1AndDefaultWhenUnset) {
  auto c = CheckLayerPartition("41,37", 1, 78);
  EXPECT_EQ(c.result.status, GateStatus::kWarn);
  EXPECT_FALSE(c.pass_env);
  EXPECT_THAT(Joined(c.result), HasSubstr("ignored with PP_SIZE=1"));
  auto d = CheckLayerPartition("", 4, 78);
  EXPECT_EQ(d.result.status, GateStatus::kPass);
  EXPECT_FALSE(d.pass_env);
  EXPECT_EQ(d.partition, std::vector<int>({19, 20, 20, 19}));
}

// --- Index-share safety: digest §6/§7 (39,39 forces 39, 40, 41 on rank 1; 41,37 forces 41).
TEST(IndexShareGateTest, ForcedLayersNeedFixB) {
  IndexShareFacts f{true, {{}, {39, 40, 41}}};
  auto with_fix = CheckIndexShareSafety(f, true, "0.30-custom");
  EXPECT_EQ(with_fix.status, GateStatus::kPass);
  EXPECT_THAT(Joined(with_fix), HasSubstr("rank 1: [39, 40, 41]"));
  auto without = CheckIndexShareSafety(f, false, "0.30");
  EXPECT_EQ(without.status, GateStatus::kFail);
  EXPECT_THAT(Joined(without), HasSubstr("rank 1: [39, 40, 41]"));
  EXPECT_THAT(Joined(without), HasSubstr("no Fix B"));
}

TEST(IndexShareGateTest, SafeSplitOrNonDsaPasses) {
  EXPECT_EQ(CheckIndexShareSafety({true, {{}, {}}}, false, "0.30").status, GateStatus::kPass);  // 42,36
  EXPECT_EQ(CheckIndexShareSafety({false, {{}, {41}}}, false, "0.30").status, GateStatus::kPass);
}

// --- Runner and speculation (seed resolve_defaults, check_pp_mtp_compat, check_pp_ngram_compat).
TEST(V2RunnerTest, AutoPinsOneWhenPpAboveOne) {
  auto caps = LoadCapabilities("0.30-custom");
  EXPECT_EQ(ResolveV2Runner("", 2, caps).v2_env, std::optional<int>(1));
  EXPECT_EQ(ResolveV2Runner("", 1, caps).v2_env, std::nullopt);
  auto off = ResolveV2Runner("0", 2, caps);
  EXPECT_EQ(off.v2_env, std::optional<int>(0));
  EXPECT_EQ(off.result.status, GateStatus::kWarn);
  EXPECT_EQ(ResolveV2Runner("1", 1, caps).v2_env, std::optional<int>(1));
  EXPECT_EQ(ResolveV2Runner("1", 1, LoadCapabilities("0.8")).result.status, GateStatus::kFail);
  EXPECT_EQ(ResolveV2Runner("", 2, LoadCapabilities("0.8")).v2_env, std::nullopt);
}

TEST(SpeculationTest, AutoChoosesMtpWhereSupportedAndDowngradesElsewhere) {
  auto custom = ResolveSpeculation("auto", 2, 1, true, LoadCapabilities("0.30-custom"));
  EXPECT_EQ(custom.method, "mtp");
  EXPECT_EQ(custom.result.status, GateStatus::kPass);
  auto upstream = ResolveSpeculation("auto", 2, 1, true, LoadCapabilities("0.26"));
  EXPECT_EQ(upstream.method, "none");
  EXPECT_EQ(upstream.result.status, GateStatus::kPass);
  EXPECT_THAT(Joined(upstream.result), HasSubstr("downgraded to none"));
  EXPECT_EQ(ResolveSpeculation("auto", 1, 1, false, LoadCapabilities("0.26")).method, "mtp");
  EXPECT_EQ(ResolveSpeculation("auto", 2, 0, true, LoadCapabilities("0.30-custom")).method, "none");
}

TEST(SpeculationTest, ExplicitMtpWithPpFailsWithoutSupport) {
  auto r = ResolveSpeculation("mtp", 2, 1, true, LoadCapabilities("0.28-custom"));
  EXPECT_EQ(r.result.status, GateStatus::kFail);
  EXPECT_THAT(Joined(r.result), HasSubstr("does not support PP + speculative decoding"));
  EXPECT_EQ(ResolveSpeculation("mtp", 2, 1, true, LoadCapabilities("0.30-custom")).result.status, GateStatus::kPass);
  EXPECT_EQ(ResolveSpeculation("mtp", 1, 0, false, LoadCapabilities("0.30-custom")).result.status, GateStatus::kFail);
}

TEST(SpeculationTest, NgramUnderV2RunnerFails) {
  auto r = ResolveSpeculation("ngram", 2, 1, true, LoadCapabilities("0.30-custom"));
  EXPECT_EQ(r.result.status, GateStatus::kFail);
  EXPECT_THAT(Joined(r.result), HasSubstr("not supported by the V2 model runner"));
  EXPECT_EQ(ResolveSpeculation("ngram", 1, 1, false, LoadCapabilities("0.30-custom")).result.status,
            GateStatus::kPass);
}

// --- TP2 needs --disable-custom-all-reduce (seed §8).
TEST(CustomAllReduceTest, AddedWithNoticeAtTp2) {
  auto caps = LoadCapabilities("0.30-custom");
  auto tp2 = CheckCustomAllReduce(2, false, caps);
  EXPECT_TRUE(tp2.disable_custom_all_reduce);
  EXPECT_EQ(tp2.result.status, GateStatus::kPass);
  EXPECT_THAT(Joined(tp2.result), HasSubstr("--disable-custom-all-reduce added"));
  EXPECT_FALSE(CheckCustomAllReduce(4, false, caps).disable_custom_all_reduce);
  EXPECT_TRUE(CheckCustomAllReduce(4, true, caps).disable_custom_all_reduce);
}

// --- Memory (planner facts).
TEST(MemoryGateTest, WeightsOverBudgetFail) {
  MemoryFacts f{false, "weights 97.6 GiB/GPU > budget 75.29 GiB", 0, 0};
  auto r = CheckMemory(f, 524'288);
  EXPECT_EQ(r.status, GateStatus::kFail);
  EXPECT_THAT(Joined(r), HasSubstr("weights 97.6 GiB/GPU > budget 75.29 GiB"));
}

TEST(MemoryGateTest, MaxModelLenAbovePoolNamesLargestThatFits) {
  // Seed: TP4/PP2 41,37 pool 729,280 tokens; 1M context does not fit there.
  MemoryFacts f{true, "", 729'280, 729'280};
  auto r = CheckMemory(f, 1'048'576);
  EXPECT_EQ(r.status, GateStatus::kFail);
  EXPECT_THAT(Joined(r), HasSubstr("the largest max_model_len that fits is 729,280"));
  auto ok = CheckMemory(f, 524'288);
  EXPECT_EQ(ok.status, GateStatus::kPass);
  EXPECT_THAT(Joined(ok), HasSubstr("1.39x concurrency"));  // seed §6: 1.39x at 524,288
}

// --- All gates together, with a fake planner.
TEST(RunGatesTest, SeedDefaultPassesAndAsksMemoryForTheEffectiveProfile) {
  FakePlannerFacts facts;
  auto report = RunGates(DefaultProfile(), facts, LoadCapabilities("0.30-custom"));
  EXPECT_EQ(report.ExitCode(), 0) << [&] {
    std::string s;
    for (auto& g : report.results) s += g.gate + ": " + Joined(g) + "\n";
    return s;
  }();
  EXPECT_EQ(report.effective.spec_method, "mtp");
  EXPECT_EQ(report.v2_runner_env, std::optional<int>(1));
  EXPECT_TRUE(report.pass_partition_env);
  ASSERT_EQ(facts.memory_queries.size(), 1u);
  EXPECT_EQ(facts.memory_queries[0].spec_method, "mtp");
  ASSERT_EQ(report.results.size(), 9u);
}

TEST(RunGatesTest, Pp4Tp2RefusedAndHatchPasses) {
  FakePlannerFacts facts;
  facts.index = {true, {{}, {}, {}, {}}};
  facts.memory = {true, "", 1'199'872, 1'199'872};  // seed: TP2/PP4 pool 1,199,872 tokens
  auto refused = RunGates(DefaultProfile({{"pp_size", "4"}, {"tp_size", "2"}}), facts, LoadCapabilities("0.30-custom"));
  EXPECT_EQ(refused.ExitCode(), 1);
  auto allowed = RunGates(DefaultProfile({{"pp_size", "4"},
                                          {"tp_size", "2"},
                                          {"allow_unverified_pp", "1"},
                                          {"pp_layer_partition", "20,20,20,18"},
                                          {"max_model_len", "1048576"},
                                          {"disable_custom_all_reduce", "1"}}),
                          facts, LoadCapabilities("0.30-custom"));
  EXPECT_EQ(allowed.ExitCode(), 0);
  EXPECT_EQ(allowed.results[0].status, GateStatus::kWarn);
}

TEST(RunGatesTest, MemoryFailureRefuses) {
  FakePlannerFacts facts;
  facts.memory = {true, "", 386'943, 386'880};
  auto r = RunGates(DefaultProfile({{"tp_size", "8"}, {"pp_size", "1"}, {"pp_layer_partition", ""}}), facts,
                    LoadCapabilities("0.30-custom"));
  EXPECT_EQ(r.ExitCode(), 1);
  EXPECT_THAT(Joined(r.results.back()), HasSubstr("the largest max_model_len that fits is 386,880"));
}

TEST(GpuCountGateTest, TooFewGpusFailAndMultiNodeWarnsWithoutNodes) {
  auto p = DefaultProfile({{"gpus", "0,1,2,3"}});
  EXPECT_EQ(CheckGpuCount(p).status, GateStatus::kFail);
  EXPECT_THAT(Joined(CheckGpuCount(p)), HasSubstr("GPUS=0,1,2,3 lists 4 GPUs; TP x PP = 8 needs 8"));
  EXPECT_EQ(CheckGpuCount(DefaultProfile()).status, GateStatus::kPass);
  EXPECT_EQ(CheckGpuCount(DefaultProfile({{"tp_size", "8"}})).status, GateStatus::kWarn);
  EXPECT_EQ(CheckGpuCount(DefaultProfile({{"tp_size", "8"}, {"nodes", "a,b"}})).status, GateStatus::kPass);
}

TEST(PlannerFactsTest, SeedForcedLayersAndPools) {
  auto facts = MakeDefaultPlannerFacts();
  auto p = DefaultProfile();
  EXPECT_EQ(facts->NumHiddenLayers(p), 78);
  auto idx = facts->IndexShare(p);
  EXPECT_TRUE(idx.dsa_with_index_sharing);
  EXPECT_EQ(idx.forced_layers_per_rank, (std::vector<std::vector<int>>{{}, {41}}));  // digest §6 preflight
  p.pp_layer_partition = "39,39";
  EXPECT_EQ(facts->IndexShare(p).forced_layers_per_rank[1], (std::vector<int>{39, 40, 41}));
  p.pp_layer_partition = "42,36";
  EXPECT_TRUE(facts->IndexShare(p).forced_layers_per_rank[1].empty());
  p.pp_layer_partition = "45,33";  // digest §7 counter-example: 45 reuses 42's index (on rank 0)
  EXPECT_EQ(facts->IndexShare(p).forced_layers_per_rank[1], (std::vector<int>{45}));
  p.hf_overrides = R"({"index_topk_freq": 1})";  // digest §7 diagnostic switch: every layer computes
  EXPECT_FALSE(facts->IndexShare(p).dsa_with_index_sharing);
  // Seed §11: TP2/PP4 20,20,20,18, no speculation, 1M context: measured 1,199,872 tokens. The planner
  // (calibrated at TP4/PP2, transferred) predicts it within 5%.
  auto tp2 = DefaultProfile({{"tp_size", "2"}, {"pp_size", "4"}, {"pp_layer_partition", "20,20,20,18"},
                             {"spec_method", "none"}, {"max_model_len", "1048576"}});
  EXPECT_NEAR(facts->Memory(tp2).predicted_kv_tokens, 1'199'872, 1'199'872 * 0.05);
  EXPECT_TRUE(facts->Memory(tp2).weights_fit);
  // The seed-only stub still returns the measured figure.
  EXPECT_EQ(MakeSeedStubPlannerFacts()->Memory(tp2).predicted_kv_tokens, 1'199'872);
}

}  // namespace
}  // namespace ppdeploy::launch

namespace ppdeploy::launch {
namespace {

IndexShareFacts PatternFacts() {
  IndexShareFacts f;
  f.dsa_with_index_sharing = true;
  f.forced_layers_per_rank = {{}, {41}};
  f.pattern = "FFFSSSF";
  return f;
}

TEST(PatternFixGateTest, MergesUserOverridesAndNeedsTheCheckpointCheck) {
  // Issue 8: one --hf-overrides whose JSON merges the user's keys with the pattern.
  LaunchProfile p;
  p.model_path = "/nonexistent/glm";
  p.hf_overrides = R"({"max_position_embeddings": 1048576})";
  std::string merged;
  auto unchecked = CheckIndexSharePatternFix(PatternFacts(), p, &merged);
  EXPECT_EQ(unchecked.status, GateStatus::kFail);  // the checkpoint could not be checked
  EXPECT_EQ(merged, R"({"index_topk_pattern":"FFFSSSF","max_position_embeddings":1048576})");
  p.allow_unchecked_indexer = true;
  auto waived = CheckIndexSharePatternFix(PatternFacts(), p, &merged);
  EXPECT_EQ(waived.status, GateStatus::kWarn);
  EXPECT_NE(waived.messages.back().find("WARNING"), std::string::npos);
  IndexShareFacts checked = PatternFacts();
  checked.checkpoint_checked = true;
  EXPECT_EQ(CheckIndexSharePatternFix(checked, p, &merged).status, GateStatus::kPass);
  checked.checkpoint_problems = {"layer 41: model.layers.41.self_attn.indexer.wk.weight is missing"};
  auto missing = CheckIndexSharePatternFix(checked, p, &merged);
  EXPECT_EQ(missing.status, GateStatus::kFail);
  EXPECT_NE(missing.messages[1].find("layer 41"), std::string::npos);
  // Never silently replace a user's own pattern.
  p.hf_overrides = R"({"index_topk_pattern": "FFFFFFF"})";
  EXPECT_EQ(CheckIndexSharePatternFix(checked, p, &merged).status, GateStatus::kFail);
}

}  // namespace
}  // namespace ppdeploy::launch
