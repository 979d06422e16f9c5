// GGUF checkpoints as --model: the file adapter (ReadGgufFileHeader) and the weights per layer and
// per TP rank that ResolveModel derives from the tensor infos.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>

#include "core/error.h"
#include "io/checkpoint.h"
#include "io/files.h"
#include "io/model_input.h"
#include "support/fake_checkpoint.h"
#include "support/gguf_writer.h"

namespace ppdeploy {
namespace {

using testing::GgufBuilder;
using testing::TempDir;

constexpr std::uint32_t kF32 = 0, kQ4_K = 12, kQ6_K = 14;  // ggml/include/ggml.h

std::string ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// Llama-3.1-8B's config.json (tests/data/hf-configs) cut to `layers` decoder layers.
std::string LlamaConfig(int layers) {
  auto j = nlohmann::json::parse(
      ReadFileText(std::string(PPDEPLOY_SOURCE_DIR) + "/tests/data/hf-configs/meta-llama__Llama-3.1-8B-Instruct.json"));
  j["num_hidden_layers"] = layers;
  return j.dump();
}

// Bytes by hand from ggml's block sizes (ggml.c type_traits; ggml-common.h): Q4_K 144 bytes per 256
// weights, Q6_K 210 per 256, F32 4 per weight. Llama-3.1-8B widths: hidden 4096, 32 q heads and 8 kv
// heads of 128, MLP 14336, vocab 128256. GGUF dims are [in, out] (ne[0] is the row). The types are
// those llama.cpp's Q4_K_M mix gives (llama-quant.cpp: attn_v and ffn_down in Q6_K "use_more_bits"
// layers, output in Q6_K, the rest Q4_K, norms F32).
//   attn_q      [4096, 4096]   Q4_K  4096/256 = 16 blocks x 144 = 2,304 B/row x 4,096  =   9,437,184
//   attn_k      [4096, 1024]   Q4_K  2,304 x 1,024                                     =   2,359,296
//   attn_v      [4096, 1024]   Q6_K  16 x 210 = 3,360 x 1,024                          =   3,440,640
//   attn_output [4096, 4096]   Q4_K                                                    =   9,437,184
//   ffn_gate    [4096, 14336]  Q4_K  2,304 x 14,336                                    =  33,030,144
//   ffn_up      [4096, 14336]  Q4_K                                                    =  33,030,144
//   ffn_down    [14336, 4096]  Q6_K  14336/256 = 56 x 210 = 11,760 x 4,096             =  48,168,960
//   attn_norm, ffn_norm [4096] F32   2 x 16,384                                        =      32,768
//   one layer                                                                          = 138,936,320
//   token_embd  [4096, 128256] Q4_K  2,304 x 128,256                                   = 295,501,824
//   output      [4096, 128256] Q6_K  3,360 x 128,256                                   = 430,940,160
//   output_norm [4096] F32 = 16,384; rope_freqs [64] F32 = 256 (Llama-3 RoPE scaling factors)
constexpr std::int64_t kLayer = 138'936'320, kEmbd = 295'501'824, kOutput = 430'940'160;

GgufBuilder LlamaQ4KM(int layers) {
  GgufBuilder b;
  b.Str("general.architecture", "llama").Str("general.name", "Llama 3.1 8B Instruct").U32("general.file_type", 15);
  b.Tensor("rope_freqs.weight", {64}, kF32, 256);
  b.Tensor("token_embd.weight", {4096, 128256}, kQ4_K, kEmbd);
  for (int i = 0; i < layers; ++i) {
    auto n = [&](const char* s) { return "blk." + std::to_string(i) + "." + s + ".weight"; };
    b.Tensor(n("attn_norm"), {4096}, kF32, 16'384)
        .Tensor(n("attn_q"), {4096, 4096}, kQ4_K, 9'437'184)
        .Tensor(n("attn_k"), {4096, 1024}, kQ4_K, 2'359'296)
        .Tensor(n("attn_v"), {4096, 1024}, kQ6_K, 3'440'640)
        .Tensor(n("attn_output"), {4096, 4096}, kQ4_K, 9'437'184)
        .Tensor(n("ffn_norm"), {4096}, kF32, 16'384)
        .Tensor(n("ffn_gate"), {4096, 14336}, kQ4_K, 33'030'144)
        .Tensor(n("ffn_up"), {4096, 14336}, kQ4_K, 33'030'144)
        .Tensor(n("ffn_down"), {14336, 4096}, kQ6_K, 48'168'960);
  }
  b.Tensor("output_norm.weight", {4096}, kF32, 16'384);
  b.Tensor("output.weight", {4096, 128256}, kQ6_K, kOutput);
  return b;
}

TEST(GgufFileTest, LlamaQ4KMWeightsPerLayerAndRank) {
  TempDir dir;
  LlamaQ4KM(2).WriteFile(dir / "Llama-3.1-8B-Instruct-Q4_K_M.gguf");
  testing::WriteRawFile(dir / "config.json", LlamaConfig(2));

  GgufHeader h = ReadGgufFileHeader(dir / "Llama-3.1-8B-Instruct-Q4_K_M.gguf");
  ASSERT_EQ(h.tensors.size(), 22u);
  EXPECT_EQ(h.total_tensor_bytes, 2 * kLayer + kEmbd + kOutput + 16'384 + 256);

  // A directory with one .gguf and a .gguf file given directly resolve the same.
  for (const std::string& spec : {dir.path(), dir / "Llama-3.1-8B-Instruct-Q4_K_M.gguf"}) {
    ResolvedModel m = ResolveModel(spec);
    const WeightTable& w = m.weights;
    EXPECT_TRUE(w.from_checkpoint);
    EXPECT_NE(w.source.find("GGUF header"), std::string::npos) << w.source;
    EXPECT_NE(w.source.find("22 tensors, Q4_K x 11, F32 x 6, Q6_K x 5"), std::string::npos) << w.source;
    ASSERT_EQ(w.layers.size(), 2u);
    EXPECT_EQ(w.layers[0].total_bytes(), kLayer);
    EXPECT_EQ(w.layers[1].total_bytes(), kLayer);
    EXPECT_EQ(w.embedding.total_bytes(), kEmbd);
    EXPECT_EQ(w.lm_head.total_bytes(), kOutput);
    EXPECT_EQ(w.final_norm.total_bytes(), 16'384);
    EXPECT_EQ(w.other.total_bytes(), 256);  // rope_freqs
    EXPECT_EQ(w.total_bytes, h.total_tensor_bytes);

    // TP2: q/o and the MLP halve, k/v keep 8 / 2 = 4 of 8 kv heads, the norms are replicated:
    // 18,874,368 / 2 + 5,799,936 / 8 x 4 + 114,229,248 / 2 + 32,768 = 69,484,544.
    ShardParams tp2{.tensor_parallel_size = 2, .expert_shards = 2, .num_kv_heads = 8, .vocab_size = 128256};
    EXPECT_EQ(PerGpuBytes(w.layers[0], tp2, false, 0), 69'484'544);
    // Vocab-parallel embedding: 2,304 B per row x 128,256 / 2 rows (128,256 is a multiple of 64).
    EXPECT_EQ(PerGpuBytes(w.embedding, tp2, false, 0), 2'304 * 64'128);
    EXPECT_EQ(PerGpuBytes(w.lm_head, tp2, false, 0), 3'360 * 64'128);
  }
}

TEST(GgufFileTest, HeaderLongerThanTheFirstRead) {
  // A 3 MiB metadata string: the adapter reads 1 MiB, then more.
  TempDir dir;
  GgufBuilder b;
  b.Str("tokenizer.chat_template", std::string(3 << 20, 'x')).Tensor("output_norm.weight", {4096}, kF32, 16'384);
  b.WriteFile(dir / "m.gguf");
  GgufHeader h = ReadGgufFileHeader(dir / "m.gguf");
  EXPECT_EQ(h.Find("tokenizer.chat_template")->s.size(), std::size_t{3} << 20);
  ASSERT_EQ(h.tensors.size(), 1u);
  EXPECT_EQ(h.tensors[0].bytes, 16'384);
}

TEST(GgufFileTest, Refusals) {
  TempDir dir;
  LlamaQ4KM(2).WriteFile(dir / "m.gguf");
  // No config.json and metadata without the dimensions: the error names the key and the file.
  EXPECT_EQ(ErrorOf([&] { ResolveModel(dir / "m.gguf"); }),
            dir / "m.gguf" + ": metadata \"llama.block_count\": required key is missing");
  EXPECT_EQ(ErrorOf([&] { ResolveModel(dir.path()); }),
            dir / "m.gguf" + ": metadata \"llama.block_count\": required key is missing");
  GgufBuilder gemma;
  gemma.Str("general.architecture", "gemma2").Tensor("token_embd.weight", {256, 4}, kQ4_K, 576);
  gemma.WriteFile(dir / "g.gguf");
  EXPECT_EQ(ErrorOf([&] { ResolveModel(dir / "g.gguf"); }),
            dir / "g.gguf" +
                ": metadata \"general.architecture\": \"gemma2\": the model config is read from GGUF metadata only "
                "for llama, mistral, qwen2, qwen2moe, qwen3, qwen3moe; put the original checkpoint's config.json next "
                "to the file");
  std::filesystem::remove(dir / "g.gguf");
  // One part of a split GGUF (llama.cpp gguf-split writes split.count / split.no).
  GgufBuilder part = LlamaQ4KM(1);
  part.Raw("split.count", 2, std::string("\x03\x00", 2));  // uint16 3, as gguf-split writes it
  part.WriteFile(dir / "p.gguf");
  EXPECT_EQ(ErrorOf([&] { ResolveModel(dir / "p.gguf"); }),
            dir / "p.gguf" +
                ": metadata \"split.count\": 3: one part of a split GGUF; vLLM loads a single file (merge the parts "
                "with llama-gguf-split --merge)");
  std::filesystem::remove(dir / "p.gguf");
  // Two .gguf files in one directory.
  LlamaQ4KM(1).WriteFile(dir / "n.gguf");
  testing::WriteRawFile(dir / "config.json", LlamaConfig(2));
  EXPECT_NE(ErrorOf([&] { ResolveModel(dir.path()); }).find("2 *.gguf files"), std::string::npos);
  // A truncated file is refused naming it (the data section is cut).
  std::string bytes = LlamaQ4KM(1).Header();
  testing::WriteRawFile(dir / "n.gguf", bytes);
  EXPECT_NE(ErrorOf([&] { ResolveModel(dir / "n.gguf"); }).find(dir / "n.gguf" + ": tensor \"rope_freqs.weight\""),
            std::string::npos);
  // A layer the config does not have is not silently dropped: blk.5 of a 2-layer config is "other".
  GgufBuilder extra = LlamaQ4KM(2);
  extra.Tensor("blk.5.attn_q.weight", {4096, 4096}, kQ4_K, 9'437'184);
  extra.WriteFile(dir / "n.gguf");
  EXPECT_EQ(ResolveModel(dir / "n.gguf").weights.other.total_bytes(), 256 + 9'437'184);
}

// Without config.json the config comes from the GGUF metadata (transformers GGUF_CONFIG_MAPPING), with
// the values llama.cpp's convert_hf_to_gguf.py writes for Llama-3.1-8B-Instruct: the planner sees the
// same model as from the config.json.
TEST(GgufFileTest, ConfigFromMetadataEqualsConfigJson) {
  TempDir dir;
  GgufBuilder b = LlamaQ4KM(2);
  b.U32("llama.block_count", 2)
      .U32("llama.context_length", 131072)
      .U32("llama.embedding_length", 4096)
      .U32("llama.feed_forward_length", 14336)
      .U32("llama.attention.head_count", 32)
      .U32("llama.attention.head_count_kv", 8)
      .F32("llama.rope.freq_base", 500000.0f)
      .F32("llama.attention.layer_norm_rms_epsilon", 1e-5f)
      .U32("llama.vocab_size", 128256)
      .U32("llama.rope.dimension_count", 128);
  b.WriteFile(dir / "m.gguf");
  ResolvedModel from_meta = ResolveModel(dir / "m.gguf");
  EXPECT_EQ(from_meta.config.source, "GGUF metadata of " + dir / "m.gguf");
  testing::WriteRawFile(dir / "config.json", LlamaConfig(2));
  ResolvedModel from_json = ResolveModel(dir / "m.gguf");
  const ModelConfig &a = from_meta.config, &c = from_json.config;
  EXPECT_EQ(a.architecture, "LlamaForCausalLM");
  EXPECT_EQ(a.architecture, c.architecture);
  EXPECT_EQ(a.num_hidden_layers, 2);
  EXPECT_EQ(a.hidden_size, c.hidden_size);
  EXPECT_EQ(a.num_attention_heads, c.num_attention_heads);
  EXPECT_EQ(a.num_key_value_heads, 8);
  EXPECT_EQ(a.head_dim, 128);
  EXPECT_EQ(a.intermediate_size, c.intermediate_size);
  EXPECT_EQ(a.vocab_size, c.vocab_size);
  EXPECT_EQ(a.max_position_embeddings, c.max_position_embeddings);
  EXPECT_EQ(a.tie_word_embeddings, false);  // output.weight is present
  EXPECT_EQ(a.torch_dtype, c.torch_dtype);  // bfloat16
  EXPECT_EQ(from_meta.weights.total_bytes, from_json.weights.total_bytes);
  EXPECT_EQ(from_meta.weights.layers[1].total_bytes(), kLayer);
}

}  // namespace
}  // namespace ppdeploy
