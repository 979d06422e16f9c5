// Safetensors header parsing (pure: no I/O). A safetensors file is
//   [8 bytes: little-endian u64 N] [N bytes: UTF-8 JSON object] [data section]
// where the JSON maps tensor names to {"dtype": "BF16", "shape": [r, c], "data_offsets": [begin, end]}
// (offsets relative to the start of the data section) plus an optional "__metadata__" object of
// string -> string. Source of the rules: huggingface/safetensors, safetensors/src/tensor.rs
// (`SafeTensors::read_metadata`, `Metadata::validate`, `Dtype::bitsize`), format spec in its README.
//
// The checks are the reference's, in its order (`SafeTensors::read_metadata`: HeaderTooSmall,
// HeaderTooLarge, InvalidHeaderLength, InvalidHeader (UTF-8), InvalidHeaderDeserialization; then
// `Metadata::validate` on the tensors sorted by offsets: InvalidOffset, ValidationOverflow,
// MisalignedSlice, TensorInvalidInfo; then MetadataIncompleteBuffer): tensors must tile the data
// section exactly, with no hole, no overlap and no trailing byte. Messages name the reference's
// error kind. Two deliberate differences, both refusals of files the reference would read:
// a tensor name that appears twice (serde keeps the last one) and a dimension above 2^63 - 1 in a
// shape with a zero dimension (an empty tensor for the reference; TensorInfo keeps int64 shapes).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace ppdeploy {

/// The largest header the reference reader accepts: 100 * 10^6 bytes (`MAX_HEADER_SIZE`).
inline constexpr std::int64_t kSafetensorsMaxHeaderBytes = 100'000'000;

/// One tensor entry of a safetensors header.
struct TensorInfo {
  std::string name;                 ///< e.g. "model.layers.3.mlp.experts.0.down_proj.weight"
  std::string dtype;                ///< safetensors dtype name, e.g. "BF16", "F8_E4M3", "F4"
  std::vector<std::int64_t> shape;  ///< element counts per dimension ([] = scalar, 1 element)
  std::int64_t begin = 0;           ///< data_offsets[0], bytes from the start of the data section
  std::int64_t end = 0;             ///< data_offsets[1] (exclusive)
  std::int64_t bytes = 0;           ///< end - begin == numel x dtype bits / 8
  std::string file;                 ///< the file name given to the parser (a shard path in checkpoints)
};

/// A parsed header: tensors sorted by `begin` (then `end`), and `__metadata__` if present.
struct SafetensorsHeader {
  std::vector<TensorInfo> tensors;
  std::map<std::string, std::string> metadata;  ///< `__metadata__`, e.g. {"format": "pt"}
  std::int64_t header_bytes = 0;                ///< N, the JSON length
  std::int64_t data_section_bytes = 0;          ///< file size - 8 - N
};

/// Bits per element of a safetensors dtype name, or 0 when the name is not a safetensors dtype.
/// Accepted (safetensors `Dtype`): BOOL, U8, I8, F8_E4M3, F8_E5M2, F8_E8M0, F8_E4M3FNUZ, F8_E5M2FNUZ
/// (8 bits); I16, U16, F16, BF16 (16); I32, U32, F32 (32); I64, U64, F64, C64 (64); F4 (4, e2m1);
/// F6_E2M3, F6_E3M2 (6). Sub-byte tensors must hold a whole number of bytes (numel x bits % 8 == 0).
int SafetensorsDtypeBits(std::string_view dtype);

/// The dtype names SafetensorsDtypeBits accepts, comma-separated, for messages.
const std::string& SafetensorsDtypeList();

/// Parses and validates the JSON header of `file_name` whose data section is `data_section_bytes`
/// long. Throws Error "<file_name>: ..." (one line; tensor names quoted and escaped by core/escape.h; `file_name` is
/// shown as given) when: the text is not UTF-8, not JSON or not an object; a key appears twice; JSON nests deeper than
/// 127 levels (serde_json's limit); `__metadata__` is not an object of strings; an entry is not an
/// object; `dtype` is not a known dtype; `shape` is not a list of non-negative integers;
/// `data_offsets` is not two non-negative integers; and, on the tensors sorted by offsets: a tensor
/// ends before it begins, does not begin where the previous one ends (the first at 0: a hole or an
/// overlap), has an element count x dtype bits that overflows 64 bits or is not a whole number of
/// bytes, or spans a length other than numel x dtype size; or the last tensor does not end at the
/// end of the data section (trailing bytes, or past the end). Cost: O(T log T) for T tensors; a
/// well-formed header takes a SAX fast path (no DOM), anything else the DOM path that words the
/// message.
SafetensorsHeader ParseSafetensorsHeader(std::string_view header_json_bytes, std::int64_t data_section_bytes,
                                         const std::string& file_name);

/// Reads N, the header length, from the first 8 bytes of a file of `file_size` bytes.
/// Throws Error "<file_name>: ..." when fewer than 8 bytes are given or the file is shorter than
/// 8 bytes, when N > kSafetensorsMaxHeaderBytes, or when 8 + N is past the end of the file.
std::int64_t SafetensorsHeaderLength(std::string_view first_bytes, std::int64_t file_size,
                                     const std::string& file_name);

/// Parses a file from its first bytes (at least 8 + N of them; more are ignored) and its size.
/// Same errors as SafetensorsHeaderLength and ParseSafetensorsHeader, plus "<file_name>: only K of
/// the 8 + N header bytes were given" when `file_prefix` is short.
SafetensorsHeader ParseSafetensorsFile(std::string_view file_prefix, std::int64_t file_size,
                                       const std::string& file_name);

namespace detail {
/// ParseSafetensorsHeader without its fast path (a SAX pass that builds TensorInfo directly): the DOM
/// path that produces every error message. For tests and fuzzing, which check that both paths accept
/// the same headers with the same result. Throws Error (a bare one for NUL bytes and invalid UTF-8,
/// which the caller checks first).
SafetensorsHeader ParseSafetensorsHeaderWithDom(std::string_view header_json_bytes, std::int64_t data_section_bytes,
                                                const std::string& file_name);
}  // namespace detail

}  // namespace ppdeploy
