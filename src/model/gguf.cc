#include "model/gguf.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>
#include <limits>
#include <map>
#include <optional>

#include "core/escape.h"

namespace ppdeploy {
namespace {

// ggml/src/ggml.c `type_traits` (.blck_size, .type_size), ggml-org/ggml d99724f; type_size is
// sizeof(block_X) from ggml/src/ggml-common.h (QK_K = 256, K_SCALE_SIZE = 12, ggml_half = 2 bytes),
// checked against llama.cpp gguf-py/gguf/constants.py GGML_QUANT_SIZES:
//   Q4_0 half d + QK4_0/2 = 2 + 16 = 18 / 32      Q4_1 2 halves + 16 = 20 / 32
//   Q5_0 2 + 4 (qh) + 16 = 22 / 32                Q5_1 2 + 2 + 4 + 16 = 24 / 32
//   Q8_0 2 + 32 = 34 / 32                         Q8_1 2 + 2 + 32 = 36 / 32
//   Q2_K 2 halves + QK_K/16 + QK_K/4 = 84 / 256   Q3_K 2 + 64 + 32 + 12 = 110 / 256
//   Q4_K 2 halves + 12 + QK_K/2 = 144 / 256       Q5_K 4 + 12 + 128 + 32 = 176 / 256
//   Q6_K 2 + 16 + 3*QK_K/4 = 210 / 256            Q8_K float + 256 + 16 x int16 = 292 / 256
//   IQ2_XXS 2 + 32 x u16 = 66; IQ2_XS 66 + 8 = 74; IQ2_S 2 + 64 + 16 = 82; IQ3_XXS 2 + 96 = 98;
//   IQ3_S 2 + 13*8 + 4 = 110; IQ1_S 2 + 32 + 16 = 50; IQ1_M 32 + 16 + 8 = 56; IQ4_XS 2 + 2 + 4 + 128 = 136
//   (all / 256); IQ4_NL 2 + 16 = 18 / 32; TQ1_0 2 + 4 + 48 = 54 / 256; TQ2_0 2 + 64 = 66 / 256;
//   MXFP4 1 + 16 = 17 / 32; NVFP4 4 x u8 scales + 32 = 36 / 64; Q1_0 2 + 16 = 18 / 128; Q2_0 2 + 16 = 18 / 64.
constexpr std::uint32_t kGgmlTypeCount = 43;
constexpr std::array<GgmlTypeTraits, kGgmlTypeCount> kGgmlTypes = {{
    {"F32", 1, 4},         // 0
    {"F16", 1, 2},         // 1
    {"Q4_0", 32, 18},      // 2
    {"Q4_1", 32, 20},      // 3
    {nullptr, 0, 0},       // 4 Q4_2, removed
    {nullptr, 0, 0},       // 5 Q4_3, removed
    {"Q5_0", 32, 22},      // 6
    {"Q5_1", 32, 24},      // 7
    {"Q8_0", 32, 34},      // 8
    {"Q8_1", 32, 36},      // 9
    {"Q2_K", 256, 84},     // 10
    {"Q3_K", 256, 110},    // 11
    {"Q4_K", 256, 144},    // 12
    {"Q5_K", 256, 176},    // 13
    {"Q6_K", 256, 210},    // 14
    {"Q8_K", 256, 292},    // 15
    {"IQ2_XXS", 256, 66},  // 16
    {"IQ2_XS", 256, 74},   // 17
    {"IQ3_XXS", 256, 98},  // 18
    {"IQ1_S", 256, 50},    // 19
    {"IQ4_NL", 32, 18},    // 20
    {"IQ3_S", 256, 110},   // 21
    {"IQ2_S", 256, 82},    // 22
    {"IQ4_XS", 256, 136},  // 23
    {"I8", 1, 1},          // 24
    {"I16", 1, 2},         // 25
    {"I32", 1, 4},         // 26
    {"I64", 1, 8},         // 27
    {"F64", 1, 8},         // 28
    {"IQ1_M", 256, 56},    // 29
    {"BF16", 1, 2},        // 30
    {nullptr, 0, 0},       // 31 Q4_0_4_4, removed from gguf files
    {nullptr, 0, 0},       // 32 Q4_0_4_8
    {nullptr, 0, 0},       // 33 Q4_0_8_8
    {"TQ1_0", 256, 54},    // 34
    {"TQ2_0", 256, 66},    // 35
    {nullptr, 0, 0},       // 36 IQ4_NL_4_4, removed
    {nullptr, 0, 0},       // 37 IQ4_NL_4_8
    {nullptr, 0, 0},       // 38 IQ4_NL_8_8
    {"MXFP4", 32, 17},     // 39
    {"NVFP4", 64, 36},     // 40
    {"Q1_0", 128, 18},     // 41
    {"Q2_0", 64, 18},      // 42
}};

constexpr std::uint32_t kGgufMaxDims = 4;  // GGML_MAX_DIMS

std::string Q(std::string_view s) { return "\"" + EscapeForMessage(s) + "\""; }

// Bytes one element of `t` takes at least (a bound used before allocating an array).
std::uint64_t MinValueBytes(GgufType t) {
  switch (t) {
    case GgufType::kUint8:
    case GgufType::kInt8:
    case GgufType::kBool:
      return 1;
    case GgufType::kUint16:
    case GgufType::kInt16:
      return 2;
    case GgufType::kUint32:
    case GgufType::kInt32:
    case GgufType::kFloat32:
      return 4;
    case GgufType::kUint64:
    case GgufType::kInt64:
    case GgufType::kFloat64:
    case GgufType::kString:  // u64 length
      return 8;
    case GgufType::kArray:  // u32 type + u64 count
      return 12;
  }
  return 1;
}

bool KnownType(std::uint32_t t) { return t <= static_cast<std::uint32_t>(GgufType::kFloat64); }

class Reader {
 public:
  Reader(std::string_view prefix, std::int64_t file_size, const std::string& file)
      : data_(prefix), file_size_(static_cast<std::uint64_t>(file_size)), file_(file) {}

  std::uint64_t pos() const { return pos_; }
  std::uint64_t left() const { return file_size_ - pos_; }
  const std::string& file() const { return file_; }

  // Makes sure `n` bytes can be read at the current position, naming `what` when they cannot.
  void Need(std::uint64_t n, const std::string& what) {
    if (n > left())
      Fail("{}: {}: needs {} bytes at offset {}, but the file ends at {} (truncated?)", file_, what, n, pos_,
           file_size_);
    if (pos_ + n > data_.size())
      throw GgufNeedMoreBytes(
          fmt::format("{}: {}: the header continues past the {} bytes read", file_, what, data_.size()),
          static_cast<std::int64_t>(pos_ + n));
  }

  template <typename T>
  T Read(const std::string& what) {
    Need(sizeof(T), what);
    T v;
    std::memcpy(&v, data_.data() + pos_, sizeof(T));  // little-endian host (x86-64, aarch64)
    pos_ += sizeof(T);
    return v;
  }

  std::string ReadString(const std::string& what) {
    auto len = Read<std::uint64_t>(what + " length");
    if (len > left())
      Fail("{}: {}: length {} at offset {} is past the end of the file ({} bytes left)", file_, what, len, pos_ - 8,
           left());
    Need(len, what);
    std::string s(data_.substr(pos_, len));
    pos_ += len;
    return s;
  }

  void Skip(std::uint64_t n) { pos_ += n; }

 private:
  std::string_view data_;
  std::uint64_t file_size_;
  std::string file_;
  std::uint64_t pos_ = 0;
};

GgufValue ReadValue(Reader& r, GgufType type, const std::string& what, int depth, bool keep) {
  GgufValue v;
  v.type = type;
  switch (type) {
    case GgufType::kUint8:
      v.u = r.Read<std::uint8_t>(what);
      break;
    case GgufType::kInt8:
      v.i = r.Read<std::int8_t>(what);
      break;
    case GgufType::kUint16:
      v.u = r.Read<std::uint16_t>(what);
      break;
    case GgufType::kInt16:
      v.i = r.Read<std::int16_t>(what);
      break;
    case GgufType::kUint32:
      v.u = r.Read<std::uint32_t>(what);
      break;
    case GgufType::kInt32:
      v.i = r.Read<std::int32_t>(what);
      break;
    case GgufType::kUint64:
      v.u = r.Read<std::uint64_t>(what);
      break;
    case GgufType::kInt64:
      v.i = r.Read<std::int64_t>(what);
      break;
    case GgufType::kFloat32:
      v.f = r.Read<float>(what);
      break;
    case GgufType::kFloat64:
      v.f = r.Read<double>(what);
      break;
    case GgufType::kBool: {
      auto b = r.Read<std::uint8_t>(what);
      if (b > 1) Fail("{}: {}: bool value {} at offset {} is neither 0 nor 1", r.file(), what, b, r.pos() - 1);
      v.u = b;
      break;
    }
    case GgufType::kString:
      v.s = r.ReadString(what);
      break;
    case GgufType::kArray: {
      if (depth >= kGgufMaxArrayDepth)
        Fail("{}: {}: arrays nested deeper than {} levels", r.file(), what, kGgufMaxArrayDepth);
      auto et = r.Read<std::uint32_t>(what + " element type");
      if (!KnownType(et)) Fail("{}: {}: unknown array element type {}", r.file(), what, et);
      v.element_type = static_cast<GgufType>(et);
      v.count = r.Read<std::uint64_t>(what + " element count");
      const std::uint64_t min = MinValueBytes(v.element_type);
      if (v.count > r.left() / min)
        Fail("{}: {}: {} elements of {} need at least {} bytes each, but only {} bytes are left in the file", r.file(),
             what, v.count, GgufTypeName(et), min, r.left());
      v.elements_kept = keep && v.count <= kGgufKeptArrayElements;
      if (v.elements_kept) v.elements.reserve(v.count);
      for (std::uint64_t k = 0; k < v.count; ++k) {
        const std::string item = what + fmt::format("[{}]", k);
        if (v.element_type == GgufType::kString && !v.elements_kept) {
          // Validate without copying (a 150k-token vocabulary).
          auto len = r.Read<std::uint64_t>(item + " length");
          if (len > r.left())
            Fail("{}: {}: length {} at offset {} is past the end of the file ({} bytes left)", r.file(), item, len,
                 r.pos() - 8, r.left());
          r.Need(len, item);
          r.Skip(len);
          continue;
        }
        GgufValue e = ReadValue(r, v.element_type, item, depth + 1, v.elements_kept);
        if (v.elements_kept) v.elements.push_back(std::move(e));
      }
      break;
    }
  }
  return v;
}

std::uint64_t Pad(std::uint64_t x, std::uint64_t align) { return (x + align - 1) / align * align; }

}  // namespace

std::string GgufTypeName(std::uint32_t type) {
  static constexpr const char* kNames[] = {"uint8", "int8",   "uint16", "int16",  "uint32", "int32",  "float32",
                                           "bool",  "string", "array",  "uint64", "int64",  "float64"};
  if (type < std::size(kNames)) return kNames[type];
  return fmt::format("type {}", type);
}

bool GgufValue::AsInt(std::int64_t* out) const {
  switch (type) {
    case GgufType::kUint8:
    case GgufType::kUint16:
    case GgufType::kUint32:
    case GgufType::kUint64:
    case GgufType::kBool:
      if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return false;
      *out = static_cast<std::int64_t>(u);
      return true;
    case GgufType::kInt8:
    case GgufType::kInt16:
    case GgufType::kInt32:
    case GgufType::kInt64:
      *out = i;
      return true;
    default:
      return false;
  }
}

const GgufValue* GgufHeader::Find(const std::string& key) const {
  auto it = metadata.find(key);
  return it == metadata.end() ? nullptr : &it->second;
}

const GgmlTypeTraits* FindGgmlType(std::uint32_t ggml_type) {
  if (ggml_type >= kGgmlTypeCount || kGgmlTypes[ggml_type].name == nullptr) return nullptr;
  return &kGgmlTypes[ggml_type];
}

GgufHeader ParseGgufFile(std::string_view prefix, std::int64_t file_size, const std::string& file_name) {
  const std::string file = EscapeForMessage(file_name, 0);  // the path as shown in messages
  if (file_size < 0 || static_cast<std::uint64_t>(file_size) < prefix.size())
    Fail("{}: file size {} is smaller than the {} bytes given", file, file_size, prefix.size());
  Reader r(prefix, file_size, file);
  GgufHeader h;

  if (file_size < 4) Fail("{}: {} bytes: too short for the GGUF magic", file, file_size);
  r.Need(4, "magic");
  if (prefix.substr(0, 4) != "GGUF")
    Fail("{}: magic: expected \"GGUF\", got \"{}\" (not a GGUF file)", file, EscapeForMessage(prefix.substr(0, 4)));
  r.Skip(4);
  h.version = r.Read<std::uint32_t>("version");
  if (h.version == 1) Fail("{}: version: GGUF version 1 is not supported (only 2 and 3)", file);
  if (h.version != 2 && h.version != 3) {
    if ((h.version & 0xFFFFu) == 0)
      Fail("{}: version: {} (0x{:08x}) looks byte-swapped: big-endian GGUF files are not supported", file, h.version,
           h.version);
    Fail("{}: version: unsupported GGUF version {} (only 2 and 3)", file, h.version);
  }
  const auto tensor_count = r.Read<std::uint64_t>("tensor_count");
  const auto kv_count = r.Read<std::uint64_t>("metadata_kv_count");
  // Least bytes per metadata entry: key length (8) + one key byte + value type (4) + one value byte;
  // per tensor info: name length (8) + n_dims (4) + ggml type (4) + offset (8).
  if (kv_count > r.left() / 14)
    Fail("{}: metadata_kv_count: {} entries cannot fit in the {} bytes left in the file", file, kv_count, r.left());
  if (tensor_count > r.left() / 24)
    Fail("{}: tensor_count: {} tensor infos cannot fit in the {} bytes left in the file", file, tensor_count, r.left());

  for (std::uint64_t k = 0; k < kv_count; ++k) {
    const std::string where = fmt::format("metadata entry {}", k);
    std::string key = r.ReadString(where + " key");
    if (key.empty()) Fail("{}: {}: empty key", file, where);
    const std::string what = "metadata " + Q(key);
    if (h.metadata.count(key)) Fail("{}: {}: duplicate key", file, what);
    auto type = r.Read<std::uint32_t>(what + " value type");
    if (!KnownType(type)) Fail("{}: {}: unknown value type {}", file, what, type);
    h.metadata.emplace(std::move(key), ReadValue(r, static_cast<GgufType>(type), what, 0, true));
  }

  if (const GgufValue* a = h.Find("general.alignment")) {
    if (a->type != GgufType::kUint32)
      Fail("{}: metadata \"general.alignment\": expected a uint32, got {}", file,
           GgufTypeName(static_cast<std::uint32_t>(a->type)));
    if (a->u == 0 || (a->u & (a->u - 1)) != 0)
      Fail("{}: metadata \"general.alignment\": {} is not a power of 2", file, a->u);
    h.alignment = a->u;
  }

  h.tensors.reserve(tensor_count);
  std::map<std::string_view, std::size_t> names;
  for (std::uint64_t k = 0; k < tensor_count; ++k) {
    GgufTensorInfo t;
    t.name = r.ReadString(fmt::format("tensor info {} name", k));
    const std::string what = fmt::format("tensor {}", Q(t.name));
    auto n_dims = r.Read<std::uint32_t>(what + " n_dims");
    if (n_dims > kGgufMaxDims) Fail("{}: {}: n_dims {} is above the maximum {}", file, what, n_dims, kGgufMaxDims);
    std::int64_t nelements = 1;
    bool overflow = false;
    for (std::uint32_t d = 0; d < n_dims; ++d) {
      auto ne = r.Read<std::uint64_t>(fmt::format("{} dims[{}]", what, d));
      if (ne > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        Fail("{}: {}: dims[{}] = {} is above 2^63 - 1", file, what, d, ne);
      t.dims.push_back(static_cast<std::int64_t>(ne));
      if (__builtin_mul_overflow(nelements, static_cast<std::int64_t>(ne), &nelements)) overflow = true;
    }
    auto type = r.Read<std::uint32_t>(what + " ggml_type");
    const GgmlTypeTraits* traits = FindGgmlType(type);
    if (!traits) Fail("{}: {}: unknown ggml type {}", file, what, type);
    t.ggml_type = type;
    t.type_name = traits->name;
    bool zero = std::find(t.dims.begin(), t.dims.end(), 0) != t.dims.end();
    if (overflow && !zero) Fail("{}: {}: element count of dims {} overflows 64 bits", file, what, t.dims);
    if (zero) nelements = 0;
    const std::int64_t row = t.dims.empty() ? 1 : t.dims[0];
    if (row % traits->blck_size != 0)
      Fail("{}: {}: {} elements per row (dims[0]) is not a multiple of {}'s block size {}", file, what, row,
           traits->name, traits->blck_size);
    if (__builtin_mul_overflow(nelements / traits->blck_size, traits->type_size, &t.bytes))
      Fail("{}: {}: size in bytes of dims {} as {} overflows 64 bits", file, what, t.dims, traits->name);
    t.offset = r.Read<std::uint64_t>(what + " offset");
    if (t.offset % h.alignment != 0)
      Fail("{}: {}: offset {} is not a multiple of the alignment {}", file, what, t.offset, h.alignment);
    h.tensors.push_back(std::move(t));
    if (!names.emplace(h.tensors.back().name, k).second)
      Fail("{}: {}: duplicate tensor name (also tensor info {})", file, what, names[h.tensors.back().name]);
  }

  const std::uint64_t data_offset = tensor_count > 0 ? Pad(r.pos(), h.alignment) : r.pos();
  if (data_offset > static_cast<std::uint64_t>(file_size))
    Fail("{}: data section: starts at offset {} (after padding to {}), past the end of the file ({} bytes)", file,
         data_offset, h.alignment, file_size);
  h.data_offset = static_cast<std::int64_t>(data_offset);
  h.data_section_bytes = file_size - h.data_offset;

  std::vector<const GgufTensorInfo*> by_offset;
  by_offset.reserve(h.tensors.size());
  for (const auto& t : h.tensors) {
    if (t.offset > static_cast<std::uint64_t>(h.data_section_bytes) ||
        static_cast<std::uint64_t>(t.bytes) > static_cast<std::uint64_t>(h.data_section_bytes) - t.offset)
      Fail("{}: tensor {}: {} bytes at offset {} end past the data section ({} bytes from file offset {})", file,
           Q(t.name), t.bytes, t.offset, h.data_section_bytes, h.data_offset);
    by_offset.push_back(&t);
    h.total_tensor_bytes += t.bytes;
  }
  std::sort(by_offset.begin(), by_offset.end(), [](const GgufTensorInfo* a, const GgufTensorInfo* b) {
    return a->offset != b->offset ? a->offset < b->offset : a->bytes < b->bytes;
  });
  for (std::size_t k = 1; k < by_offset.size(); ++k) {
    const GgufTensorInfo& a = *by_offset[k - 1];
    const GgufTensorInfo& b = *by_offset[k];
    if (b.offset < a.offset + static_cast<std::uint64_t>(a.bytes))
      Fail("{}: tensor {}: bytes [{}, {}) overlap tensor {} at [{}, {})", file, Q(b.name), b.offset,
           b.offset + static_cast<std::uint64_t>(b.bytes), Q(a.name), a.offset,
           a.offset + static_cast<std::uint64_t>(a.bytes));
  }
  return h;
}

namespace {

// llama.cpp gguf-py/gguf/constants.py TENSOR_NAMES (the part after "blk.N.") -> the module path of
// the Hugging Face checkpoint (gguf-py tensor_mapping.py, the reverse of what convert_hf_to_gguf.py
// writes; vLLM's gguf_loader.py maps the same way).
struct BlockName {
  std::string_view gguf;
  std::string_view hf;
};
constexpr BlockName kBlockNames[] = {
    {"attn_norm", "input_layernorm"},
    {"attn_norm_2", "input_layernorm_2"},
    {"ffn_norm", "post_attention_layernorm"},
    {"post_attention_norm", "post_attention_layernorm"},
    {"post_ffw_norm", "post_feedforward_layernorm"},
    {"attn_q", "self_attn.q_proj"},
    {"attn_k", "self_attn.k_proj"},
    {"attn_v", "self_attn.v_proj"},
    {"attn_qkv", "self_attn.qkv_proj"},
    {"attn_output", "self_attn.o_proj"},
    {"attn_q_norm", "self_attn.q_norm"},
    {"attn_k_norm", "self_attn.k_norm"},
    {"attn_sinks", "self_attn.sinks"},
    {"attn_q_a", "self_attn.q_a_proj"},
    {"attn_q_a_norm", "self_attn.q_a_layernorm"},
    {"attn_q_b", "self_attn.q_b_proj"},
    {"attn_kv_a_mqa", "self_attn.kv_a_proj_with_mqa"},
    {"attn_kv_a_norm", "self_attn.kv_a_layernorm"},
    {"attn_kv_b", "self_attn.kv_b_proj"},
    {"attn_k_b", "self_attn.kv_b_proj.k_b"},  // kv_b_proj split in two by newer converters
    {"attn_v_b", "self_attn.kv_b_proj.v_b"},
    {"ffn_gate", "mlp.gate_proj"},
    {"ffn_up", "mlp.up_proj"},
    {"ffn_down", "mlp.down_proj"},
    {"ffn_gate_inp", "mlp.gate"},
    {"exp_probs_b", "mlp.gate.e_score_correction_bias"},
    {"ffn_gate_exps", "mlp.experts.gate_proj"},  // all experts in one 3-D tensor
    {"ffn_up_exps", "mlp.experts.up_proj"},
    {"ffn_down_exps", "mlp.experts.down_proj"},
    {"ffn_gate_up_exps", "mlp.experts.gate_up_proj"},
    {"ffn_gate_shexp", "mlp.shared_experts.gate_proj"},
    {"ffn_up_shexp", "mlp.shared_experts.up_proj"},
    {"ffn_down_shexp", "mlp.shared_experts.down_proj"},
    {"ffn_gate_inp_shexp", "mlp.shared_expert_gate"},
    {"nextn.eh_proj", "eh_proj"},
    {"nextn.enorm", "enorm"},
    {"nextn.hnorm", "hnorm"},
    {"nextn.embed_tokens", "embed_tokens"},
    {"nextn.shared_head_head", "shared_head.head"},
    {"nextn.shared_head_norm", "shared_head.norm"},
};

constexpr BlockName kGlobalNames[] = {
    {"token_embd", "model.embed_tokens"},
    {"output_norm", "model.norm"},
    {"output", "lm_head"},
};

}  // namespace

std::string GgufTensorNameToHf(std::string_view name) {
  // Split off the last component (weight, bias, scale, ...).
  const auto dot = name.rfind('.');
  const std::string_view base = dot == std::string_view::npos ? name : name.substr(0, dot);
  const std::string_view tail = dot == std::string_view::npos ? std::string_view() : name.substr(dot + 1);
  auto join = [&](std::string s, std::string_view hf) {
    s += hf;
    if (!tail.empty() && !hf.ends_with("_bias")) {
      s += '.';
      s += tail;
    }
    return s;
  };
  for (const auto& g : kGlobalNames)
    if (base == g.gguf) return join("", g.hf);
  constexpr std::string_view kBlk = "blk.";
  if (!name.starts_with(kBlk)) return std::string(name);
  std::size_t p = kBlk.size(), q = p;
  while (q < name.size() && name[q] >= '0' && name[q] <= '9') ++q;
  if (q == p || q >= name.size() || name[q] != '.') return std::string(name);
  const std::string layer = "model.layers." + std::string(name.substr(p, q - p)) + ".";
  if (q + 1 > base.size()) return layer + std::string(name.substr(q + 1));
  const std::string_view rest = base.substr(q + 1);
  for (const auto& b : kBlockNames)
    if (rest == b.gguf) return join(layer, b.hf);
  return layer + std::string(name.substr(q + 1));
}

std::vector<std::string> GgufBlockWarnings(const GgufHeader& h, int num_blocks, const std::string& file_name) {
  std::map<std::int64_t, std::pair<std::string, int>> past;  // block -> (first tensor, count)
  for (const auto& t : h.tensors) {
    std::string_view name = t.name;
    if (!name.starts_with("blk.")) continue;
    const std::size_t dot = name.find('.', 4);
    if (dot == std::string_view::npos) continue;
    std::int64_t block = 0;
    auto [ptr, ec] = std::from_chars(name.data() + 4, name.data() + dot, block);
    if (ec != std::errc() || ptr != name.data() + dot || block < num_blocks) continue;
    auto [it, inserted] = past.try_emplace(block, t.name, 0);
    ++it->second.second;
  }
  std::vector<std::string> out;
  for (const auto& [block, first] : past)
    out.push_back(fmt::format(
        "{}: tensor {}{}: block {} is past the model's {} blocks (num_hidden_layers + MTP layers); its "
        "bytes are counted in the weights",
        EscapeForMessage(file_name, 0), EscapeForMessage(first.first, 80),
        first.second > 1 ? fmt::format(" (and {} more of block {})", first.second - 1, block) : std::string(), block,
        num_blocks));
  return out;
}

namespace {

// An integer metadata value, or nullopt when absent; Error when present with another type.
std::optional<std::int64_t> MetaInt(const GgufHeader& h, const std::string& key, const std::string& file) {
  const GgufValue* v = h.Find(key);
  if (!v) return std::nullopt;
  std::int64_t out = 0;
  if (!v->AsInt(&out) || out < 0 || out > std::numeric_limits<int>::max())
    Fail("{}: metadata {}: expected a non-negative integer below 2^31, got {}{}", file, Q(key),
         GgufTypeName(static_cast<std::uint32_t>(v->type)),
         v->type == GgufType::kArray ? " (per-layer values are not read: put the original config.json next to "
                                       "the file)"
                                     : "");
  return out;
}

std::int64_t RequireInt(const GgufHeader& h, const std::string& key, const std::string& file) {
  auto v = MetaInt(h, key, file);
  if (!v) Fail("{}: metadata {}: required key is missing", file, Q(key));
  return *v;
}

}  // namespace

nlohmann::json GgufConfigJson(const GgufHeader& h, const std::string& file_name) {
  const std::string file = EscapeForMessage(file_name, 0);
  static const std::map<std::string, std::string> kArchitectures = {
      {"llama", "LlamaForCausalLM"}, {"mistral", "MistralForCausalLM"},   {"qwen2", "Qwen2ForCausalLM"},
      {"qwen3", "Qwen3ForCausalLM"}, {"qwen2moe", "Qwen2MoeForCausalLM"}, {"qwen3moe", "Qwen3MoeForCausalLM"},
  };
  const GgufValue* a = h.Find("general.architecture");
  if (!a) Fail("{}: metadata \"general.architecture\": required key is missing", file);
  if (a->type != GgufType::kString)
    Fail("{}: metadata \"general.architecture\": expected a string, got {}", file,
         GgufTypeName(static_cast<std::uint32_t>(a->type)));
  const std::string& arch = a->s;
  auto it = kArchitectures.find(arch);
  if (it == kArchitectures.end()) {
    std::string known;
    for (const auto& [k, v] : kArchitectures) known += (known.empty() ? "" : ", ") + k;
    Fail(
        "{}: metadata \"general.architecture\": {}: the model config is read from GGUF metadata only for {}; "
        "put the original checkpoint's config.json next to the file",
        file, Q(arch), known);
  }
  nlohmann::json c;
  c["architectures"] = {it->second};
  c["model_type"] = arch == "qwen2moe" ? "qwen2_moe" : arch == "qwen3moe" ? "qwen3_moe" : arch;
  const std::string p = arch + ".";
  const std::int64_t layers = RequireInt(h, p + "block_count", file);
  const std::int64_t hidden = RequireInt(h, p + "embedding_length", file);
  const std::int64_t heads = RequireInt(h, p + "attention.head_count", file);
  if (heads == 0) Fail("{}: metadata {}: must be positive", file, Q(p + "attention.head_count"));
  c["num_hidden_layers"] = layers;
  c["hidden_size"] = hidden;
  c["num_attention_heads"] = heads;
  c["num_key_value_heads"] = MetaInt(h, p + "attention.head_count_kv", file).value_or(heads);
  c["head_dim"] = MetaInt(h, p + "attention.key_length", file).value_or(hidden / heads);
  if (auto v = MetaInt(h, p + "feed_forward_length", file)) c["intermediate_size"] = *v;
  if (auto v = MetaInt(h, p + "context_length", file)) c["max_position_embeddings"] = *v;
  if (auto v = MetaInt(h, p + "expert_count", file); v && *v > 0) {
    c["num_experts"] = *v;
    if (auto u = MetaInt(h, p + "expert_used_count", file)) c["num_experts_per_tok"] = *u;
    if (auto f = MetaInt(h, p + "expert_feed_forward_length", file)) c["moe_intermediate_size"] = *f;
    if (auto f = MetaInt(h, p + "expert_shared_feed_forward_length", file)) c["shared_expert_intermediate_size"] = *f;
  }
  for (const auto& [key, field] : {std::pair<std::string, const char*>{p + "rope.freq_base", "rope_theta"},
                                   {p + "attention.layer_norm_rms_epsilon", "rms_norm_eps"}})
    if (const GgufValue* v = h.Find(key); v && (v->type == GgufType::kFloat32 || v->type == GgufType::kFloat64))
      c[field] = v->f;
  std::optional<std::int64_t> vocab = MetaInt(h, p + "vocab_size", file);
  if (!vocab)
    if (const GgufValue* t = h.Find("tokenizer.ggml.tokens"); t && t->type == GgufType::kArray)
      vocab = static_cast<std::int64_t>(std::min<std::uint64_t>(t->count, std::numeric_limits<int>::max()));
  bool has_output = false;
  for (const auto& t : h.tensors) {
    if (!vocab && t.name == "token_embd.weight" && t.dims.size() == 2) vocab = t.dims[1];
    has_output |= t.name == "output.weight";
  }
  if (!vocab)
    Fail("{}: metadata {}: missing, and no tokenizer.ggml.tokens or token_embd.weight to count the vocabulary", file,
         Q(p + "vocab_size"));
  c["vocab_size"] = *vocab;
  c["tie_word_embeddings"] = !has_output;
  c["torch_dtype"] = "bfloat16";
  return c;
}

}  // namespace ppdeploy
