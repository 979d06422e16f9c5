#include "model/safetensors.h"

#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>
#include <unordered_set>

#include "core/error.h"
#include "core/escape.h"
#include "core/json_fields.h"

namespace ppdeploy {
namespace {

// Names from a file (tensors, shards, metadata keys), quoted in messages: long ones are cut.
constexpr std::size_t kNameLimit = 100;

using nlohmann::json;

struct DtypeRow {
  std::string_view name;
  int bits;
};

// safetensors/src/tensor.rs `Dtype` and `Dtype::bitsize()`.
constexpr DtypeRow kDtypes[] = {
    {"BOOL", 8},        {"U8", 8},          {"I8", 8},      {"F8_E4M3", 8}, {"F8_E5M2", 8}, {"F8_E8M0", 8},
    {"F8_E4M3FNUZ", 8}, {"F8_E5M2FNUZ", 8}, {"I16", 16},    {"U16", 16},    {"F16", 16},    {"BF16", 16},
    {"I32", 32},        {"U32", 32},        {"F32", 32},    {"I64", 64},    {"U64", 64},    {"F64", 64},
    {"C64", 64},        {"F4", 4},          {"F6_E2M3", 6}, {"F6_E3M2", 6},
};

// serde_json's recursion limit (src/de.rs: `remaining_depth: 128`, decremented on entering each
// array or object and an error when it reaches 0): at most 127 nested arrays/objects, which the
// reference also enforces inside the entry fields it ignores.
constexpr int kMaxJsonDepth = 127;
constexpr std::string_view kMetadataKey = "__metadata__";

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

// "<file>: tensor "<name>"" for messages; built only when an error is thrown.
std::string Where(const std::string& file, std::string_view name) {
  return fmt::format("{}: tensor {}", file, QuoteForMessage(name, kNameLimit));
}

// The dtype check is part of deserialising an entry in the reference (an unknown name is a serde
// error, InvalidHeaderDeserialization); everything else is Metadata::validate, after sorting.
bool KnownDtype(const TensorInfo& t) { return SafetensorsDtypeBits(t.dtype) > 0; }

void CheckDtype(const TensorInfo& t, const std::string& file) {
  if (!KnownDtype(t))
    Fail("{}: unknown dtype {} (expected one of {})", Where(file, t.name), QuoteForMessage(t.dtype, kNameLimit),
         SafetensorsDtypeList());
}

// One entry from the DOM (the slow path): JSON types first, then CheckTensor.
TensorInfo ParseEntry(const std::string& name, const json& entry, const std::string& file) {
  if (!entry.is_object())
    Fail("{}: expected an object with dtype, shape and data_offsets, got {}", Where(file, name), ShortJson(entry));
  TensorInfo t;
  t.name = name;
  t.file = file;

  auto dt = entry.find("dtype");
  if (dt == entry.end()) Fail("{}: dtype: required field is missing", Where(file, name));
  if (!dt->is_string()) Fail("{}: dtype: expected a string, got {}", Where(file, name), ShortJson(*dt));
  t.dtype = dt->get<std::string>();

  auto sh = entry.find("shape");
  if (sh == entry.end()) Fail("{}: shape: required field is missing", Where(file, name));
  if (!sh->is_array())
    Fail("{}: shape: expected a list of non-negative integers, got {}", Where(file, name), ShortJson(*sh));
  t.shape.reserve(sh->size());
  for (const auto& d : *sh) {
    std::int64_t v = 0;
    if (!NonNegativeInt(d, &v))
      Fail("{}: shape: expected a list of non-negative integers, got {}", Where(file, name), ShortJson(*sh));
    t.shape.push_back(v);
  }

  auto off = entry.find("data_offsets");
  if (off == entry.end()) Fail("{}: data_offsets: required field is missing", Where(file, name));
  if (!off->is_array() || off->size() != 2 || !NonNegativeInt((*off)[0], &t.begin) ||
      !NonNegativeInt((*off)[1], &t.end))
    Fail("{}: data_offsets: expected two non-negative integers [begin, end], got {}", Where(file, name),
         ShortJson(*off));
  CheckDtype(t, file);
  return t;
}

// safetensors/src/tensor.rs: `Metadata` sorts the tensors by `data_offsets` (begin, then end; the
// name breaks ties here so that messages do not depend on the header's order), then
// `Metadata::validate` walks them: each must start where the previous one ended (the first at 0)
// and not end before it starts (InvalidOffset), its element count and bit count must not overflow
// 64 bits (ValidationOverflow), the bits must be whole bytes (MisalignedSlice) and the byte span
// must equal them (TensorInvalidInfo). `read_metadata` then requires the last end to be the end of
// the file (MetadataIncompleteBuffer). Sets `bytes`.
void SortAndValidate(std::vector<TensorInfo>& tensors, std::int64_t data_section_bytes, const std::string& file) {
  std::sort(tensors.begin(), tensors.end(), [](const TensorInfo& a, const TensorInfo& b) {
    if (a.begin != b.begin) return a.begin < b.begin;
    if (a.end != b.end) return a.end < b.end;
    return a.name < b.name;
  });
  std::int64_t start = 0;
  const TensorInfo* prev = nullptr;
  for (auto& t : tensors) {
    if (t.end < t.begin)
      Fail("{}: data_offsets [{}, {}]: begin is after end (InvalidOffset)", Where(file, t.name), t.begin, t.end);
    if (t.begin > start)
      Fail(
          "{}: data_offsets [{}, {}] leave {} unused bytes after {} (the reference reader rejects holes: "
          "InvalidOffset)",
          Where(file, t.name), t.begin, t.end, t.begin - start,
          prev ? fmt::format("tensor {} [{}, {}]", QuoteForMessage(prev->name, kNameLimit), prev->begin, prev->end)
               : std::string("the start of the data section"));
    if (t.begin < start)
      Fail("{}: tensors {} [{}, {}] and {} [{}, {}] overlap (InvalidOffset)", file,
           QuoteForMessage(prev->name, kNameLimit), prev->begin, prev->end, QuoteForMessage(t.name, kNameLimit),
           t.begin, t.end);
    // usize::checked_mul over the dimensions in order, then by the dtype's bits: an overflow before
    // a zero dimension is still an overflow, as in the reference.
    const auto bits = static_cast<std::uint64_t>(SafetensorsDtypeBits(t.dtype));
    std::uint64_t numel = 1, total_bits = 0;
    bool overflow = false;
    for (std::int64_t v : t.shape)
      if (!overflow && __builtin_mul_overflow(numel, static_cast<std::uint64_t>(v), &numel)) overflow = true;
    if (overflow || __builtin_mul_overflow(numel, bits, &total_bits))
      Fail("{}: shape {} x {} overflows 64-bit sizes (ValidationOverflow)", Where(file, t.name), ShapeText(t.shape),
           t.dtype);
    if (total_bits % 8 != 0)
      Fail("{}: shape {} x {} is {} elements of {} bits, not a whole number of bytes (MisalignedSlice)",
           Where(file, t.name), ShapeText(t.shape), t.dtype, numel, bits);
    t.bytes = t.end - t.begin;
    if (static_cast<std::uint64_t>(t.bytes) != total_bits / 8)
      Fail("{}: data_offsets [{}, {}] span {} bytes but shape {} x {} needs {} bytes (TensorInvalidInfo)",
           Where(file, t.name), t.begin, t.end, t.bytes, ShapeText(t.shape), t.dtype, total_bits / 8);
    start = t.end;
    prev = &t;
  }
  if (start > data_section_bytes)
    Fail("{}: tensor {} ends at byte {}, past the end of the data section ({} bytes) (MetadataIncompleteBuffer)", file,
         QuoteForMessage(prev->name, kNameLimit), start, data_section_bytes);
  if (start < data_section_bytes)
    Fail(
        "{}: {} {} the last tensor{} (the reference reader requires the last tensor to end at the end of "
        "the file: MetadataIncompleteBuffer)",
        file, data_section_bytes - start, data_section_bytes - start == 1 ? "byte follows" : "bytes follow",
        prev ? fmt::format(" {} [{}, {}]", QuoteForMessage(prev->name, kNameLimit), prev->begin, prev->end)
             : std::string(" (there is none)"));
}

// Fast path: a SAX handler that accepts only the exact shape of a well-formed header (entries with
// exactly dtype/shape/data_offsets of the right JSON types, `__metadata__` an object of strings) and
// builds TensorInfo directly, without a DOM. On anything else, or any failed check, it gives up
// (returns false) and the DOM path - the only source of error messages - runs instead, so both paths
// accept the same headers and report the same first error.
class FastHeaderSax {
 public:
  FastHeaderSax(const std::string& file, SafetensorsHeader* out) : file_(file), out_(out) {}

  bool null() { return false; }
  bool boolean(bool) { return false; }
  bool number_integer(json::number_integer_t v) { return v >= 0 && Number(v); }
  bool number_unsigned(json::number_unsigned_t v) {
    return v <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) &&
           Number(static_cast<std::int64_t>(v));
  }
  bool number_float(json::number_float_t, const json::string_t&) { return false; }
  bool binary(json::binary_t&) { return false; }
  bool string(json::string_t& v) {
    if (state_ == State::kDtype) {
      out_->tensors.back().dtype = std::move(v);
      state_ = State::kEntry;
      return true;
    }
    if (state_ == State::kMetadataValue) {
      out_->metadata.emplace(std::move(metadata_key_), std::move(v));
      state_ = State::kMetadata;
      return true;
    }
    return false;
  }
  bool start_object(std::size_t) {
    switch (state_) {
      case State::kStart:
        state_ = State::kTop;
        return true;
      case State::kEntryValue:
        state_ = State::kEntry;
        seen_ = 0;
        return true;
      case State::kMetadataStart:
        state_ = State::kMetadata;
        return true;
      default:
        return false;
    }
  }
  bool key(json::string_t& k) {
    if (state_ == State::kTop) {
      if (k == kMetadataKey) {
        if (seen_metadata_) return false;
        seen_metadata_ = true;
        state_ = State::kMetadataStart;
        return true;
      }
      TensorInfo& t = out_->tensors.emplace_back();
      t.name = std::move(k);
      t.file = file_;
      state_ = State::kEntryValue;
      return true;
    }
    if (state_ == State::kEntry) {
      int bit = k == "dtype" ? 1 : k == "shape" ? 2 : k == "data_offsets" ? 4 : 0;
      if (bit == 0 || (seen_ & bit)) return false;
      seen_ |= bit;
      state_ = bit == 1 ? State::kDtype : bit == 2 ? State::kShapeStart : State::kOffsetsStart;
      return true;
    }
    if (state_ == State::kMetadata) {
      metadata_key_ = std::move(k);
      state_ = State::kMetadataValue;
      return true;
    }
    return false;
  }
  bool end_object() {
    if (state_ == State::kEntry) {
      if (seen_ != 7 || !KnownDtype(out_->tensors.back())) return false;
      state_ = State::kTop;
      return true;
    }
    if (state_ == State::kMetadata) {
      state_ = State::kTop;
      return true;
    }
    if (state_ == State::kTop) {
      state_ = State::kDone;
      return true;
    }
    return false;
  }
  bool start_array(std::size_t) {
    if (state_ == State::kShapeStart) {
      state_ = State::kShape;
      return true;
    }
    if (state_ == State::kOffsetsStart) {
      state_ = State::kOffsets;
      offsets_ = 0;
      return true;
    }
    return false;
  }
  bool end_array() {
    if (state_ == State::kShape) {
      state_ = State::kEntry;
      return true;
    }
    if (state_ == State::kOffsets && offsets_ == 2) {
      state_ = State::kEntry;
      return true;
    }
    return false;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) { return false; }

  bool done() const { return state_ == State::kDone; }

 private:
  enum class State {
    kStart,
    kTop,
    kEntryValue,
    kEntry,
    kDtype,
    kShapeStart,
    kShape,
    kOffsetsStart,
    kOffsets,
    kMetadataStart,
    kMetadata,
    kMetadataValue,
    kDone
  };
  bool Number(std::int64_t v) {
    if (state_ == State::kShape) {
      out_->tensors.back().shape.push_back(v);
      return true;
    }
    if (state_ == State::kOffsets && offsets_ < 2) {
      (offsets_++ == 0 ? out_->tensors.back().begin : out_->tensors.back().end) = v;
      return true;
    }
    return false;
  }

  const std::string& file_;
  SafetensorsHeader* out_;
  State state_ = State::kStart;
  int seen_ = 0;     // bits: 1 dtype, 2 shape, 4 data_offsets
  int offsets_ = 0;  // data_offsets values read
  bool seen_metadata_ = false;
  std::string metadata_key_;
};

// Slow path and the source of every message: DOM parse with duplicate-key and depth checks.
void ParseWithDom(std::string_view text, const std::string& file_name, SafetensorsHeader* out) {
  // The DOM keeps only the last of duplicate keys, so duplicates are caught while parsing; the depth
  // bound keeps error rendering (recursive dump) and memory bounded on hostile input.
  std::unordered_set<std::string> top_keys;
  json doc;
  try {
    doc = json::parse(text.begin(), text.end(), [&](int depth, json::parse_event_t event, json& parsed) -> bool {
      if ((event == json::parse_event_t::object_start || event == json::parse_event_t::array_start) &&
          depth >= kMaxJsonDepth)
        Fail("{}: header JSON nests deeper than {} levels", file_name, kMaxJsonDepth);
      if (event == json::parse_event_t::key && depth == 1) {
        const auto& key = parsed.get_ref<const std::string&>();
        if (!top_keys.insert(key).second)
          Fail("{}: tensor {} appears twice in the header", file_name, QuoteForMessage(key, kNameLimit));
      }
      return true;
    });
  } catch (const json::exception& e) {  // parse_error, and out_of_range.406 for numbers like 1e999
    std::string msg = e.what();
    if (auto pos = msg.find("] "); pos != std::string::npos) msg = msg.substr(pos + 2);
    // The last token may be a 100 MB literal: cut, and escaped like every quoted text.
    Fail("{}: header is not valid JSON: {}", file_name, EscapeForMessage(msg));
  }
  if (!doc.is_object()) Fail("{}: header is not a JSON object, got {}", file_name, ShortJson(doc));
  out->tensors.reserve(doc.size());
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    if (it.key() == kMetadataKey) {
      const json& m = it.value();
      if (m.is_null()) continue;
      if (!m.is_object()) Fail("{}: __metadata__: expected an object of strings, got {}", file_name, ShortJson(m));
      for (auto mit = m.begin(); mit != m.end(); ++mit) {
        if (!mit.value().is_string())
          Fail("{}: __metadata__.{}: expected a string, got {}", file_name, QuoteForMessage(mit.key(), kNameLimit),
               ShortJson(mit.value()));
        out->metadata.emplace(mit.key(), mit.value().get<std::string>());
      }
      continue;
    }
    out->tensors.push_back(ParseEntry(it.key(), it.value(), file_name));
  }
}

// True when the fast path parsed the whole header and found no duplicate names.
bool TryFastParse(std::string_view text, const std::string& file, SafetensorsHeader* out) {
  FastHeaderSax sax(file, out);
  if (!json::sax_parse(text.begin(), text.end(), &sax) || !sax.done()) return false;
  std::unordered_set<std::string_view> names;
  names.reserve(out->tensors.size());
  for (const auto& t : out->tensors)
    if (!names.insert(t.name).second) return false;
  return true;
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

  // The reference first decodes the header as UTF-8 (`core::str::from_utf8`: InvalidHeader).
  if (auto bad = FindInvalidUtf8(header_json_bytes))
    Fail("{}: header is not valid UTF-8 at header byte {} (byte 0x{:02x}; InvalidHeader)", file_name, *bad,
         static_cast<unsigned char>(header_json_bytes[*bad]));
  // nlohmann's lexer takes a NUL byte as the end of input and would ignore whatever follows it;
  // NUL is never valid in JSON text (serde_json, the reference parser, rejects it).
  if (auto nul = header_json_bytes.find('\0'); nul != std::string_view::npos)
    Fail("{}: header is not valid JSON: NUL byte at offset {}", file_name, nul);

  SafetensorsHeader out;
  out.header_bytes = static_cast<std::int64_t>(header_json_bytes.size());
  out.data_section_bytes = data_section_bytes;
  if (!TryFastParse(header_json_bytes, file_name, &out)) {
    out.tensors.clear();
    out.metadata.clear();
    ParseWithDom(header_json_bytes, file_name, &out);
  }
  SortAndValidate(out.tensors, data_section_bytes, file_name);
  return out;
}

namespace detail {
SafetensorsHeader ParseSafetensorsHeaderWithDom(std::string_view header_json_bytes, std::int64_t data_section_bytes,
                                                const std::string& file_name) {
  if (header_json_bytes.find('\0') != std::string_view::npos) Fail("{}: NUL", file_name);
  if (FindInvalidUtf8(header_json_bytes)) Fail("{}: not UTF-8", file_name);
  SafetensorsHeader out;
  out.header_bytes = static_cast<std::int64_t>(header_json_bytes.size());
  out.data_section_bytes = data_section_bytes;
  ParseWithDom(header_json_bytes, file_name, &out);
  SortAndValidate(out.tensors, data_section_bytes, file_name);
  return out;
}
}  // namespace detail

std::int64_t SafetensorsHeaderLength(std::string_view first_bytes, std::int64_t file_size,
                                     const std::string& file_name) {
  if (file_size < 8)
    Fail("{}: file is {} bytes, too short for a safetensors file (8-byte header length first)", file_name, file_size);
  if (first_bytes.size() < 8)
    Fail("{}: only {} of the 8 header-length bytes were given", file_name, first_bytes.size());
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
