// config.json parsing: every preset parses; bad input gives one-line errors naming file and field.
#include "model/config.h"

#include <gtest/gtest.h>

#include "memory/weights.h"
#include "model/presets.h"
#include "test_util.h"

namespace ppdeploy {
namespace {
using testing::ErrorOf;

TEST(ConfigTest, EveryPresetParses) {
  ASSERT_GE(ModelPresets().size(), 8u);
  for (const auto& p : ModelPresets()) {
    ModelConfig m = p.Parse();
    EXPECT_GT(m.num_hidden_layers, 0) << p.name;
    EXPECT_GT(EstimateWeights(m).total_bytes, 0) << p.name;
  }
}

TEST(ConfigTest, SeedModelFields) {
  ModelConfig m = FindModelPreset("seed")->Parse();
  EXPECT_EQ(m.architecture, "GlmMoeDsaForCausalLM");
  EXPECT_TRUE(m.dsa);
  EXPECT_EQ(m.attention, AttentionKind::kMla);
  EXPECT_EQ(m.num_hidden_layers, 78);
  EXPECT_EQ(m.index_topk_freq, 4);
  EXPECT_EQ(m.index_skip_topk_offset, 3);
  EXPECT_EQ(m.num_nextn_predict_layers, 1);
  EXPECT_EQ(m.quantization.method, QuantizationConfig::Method::kCompressedTensors);
  EXPECT_EQ(m.quantization.group_size, 128);
  EXPECT_FALSE(m.IsMoeLayer(2));
  EXPECT_TRUE(m.IsMoeLayer(3));
}

TEST(ConfigTest, SeedWeightsMatchTheCheckpointHeaders) {
  // docs/seed.md §6: MoE layer 5,177.8 MiB, MTP layer 5,339.7 MiB, ~1,332.6 MiB per GPU per layer at TP4;
  // §2: checkpoint 390.58 GiB. The estimate from config + quantization_config is within 1%.
  ModelConfig m = FindModelPreset("glm-5.3-w4a16")->Parse();
  WeightTable t = EstimateWeights(m);
  EXPECT_NEAR(t.layers[40].total_bytes() / 1048576.0, 5177.8, 5177.8 * 0.01);
  EXPECT_NEAR(t.mtp[0].total_bytes() / 1048576.0, 5339.7, 5339.7 * 0.01);
  EXPECT_NEAR(t.total_bytes / 1073741824.0, 390.58, 390.58 * 0.01);
  ShardParams tp4{4, 4, 64, m.vocab_size};
  EXPECT_NEAR(PerGpuBytes(t.layers[40], tp4, true, 0) / 1048576.0, 1332.6, 1332.6 * 0.005);
}

TEST(ConfigTest, DeepSeekV3Fp8CheckpointSize) {
  // DeepSeek-V3's FP8 checkpoint is ~642 GiB (671B params + MTP, fp8 block scales, bf16 embeddings).
  ModelConfig m = FindModelPreset("deepseek-v3")->Parse();
  double gib = EstimateWeights(m).total_bytes / 1073741824.0;
  EXPECT_GT(gib, 600);
  EXPECT_LT(gib, 680);
}

TEST(ConfigTest, Errors) {
  // Issue 23 item 6 replaces issue 12's open reader: a class data/architectures.json does not list is refused
  // naming it (and, with no class of the same stem, listing the ones it plans), before any field is read.
  EXPECT_EQ(ErrorOf([] { ParseModelConfigText("{\"architectures\": [\"FooForCausalLM\"]}", "x/config.json"); })
                .rfind("x/config.json: architectures: \"FooForCausalLM\" is not a model class ppdeploy plans "
                       "(data/architectures.json: it lists DeepseekV2ForCausalLM, DeepseekV3ForCausalLM, ",
                       0),
            0u);
  EXPECT_EQ(ErrorOf([] { ParseModelConfigText("{\"model_type\": \"llama\"}", "x/config.json"); }),
            "x/config.json: architectures: required field is missing (vLLM picks the model class from it)");
  EXPECT_EQ(ErrorOf([] { ParseModelConfigText("[1,2]", "c.json"); }), "c.json: expected a JSON object, got [1,2]");
  EXPECT_EQ(ErrorOf([] { ParseModelConfigText("{\"architectures\": [\"LlamaForCausalLM\"]}", "c.json"); }),
            "c.json: num_hidden_layers: required field is missing (also looked for n_layer, num_layers, n_layers)");
  nlohmann::json j = FindModelPreset("llama-3.1-8b")->config;
  j["num_hidden_layers"] = "32";
  EXPECT_EQ(ErrorOf([&] { ParseModelConfig(j, "c.json"); }),
            "c.json: num_hidden_layers: expected an integer, got \"32\"");
  j["num_hidden_layers"] = -1;
  EXPECT_EQ(ErrorOf([&] { ParseModelConfig(j, "c.json"); }),
            "c.json: num_hidden_layers: expected an integer >= 1, got -1");
  j["num_hidden_layers"] = 32;
  j["num_key_value_heads"] = 5;
  EXPECT_EQ(ErrorOf([&] { ParseModelConfig(j, "c.json"); }),
            "c.json: num_key_value_heads: 5 does not divide num_attention_heads=32");
  nlohmann::json g = FindModelPreset("glm-5.3-w4a16")->config;
  g["index_topk_pattern"] = "FFX";
  EXPECT_EQ(ErrorOf([&] { ParseModelConfig(g, "c.json"); }),
            "c.json: index_topk_pattern: expected only 'F' and 'S', got \"FFX\"");
  g["index_topk_pattern"] = nullptr;
  g["quantization_config"] = {{"quant_method", "bitsandbytes"}};
  EXPECT_EQ(
      ErrorOf([&] { ParseModelConfig(g, "c.json"); }),
      "c.json: quantization_config.quant_method: unsupported quant_method \"bitsandbytes\" (supported: fp8, gptq, "
      "awq, compressed-tensors, mxfp4)");
  g["quantization_config"] = {{"quant_method", "gptq"}, {"bits", 3}};
  EXPECT_EQ(ErrorOf([&] { ParseModelConfig(g, "c.json"); }),
            "c.json: quantization_config.bits: expected 4 or 8, got 3");
  g["quantization_config"] = {{"quant_method", "compressed-tensors"},
                              {"ignore", {"re:("}},
                              {"config_groups", {{"g", {{"weights", {{"num_bits", 4}, {"group_size", 128}}}}}}}};
  EXPECT_EQ(ErrorOf([&] { EstimateWeights(ParseModelConfig(g, "c.json")); }),
            "quantization_config.ignore: invalid regular expression \"re:(\"");
}

// Issue 12: the generic decoder reader refuses only what it cannot classify, and every refusal names the file
// and the field (constructed configs: a small Llama with one field changed each).
TEST(ConfigTest, GenericReaderRefusalsNameTheFileAndTheField) {
  auto refusal = [](nlohmann::json upd) {
    nlohmann::json c = {{"architectures", {"LlamaForCausalLM"}},
                        {"model_type", "llama"},
                        {"num_hidden_layers", 4},
                        {"hidden_size", 1024},
                        {"num_attention_heads", 8},
                        {"num_key_value_heads", 2},
                        {"head_dim", 128},
                        {"intermediate_size", 2048},
                        {"vocab_size", 32000},
                        {"max_position_embeddings", 4096},
                        {"torch_dtype", "bfloat16"}};
    c.update(upd);
    return ErrorOf([&] { ParseModelConfig(c, "m/config.json"); });
  };
  EXPECT_EQ(refusal({{"layer_types", {"full_attention", "sliding_attention", "cross_attention", "full_attention"}},
                     {"sliding_window", 512}}),
            "m/config.json: layer_types: entry 2 \"cross_attention\" is not a layer kind vLLM's KV-cache manager "
            "knows (full_attention, sliding_attention, chunked_attention, linear_attention, mamba)");
  EXPECT_EQ(refusal({{"is_encoder_decoder", true}, {"architectures", {"T5ForConditionalGeneration"}}}),
            "m/config.json: is_encoder_decoder: encoder-decoder models (cross-attention KV, vLLM CrossAttentionSpec) "
            "are not planned (T5ForConditionalGeneration)");
  EXPECT_EQ(refusal({{"block_configs", nlohmann::json::array({nlohmann::json::object(), nlohmann::json::object(),
                                                              nlohmann::json::object(), nlohmann::json::object()})},
                     {"architectures", {"DeciLMForCausalLM"}}}),
            "m/config.json: block_configs: per-layer block_configs (DeciLM / Nemotron-NAS: heads and MLP differ per "
            "layer) are not planned");
  EXPECT_EQ(refusal({{"layer_types", {"linear_attention", "full_attention", "linear_attention", "full_attention"}},
                     {"architectures", {"Qwen3NextForCausalLM"}},
                     {"model_type", "foo_next"}}),
            "m/config.json: the model has linear / mamba layers (layer_types) but no state fields this planner knows "
            "(GatedDeltaNet linear_num_value_heads..., Kimi linear_attn_config, MiniMax attn_type_list, Mamba "
            "mamba_d_state / ssm_state_size)");
  EXPECT_EQ(refusal({{"layer_types", {"sliding_attention", "full_attention", "sliding_attention", "full_attention"}}}),
            "m/config.json: sliding_window: required for sliding-window layers");
  EXPECT_EQ(refusal({{"layer_types", {"chunked_attention", "full_attention", "chunked_attention", "full_attention"}}}),
            "m/config.json: attention_chunk_size: required for chunked_attention layers");
}

TEST(ConfigTest, GptqEstimateCountsScalesZerosAndGidx) {
  nlohmann::json j = FindModelPreset("llama-3.1-8b")->config;
  ModelConfig bf16 = ParseModelConfig(j, "c.json");
  j["quantization_config"] = {{"quant_method", "gptq"}, {"bits", 4}, {"group_size", 128}};
  ModelConfig q = ParseModelConfig(j, "c.json");
  double ratio =
      static_cast<double>(EstimateWeights(q).layers[0].total_bytes()) / EstimateWeights(bf16).layers[0].total_bytes();
  // 4-bit weights (0.25 of bf16) + per-group scales/zeros (~1.6%) + g_idx.
  EXPECT_GT(ratio, 0.25);
  EXPECT_LT(ratio, 0.28);
}

// Issue 15, configs. A small Llama config (constructed; the fields of Meta-Llama-3-8B's config.json, fewer
// layers) with one field changed each. Python's json.loads reads `61.0` as a float; what vLLM does with it
// decides between a refusal, a warning and silence:
//  - a field vLLM passes to range() or a tensor shape (num_hidden_layers, hidden_size, ...) with a float
//    raises TypeError in vLLM: refused, saying so;
//  - a field vLLM casts with int() (max_position_embeddings and the other max-length keys of
//    _get_and_verify_max_len) is read as the integer with a warning in ModelConfig::warnings;
//  - a torch_dtype transformers cannot turn into a torch dtype (getattr(torch, "bf16") fails) is planned
//    with a warning;
//  - group_size 0 is refused (gptq/awq divide by it; Marlin supports -1, 32, 64, 128), not read as per-channel;
//  - bytes the file quotes (NUL through \u0000, an invisible character) are escaped in every message.
nlohmann::json SmallLlama() {
  return {{"architectures", {"LlamaForCausalLM"}},
          {"model_type", "llama"},
          {"num_hidden_layers", 4},
          {"hidden_size", 1024},
          {"num_attention_heads", 8},
          {"num_key_value_heads", 2},
          {"head_dim", 128},
          {"intermediate_size", 2048},
          {"vocab_size", 32000},
          {"max_position_embeddings", 4096},
          {"torch_dtype", "bfloat16"}};
}

ModelConfig SmallLlamaWith(const nlohmann::json& upd) {
  nlohmann::json c = SmallLlama();
  if (!upd.is_null()) c.update(upd);
  return ParseModelConfig(c, "m/config.json");
}

std::string SmallLlamaError(const nlohmann::json& upd) {
  return ErrorOf([&] { SmallLlamaWith(upd); });
}

TEST(ConfigTest, PlainConfigHasNoWarnings) { EXPECT_TRUE(SmallLlamaWith({}).warnings.empty()); }

TEST(ConfigTest, IntegralFloatVllmCannotUseIsRefusedWithTheReason) {
  EXPECT_EQ(SmallLlamaError(nlohmann::json::parse(R"({"num_hidden_layers": 61.0})")),
            "m/config.json: num_hidden_layers: expected an integer, got the float 61.0 (vLLM passes this field to "
            "range() / tensor shapes, which raise TypeError for a float; write 61)");
  EXPECT_EQ(SmallLlamaError(nlohmann::json::parse(R"({"hidden_size": 1024.0})")),
            "m/config.json: hidden_size: expected an integer, got the float 1024.0 (vLLM passes this field to "
            "range() / tensor shapes, which raise TypeError for a float; write 1024)");
  EXPECT_EQ(SmallLlamaError(nlohmann::json::parse(R"({"num_hidden_layers": 4.5})")),
            "m/config.json: num_hidden_layers: expected an integer, got 4.5");
}

TEST(ConfigTest, IntegralFloatVllmCastsIsReadWithAWarning) {
  ModelConfig m = SmallLlamaWith(nlohmann::json::parse(R"({"max_position_embeddings": 4096.0})"));
  EXPECT_EQ(m.max_position_embeddings, 4096);
  ASSERT_EQ(m.warnings.size(), 1u);
  EXPECT_EQ(m.warnings[0],
            "m/config.json: max_position_embeddings: the float 4096.0 is read as the integer 4096 (vLLM casts it "
            "with int())");
  // GPT-2 style n_positions, read by the same rule of vLLM's _get_and_verify_max_len.
  // (model_type "foo": no transformers class default for max_position_embeddings to fall back to).
  nlohmann::json c = SmallLlama();
  c.erase("max_position_embeddings");
  c["model_type"] = "foo";
  c["architectures"] = {"GPTBigCodeForCausalLM"};
  c["n_positions"] = 2048.0;
  ModelConfig g = ParseModelConfig(c, "m/config.json");
  EXPECT_EQ(g.max_position_embeddings, 2048);
  ASSERT_EQ(g.warnings.size(), 1u);
  EXPECT_EQ(g.warnings[0],
            "m/config.json: n_positions: the float 2048.0 is read as the integer 2048 (vLLM casts it with int())");
}

TEST(ConfigTest, TorchDtypeTransformersCannotReadWarns) {
  ModelConfig m = SmallLlamaWith({{"torch_dtype", "bf16"}});
  EXPECT_EQ(m.dtype_bytes, 2);
  ASSERT_EQ(m.warnings.size(), 1u);
  EXPECT_EQ(m.warnings[0],
            "m/config.json: torch_dtype: \"bf16\" is not a torch dtype name: transformers reads it with "
            "getattr(torch, \"bf16\"), which fails, so vLLM cannot load this config; planned as bfloat16");
  EXPECT_TRUE(SmallLlamaWith({{"torch_dtype", "half"}}).warnings.empty());  // torch.half exists
  EXPECT_EQ(SmallLlamaError({{"torch_dtype", std::string("bfloat16\0", 9)}}),
            "m/config.json: torch_dtype: unsupported dtype \"bfloat16\\x00\" (expected bfloat16, float16 or float32)");
}

TEST(ConfigTest, GroupSizeZeroIsRefusedNotReadAsPerChannel) {
  const std::string why =
      ": 0 is not a group size: vLLM refuses it (Marlin kernels support -1 = per channel, 32, 64, 128; the "
      "gptq/awq linear methods divide the input size by it); write -1 for per-channel scales";
  EXPECT_EQ(SmallLlamaError({{"quantization_config", {{"quant_method", "gptq"}, {"bits", 4}, {"group_size", 0}}}}),
            "m/config.json: quantization_config.group_size" + why);
  EXPECT_EQ(SmallLlamaError({{"quantization_config", {{"quant_method", "awq"}, {"w_bit", 4}, {"q_group_size", 0}}}}),
            "m/config.json: quantization_config.q_group_size" + why);
  // -1 is per-channel, as vLLM reads it.
  EXPECT_EQ(SmallLlamaWith({{"quantization_config", {{"quant_method", "gptq"}, {"bits", 4}, {"group_size", -1}}}})
                .quantization.group_size,
            0);
}

TEST(ConfigTest, QuotedBytesFromTheFileAreEscaped) {
  // \u0000 and U+200B decode to real characters in json.loads; the messages show them, escaped.
  EXPECT_EQ(SmallLlamaError({{"quantization_config", {{"quant_method", "fp8\u200b"}}}}),
            "m/config.json: quantization_config.quant_method: unsupported quant_method \"fp8<U+200B>\" (supported: "
            "fp8, gptq, awq, compressed-tensors, mxfp4)");
  EXPECT_EQ(SmallLlamaError({{"num_hidden_layers", std::string("4\0", 2)}}),
            "m/config.json: num_hidden_layers: expected an integer, got \"4\\u0000\"");  // the JSON value as written
  // A raw 0xFF byte never reaches the parser's message (RFC 8259: JSON text is UTF-8).
  EXPECT_EQ(ErrorOf([] { ParseModelConfigText("{\"model_type\": \"ll\xff\"}", "m/config.json"); }),
            "m/config.json: malformed JSON: invalid UTF-8 at byte offset 18 (byte 0xff)");
  // A list element out of int range is refused, not wrapped.
  EXPECT_EQ(SmallLlamaError(
                nlohmann::json::parse(R"({"attention_chunk_size": 256, "no_rope_layers": [1, 4294967296, 1, 1]})")),
            "m/config.json: no_rope_layers[1]: value 4294967296 is out of range (expected an integer from "
            "-100000000 to 100000000)");
}

}  // namespace
}  // namespace ppdeploy
