// libFuzzer target: vLLM's /metrics text (vllm/metrics.h ParsePrometheusText) and the facts verify takes
// from it (probes/server_facts.h MetricsFacts). Must never crash or throw anything but ppdeploy::Error;
// every message is one line of valid UTF-8 with no control character; a pool that is reported is a
// count (>= 0), never a wrapped or negative product of the labels (num_gpu_blocks="-5" x block_size).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "core/error.h"
#include "core/escape.h"
#include "probes/server_facts.h"
#include "vllm/metrics.h"

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

void CheckMessage(std::string_view m) {
  Check(!m.empty() && !ppdeploy::FindInvalidUtf8(m).has_value());
  for (std::size_t pos = 0; pos < m.size();) {
    auto cp = ppdeploy::DecodeUtf8At(m, pos);
    Check(cp.has_value());
    Check(cp->code_point >= 0x20 && cp->code_point != 0x7F);
    pos += cp->length;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const auto samples = ppdeploy::ParsePrometheusText(text, "fuzz/metrics");
    const ppdeploy::probes::FactGroup g = ppdeploy::probes::MetricsFacts(samples, "fuzz/metrics");
    for (const char* key : {"kv_pool_tokens", "num_gpu_blocks", "block_size"})
      if (auto it = g.facts.find(key); it != g.facts.end())
        Check(it->is_number_integer() && it->get<std::int64_t>() >= 0);
  } catch (const ppdeploy::Error& e) {
    CheckMessage(e.what());
  }
  return 0;
}
