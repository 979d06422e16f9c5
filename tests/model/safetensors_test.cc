#include "model/safetensors.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "core/error.h"
#include "support/fake_checkpoint.h"
#include "test_util.h"

namespace ppdeploy {
namespace {

using testing::ErrorOf;

// Parses a header whose data section is `data` bytes, returning the error message.
std::string HeaderError(std::string_view json, std::int64_t data = 64) {
  return ErrorOf([&] { ParseSafetensorsHeader(json, data, "m.safetensors"); });
}

// The example file of the safetensors README / rustdoc (`SafeTensors::deserialize`):
// 8-byte length 60 (0x3c), `{"test":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]}}`, 16 data bytes.
TEST(SafetensorsTest, ReferenceExampleFile) {
  std::string json = R"({"test":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]}})";
  std::string file = testing::SafetensorsPrefix(json) + std::string(16, '\0');
  ASSERT_EQ(file.substr(0, 8), std::string("<\0\0\0\0\0\0\0", 8));
  SafetensorsHeader h = ParseSafetensorsFile(file, static_cast<std::int64_t>(file.size()), "test.safetensors");
  ASSERT_EQ(h.tensors.size(), 1u);
  EXPECT_EQ(h.tensors[0].name, "test");
  EXPECT_EQ(h.tensors[0].dtype, "I32");
  EXPECT_EQ(h.tensors[0].shape, (std::vector<std::int64_t>{2, 2}));
  EXPECT_EQ(h.tensors[0].begin, 0);
  EXPECT_EQ(h.tensors[0].end, 16);
  EXPECT_EQ(h.tensors[0].bytes, 16);  // 4 x I32 = 16 bytes
  EXPECT_EQ(h.tensors[0].file, "test.safetensors");
  EXPECT_EQ(h.header_bytes, 60);
  EXPECT_EQ(h.data_section_bytes, 16);
  EXPECT_TRUE(h.metadata.empty());
}

// DeepSeek-V3 layer 3 q_a_proj: F8_E4M3 [1536, 7168] = 11,010,048 bytes; its block scales F32
// [12, 56] = 2,688 bytes (deepseek-ai/DeepSeek-V3 model.safetensors.index.json names and config dims).
TEST(SafetensorsTest, DeepseekFp8TensorsSortedByOffsetWithMetadata) {
  std::string json = R"({"__metadata__":{"format":"pt"},
    "model.layers.3.self_attn.q_a_proj.weight_scale_inv":{"dtype":"F32","shape":[12,56],"data_offsets":[11010048,11012736]},
    "model.layers.3.self_attn.q_a_proj.weight":{"dtype":"F8_E4M3","shape":[1536,7168],"data_offsets":[0,11010048]}})";
  SafetensorsHeader h = ParseSafetensorsHeader(json, 11012736, "model-00002-of-000163.safetensors");
  ASSERT_EQ(h.tensors.size(), 2u);
  EXPECT_EQ(h.tensors[0].name, "model.layers.3.self_attn.q_a_proj.weight");
  EXPECT_EQ(h.tensors[0].bytes, 11010048);
  EXPECT_EQ(h.tensors[1].bytes, 2688);
  EXPECT_EQ(h.metadata.at("format"), "pt");
}

TEST(SafetensorsTest, DtypeSizesFollowSafetensorsBitsize) {
  // safetensors/src/tensor.rs Dtype::bitsize: F4 = 4 bits (e2m1), F6_* = 6 bits, C64 = 64 bits.
  EXPECT_EQ(SafetensorsDtypeBits("BF16"), 16);
  EXPECT_EQ(SafetensorsDtypeBits("F8_E8M0"), 8);
  EXPECT_EQ(SafetensorsDtypeBits("F4"), 4);
  EXPECT_EQ(SafetensorsDtypeBits("F6_E3M2"), 6);
  EXPECT_EQ(SafetensorsDtypeBits("C64"), 64);
  EXPECT_EQ(SafetensorsDtypeBits("bf16"), 0);
  EXPECT_EQ(SafetensorsDtypeBits("F4_E2M1"), 0);  // not a safetensors name (it writes "F4")
  // 4096 F4 values pack into 2048 bytes (two per byte).
  auto h = ParseSafetensorsHeader(R"({"w":{"dtype":"F4","shape":[2,2048],"data_offsets":[0,2048]}})", 2048, "f");
  EXPECT_EQ(h.tensors[0].bytes, 2048);
}

TEST(SafetensorsTest, EmptyHeaderScalarsZeroSizedAndPaddingAccepted) {
  EXPECT_TRUE(ParseSafetensorsHeader("{}", 0, "e").tensors.empty());
  // Writers pad the header with spaces to a multiple of 8 bytes; a scalar ([] = 1 element);
  // zero-sized tensors may sit where another tensor begins or ends (sorted by (begin, end) they
  // still tile the data section: [0,0] [0,4] [4,4]).
  auto h = ParseSafetensorsHeader(R"({"s":{"dtype":"F32","shape":[],"data_offsets":[0,4]},
      "z":{"dtype":"F32","shape":[0,5],"data_offsets":[4,4]},
      "z2":{"dtype":"BF16","shape":[0],"data_offsets":[0,0]}}      )",
                                  4, "p");
  ASSERT_EQ(h.tensors.size(), 3u);
  EXPECT_EQ(h.tensors[0].name, "z2");
  EXPECT_EQ(h.tensors[1].name, "s");
  EXPECT_EQ(h.tensors[1].bytes, 4);
  EXPECT_EQ(h.tensors[2].bytes, 0);
}

TEST(SafetensorsTest, NullMetadataIsIgnored) {
  EXPECT_TRUE(ParseSafetensorsHeader(R"({"__metadata__":null})", 0, "n").metadata.empty());
}

// ---- hostile headers: each gives one exact one-line message naming the file and tensor ----

TEST(SafetensorsTest, HeaderLengthPastEndOfFile) {
  std::string file = testing::SafetensorsPrefix("{}");
  file[0] = 100;  // claims 100 header bytes; the file has 10
  EXPECT_EQ(ErrorOf([&] { ParseSafetensorsFile(file, 10, "a.safetensors"); }),
            "a.safetensors: header length 100 runs past the end of the file (10 bytes)");
}

TEST(SafetensorsTest, HeaderLengthOverLimit) {
  // safetensors MAX_HEADER_SIZE = 100_000_000; 100,000,001 is refused even in a huge file.
  std::string bytes(8, '\0');
  std::uint64_t n = 100'000'001;
  for (int i = 0; i < 8; ++i) bytes[static_cast<std::size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
  EXPECT_EQ(ErrorOf([&] { SafetensorsHeaderLength(bytes, std::int64_t{1} << 40, "big.safetensors"); }),
            "big.safetensors: header length 100000001 exceeds the limit of 100000000 bytes");
  bytes.assign(8, '\xff');  // 2^64 - 1
  EXPECT_EQ(ErrorOf([&] { SafetensorsHeaderLength(bytes, 100, "ff.safetensors"); }),
            "ff.safetensors: header length 18446744073709551615 exceeds the limit of 100000000 bytes");
  // Exactly the limit is allowed by the length check (then fails on the file size here).
  n = 100'000'000;
  for (int i = 0; i < 8; ++i) bytes[static_cast<std::size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
  EXPECT_EQ(SafetensorsHeaderLength(bytes, 100'000'008, "ok"), 100'000'000);
}

TEST(SafetensorsTest, FileShorterThanLengthField) {
  EXPECT_EQ(ErrorOf([] { ParseSafetensorsFile("abc", 3, "short.safetensors"); }),
            "short.safetensors: file is 3 bytes, too short for a safetensors file (8-byte header length first)");
  EXPECT_EQ(ErrorOf([] { ParseSafetensorsFile(std::string_view("\x10\0\0\0\0\0\0\0{}", 10), 100, "p"); }),
            "p: only 10 of the 8 + 16 header bytes were given");
}

TEST(SafetensorsTest, HeaderNotJsonOrNotObject) {
  EXPECT_EQ(HeaderError("{\"a\": "),
            "m.safetensors: header is not valid JSON: parse error at line 1, column 7: syntax error while parsing "
            "value - unexpected end of input; expected '[', '{', or a literal");
  EXPECT_EQ(HeaderError("[1,2]"), "m.safetensors: header is not a JSON object, got [1,2]");
  // nlohmann stops at a NUL byte; the parser refuses NUL so nothing after it is silently ignored.
  EXPECT_EQ(HeaderError(std::string_view("{}\0{\"x\":1}", 10)),
            "m.safetensors: header is not valid JSON: NUL byte at offset 2");
  // The reference decodes the header as UTF-8 before parsing JSON (from_utf8: InvalidHeader).
  EXPECT_EQ(HeaderError("\xff\xfe{}"),
            "m.safetensors: header is not valid UTF-8 at header byte 0 (byte 0xff; InvalidHeader)");
  EXPECT_EQ(HeaderError("{\"w\xc3\":{}}"),
            "m.safetensors: header is not valid UTF-8 at header byte 3 (byte 0xc3; InvalidHeader)");
}

TEST(SafetensorsTest, NumberOverflowIsAnError) {
  // nlohmann throws out_of_range.406 (not parse_error) for a literal beyond double range.
  EXPECT_EQ(HeaderError(R"({"w":{"dtype":"U8","shape":[1e999],"data_offsets":[0,1]}})"),
            "m.safetensors: header is not valid JSON: number overflow parsing '1e999'");
  std::string long_token = "{\"w\":" + std::string(5000, '9') + "e9999}";
  EXPECT_LT(HeaderError(long_token).size(), 300u);
}

TEST(SafetensorsTest, DeepNestingRefusedAtSerdeJsonsLimit) {
  // serde_json (the reference's parser) allows 127 nested arrays/objects (src/de.rs remaining_depth
  // 128); the 128th is "recursion limit exceeded". The top-level object counts as one.
  std::string ok = "{\"a\":" + std::string(126, '[') + std::string(126, ']') + "}";
  EXPECT_EQ(HeaderError(ok).find("nests deeper"), std::string::npos) << HeaderError(ok);
  std::string deep = "{\"a\":" + std::string(127, '[') + std::string(127, ']') + "}";
  EXPECT_EQ(HeaderError(deep), "m.safetensors: header JSON nests deeper than 127 levels");
}

TEST(SafetensorsTest, UnknownDtype) {
  EXPECT_EQ(HeaderError(R"({"w":{"dtype":"F7","shape":[1],"data_offsets":[0,1]}})"),
            "m.safetensors: tensor \"w\": unknown dtype \"F7\" (expected one of BOOL, U8, I8, F8_E4M3, F8_E5M2, "
            "F8_E8M0, F8_E4M3FNUZ, F8_E5M2FNUZ, I16, U16, F16, BF16, I32, U32, F32, I64, U64, F64, C64, F4, "
            "F6_E2M3, F6_E3M2)");
  EXPECT_EQ(HeaderError(R"({"w":{"dtype":5,"shape":[1],"data_offsets":[0,1]}})"),
            "m.safetensors: tensor \"w\": dtype: expected a string, got 5");
  EXPECT_EQ(HeaderError(R"({"w":{"shape":[1],"data_offsets":[0,1]}})"),
            "m.safetensors: tensor \"w\": dtype: required field is missing");
}

TEST(SafetensorsTest, EntryNotObject) {
  EXPECT_EQ(HeaderError(R"({"w":[1,2]})"),
            "m.safetensors: tensor \"w\": expected an object with dtype, shape and data_offsets, got [1,2]");
}

TEST(SafetensorsTest, BadShapes) {
  EXPECT_EQ(HeaderError(R"({"w":{"dtype":"U8","shape":[2,-1],"data_offsets":[0,2]}})"),
            "m.safetensors: tensor \"w\": shape: expected a list of non-negative integers, got [2,-1]");
  EXPECT_EQ(HeaderError(R"({"w":{"dtype":"U8","shape":[2.5],"data_offsets":[0,2]}})"),
            "m.safetensors: tensor \"w\": shape: expected a list of non-negative integers, got [2.5]");
  EXPECT_EQ(HeaderError(R"({"w":{"dtype":"U8","shape":"2","data_offsets":[0,2]}})"),
            "m.safetensors: tensor \"w\": shape: expected a list of non-negative integers, got \"2\"");
  EXPECT_EQ(HeaderError(R"({"w":{"dtype":"U8","data_offsets":[0,2]}})"),
            "m.safetensors: tensor \"w\": shape: required field is missing");
  // 2^64 does not fit an int64 dimension.
  EXPECT_EQ(HeaderError(R"({"w":{"dtype":"U8","shape":[18446744073709551615],"data_offsets":[0,2]}})"),
            "m.safetensors: tensor \"w\": shape: expected a list of non-negative integers, got "
            "[18446744073709551615]");
}

TEST(SafetensorsTest, ShapeOverflow) {
  // 2^32 x 2^32 elements overflow int64; 2^62 elements x 16 bits overflow the bit count.
  // tensor.rs validate: `shape.iter().try_fold(1usize, usize::checked_mul)`, then `checked_mul`
  // by Dtype::bitsize(); either overflow is ValidationOverflow.
  EXPECT_EQ(HeaderError(R"({"w":{"dtype":"U8","shape":[4294967296,4294967296],"data_offsets":[0,0]}})"),
            "m.safetensors: tensor \"w\": shape [4294967296,4294967296] x U8 overflows 64-bit sizes "
            "(ValidationOverflow)");
  EXPECT_EQ(HeaderError(R"({"w":{"dtype":"BF16","shape":[4611686018427387904],"data_offsets":[0,0]}})"),
            "m.safetensors: tensor \"w\": shape [4611686018427387904] x BF16 overflows 64-bit sizes "
            "(ValidationOverflow)");
  // The fold stops at the first overflow, before it reaches a later zero dimension: still an overflow.
  EXPECT_EQ(HeaderError(R"({"w":{"dtype":"U8","shape":[4294967296,4294967296,0],"data_offsets":[0,0]}})", 0),
            "m.safetensors: tensor \"w\": shape [4294967296,4294967296,0] x U8 overflows 64-bit sizes "
            "(ValidationOverflow)");
  // A zero dimension first makes the tensor empty: 0 x anything does not overflow.
  auto h =
      ParseSafetensorsHeader(R"({"w":{"dtype":"U8","shape":[0,4294967296,4294967296],"data_offsets":[0,0]}})", 0, "z");
  EXPECT_EQ(h.tensors[0].bytes, 0);
  // 2^61 elements x 8 bits = 2^64 bits overflows; 2^60 x 8 = 2^63 bits fits u64 (then fails on size).
  EXPECT_NE(HeaderError(R"({"w":{"dtype":"U8","shape":[2305843009213693952],"data_offsets":[0,0]}})")
                .find("(ValidationOverflow)"),
            std::string::npos);
  EXPECT_NE(HeaderError(R"({"w":{"dtype":"U8","shape":[1152921504606846976],"data_offsets":[0,0]}})")
                .find("(TensorInvalidInfo)"),
            std::string::npos);
}

TEST(SafetensorsTest, SubByteMisaligned) {
  EXPECT_EQ(HeaderError(R"({"w":{"dtype":"F4","shape":[3],"data_offsets":[0,2]}})"),
            "m.safetensors: tensor \"w\": shape [3] x F4 is 3 elements of 4 bits, not a whole number of bytes "
            "(MisalignedSlice)");
}

TEST(SafetensorsTest, BadDataOffsets) {
  const char* want = "m.safetensors: tensor \"w\": data_offsets: expected two non-negative integers [begin, end], got ";
  EXPECT_EQ(HeaderError(R"({"w":{"dtype":"U8","shape":[2],"data_offsets":[0]}})"), std::string(want) + "[0]");
  EXPECT_EQ(HeaderError(R"({"w":{"dtype":"U8","shape":[2],"data_offsets":[0,2,4]}})"), std::string(want) + "[0,2,4]");
  EXPECT_EQ(HeaderError(R"({"w":{"dtype":"U8","shape":[2],"data_offsets":[-2,0]}})"), std::string(want) + "[-2,0]");
  EXPECT_EQ(HeaderError(R"({"w":{"dtype":"U8","shape":[2],"data_offsets":[0,"2"]}})"), std::string(want) + "[0,\"2\"]");
  EXPECT_EQ(HeaderError(R"({"w":{"dtype":"U8","shape":[2],"data_offsets":{"a":1}}})"), std::string(want) + "{\"a\":1}");
  EXPECT_EQ(HeaderError(R"({"w":{"dtype":"U8","shape":[2]}})"),
            "m.safetensors: tensor \"w\": data_offsets: required field is missing");
  EXPECT_EQ(HeaderError(R"({"w":{"dtype":"U8","shape":[2],"data_offsets":[6,4]}})"),
            "m.safetensors: tensor \"w\": data_offsets [6, 4]: begin is after end (InvalidOffset)");
}

TEST(SafetensorsTest, TensorsPastTheEndOfTheDataSection) {
  // The tensors tile [0, 72) but the data section has 64 bytes: read_metadata's
  // `buffer_end + N_LEN + n != buffer_len` (MetadataIncompleteBuffer).
  EXPECT_EQ(HeaderError(R"({"w":{"dtype":"F32","shape":[18],"data_offsets":[0,72]}})", 64),
            "m.safetensors: tensor \"w\" ends at byte 72, past the end of the data section (64 bytes) "
            "(MetadataIncompleteBuffer)");
  // A tensor far past the end leaves a hole before it first (validate: s != start, InvalidOffset).
  EXPECT_EQ(
      HeaderError(R"({"w":{"dtype":"U8","shape":[0],"data_offsets":[9223372036854775807,9223372036854775807]}})", 64),
      "m.safetensors: tensor \"w\": data_offsets [9223372036854775807, 9223372036854775807] leave "
      "9223372036854775807 unused bytes after the start of the data section (the reference reader rejects holes: "
      "InvalidOffset)");
}

TEST(SafetensorsTest, SizeMismatch) {
  EXPECT_EQ(HeaderError(R"({"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,16]}})", 16),
            "m.safetensors: tensor \"w\": data_offsets [0, 16] span 16 bytes but shape [2,3] x F32 needs 24 bytes "
            "(TensorInvalidInfo)");
}

TEST(SafetensorsTest, OverlappingTensors) {
  // Sorted by (begin, end), each tensor must begin where the previous one ended (InvalidOffset).
  EXPECT_EQ(HeaderError(R"({"a":{"dtype":"U8","shape":[16],"data_offsets":[0,16]},
                            "b":{"dtype":"U8","shape":[16],"data_offsets":[8,24]}})"),
            "m.safetensors: tensors \"a\" [0, 16] and \"b\" [8, 24] overlap (InvalidOffset)");
  // A tensor nested inside a long one, after a short one that starts at the same offset.
  EXPECT_EQ(HeaderError(R"({"long":{"dtype":"U8","shape":[40],"data_offsets":[0,40]},
                            "short":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},
                            "inner":{"dtype":"U8","shape":[4],"data_offsets":[20,24]}})"),
            "m.safetensors: tensors \"short\" [0, 4] and \"long\" [0, 40] overlap (InvalidOffset)");
  EXPECT_EQ(HeaderError(R"({"long":{"dtype":"U8","shape":[40],"data_offsets":[0,40]},
                            "mid":{"dtype":"U8","shape":[4],"data_offsets":[10,14]}})"),
            "m.safetensors: tensors \"long\" [0, 40] and \"mid\" [10, 14] overlap (InvalidOffset)");
  // A zero-sized tensor inside another one does not tile either (the reference refuses it too:
  // sorted (0,16), (4,4): 4 != 16).
  EXPECT_EQ(HeaderError(R"({"a":{"dtype":"U8","shape":[16],"data_offsets":[0,16]},
                            "z":{"dtype":"U8","shape":[0],"data_offsets":[4,4]}})",
                        16),
            "m.safetensors: tensors \"a\" [0, 16] and \"z\" [4, 4] overlap (InvalidOffset)");
}

// Issue 15: "holes between tensors and trailing bytes after the last tensor are accepted (the
// reference implementation rejects both)". safetensors/src/tensor.rs `Metadata::validate`
// (`if s != start || e < s { return Err(InvalidOffset(name)) }`) and `read_metadata`
// (`if buffer_end + N_LEN + n != buffer_len { return Err(MetadataIncompleteBuffer) }`).
TEST(SafetensorsTest, HolesBetweenTensorsAreRefused) {
  EXPECT_EQ(HeaderError(R"({"a":{"dtype":"U8","shape":[16],"data_offsets":[0,16]},
                            "b":{"dtype":"U8","shape":[16],"data_offsets":[20,36]}})",
                        36),
            "m.safetensors: tensor \"b\": data_offsets [20, 36] leave 4 unused bytes after tensor \"a\" [0, 16] (the "
            "reference reader rejects holes: InvalidOffset)");
  // The first tensor must start at byte 0 of the data section.
  EXPECT_EQ(HeaderError(R"({"a":{"dtype":"U8","shape":[8],"data_offsets":[8,16]}})", 16),
            "m.safetensors: tensor \"a\": data_offsets [8, 16] leave 8 unused bytes after the start of the data "
            "section (the reference reader rejects holes: InvalidOffset)");
}

TEST(SafetensorsTest, TrailingBytesAfterTheLastTensorAreRefused) {
  // The reference example file (16 data bytes for one I32 [2,2]) with one byte appended.
  std::string json = R"({"test":{"dtype":"I32","shape":[2,2],"data_offsets":[0,16]}})";
  std::string file = testing::SafetensorsPrefix(json) + std::string(17, '\0');
  EXPECT_EQ(ErrorOf([&] { ParseSafetensorsFile(file, static_cast<std::int64_t>(file.size()), "t.safetensors"); }),
            "t.safetensors: 1 byte follows the last tensor \"test\" [0, 16] (the reference reader requires the last "
            "tensor to end at the end of the file: MetadataIncompleteBuffer)");
  // An empty header with data after it (the reference: buffer_end 0 + 8 + n != buffer_len).
  EXPECT_EQ(HeaderError("{}", 5),
            "m.safetensors: 5 bytes follow the last tensor (there is none) (the reference reader requires the last "
            "tensor to end at the end of the file: MetadataIncompleteBuffer)");
  // Exactly tiled: accepted, and the tensors come back sorted by offset.
  auto h = ParseSafetensorsHeader(R"({"b":{"dtype":"BF16","shape":[4],"data_offsets":[8,16]},
                                       "a":{"dtype":"U8","shape":[8],"data_offsets":[0,8]}})",
                                  16, "ok");
  ASSERT_EQ(h.tensors.size(), 2u);
  EXPECT_EQ(h.tensors[0].name, "a");
  EXPECT_EQ(h.tensors[1].bytes, 8);
}

TEST(SafetensorsTest, DuplicateNames) {
  EXPECT_EQ(HeaderError(R"({"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},
                            "w":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})"),
            "m.safetensors: tensor \"w\" appears twice in the header");
}

TEST(SafetensorsTest, BadMetadata) {
  EXPECT_EQ(HeaderError(R"({"__metadata__":{"format":1}})"),
            "m.safetensors: __metadata__.\"format\": expected a string, got 1");
  EXPECT_EQ(HeaderError(R"({"__metadata__":[1]})"),
            "m.safetensors: __metadata__: expected an object of strings, got [1]");
}

TEST(SafetensorsTest, HostileNamesStayOnOneLine) {
  std::string msg = HeaderError("{\"a\\nb\":{\"dtype\":\"X\",\"shape\":[1],\"data_offsets\":[0,1]}}");
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  EXPECT_EQ(msg.rfind("m.safetensors: tensor \"a\\x0ab\": unknown dtype \"X\"", 0), 0u) << msg;
  std::string long_name(500, 'x');
  msg = HeaderError("{\"" + long_name + "\":{\"dtype\":\"X\",\"shape\":[1],\"data_offsets\":[0,1]}}");
  EXPECT_LT(msg.size(), 400u) << msg;
  // A long name of 2-byte UTF-8 characters is cut between characters, never inside one.
  std::string accents;
  for (int i = 0; i < 200; ++i) accents += "\xc3\xa9";  // U+00E9
  msg = HeaderError("{\"" + accents + "\":{\"dtype\":\"X\",\"shape\":[1],\"data_offsets\":[0,1]}}");
  EXPECT_EQ(std::count(msg.begin(), msg.end(), '\xc3'), std::count(msg.begin(), msg.end(), '\xa9')) << msg;
}

TEST(SafetensorsTest, FastAndDomPathsAgree) {
  // A well-formed header (SAX fast path) gives exactly what the DOM path gives.
  auto spec = testing::DeepseekV3Spec();
  spec.num_hidden_layers = 4;
  spec.n_routed_experts = 8;
  auto tensors = testing::FakeMlaMoeTensors(spec);
  std::int64_t data = 0;
  std::string json = testing::FakeSafetensorsHeaderJson(tensors, {{"format", "pt"}}, &data);
  auto fast = ParseSafetensorsHeader(json, data, "f");
  auto dom = detail::ParseSafetensorsHeaderWithDom(json, data, "f");
  ASSERT_EQ(fast.tensors.size(), tensors.size());
  ASSERT_EQ(dom.tensors.size(), tensors.size());
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    EXPECT_EQ(fast.tensors[i].name, dom.tensors[i].name);
    EXPECT_EQ(fast.tensors[i].shape, dom.tensors[i].shape);
    EXPECT_EQ(fast.tensors[i].begin, dom.tensors[i].begin);
    EXPECT_EQ(fast.tensors[i].bytes, dom.tensors[i].bytes);
  }
  EXPECT_EQ(fast.metadata, dom.metadata);
}

TEST(SafetensorsTest, ExtraEntryKeysAreIgnoredAsByTheReference) {
  // serde ignores unknown fields of TensorInfo; the fast path hands such headers to the DOM path.
  auto h = ParseSafetensorsHeader(R"({"w":{"dtype":"U8","shape":[2],"data_offsets":[0,2],"note":[1]}})", 2, "x");
  ASSERT_EQ(h.tensors.size(), 1u);
  EXPECT_EQ(h.tensors[0].bytes, 2);
}

TEST(SafetensorsTest, FirstErrorDoesNotDependOnEntryOrder) {
  // Two bad entries: the message names the same one whichever comes first in the file.
  std::string a = R"("a":{"dtype":"X","shape":[1],"data_offsets":[0,1]})";
  std::string b = R"("b":{"dtype":"Y","shape":[1],"data_offsets":[1,2]})";
  EXPECT_EQ(HeaderError("{" + a + "," + b + "}"), HeaderError("{" + b + "," + a + "}"));
}

}  // namespace
}  // namespace ppdeploy
