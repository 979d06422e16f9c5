#include "model/safetensors.h"

#include <algorithm>
#include <limits>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_fields.h"

namespace ppdeploy {
namespace {

using nlohmann::json;

struct DtypeRow {
  std::string_view name;
  int bits;
};

// safetensors/src/tensor.rs `Dtype` and `Dtype::bitsize()`.
constexpr DtypeRow kDtypes[] = {
    {"BOOL", 8},        {"U8", 8},           {"I8", 8},       {"F8_E4M3", 8},  {"F8_E5M2", 8},
    {"F8_E8M0", 8},     {"F8_E4M3FNUZ", 8},  {"F8_E5M2FNUZ", 8}, {"I16", 16},  {"U16", 16},
    {"F16", 16},        {"BF16", 16},        {"I32", 32},     {"U32", 32},     {"F32", 32},
    {"I64", 64},        {"U64", 64},         {"F64", 64},     {"C64", 64},     {"F4", 4},
    {"F6_E2M3", 6},     {"F6_E3M2", 6},
};

constexpr int kMaxJsonDepth = 16;
constexpr std::string_view kMetadataKey = "__metadata__";

// A tensor name (or any string from the file) as a quoted, escaped, bounded token for a one-line message.
std::string Quote(std::string_view s) {
  std::string q = json(std::string(s)).dump(-1, ' ', false, json::error_handler_t::replace);
  if (q.size() > 120) q = q.substr(0, 116) + "...\"";
  return q;
}

// A shape for messages, bounded like ShortJson: "[1536,7168]".
std::string ShapeText(const std::vector<std::int64_t>& shape) { return ShortJson(json(shape)); }

// Reads a JSON integer as a non-negative int64; false for anything else (negative, > INT64_MAX, float, ...).
bool NonNegativeInt(const json& v, std::int64_t* out) {
  if (v.is_number_unsigned()) {
    auto u = v.get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return false;
    *out = static_cast<std::int64_t>(u);
    return true;
  }
  if (v.is_number_integer()) {
    auto i = v.get<std::int64_t>();
    if (i < 0) return false;
    *out = i;
    return true;
  }
  return false;
}

TensorInfo ParseEntry(const std::string& name, const json& entry, std::int64_t data_section_bytes,
                      const std::string& file) {
  std::string where = fmt::format("{}: tensor {}", file, Quote(name));
  if (!entry.is_object())
    Fail("{}: expected an object with dtype, shape and data_offsets, got {}", where, ShortJson(entry));
  TensorInfo t;
  t.name = name;
  t.file = file;

  auto dt = entry.find("dtype");
  if (dt == entry.end()) Fail("{}: dtype: required field is missing", where);
  if (!dt->is_string()) Fail("{}: dtype: expected a string, got {}", where, ShortJson(*dt));
  t.dtype = dt->get<std::string>();
  int bits = SafetensorsDtypeBits(t.dtype);
  if (bits == 0) Fail("{}: unknown dtype {} (expected one of {})", where, Quote(t.dtype), SafetensorsDtypeList());

  auto sh = entry.find("shape");
  if (sh == entry.end()) Fail("{}: shape: required field is missing", where);
  if (!sh->is_array()) Fail("{}: shape: expected a list of non-negative integers, got {}", where, ShortJson(*sh));
  t.shape.reserve(sh->size());
  std::int64_t numel = 1;
  bool overflow = false;
  for (const auto& d : *sh) {
    std::int64_t v = 0;
    if (!NonNegativeInt(d, &v))
      Fail("{}: shape: expected a list of non-negative integers, got {}", where, ShortJson(*sh));
    t.shape.push_back(v);
    if (!overflow && __builtin_mul_overflow(numel, v, &numel)) overflow = true;
  }
  // A zero dimension makes the tensor empty whatever the other dimensions are.
  if (std::find(t.shape.begin(), t.shape.end(), 0) != t.shape.end()) {
    numel = 0;
    overflow = false;
  }
  std::int64_t total_bits = 0;
  if (overflow || __builtin_mul_overflow(numel, static_cast<std::int64_t>(bits), &total_bits))
    Fail("{}: shape {} x {} overflows 64-bit sizes", where, ShapeText(t.shape), t.dtype);
  if (total_bits % 8 != 0)
    Fail("{}: shape {} x {} is {} elements of {} bits, not a whole number of bytes", where, ShapeText(t.shape),
         t.dtype, numel, bits);
  std::int64_t expected_bytes = total_bits / 8;

  auto off = entry.find("data_offsets");
  if (off == entry.end()) Fail("{}: data_offsets: required field is missing", where);
  if (!off->is_array() || off->size() != 2 || !NonNegativeInt((*off)[0], &t.begin) ||
      !NonNegativeInt((*off)[1], &t.end))
    Fail("{}: data_offsets: expected two non-negative integers [begin, end], got {}", where, ShortJson(*off));
  if (t.begin > t.end) Fail("{}: data_offsets [{}, {}]: begin is after end", where, t.begin, t.end);
  if (t.end > data_section_bytes)
    Fail("{}: data_offsets [{}, {}] run past the end of the data section ({} bytes)", where, t.begin, t.end,
         data_section_bytes);
  t.bytes = t.end - t.begin;
  if (t.bytes != expected_bytes)
    Fail("{}: data_offsets [{}, {}] span {} bytes but shape {} x {} needs {} bytes", where, t.begin, t.end, t.bytes,
         ShapeText(t.shape), t.dtype, expected_bytes);
  return t;
}

}  // namespace

int SafetensorsDtypeBits(std::string_view dtype) {
  for (const auto& row : kDtypes)
    if (row.name == dtype) return row.bits;
  return 0;
}

const std::string& SafetensorsDtypeList() {
  static const std::string list = [] {
    std::string s;
    for (const auto& row : kDtypes) {
      if (!s.empty()) s += ", ";
      s += row.name;
    }
    return s;
  }();
  return list;
}

SafetensorsHeader ParseSafetensorsHeader(std::string_view header_json_bytes, std::int64_t data_section_bytes,
                                         const std::string& file_name) {
  if (data_section_bytes < 0) Fail("{}: data section size {} is negative", file_name, data_section_bytes);
  if (static_cast<std::int64_t>(header_json_bytes.size()) > kSafetensorsMaxHeaderBytes)
    Fail("{}: header length {} exceeds the limit of {} bytes", file_name, header_json_bytes.size(),
         kSafetensorsMaxHeaderBytes);

  // nlohmann's lexer takes a NUL byte as the end of input and would ignore whatever follows it;
  // NUL is never valid in JSON text (serde_json, the reference parser, rejects it).
  if (auto nul = header_json_bytes.find('\0'); nul != std::string_view::npos)
    Fail("{}: header is not valid JSON: NUL byte at offset {}", file_name, nul);

  // The DOM keeps only the last of duplicate keys, so duplicates are caught while parsing; the depth
  // bound keeps error rendering (recursive dump) and memory bounded on hostile input.
  std::unordered_set<std::string> top_keys;
  json doc;
  try {
    doc = json::parse(
        header_json_bytes.begin(), header_json_bytes.end(),
        [&](int depth, json::parse_event_t event, json& parsed) -> bool {
          if ((event == json::parse_event_t::object_start || event == json::parse_event_t::array_start) &&
              depth >= kMaxJsonDepth)
            Fail("{}: header JSON nests deeper than {} levels", file_name, kMaxJsonDepth);
          if (event == json::parse_event_t::key && depth == 1) {
            const auto& key = parsed.get_ref<const std::string&>();
            if (!top_keys.insert(key).second) Fail("{}: tensor {} appears twice in the header", file_name, Quote(key));
          }
          return true;
        });
  } catch (const json::parse_error& e) {
    std::string msg = e.what();
    if (auto pos = msg.find("] "); pos != std::string::npos) msg = msg.substr(pos + 2);
    Fail("{}: header is not valid JSON: {}", file_name, msg);
  }
  if (!doc.is_object()) Fail("{}: header is not a JSON object, got {}", file_name, ShortJson(doc));

  SafetensorsHeader out;
  out.header_bytes = static_cast<std::int64_t>(header_json_bytes.size());
  out.data_section_bytes = data_section_bytes;
  out.tensors.reserve(doc.size());
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    if (it.key() == kMetadataKey) {
      const json& m = it.value();
      if (m.is_null()) continue;
      if (!m.is_object()) Fail("{}: __metadata__: expected an object of strings, got {}", file_name, ShortJson(m));
      for (auto mit = m.begin(); mit != m.end(); ++mit) {
        if (!mit.value().is_string())
          Fail("{}: __metadata__.{}: expected a string, got {}", file_name, Quote(mit.key()), ShortJson(mit.value()));
        out.metadata.emplace(mit.key(), mit.value().get<std::string>());
      }
      continue;
    }
    out.tensors.push_back(ParseEntry(it.key(), it.value(), data_section_bytes, file_name));
  }

  // Overlap: sort by begin, then each non-empty tensor must start at or after the furthest end so far.
  std::sort(out.tensors.begin(), out.tensors.end(), [](const TensorInfo& a, const TensorInfo& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  const TensorInfo* furthest = nullptr;
  for (const auto& t : out.tensors) {
    if (t.bytes == 0) continue;
    if (furthest && t.begin < furthest->end)
      Fail("{}: tensors {} [{}, {}] and {} [{}, {}] overlap", file_name, Quote(furthest->name), furthest->begin,
           furthest->end, Quote(t.name), t.begin, t.end);
    if (!furthest || t.end > furthest->end) furthest = &t;
  }
  return out;
}

std::int64_t SafetensorsHeaderLength(std::string_view first_bytes, std::int64_t file_size,
                                     const std::string& file_name) {
  if (file_size < 8)
    Fail("{}: file is {} bytes, too short for a safetensors file (8-byte header length first)", file_name,
         file_size);
  if (first_bytes.size() < 8) Fail("{}: only {} of the 8 header-length bytes were given", file_name, first_bytes.size());
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(first_bytes[static_cast<std::size_t>(i)]);
  if (n > static_cast<std::uint64_t>(kSafetensorsMaxHeaderBytes))
    Fail("{}: header length {} exceeds the limit of {} bytes", file_name, n, kSafetensorsMaxHeaderBytes);
  auto len = static_cast<std::int64_t>(n);
  if (8 + len > file_size)
    Fail("{}: header length {} runs past the end of the file ({} bytes)", file_name, len, file_size);
  return len;
}

SafetensorsHeader ParseSafetensorsFile(std::string_view file_prefix, std::int64_t file_size,
                                       const std::string& file_name) {
  std::int64_t n = SafetensorsHeaderLength(file_prefix, file_size, file_name);
  if (static_cast<std::int64_t>(file_prefix.size()) < 8 + n)
    Fail("{}: only {} of the 8 + {} header bytes were given", file_name, file_prefix.size(), n);
  return ParseSafetensorsHeader(file_prefix.substr(8, static_cast<std::size_t>(n)), file_size - 8 - n, file_name);
}

}  // namespace ppdeploy
