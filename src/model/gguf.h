// GGUF header parsing (pure: no I/O). A GGUF file (ggml/docs/gguf.md, versions 2 and 3, little-endian):
//   magic "GGUF" | u32 version | u64 tensor_count | u64 metadata_kv_count
//   metadata_kv_count x (string key, u32 value type, value)
//   tensor_count x (string name, u32 n_dims, n_dims x u64 dims, u32 ggml_type, u64 offset)
//   padding to general.alignment (default 32) | data section (tensor offsets are relative to it)
// where a string is u64 length + bytes, and an array value is u32 element type + u64 count + elements
// (arrays of arrays are allowed by the format). Reference reader: ggml/src/gguf.cpp
// (`gguf_init_from_reader`); type sizes: ggml/src/ggml.c `type_traits` (blck_size, type_size) with the
// block structs of ggml/src/ggml-common.h, the same figures as llama.cpp gguf-py `GGML_QUANT_SIZES`
// (ggml-org/ggml d99724f, Aug 2026).
//
// Checks (the reference's, plus the bounds a hostile file needs): magic; version 2 or 3 (1 is refused
// as the reference does; a version with zero low 16 bits is named as a big-endian file); every count
// and length bounded by the bytes left in the file before anything is allocated; no empty or
// duplicate key; general.alignment a u32 power of two; no duplicate tensor name; n_dims <= 4
// (GGML_MAX_DIMS); dims >= 0 with a representable element count; a known ggml type (the error names
// the tensor); a first dimension that is a multiple of the type's block size; offsets that are
// multiples of the alignment, inside the data section, and tensors that do not overlap. Unlike
// ggml's loader, holes between tensors are accepted (gguf-py's GGUFReader, which vLLM uses, does
// not require contiguous tensors). Messages: "<file>: <field>: ...", names and keys quoted with
// EscapeForMessage.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/error.h"

namespace ppdeploy {

/// GGUF metadata value types (gguf.md `gguf_metadata_value_type`).
enum class GgufType : std::uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};

/// "uint8", ..., "float64", or "type N" for a value outside the enum.
std::string GgufTypeName(std::uint32_t type);

/// Arrays longer than this keep only their element type and count (the tokenizer's 150k-entry
/// vocabularies are validated, not stored).
inline constexpr std::uint64_t kGgufKeptArrayElements = 4096;
/// Deepest array nesting accepted (the format has no limit; this bounds the parser's recursion).
inline constexpr int kGgufMaxArrayDepth = 32;

/// One metadata value.
struct GgufValue {
  GgufType type = GgufType::kUint8;
  std::uint64_t u = 0;  ///< unsigned integers and bool (0/1)
  std::int64_t i = 0;   ///< signed integers
  double f = 0;         ///< float32 / float64
  std::string s;        ///< string
  // Arrays.
  GgufType element_type = GgufType::kUint8;
  std::uint64_t count = 0;          ///< element count as stored
  std::vector<GgufValue> elements;  ///< all elements when count <= kGgufKeptArrayElements, else empty
  bool elements_kept = true;

  /// The value as an integer when it is an integer type (or bool) that fits int64.
  bool AsInt(std::int64_t* out) const;
};

/// One tensor info of a GGUF file.
struct GgufTensorInfo {
  std::string name;                ///< e.g. "blk.0.attn_q.weight"
  std::vector<std::int64_t> dims;  ///< ne[0..n_dims): ne[0] is the contiguous (row) dimension
  std::uint32_t ggml_type = 0;     ///< ggml_type enum value
  std::string type_name;           ///< e.g. "Q4_K"
  std::uint64_t offset = 0;        ///< bytes from the start of the data section
  std::int64_t bytes = 0;          ///< nelements / blck_size x type_size
};

/// A parsed header.
struct GgufHeader {
  std::uint32_t version = 0;
  std::map<std::string, GgufValue> metadata;
  std::vector<GgufTensorInfo> tensors;  ///< file order
  std::uint64_t alignment = 32;         ///< general.alignment or the default 32
  std::int64_t data_offset = 0;         ///< file offset of the data section
  std::int64_t data_section_bytes = 0;  ///< file size - data_offset
  std::int64_t total_tensor_bytes = 0;  ///< sum of GgufTensorInfo::bytes

  const GgufValue* Find(const std::string& key) const;
};

/// ggml type traits: name, elements per block, bytes per block.
struct GgmlTypeTraits {
  const char* name = nullptr;
  std::int64_t blck_size = 0;
  std::int64_t type_size = 0;
};

/// Traits of a ggml_type enum value, or nullptr for an unknown or removed type (4, 5, 31-33, 36-38,
/// >= 43 in ggml d99724f).
const GgmlTypeTraits* FindGgmlType(std::uint32_t ggml_type);

/// Thrown by ParseGgufFile when `file_prefix` ends before the header does but the file is longer:
/// the caller reads at least `needed` bytes and parses again.
class GgufNeedMoreBytes : public Error {
 public:
  GgufNeedMoreBytes(const std::string& message, std::int64_t needed) : Error(message), needed_(needed) {}
  std::int64_t needed() const { return needed_; }

 private:
  std::int64_t needed_;
};

/// Parses the header of a GGUF file of `file_size` bytes from its first bytes. Throws Error naming
/// `file_name` and the field for every check described at the top of this file, and
/// GgufNeedMoreBytes when the prefix is too short for a file that is long enough.
GgufHeader ParseGgufFile(std::string_view file_prefix, std::int64_t file_size, const std::string& file_name);

/// The Hugging Face tensor name (vLLM / transformers naming, the one WeightsFromTensors places)
/// of a llama.cpp GGUF tensor name (gguf-py constants.py TENSOR_NAMES: token_embd, output_norm,
/// output, blk.N.attn_q, ..., blk.N.ffn_gate_exps, ...). Names outside the scheme are kept as they are
/// (and so counted as "other"); an unknown blk.N.X keeps its layer ("model.layers.N.X").
std::string GgufTensorNameToHf(std::string_view gguf_name);

/// One warning per block number N >= `num_blocks` (the model's num_hidden_layers plus its MTP layers) that has
/// `blk.N.*` tensors: "m.gguf: tensor blk.5.attn_q.weight (and 8 more of block 5): block 5 is past the model's 2 blocks
/// (num_hidden_layers)". Such tensors belong to no layer vLLM builds (llama.cpp writes blk.0 .. blk.{block_count-1});
/// their bytes are counted in the weights, which may then be too high.
std::vector<std::string> GgufBlockWarnings(const GgufHeader& header, int num_blocks, const std::string& file_name);

/// A Hugging Face config.json body built from the GGUF metadata, as transformers does for
/// `from_pretrained(..., gguf_file=...)` (transformers/integrations/ggml.py GGUF_CONFIG_MAPPING),
/// which vLLM uses when it is given a .gguf file and no --hf-config-path. general.architecture
/// llama, mistral, qwen2, qwen3, qwen2moe and qwen3moe; keys (with A the architecture):
/// A.block_count -> num_hidden_layers, A.embedding_length -> hidden_size, A.attention.head_count ->
/// num_attention_heads (required); A.attention.head_count_kv -> num_key_value_heads (default: the
/// head count), A.attention.key_length -> head_dim (default hidden / heads), A.feed_forward_length ->
/// intermediate_size, A.context_length -> max_position_embeddings, A.expert_count -> num_experts,
/// A.expert_used_count -> num_experts_per_tok, A.expert_feed_forward_length -> moe_intermediate_size,
/// A.expert_shared_feed_forward_length -> shared_expert_intermediate_size, A.rope.freq_base ->
/// rope_theta, A.attention.layer_norm_rms_epsilon -> rms_norm_eps; vocab_size from A.vocab_size, the
/// tokenizer.ggml.tokens count or token_embd.weight's dims[1]; tie_word_embeddings when there is no
/// output.weight. torch_dtype is absent from GGUF metadata: "bfloat16" (vLLM serves a config without
/// one, read as float32, in bfloat16). Throws Error "<file>: metadata \"KEY\": ..." for a missing or
/// mistyped key and for an architecture outside the list (with what to do instead).
nlohmann::json GgufConfigJson(const GgufHeader& header, const std::string& file_name);

}  // namespace ppdeploy
