#include "model/gguf.h"

#include <gtest/gtest.h>

#include <functional>

#include "core/error.h"
#include "support/gguf_writer.h"

namespace ppdeploy {
namespace {

using testing::GgufBuilder;

// ggml_type values (ggml/include/ggml.h, ggml-org/ggml d99724f).
constexpr std::uint32_t kF32 = 0, kF16 = 1, kQ4_0 = 2, kQ8_0 = 8, kQ4_K = 12, kQ6_K = 14, kBF16 = 30;

std::string ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

GgufHeader Parse(const std::string& bytes, const std::string& name = "m.gguf") {
  return ParseGgufFile(bytes, static_cast<std::int64_t>(bytes.size()), name);
}
std::string ParseError(const std::string& bytes) {
  return ErrorOf([&] { Parse(bytes); });
}

// The header fields by hand: "GGUF", version 3, 1 tensor, 1 metadata entry "a" = u8 7, tensor
// "t" 1-D [8] F32 at offset 0: 4 + 4 + 8 + 8 + (8 + 1 + 4 + 1) + (8 + 1 + 4 + 8 + 4 + 8) = 71 bytes,
// padded to 96 (alignment 32); data 8 x 4 = 32 bytes.
TEST(GgufTest, HandWrittenMinimalFile) {
  std::string f = "GGUF";
  GgufBuilder::PutU32(f, 3);
  GgufBuilder::PutU64(f, 1);
  GgufBuilder::PutU64(f, 1);
  GgufBuilder::PutStr(f, "a");
  GgufBuilder::PutU32(f, 0);
  f += '\x07';
  GgufBuilder::PutStr(f, "t");
  GgufBuilder::PutU32(f, 1);
  GgufBuilder::PutU64(f, 8);
  GgufBuilder::PutU32(f, kF32);
  GgufBuilder::PutU64(f, 0);
  ASSERT_EQ(f.size(), 71u);
  f.resize(96, '\0');
  f += std::string(32, '\0');
  GgufHeader h = Parse(f);
  EXPECT_EQ(h.version, 3u);
  EXPECT_EQ(h.alignment, 32u);
  EXPECT_EQ(h.data_offset, 96);
  EXPECT_EQ(h.data_section_bytes, 32);
  ASSERT_EQ(h.tensors.size(), 1u);
  EXPECT_EQ(h.tensors[0].name, "t");
  EXPECT_EQ(h.tensors[0].type_name, "F32");
  EXPECT_EQ(h.tensors[0].bytes, 32);
  ASSERT_NE(h.Find("a"), nullptr);
  EXPECT_EQ(h.Find("a")->type, GgufType::kUint8);
  EXPECT_EQ(h.Find("a")->u, 7u);
  // The builder writes the same bytes.
  EXPECT_EQ(GgufBuilder().Raw("a", 0, "\x07").Tensor("t", {8}, kF32, 32).Bytes(), f);
}

// Every metadata value type of gguf.md, an array of arrays included.
TEST(GgufTest, EveryMetadataType) {
  GgufBuilder b(2);  // version 2 has the same layout as 3
  auto raw = [](auto v) { return std::string(reinterpret_cast<const char*>(&v), sizeof(v)); };
  b.Raw("u8", 0, raw(std::uint8_t{200}))
      .Raw("i8", 1, raw(std::int8_t{-5}))
      .Raw("u16", 2, raw(std::uint16_t{60000}))
      .Raw("i16", 3, raw(std::int16_t{-30000}))
      .U32("u32", 4000000000u)
      .Raw("i32", 5, raw(std::int32_t{-7}))
      .F32("f32", 0.5f)
      .Raw("bool", 7, "\x01")
      .Str("str", "llama")
      .U64("u64", 1ull << 40)
      .Raw("i64", 11, raw(std::int64_t{-(1ll << 40)}))
      .Raw("f64", 12, raw(1e-6))
      .StrArray("tokens", {"<s>", "</s>", "a"});
  std::string nested;  // [[1, 2], [3]] as arrays of int32
  GgufBuilder::PutU32(nested, 9);
  GgufBuilder::PutU64(nested, 2);
  GgufBuilder::PutU32(nested, 5);
  GgufBuilder::PutU64(nested, 2);
  nested += raw(std::int32_t{1}) + raw(std::int32_t{2});
  GgufBuilder::PutU32(nested, 5);
  GgufBuilder::PutU64(nested, 1);
  nested += raw(std::int32_t{3});
  b.Raw("nested", 9, nested);
  GgufHeader h = Parse(b.Bytes());
  EXPECT_EQ(h.version, 2u);
  EXPECT_EQ(h.metadata.size(), 14u);
  EXPECT_EQ(h.Find("u8")->u, 200u);
  EXPECT_EQ(h.Find("i8")->i, -5);
  EXPECT_EQ(h.Find("u16")->u, 60000u);
  EXPECT_EQ(h.Find("i16")->i, -30000);
  EXPECT_EQ(h.Find("u32")->u, 4000000000u);
  EXPECT_EQ(h.Find("i32")->i, -7);
  EXPECT_EQ(h.Find("f32")->f, 0.5);
  EXPECT_EQ(h.Find("bool")->u, 1u);
  EXPECT_EQ(h.Find("str")->s, "llama");
  EXPECT_EQ(h.Find("u64")->u, 1ull << 40);
  EXPECT_EQ(h.Find("i64")->i, -(1ll << 40));
  EXPECT_EQ(h.Find("f64")->f, 1e-6);
  const GgufValue* t = h.Find("tokens");
  ASSERT_EQ(t->elements.size(), 3u);
  EXPECT_EQ(t->elements[1].s, "</s>");
  const GgufValue* n = h.Find("nested");
  EXPECT_EQ(n->element_type, GgufType::kArray);
  ASSERT_EQ(n->elements.size(), 2u);
  EXPECT_EQ(n->elements[0].elements[1].i, 2);
  EXPECT_EQ(n->elements[1].elements[0].i, 3);
  std::int64_t v = 0;
  EXPECT_TRUE(h.Find("u32")->AsInt(&v));
  EXPECT_EQ(v, 4000000000);
  EXPECT_FALSE(h.Find("str")->AsInt(&v));
  EXPECT_TRUE(h.tensors.empty());
  EXPECT_EQ(h.data_offset, static_cast<std::int64_t>(b.Header().size()));  // no padding without tensors
}

// A long array keeps its count, not its elements.
TEST(GgufTest, LongArrayIsCountedNotStored) {
  std::vector<std::string> tokens(kGgufKeptArrayElements + 1, "x");
  GgufHeader h = Parse(GgufBuilder().StrArray("tokenizer.ggml.tokens", tokens).Bytes());
  const GgufValue* t = h.Find("tokenizer.ggml.tokens");
  EXPECT_EQ(t->count, kGgufKeptArrayElements + 1);
  EXPECT_FALSE(t->elements_kept);
  EXPECT_TRUE(t->elements.empty());
}

// Byte sizes from ggml's type traits (ggml.c type_traits: blck_size, type_size = sizeof(block_X)).
TEST(GgufTest, GgmlTypeSizes) {
  struct Row {
    std::uint32_t type;
    const char* name;
    std::int64_t blck, size;
  };
  // ggml-common.h: Q4_0 = half + 16 = 18 per 32; Q8_0 = half + 32 = 34 per 32; Q2_K = 2 halves +
  // 16 + 64 = 84; Q3_K = 2 + 64 + 32 + 12 = 110; Q4_K = 2 halves + 12 + 128 = 144; Q5_K 176; Q6_K =
  // 2 + 16 + 192 = 210; Q8_K = 4 + 256 + 32 = 292; IQ4_XS = 2 + 2 + 4 + 128 = 136 (all per 256);
  // MXFP4 = 1 + 16 = 17 per 32.
  for (const Row& r : {Row{0, "F32", 1, 4},         Row{1, "F16", 1, 2},         Row{2, "Q4_0", 32, 18},
                       Row{3, "Q4_1", 32, 20},      Row{6, "Q5_0", 32, 22},      Row{7, "Q5_1", 32, 24},
                       Row{8, "Q8_0", 32, 34},      Row{9, "Q8_1", 32, 36},      Row{10, "Q2_K", 256, 84},
                       Row{11, "Q3_K", 256, 110},   Row{12, "Q4_K", 256, 144},   Row{13, "Q5_K", 256, 176},
                       Row{14, "Q6_K", 256, 210},   Row{15, "Q8_K", 256, 292},   Row{16, "IQ2_XXS", 256, 66},
                       Row{17, "IQ2_XS", 256, 74},  Row{18, "IQ3_XXS", 256, 98}, Row{19, "IQ1_S", 256, 50},
                       Row{20, "IQ4_NL", 32, 18},   Row{21, "IQ3_S", 256, 110},  Row{22, "IQ2_S", 256, 82},
                       Row{23, "IQ4_XS", 256, 136}, Row{24, "I8", 1, 1},         Row{25, "I16", 1, 2},
                       Row{26, "I32", 1, 4},        Row{27, "I64", 1, 8},        Row{28, "F64", 1, 8},
                       Row{29, "IQ1_M", 256, 56},   Row{30, "BF16", 1, 2},       Row{34, "TQ1_0", 256, 54},
                       Row{35, "TQ2_0", 256, 66},   Row{39, "MXFP4", 32, 17}}) {
    const GgmlTypeTraits* t = FindGgmlType(r.type);
    ASSERT_NE(t, nullptr) << r.name;
    EXPECT_STREQ(t->name, r.name);
    EXPECT_EQ(t->blck_size, r.blck) << r.name;
    EXPECT_EQ(t->type_size, r.size) << r.name;
  }
  for (std::uint32_t removed : {4u, 5u, 31u, 32u, 33u, 36u, 37u, 38u, 43u, 1000u})
    EXPECT_EQ(FindGgmlType(removed), nullptr) << removed;
}

// Tensor sizes: Q4_K [512, 3] = 2 blocks x 144 x 3 rows = 864; Q8_0 [64] = 2 x 34 = 68; F16 [2, 2, 2]
// = 16; BF16 scalar (n_dims 0) = 2; a 0-element tensor = 0. Offsets follow at multiples of 32.
TEST(GgufTest, TensorSizesAndOffsets) {
  GgufBuilder b;
  b.Tensor("q4k", {512, 3}, kQ4_K, 864)
      .Tensor("q8", {64}, kQ8_0, 68)
      .Tensor("f16", {2, 2, 2}, kF16, 16)
      .Tensor("scalar", {}, kBF16, 2)
      .Tensor("empty", {0, 5}, kQ4_0, 0);
  GgufHeader h = Parse(b.Bytes());
  ASSERT_EQ(h.tensors.size(), 5u);
  EXPECT_EQ(h.tensors[0].bytes, 864);
  EXPECT_EQ(h.tensors[1].bytes, 68);
  EXPECT_EQ(h.tensors[1].offset, 864u);  // 864 = 27 x 32
  EXPECT_EQ(h.tensors[2].bytes, 16);
  EXPECT_EQ(h.tensors[2].offset, 960u);  // 864 + 68 = 932 -> 960
  EXPECT_EQ(h.tensors[3].bytes, 2);
  EXPECT_EQ(h.tensors[3].offset, 992u);
  EXPECT_EQ(h.tensors[4].bytes, 0);
  EXPECT_EQ(h.total_tensor_bytes, 864 + 68 + 16 + 2);
  EXPECT_EQ(h.tensors[0].dims, (std::vector<std::int64_t>{512, 3}));
}

TEST(GgufTest, CustomAlignment) {
  GgufBuilder b(3, 64);
  b.U32("general.alignment", 64).Tensor("a", {8}, kF32, 32).Tensor("b", {8}, kF32, 32);
  GgufHeader h = Parse(b.Bytes());
  EXPECT_EQ(h.alignment, 64u);
  EXPECT_EQ(h.tensors[1].offset, 64u);
  EXPECT_EQ(h.data_offset % 64, 0);
  // Offset 32 is aligned for the default but not for 64.
  GgufBuilder c(3, 64);
  c.U32("general.alignment", 64).Tensor("a", {8}, kF32, 32).Tensor("b", {8}, kF32, 32, 32);
  EXPECT_EQ(ParseError(c.Bytes()), "m.gguf: tensor \"b\": offset 32 is not a multiple of the alignment 64");
  EXPECT_EQ(ParseError(GgufBuilder().U32("general.alignment", 48).Bytes()),
            "m.gguf: metadata \"general.alignment\": 48 is not a power of 2");
  EXPECT_EQ(ParseError(GgufBuilder().U64("general.alignment", 64).Bytes()),
            "m.gguf: metadata \"general.alignment\": expected a uint32, got uint64");
}

TEST(GgufTest, BadMagicAndVersions) {
  std::string good = GgufBuilder().Tensor("t", {8}, kF32, 32).Bytes();
  std::string bad = good;
  bad.replace(0, 4, "GGML");
  EXPECT_EQ(ParseError(bad), "m.gguf: magic: expected \"GGUF\", got \"GGML\" (not a GGUF file)");
  bad.replace(0, 4, "\x89PNG");
  EXPECT_EQ(ParseError(bad), "m.gguf: magic: expected \"GGUF\", got \"\\x89PNG\" (not a GGUF file)");
  EXPECT_EQ(ParseError(GgufBuilder(1).Bytes()), "m.gguf: version: GGUF version 1 is not supported (only 2 and 3)");
  EXPECT_EQ(ParseError(GgufBuilder(4).Bytes()), "m.gguf: version: unsupported GGUF version 4 (only 2 and 3)");
  EXPECT_EQ(ParseError(GgufBuilder(0x03000000).Bytes()),
            "m.gguf: version: 50331648 (0x03000000) looks byte-swapped: big-endian GGUF files are not supported");
  EXPECT_EQ(ParseError("GG"), "m.gguf: 2 bytes: too short for the GGUF magic");
  // The file name is escaped too.
  EXPECT_EQ(ErrorOf([] { ParseGgufFile("GG", 2, "a\nb.gguf"); }),
            "a\\x0ab.gguf: 2 bytes: too short for the GGUF magic");
}

// Every truncation of a valid file is an Error naming the file, never a crash or an accepted file.
TEST(GgufTest, EveryTruncationIsRefused) {
  GgufBuilder b;
  b.Str("general.architecture", "llama").StrArray("tokens", {"a", "bc"}).Tensor("t", {64}, kQ8_0, 68);
  std::string f = b.Bytes();
  for (std::size_t n = 0; n < f.size(); ++n) {
    std::string msg = ParseError(f.substr(0, n));
    EXPECT_TRUE(msg.starts_with("m.gguf: ")) << n << ": " << msg;
  }
  // The field is named. Layout: 24 bytes of counts; "general.architecture" = "llama": 8 + 20 + 4 + 8 + 5
  // = 45; "tokens": 8 + 6 + 4 + 4 + 8 + (8 + 1) + (8 + 2) = 49; tensor info "t": 8 + 1 + 4 + 8 + 4 + 8 = 33,
  // its offset at bytes 143-150. Cut at 147:
  EXPECT_EQ(ParseError(f.substr(0, 147)),
            "m.gguf: tensor \"t\" offset: needs 8 bytes at offset 143, but the file ends at 147 (truncated?)");
}

// A prefix of a longer file asks for more bytes instead of failing.
TEST(GgufTest, ShortPrefixAsksForMore) {
  std::string f = GgufBuilder().Str("general.name", std::string(100, 'n')).Tensor("t", {8}, kF32, 32).Bytes();
  try {
    ParseGgufFile(std::string_view(f).substr(0, 50), static_cast<std::int64_t>(f.size()), "m.gguf");
    FAIL() << "accepted";
  } catch (const GgufNeedMoreBytes& e) {
    EXPECT_EQ(e.needed(), 24 + 8 + 12 + 4 + 8);  // up to the string's length, which ends past byte 50
  }
}

// Counts and lengths are checked against the bytes left before anything is allocated.
TEST(GgufTest, HugeCountsAndLengths) {
  auto header = [](std::uint64_t tensors, std::uint64_t kvs) {
    std::string f = "GGUF";
    GgufBuilder::PutU32(f, 3);
    GgufBuilder::PutU64(f, tensors);
    GgufBuilder::PutU64(f, kvs);
    return f + std::string(64, '\0');
  };
  EXPECT_EQ(ParseError(header(1ull << 62, 0)),
            "m.gguf: tensor_count: 4611686018427387904 tensor infos cannot fit in the 64 bytes left in the file");
  EXPECT_EQ(ParseError(header(0, ~0ull)),
            "m.gguf: metadata_kv_count: 18446744073709551615 entries cannot fit in the 64 bytes left in the file");
  std::string len;
  GgufBuilder::PutU64(len, 1ull << 60);
  EXPECT_EQ(ParseError(GgufBuilder().Raw("s", 8, len + "abc").Bytes()),
            "m.gguf: metadata \"s\": length 1152921504606846976 at offset 37 is past the end of the file (3 bytes "
            "left)");
  std::string arr;
  GgufBuilder::PutU32(arr, 10);  // u64 elements
  GgufBuilder::PutU64(arr, 1ull << 61);
  EXPECT_EQ(ParseError(GgufBuilder().Raw("a", 9, arr).Bytes()),
            "m.gguf: metadata \"a\": 2305843009213693952 elements of uint64 need at least 8 bytes each, but only 0 "
            "bytes are left in the file");
  // A tensor name length past the end.
  std::string f = "GGUF";
  GgufBuilder::PutU32(f, 3);
  GgufBuilder::PutU64(f, 1);
  GgufBuilder::PutU64(f, 0);
  GgufBuilder::PutU64(f, ~0ull);
  f += std::string(24, 'x');
  EXPECT_EQ(ParseError(f),
            "m.gguf: tensor info 0 name: length 18446744073709551615 at offset 24 is past the end of the file (24 "
            "bytes left)");
  // Deep nesting is bounded.
  std::string deep;
  for (int k = 0; k < 40; ++k) {
    GgufBuilder::PutU32(deep, 9);
    GgufBuilder::PutU64(deep, 1);
  }
  GgufBuilder::PutU32(deep, 0);
  GgufBuilder::PutU64(deep, 0);
  EXPECT_NE(ParseError(GgufBuilder().Raw("d", 9, deep).Bytes()).find("arrays nested deeper than 32 levels"),
            std::string::npos);
}

TEST(GgufTest, TensorChecks) {
  // Overlap: b starts inside a (a is [0, 68), b at 32).
  EXPECT_EQ(ParseError(GgufBuilder().Tensor("a", {64}, kQ8_0, 68).Tensor("b", {8}, kF32, 32, 32).Bytes()),
            "m.gguf: tensor \"b\": bytes [32, 64) overlap tensor \"a\" at [0, 68)");
  // Misaligned offset.
  EXPECT_EQ(ParseError(GgufBuilder().Tensor("a", {8}, kF32, 32, 4).Bytes()),
            "m.gguf: tensor \"a\": offset 4 is not a multiple of the alignment 32");
  // Past the data section: the file has 32 data bytes, the tensor is at 64.
  GgufBuilder past;
  past.Tensor("a", {8}, kF32, 32).Tensor("b", {8}, kF32, 32, 64);
  std::string f = past.Header() + std::string(32, '\0');
  EXPECT_EQ(ParseError(f), fmt::format("m.gguf: tensor \"b\": 32 bytes at offset 64 end past the data section (32 "
                                       "bytes from file offset {})",
                                       past.Header().size()));
  // Unknown and removed ggml types name the tensor; a control byte in the name is escaped.
  EXPECT_EQ(ParseError(GgufBuilder().Tensor("blk.0.attn_q.weight", {8}, 99, 32).Bytes()),
            "m.gguf: tensor \"blk.0.attn_q.weight\": unknown ggml type 99");
  EXPECT_EQ(ParseError(GgufBuilder().Tensor("x\x01y", {8}, 31, 32).Bytes()),
            "m.gguf: tensor \"x\\x01y\": unknown ggml type 31");
  EXPECT_EQ(ParseError(GgufBuilder().Tensor("t", {1, 1, 1, 1, 1}, kF32, 4).Bytes()),
            "m.gguf: tensor \"t\": n_dims 5 is above the maximum 4");
  EXPECT_EQ(ParseError(GgufBuilder().Tensor("t", {100}, kQ4_K, 0).Bytes()),
            "m.gguf: tensor \"t\": 100 elements per row (dims[0]) is not a multiple of Q4_K's block size 256");
  EXPECT_EQ(ParseError(GgufBuilder().Tensor("t", {1ull << 62, 8}, kF32, 0).Bytes()),
            "m.gguf: tensor \"t\": element count of dims [4611686018427387904, 8] overflows 64 bits");
  EXPECT_EQ(ParseError(GgufBuilder().Tensor("t", {1ull << 61, 1}, kF32, 0).Bytes()),
            "m.gguf: tensor \"t\": size in bytes of dims [2305843009213693952, 1] as F32 overflows 64 bits");
  EXPECT_EQ(ParseError(GgufBuilder().Tensor("t", {1ull << 63}, kF32, 0).Bytes()),
            "m.gguf: tensor \"t\": dims[0] = 9223372036854775808 is above 2^63 - 1");
  EXPECT_EQ(ParseError(GgufBuilder().Tensor("t", {8}, kF32, 32).Tensor("t", {8}, kF32, 32).Bytes()),
            "m.gguf: tensor \"t\": duplicate tensor name (also tensor info 0)");
  EXPECT_EQ(ParseError(GgufBuilder().U32("k", 1).U32("k", 2).Bytes()), "m.gguf: metadata \"k\": duplicate key");
  EXPECT_EQ(ParseError(GgufBuilder().U32("", 1).Bytes()), "m.gguf: metadata entry 0: empty key");
  EXPECT_EQ(ParseError(GgufBuilder().Raw("k", 13, "x").Bytes()), "m.gguf: metadata \"k\": unknown value type 13");
  EXPECT_EQ(ParseError(GgufBuilder().Raw("b", 7, "\x02").Bytes()),
            "m.gguf: metadata \"b\": bool value 2 at offset 37 is neither 0 nor 1");
  // A hole between tensors is accepted (gguf-py's reader does not require contiguous tensors).
  EXPECT_NO_THROW(Parse(GgufBuilder().Tensor("a", {8}, kF32, 32).Tensor("b", {8}, kF32, 32, 128).Bytes()));
}

// llama.cpp names (gguf-py constants.py TENSOR_NAMES) -> the Hugging Face names WeightsFromTensors places.
TEST(GgufTest, TensorNamesToHuggingFace) {
  EXPECT_EQ(GgufTensorNameToHf("token_embd.weight"), "model.embed_tokens.weight");
  EXPECT_EQ(GgufTensorNameToHf("output_norm.weight"), "model.norm.weight");
  EXPECT_EQ(GgufTensorNameToHf("output.weight"), "lm_head.weight");
  EXPECT_EQ(GgufTensorNameToHf("blk.0.attn_q.weight"), "model.layers.0.self_attn.q_proj.weight");
  EXPECT_EQ(GgufTensorNameToHf("blk.31.attn_k.bias"), "model.layers.31.self_attn.k_proj.bias");
  EXPECT_EQ(GgufTensorNameToHf("blk.1.attn_output.weight"), "model.layers.1.self_attn.o_proj.weight");
  EXPECT_EQ(GgufTensorNameToHf("blk.1.attn_norm.weight"), "model.layers.1.input_layernorm.weight");
  EXPECT_EQ(GgufTensorNameToHf("blk.1.ffn_norm.weight"), "model.layers.1.post_attention_layernorm.weight");
  EXPECT_EQ(GgufTensorNameToHf("blk.2.ffn_down.weight"), "model.layers.2.mlp.down_proj.weight");
  EXPECT_EQ(GgufTensorNameToHf("blk.3.ffn_gate_exps.weight"), "model.layers.3.mlp.experts.gate_proj.weight");
  EXPECT_EQ(GgufTensorNameToHf("blk.3.ffn_gate_inp.weight"), "model.layers.3.mlp.gate.weight");
  EXPECT_EQ(GgufTensorNameToHf("blk.3.exp_probs_b.bias"), "model.layers.3.mlp.gate.e_score_correction_bias");
  EXPECT_EQ(GgufTensorNameToHf("blk.3.ffn_up_shexp.weight"), "model.layers.3.mlp.shared_experts.up_proj.weight");
  EXPECT_EQ(GgufTensorNameToHf("blk.3.attn_kv_a_mqa.weight"), "model.layers.3.self_attn.kv_a_proj_with_mqa.weight");
  EXPECT_EQ(GgufTensorNameToHf("blk.61.nextn.eh_proj.weight"), "model.layers.61.eh_proj.weight");
  EXPECT_EQ(GgufTensorNameToHf("blk.4.something_new.weight"), "model.layers.4.something_new.weight");
  EXPECT_EQ(GgufTensorNameToHf("rope_freqs.weight"), "rope_freqs.weight");
  EXPECT_EQ(GgufTensorNameToHf("blk.x.attn_q.weight"), "blk.x.attn_q.weight");
  EXPECT_EQ(GgufTensorNameToHf("blk.5"), "blk.5");
}

// Qwen3-30B-A3B's dimensions as llama.cpp writes them (qwen3moe.*; its config.json: 48 layers, hidden
// 2048, 32 q / 4 kv heads of 128, 128 experts of 768, 8 per token): the config transformers builds.
// No output.weight: tied embeddings; no vocab_size key: the tokenizer's token count.
TEST(GgufTest, ConfigFromMetadata) {
  GgufBuilder b;
  b.Str("general.architecture", "qwen3moe")
      .U32("qwen3moe.block_count", 48)
      .U32("qwen3moe.embedding_length", 2048)
      .U32("qwen3moe.attention.head_count", 32)
      .U32("qwen3moe.attention.head_count_kv", 4)
      .U32("qwen3moe.attention.key_length", 128)
      .U32("qwen3moe.feed_forward_length", 6144)
      .U32("qwen3moe.context_length", 40960)
      .U32("qwen3moe.expert_count", 128)
      .U32("qwen3moe.expert_used_count", 8)
      .U32("qwen3moe.expert_feed_forward_length", 768)
      .StrArray("tokenizer.ggml.tokens", {"a", "b", "c"})
      .Tensor("token_embd.weight", {2048, 3}, kQ8_0, 3 * 64 * 34);
  nlohmann::json c = GgufConfigJson(Parse(b.Bytes()), "q.gguf");
  EXPECT_EQ(c["architectures"][0], "Qwen3MoeForCausalLM");
  EXPECT_EQ(c["model_type"], "qwen3_moe");
  EXPECT_EQ(c["num_hidden_layers"], 48);
  EXPECT_EQ(c["hidden_size"], 2048);
  EXPECT_EQ(c["num_attention_heads"], 32);
  EXPECT_EQ(c["num_key_value_heads"], 4);
  EXPECT_EQ(c["head_dim"], 128);  // key_length, not 2048 / 32 = 64
  EXPECT_EQ(c["num_experts"], 128);
  EXPECT_EQ(c["num_experts_per_tok"], 8);
  EXPECT_EQ(c["moe_intermediate_size"], 768);
  EXPECT_EQ(c["vocab_size"], 3);
  EXPECT_EQ(c["tie_word_embeddings"], true);
  EXPECT_EQ(c["torch_dtype"], "bfloat16");
  // Per-layer head counts (an array) are not read.
  std::string arr;
  GgufBuilder::PutU32(arr, 4);
  GgufBuilder::PutU64(arr, 1);
  GgufBuilder::PutU32(arr, 8);
  GgufBuilder bad;
  bad.Str("general.architecture", "llama")
      .U32("llama.block_count", 1)
      .U32("llama.embedding_length", 64)
      .U32("llama.attention.head_count", 8)
      .Raw("llama.attention.head_count_kv", 9, arr);
  EXPECT_EQ(ErrorOf([&] { GgufConfigJson(Parse(bad.Bytes()), "l.gguf"); }),
            "l.gguf: metadata \"llama.attention.head_count_kv\": expected a non-negative integer below 2^31, got "
            "array (per-layer values are not read: put the original config.json next to the file)");
}

}  // namespace
}  // namespace ppdeploy
