// libFuzzer target: the one VLLM_PP_LAYER_PARTITION parser (layout/partition.h), which mirrors
// CPython's int() per field and vLLM's get_pp_indices checks. Byte 0 picks pp_size (1-16), byte 1
// num_hidden_layers (1-256), the rest is the partition text. Must never crash or throw anything
// but ppdeploy::Error, and:
//  - an accepted split has pp_size entries summing to num_hidden_layers, and its canonical form
//    ("41,37") parses back to the same split;
//  - PythonInt's value is canonical ("-12", "0": no '+', no leading zeros, no "-0");
//  - every message is one line of valid UTF-8 with no control character and no invisible code
//    point left raw (core/escape.h), whatever bytes the text held.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/error.h"
#include "core/escape.h"
#include "layout/partition.h"

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

void CheckMessage(std::string_view m) {
  Check(!m.empty());
  Check(!ppdeploy::FindInvalidUtf8(m).has_value());
  for (std::size_t pos = 0; pos < m.size();) {
    auto cp = ppdeploy::DecodeUtf8At(m, pos);
    Check(cp.has_value());
    Check(cp->code_point >= 0x20 && cp->code_point != 0x7F && !ppdeploy::IsInvisibleCodePoint(cp->code_point));
    pos += cp->length;
  }
}

void CheckCanonical(const std::string& v) {
  std::string_view d = v;
  if (!d.empty() && d[0] == '-') d.remove_prefix(1);
  Check(!d.empty());
  for (char c : d) Check(c >= '0' && c <= '9');
  Check(d == "0" ? v == "0" : d[0] != '0');
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const int pp = 1 + data[0] % 16;
  const int layers = 1 + data[1];
  std::string_view text(reinterpret_cast<const char*>(data + 2), size - 2);
  try {
    auto parts = ppdeploy::ParsePartition(text, pp, layers);
    Check(static_cast<int>(parts.size()) == pp);
    long long sum = 0;
    for (int v : parts) sum += v;
    Check(sum == layers);
    Check(ppdeploy::ParsePartition(ppdeploy::FormatPartition(parts), pp, layers) == parts);
    ppdeploy::ValidatePartitionForPlanning(parts);
    int end = 0;
    for (int r = 0; r < pp; ++r) end = ppdeploy::RankRange(parts, r).end;
    Check(end == layers);
  } catch (const ppdeploy::Error& e) {
    CheckMessage(e.what());
  }
  auto one = ppdeploy::PythonInt(text);
  if (one.value)
    CheckCanonical(*one.value);
  else
    CheckMessage(one.why);
  if (!text.empty()) CheckMessage(ppdeploy::EscapeForMessage(text));
  try {
    (void)ppdeploy::DefaultPartition(layers, pp);
  } catch (const ppdeploy::Error& e) {
    CheckMessage(e.what());
  }
  return 0;
}
