// libFuzzer target: bytes as a whole GGUF file -> ParseGgufFile. Must never crash, leak or throw
// anything but ppdeploy::Error, whose message must be one line. Checks the result's invariants
// (sizes from ggml's type traits, aligned offsets inside the data section, no overlap), that a
// prefix of the file either parses to the same result or asks for more bytes than it has, and maps
// every tensor name (GgufTensorNameToHf).
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "model/gguf.h"

namespace {

using ppdeploy::GgufHeader;

void Check(bool ok) {
  if (!ok) std::abort();
}

void CheckInvariants(const GgufHeader& h, std::size_t size) {
  Check(h.version == 2 || h.version == 3);
  Check(h.alignment > 0 && (h.alignment & (h.alignment - 1)) == 0);
  Check(h.data_offset >= 24 && static_cast<std::size_t>(h.data_offset) <= size);
  Check(h.data_section_bytes == static_cast<std::int64_t>(size) - h.data_offset);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> spans;
  std::int64_t total = 0;
  for (const auto& t : h.tensors) {
    const ppdeploy::GgmlTypeTraits* traits = ppdeploy::FindGgmlType(t.ggml_type);
    Check(traits != nullptr && t.type_name == traits->name);
    Check(t.dims.size() <= 4);
    // A zero dimension makes an empty tensor whatever the others are (as in ggml's loader).
    const bool empty = std::find(t.dims.begin(), t.dims.end(), 0) != t.dims.end();
    std::int64_t n = 1;
    for (auto d : t.dims) {
      Check(d >= 0);
      if (!empty) Check(!__builtin_mul_overflow(n, d, &n));
    }
    if (empty) n = 0;
    Check((t.dims.empty() ? 1 : t.dims[0]) % traits->blck_size == 0);
    Check(t.bytes == n / traits->blck_size * traits->type_size);
    Check(t.offset % h.alignment == 0);
    Check(t.offset + static_cast<std::uint64_t>(t.bytes) <= static_cast<std::uint64_t>(h.data_section_bytes));
    spans.emplace_back(t.offset, t.offset + static_cast<std::uint64_t>(t.bytes));
    total += t.bytes;
    Check(!ppdeploy::GgufTensorNameToHf(t.name).empty() || t.name.empty());
  }
  Check(total == h.total_tensor_bytes);
  std::sort(spans.begin(), spans.end());
  for (std::size_t k = 1; k < spans.size(); ++k) Check(spans[k].first >= spans[k - 1].second);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const auto file_size = static_cast<std::int64_t>(size);
  GgufHeader whole;
  bool ok = false;
  try {
    whole = ppdeploy::ParseGgufFile(bytes, file_size, "fuzz.gguf");
    CheckInvariants(whole, size);
    ok = true;
  } catch (const ppdeploy::GgufNeedMoreBytes&) {
    Check(false);  // the whole file was given
  } catch (const ppdeploy::Error& e) {
    Check(std::strchr(e.what(), '\n') == nullptr && e.what()[0] != '\0');
  }
  // Half the file as a prefix of the same file: the same result, or a request for more bytes.
  try {
    GgufHeader h = ppdeploy::ParseGgufFile(bytes.substr(0, size / 2), file_size, "fuzz.gguf");
    Check(ok && h.tensors.size() == whole.tensors.size() && h.data_offset == whole.data_offset);
  } catch (const ppdeploy::GgufNeedMoreBytes& e) {
    Check(e.needed() > static_cast<std::int64_t>(size / 2) && e.needed() <= file_size);
  } catch (const ppdeploy::Error& e) {
    Check(!ok && std::strchr(e.what(), '\n') == nullptr);
  }
  return 0;
}
