// libFuzzer target: bytes as a whole safetensors file -> ParseSafetensorsFile. Must never crash,
// leak or throw anything but ppdeploy::Error, whose message must be one line. Also checks the
// result's invariants and that the SAX fast path and the DOM path agree.
//
// Second call: the bytes after the first 8 as a header JSON, with a data section size taken from
// those 8 bytes, so mutations of the JSON are exercised even when the length prefix no longer matches.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "core/error.h"
#include "core/escape.h"
#include "model/safetensors.h"

namespace {

using ppdeploy::SafetensorsHeader;

void Check(bool ok) {
  if (!ok) std::abort();
}

// What the reference (safetensors/src/tensor.rs Metadata::validate + read_metadata) guarantees
// of an accepted file: sorted by offsets, each tensor starting where the previous one ended (the
// first at 0), sizes matching shape x dtype, the last one ending at the end of the data section.
void CheckInvariants(const SafetensorsHeader& h) {
  const ppdeploy::TensorInfo* prev = nullptr;
  std::int64_t start = 0;
  for (const auto& t : h.tensors) {
    Check(t.begin == start && t.begin <= t.end && t.end <= h.data_section_bytes);
    Check(t.bytes == t.end - t.begin);
    Check(ppdeploy::SafetensorsDtypeBits(t.dtype) > 0);
    for (auto d : t.shape) Check(d >= 0);
    if (prev) Check(prev->begin < t.begin || (prev->begin == t.begin && prev->end <= t.end));
    start = t.end;
    prev = &t;
  }
  Check(start == h.data_section_bytes);
}

bool Same(const SafetensorsHeader& a, const SafetensorsHeader& b) {
  if (a.tensors.size() != b.tensors.size() || a.metadata != b.metadata) return false;
  for (std::size_t i = 0; i < a.tensors.size(); ++i) {
    const auto& x = a.tensors[i];
    const auto& y = b.tensors[i];
    if (x.name != y.name || x.dtype != y.dtype || x.shape != y.shape || x.begin != y.begin || x.end != y.end ||
        x.bytes != y.bytes || x.file != y.file)
      return false;
  }
  return true;
}

// Parses with the public entry point and the DOM-only path; both must agree.
void ParseHeaderBothWays(std::string_view json, std::int64_t data_bytes) {
  std::string fast_error, dom_error;
  SafetensorsHeader fast, dom;
  try {
    fast = ppdeploy::ParseSafetensorsHeader(json, data_bytes, "fuzz.safetensors");
    CheckInvariants(fast);
  } catch (const ppdeploy::Error& e) {
    fast_error = e.what();
    Check(fast_error.find('\n') == std::string::npos && !fast_error.empty());
  }
  // NUL bytes and invalid UTF-8 are refused before either path runs.
  if (json.find('\0') != std::string_view::npos || ppdeploy::FindInvalidUtf8(json)) return;
  try {
    dom = ppdeploy::detail::ParseSafetensorsHeaderWithDom(json, data_bytes, "fuzz.safetensors");
  } catch (const ppdeploy::Error& e) {
    dom_error = e.what();
  }
  Check(fast_error == dom_error);
  if (fast_error.empty()) Check(Same(fast, dom));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    SafetensorsHeader h = ppdeploy::ParseSafetensorsFile(bytes, static_cast<std::int64_t>(size), "fuzz.safetensors");
    CheckInvariants(h);
  } catch (const ppdeploy::Error& e) {
    Check(std::strchr(e.what(), '\n') == nullptr);
  }
  if (size >= 8) {
    std::uint64_t n = 0;
    std::memcpy(&n, data, 8);
    ParseHeaderBothWays(bytes.substr(8), static_cast<std::int64_t>(n & ((std::uint64_t{1} << 40) - 1)));
  }
  return 0;
}
