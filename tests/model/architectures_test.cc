// Issue 23 item 6, "what is not modelled is planned anyway": hostile configs, each refused or warned by
// name. An architecture the table (data/architectures.json) does not list, DeepSeek-V4's `compress_ratios`,
// an MLA class without `kv_lora_rank`, Gemma-4's global-attention keys; and an AMD GPU (MI355X), whose ROCm
// rules are not modelled. The configs are the repository's own (presets, tests/data/hf-configs) with the
// issue's fields changed.
#include "model/architectures.h"

#include <gtest/gtest.h>

#include <fstream>

#include "cli_runner.h"
#include "deploy_test_util.h"
#include "memory/kv.h"
#include "model/config.h"
#include "model/gpu.h"
#include "model/presets.h"
#include "test_util.h"
#include "vllm/profile.h"

namespace ppdeploy {
namespace {

using testing::CliResult;
using testing::ErrorOf;

nlohmann::json DeepSeekV3() { return FindModelPreset("deepseek-v3")->config; }

nlohmann::json Gemma3() {
  std::ifstream f(std::string(PPDEPLOY_SOURCE_DIR) + "/tests/data/hf-configs/google__gemma-3-27b-it.json");
  return nlohmann::json::parse(f);
}

// Issue 23 item 6: "An architecture never seen (`DeepseekV9ForCausalLM` ...) is planned through the generic
// reader with no warning".
TEST(ArchitecturesTest, UnknownArchitectureIsRefusedNamingItAndTheSimilarClasses) {
  nlohmann::json c = DeepSeekV3();
  c["architectures"] = {"DeepseekV9ForCausalLM"};
  EXPECT_EQ(ErrorOf([&] { ParseModelConfig(c, "v9/config.json"); }),
            "v9/config.json: architectures: \"DeepseekV9ForCausalLM\" is not a model class ppdeploy plans "
            "(data/architectures.json: similar: DeepseekV2ForCausalLM, DeepseekV3ForCausalLM, "
            "DeepseekV32ForCausalLM): its KV cache and weights would be sized by rules nobody checked for it. If "
            "vLLM serves this checkpoint with a listed class, name it with --hf-overrides '{\"architectures\": "
            "[\"<class>\"]}'");
}

TEST(ArchitecturesTest, TheHfOverridesArchitectureIsTheOverride) {
  // The override the refusal names: vLLM and ppdeploy read the same merged config.
  const std::string path = testing::TempPath("ppd-arch", "config.json");
  nlohmann::json c = DeepSeekV3();
  c["architectures"] = {"DeepseekV9ForCausalLM"};
  std::ofstream(path) << c.dump();
  CliResult refused = testing::RunPpdeploy("plan --model " + path + " --gpu h200 --tp 8 --spec-method none");
  EXPECT_EQ(refused.exit_code, 1) << refused.output;
  EXPECT_NE(refused.output.find("\"DeepseekV9ForCausalLM\" is not a model class ppdeploy plans"), std::string::npos)
      << refused.output;
  CliResult planned = testing::RunPpdeploy("plan --model " + path +
                                           " --gpu h200 --tp 8 --spec-method none --hf-overrides "
                                           "'{\"architectures\": [\"DeepseekV3ForCausalLM\"]}'");
  EXPECT_EQ(planned.exit_code, 0) << planned.output;
}

// Issue 23 item 6: "a DeepSeek-V4 config with `compress_ratios`".
TEST(ArchitecturesTest, CompressRatiosAreRefusedByName) {
  nlohmann::json v4 = DeepSeekV3();
  v4["architectures"] = {"DeepseekV4ForCausalLM"};
  v4["compress_ratios"] = {1, 4, 4, 128};
  const std::string e = ErrorOf([&] { ParseModelConfig(v4, "v4/config.json"); });
  EXPECT_NE(e.find("\"DeepseekV4ForCausalLM\" is not a model class ppdeploy plans"), std::string::npos) << e;
  EXPECT_NE(e.find("; it also sets compress_ratios (DeepSeek-V4-style per-layer KV compression"), std::string::npos)
      << e;
  // The same key under a listed class: refused naming the key, its value and what it changes.
  nlohmann::json v3 = DeepSeekV3();
  v3["compress_ratios"] = {1, 4, 4, 128};
  EXPECT_EQ(ErrorOf([&] { ParseModelConfig(v3, "v3/config.json"); }),
            "v3/config.json: compress_ratios = [1,4,4,128]: DeepSeek-V4-style per-layer KV compression: the "
            "compressed layers cache another number of bytes per token than the MLA latent: not read by any rule "
            "of ppdeploy (data/architectures.json: unread_keys), so the KV cache and weights of "
            "DeepseekV3ForCausalLM cannot be sized");
}

// Issue 23 item 6: "a DeepSeek-V3 config without `kv_lora_rank` is planned as plain attention (218,624 B/token
// instead of 70,272)".
TEST(ArchitecturesTest, MlaClassWithoutKvLoraRankIsAnErrorNamingTheField) {
  ModelConfig v3 = FindModelPreset("deepseek-v3")->Parse();
  const EffectiveKv bf16 = ResolveKvDtype(v3, KvCacheDtype::kBfloat16, FindVllmProfile("0.19"), FindGpu("h200"));
  EXPECT_EQ(AttentionBytesPerTokenPerLayer(v3, bf16, 8) * v3.num_hidden_layers, 70272);
  for (const char* field : {"kv_lora_rank", "qk_nope_head_dim", "v_head_dim"}) {
    nlohmann::json c = DeepSeekV3();
    c.erase(field);
    EXPECT_EQ(ErrorOf([&] { ParseModelConfig(c, "v3/config.json"); }),
              std::string("v3/config.json: ") + field +
                  ": required field is missing: DeepseekV3ForCausalLM is sized by rule mla of data/architectures.json "
                  "(MLA: one latent of kv_lora_rank + qk_rope_head_dim elements per token and layer on every TP rank "
                  "(vLLM ModelConfig.is_deepseek_mla, MLAAttentionSpec); weights from q_lora_rank, kv_lora_rank and "
                  "the head dims); without the field it is refused, not sized as plain attention")
        << field;
  }
  // DSA's indexer fields are required by the mla_dsa rule (the seed's class).
  nlohmann::json g = FindModelPreset("glm-5.3-w4a16")->config;
  g.erase("index_head_dim");
  EXPECT_NE(ErrorOf([&] { ParseModelConfig(g, "g/config.json"); })
                .find("g/config.json: index_head_dim: required field is missing: GlmMoeDsaForCausalLM is sized by "
                      "rule mla_dsa"),
            std::string::npos);
}

TEST(ArchitecturesTest, KvLoraRankOnANonMlaClassIsAWarning) {
  nlohmann::json c = FindModelPreset("llama-3.1-8b")->config;
  c["kv_lora_rank"] = 512;
  ModelConfig m = ParseModelConfig(c, "l/config.json");
  EXPECT_EQ(m.attention, AttentionKind::kGqa);
  ASSERT_EQ(m.warnings.size(), 1u);
  EXPECT_EQ(m.warnings[0],
            "l/config.json: kv_lora_rank: not read: LlamaForCausalLM is not an MLA class (data/architectures.json "
            "rule attention); planned as GQA / MHA attention");
}

// Issue 23 item 6: "Gemma-4's `global_head_dim`, `num_global_key_value_heads`, `attention_k_eq_v` are ignored."
TEST(ArchitecturesTest, Gemma4GlobalAttentionKeysAreRefusedByName) {
  nlohmann::json g4 = Gemma3();
  g4["architectures"] = {"Gemma4ForConditionalGeneration"};
  g4["text_config"]["global_head_dim"] = 512;
  g4["text_config"]["num_global_key_value_heads"] = 4;
  g4["text_config"]["attention_k_eq_v"] = true;
  const std::string e = ErrorOf([&] { ParseModelConfig(g4, "g4/config.json"); });
  EXPECT_NE(e.find("\"Gemma4ForConditionalGeneration\" is not a model class ppdeploy plans (data/architectures.json: "
                   "similar: GemmaForCausalLM, Gemma2ForCausalLM, Gemma3ForCausalLM, Gemma3ForConditionalGeneration"),
            std::string::npos)
      << e;
  for (const char* key : {"global_head_dim (", "num_global_key_value_heads (", "attention_k_eq_v ("})
    EXPECT_NE(e.find(key), std::string::npos) << key << " in " << e;
  // Under the Gemma-3 class the first such key is refused with its value.
  nlohmann::json g3 = Gemma3();
  g3["text_config"]["num_global_key_value_heads"] = 4;
  EXPECT_EQ(ErrorOf([&] {
              ParseModelConfig(g3, "g3/config.json");
            }).rfind("g3/config.json: text_config.num_global_key_value_heads = 4: Gemma-4: the global", 0),
            0u);
  // attention_k_eq_v false is Gemma-3's own behaviour: nothing to refuse.
  nlohmann::json inert = Gemma3();
  inert["text_config"]["attention_k_eq_v"] = false;
  EXPECT_NO_THROW(ParseModelConfig(inert, "g3/config.json"));
}

TEST(ArchitecturesTest, EveryPresetAndTestConfigIsAListedClass) {
  for (const auto& p : ModelPresets()) {
    EXPECT_NE(FindArchitecture(p.Parse().architecture), nullptr) << p.name;
  }
  EXPECT_EQ(FindArchitecture("DeepseekV32ForCausalLM")->rules, ArchitectureRules::kMlaDsa);
  EXPECT_EQ(FindArchitecture("DeepseekV3ForCausalLM")->rules, ArchitectureRules::kMla);
  EXPECT_EQ(FindArchitecture("Glm4MoeForCausalLM")->rules, ArchitectureRules::kAttention);
}

// Issue 23 item 6: "AMD MI355X is planned with CUDA rules (fp8 becomes `fp8_ds_mla` 656 B/layer where ROCm uses
// 576; block size 16 refused although ROCm ran it; the indexer reservation missed; constants labelled
// "ampere-or-pcie")." Refused where the GPU is resolved, with the reason.
TEST(ArchitecturesTest, AmdGpusAreRefusedWithTheReason) {
  const std::string why =
      "not planned: vLLM on ROCm uses rules ppdeploy does not model (its own KV-cache layouts, e.g. the fp8 MLA "
      "cache is not CUDA's fp8_ds_mla; its own attention backends and block sizes; another DSA indexer "
      "reservation; memory constants fitted on NVIDIA GPUs only), and planning it with CUDA's rules would give "
      "wrong figures";
  EXPECT_EQ(ErrorOf([] { FindGpu("MI355X"); }), "GPU \"MI355X\" (mi355x, AMD gfx950): " + why);
  EXPECT_EQ(ErrorOf([] { FindGpu("mi300x"); }), "GPU \"mi300x\" (mi300x, AMD gfx942): " + why);
  CliResult r = testing::RunPpdeploy("plan --gpu mi355x --kv-cache-dtype fp8");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.output, "ppdeploy: error: GPU \"mi355x\" (mi355x, AMD gfx950): " + why + "\n");
  // An unknown name lists the plannable GPUs only.
  const std::string unknown = ErrorOf([] { FindGpu("x1"); });
  EXPECT_EQ(unknown.find("mi3"), std::string::npos) << unknown;
}

}  // namespace
}  // namespace ppdeploy
