// The three layers of defaults (issue 23 items 4 and 5): vLLM's own defaults for the version row
// (what plain `vllm serve MODEL` does), the embedded default deployment (the seed), then profile /
// env / flags; another model than the seed's inherits none of the seed's choices, and every
// setting names its true origin.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "deploy/layers.h"
#include "deploy/resolve.h"
#include "deploy/settings.h"
#include "deploy_test_util.h"
#include "launch/prepare.h"
#include "model/presets.h"

namespace ppdeploy {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Issue 23 item 4: `cmd --model deepseek-v3 --gpu h200 --tp-size 8` listed `spec_method auto ...
// vLLM default` and rendered MTP k=3; plain `vllm serve` runs no speculation.
TEST(DefaultLayersTest, AnotherModelGetsVllmsDefaultsNotTheSeedsChoices) {
  const ResolvedDeployment r = testing::ResolvedWith({{"model", "deepseek-v3"}, {"gpu", "h200"}, {"tp_size", "8"}});
  const DeploymentRequest& q = r.request;
  EXPECT_EQ(q.spec_method, "none");
  EXPECT_EQ(r.spec_method, "none");
  EXPECT_EQ(r.num_spec_tokens, 0);
  EXPECT_EQ(r.planner.num_speculative_tokens, 0);  // `plan` models no MTP draft tokens either
  EXPECT_FALSE(r.v2_runner_env.has_value());
  EXPECT_EQ(q.force_v2_runner, "");
  EXPECT_EQ(q.kv_cache_dtype, "auto");
  EXPECT_EQ(q.served_model_name, "");
  EXPECT_EQ(q.calibration, "");
  EXPECT_EQ(q.pp_layer_partition, "");
  EXPECT_DOUBLE_EQ(q.gpu_memory_utilization, 0);  // not passed: the row's own
  EXPECT_DOUBLE_EQ(r.planner.gpu_memory_utilization, r.version.profile->default_gpu_memory_utilization);
  const std::string row = r.version.profile->name;
  for (const char* key : {"spec_method", "force_v2_runner", "kv_cache_dtype", "gpu_memory_utilization",
                          "served_model_name", "pp_layer_partition", "max_model_len"})
    EXPECT_EQ(q.Setting(key).origin, "vLLM " + row + " default") << key;
  EXPECT_EQ(q.Setting("calibration").origin, "ppdeploy default");
  EXPECT_EQ(q.Setting("tp_size").origin, "flag --tp-size");
  EXPECT_EQ(q.Setting("vllm_version").origin, "default deployment");  // the site's vLLM, not the model's
}

// Issue 23 item 4: VLLM_USE_V2_MODEL_RUNNER=1 was pinned for any PP > 1 on upstream rows.
TEST(DefaultLayersTest, AnotherModelWithPipelineParallelismPinsNoRunner) {
  const ResolvedDeployment r = testing::ResolvedWith(
      {{"model", "deepseek-v3"}, {"gpu", "h200"}, {"tp_size", "8"}, {"pp_size", "2"}, {"vllm_version", "0.19"}});
  EXPECT_FALSE(r.v2_runner_env.has_value());
  EXPECT_EQ(r.spec_method, "none");
  EXPECT_EQ(r.request.Setting("force_v2_runner").origin, "vLLM 0.19 default");
  EXPECT_EQ(r.partition, (std::vector<int>{31, 30}));  // vLLM's split of 61 layers, not the seed's 41,37
}

// The seed's choices stay the seed's, labelled as the default deployment's.
TEST(DefaultLayersTest, TheSeedKeepsItsDeploymentLabelledAsSuch) {
  const ResolvedDeployment r = testing::ResolvedWith();
  EXPECT_EQ(r.spec_method, "mtp");  // docs/seed.md §8: MTP k=3
  EXPECT_EQ(r.num_spec_tokens, 3);
  EXPECT_EQ(r.v2_runner_env, 1);  // PP 2: pinned
  for (const char* key : {"spec_method", "num_spec_tokens", "force_v2_runner", "kv_cache_dtype",
                          "gpu_memory_utilization", "served_model_name", "pp_layer_partition", "calibration"})
    EXPECT_EQ(r.request.Setting(key).origin, "default deployment") << key;
  // Naming the seed's model by an alias keeps its deployment (one decision: DefaultDeploymentApplies).
  EXPECT_EQ(testing::ResolvedWith({{"model", "glm-5.3"}}).spec_method, "mtp");
}

// What the user asks for is kept for any model: the layers above the seed are not dropped.
TEST(DefaultLayersTest, AnotherModelGetsWhatTheUserAsks) {
  const ResolvedDeployment r = testing::ResolvedWith({{"model", "deepseek-v3"},
                                                      {"gpu", "h200"},
                                                      {"tp_size", "8"},
                                                      {"spec_method", "mtp"},
                                                      {"num_spec_tokens", "2"},
                                                      {"force_v2_runner", "auto"},
                                                      {"pp_size", "2"},
                                                      {"vllm_version", "0.19"}});
  EXPECT_EQ(r.request.spec_method, "mtp");
  EXPECT_EQ(r.request.Setting("spec_method").origin, "flag --spec-method");
  EXPECT_EQ(r.v2_runner_env, 1);  // auto pins at PP 2 where the row reads the variable
}

TEST(DefaultLayersTest, TheOneDecisionOfWhetherTheSeedApplies) {
  EXPECT_TRUE(DefaultDeploymentApplies("glm-5.3-w4a16", SettingSource::kDefault, "glm-5.3-w4a16", SameModel));
  EXPECT_TRUE(DefaultDeploymentApplies("seed", SettingSource::kFlag, "glm-5.3-w4a16", SameModel));
  EXPECT_FALSE(DefaultDeploymentApplies("deepseek-v3", SettingSource::kEnv, "glm-5.3-w4a16", SameModel));
  EXPECT_FALSE(DefaultDeploymentApplies("deepseek-v3", SettingSource::kFlag, "", SameModel));
}

TEST(DefaultLayersTest, LowestLayerOriginNamesVllmOrPpdeploy) {
  EXPECT_EQ(LowestLayerOrigin(*FindSettingSpec("spec_method"), "0.19"), "vLLM 0.19 default");
  EXPECT_EQ(LowestLayerOrigin(*FindSettingSpec("max_num_seqs"), "0.19"), "vLLM 0.19 default");
  EXPECT_EQ(LowestLayerOrigin(*FindSettingSpec("pp_layer_partition"), "0.19"), "vLLM 0.19 default");
  EXPECT_EQ(LowestLayerOrigin(*FindSettingSpec("model_path"), "0.19"), "vLLM 0.19 default");
  EXPECT_EQ(LowestLayerOrigin(*FindSettingSpec("gpu"), "0.19"), "ppdeploy default");
  EXPECT_EQ(LowestLayerOrigin(*FindSettingSpec("runtime"), "0.19"), "ppdeploy default");
}

// Issue 23 item 5: `cmd --model deepseek-r1` rendered `vllm serve deepseek-ai/deepseek-v3` (the
// preset's id, lower-cased). The id served is the one the user named, in the hub's case.
TEST(DefaultLayersTest, APresetAliasServesTheIdTheUserNamed) {
  auto served = [](const std::string& model) {
    return testing::ResolvedWith({{"model", model}, {"gpu", "h200"}, {"tp_size", "8"}}).request.model_path;
  };
  EXPECT_EQ(served("deepseek-r1"), "deepseek-ai/DeepSeek-R1");
  EXPECT_EQ(served("deepseek-v3"), "deepseek-ai/DeepSeek-V3");
  EXPECT_EQ(served("DeepSeek-V3-0324"), "deepseek-ai/DeepSeek-V3-0324");
  EXPECT_EQ(served("deepseek-ai/DeepSeek-R1"), "deepseek-ai/DeepSeek-R1");  // a hub id: as typed
  EXPECT_EQ(served("qwen3-30b-a3b"), "Qwen/Qwen3-30B-A3B");
  // Case-insensitive lookup of the preset still works for a lower-cased hub id.
  ASSERT_NE(FindModelPreset("deepseek-ai/deepseek-r1"), nullptr);
  EXPECT_EQ(FindModelPreset("deepseek-ai/deepseek-r1")->name, "deepseek-v3");
}

TEST(DefaultLayersTest, AnAliasWithoutAnIdOfItsOwnSaysWhichIdIsServed) {
  const ResolvedDeployment r = testing::ResolvedWith({{"model", "glm-5.1"}, {"gpu", "h200"}, {"tp_size", "8"}});
  EXPECT_EQ(r.request.model_path, "zai-org/GLM-5-FP8");
  EXPECT_THAT(r.notes, ::testing::Contains(HasSubstr("glm-5.1 names no id of its own")));
}

// The rendered command: no seed speculation, no runner pin for another model.
TEST(DefaultLayersTest, AnotherModelsCommandHasNoSeedChoices) {
  const auto p = launch::PrepareLaunch(testing::ResolvedWith(
      {{"model", "deepseek-v3"}, {"gpu", "h200"}, {"tp_size", "8"}, {"pp_size", "2"}, {"vllm_version", "0.19"}}));
  std::string argv;
  for (const auto& s : p.rendered.steps)
    for (const auto& a : s.argv) argv += a + " ";
  EXPECT_THAT(argv, Not(HasSubstr("--speculative-config")));
  EXPECT_THAT(argv, Not(HasSubstr("VLLM_USE_V2_MODEL_RUNNER")));
  EXPECT_THAT(argv, HasSubstr("deepseek-ai/DeepSeek-V3"));
  for (const auto& e : p.rendered.injected_env) EXPECT_NE(e.name, "VLLM_USE_V2_MODEL_RUNNER");
}

}  // namespace
}  // namespace ppdeploy
