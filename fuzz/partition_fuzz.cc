// libFuzzer target: VLLM_PP_LAYER_PARTITION parsing (vLLM's get_pp_indices semantics). Must
// never crash; only ppdeploy::Error is allowed out of the parser.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/error.h"
#include "layout/partition.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  int pp = 1 + data[0] % 16;
  int layers = 1 + data[1];
  std::string_view text(reinterpret_cast<const char*>(data + 2), size - 2);
  try {
    auto parts = ppdeploy::ParsePartition(text, pp, layers);
    ppdeploy::ValidatePartitionForPlanning(parts);
    int start = 0;
    for (int r = 0; r < pp; ++r) start = ppdeploy::RankRange(parts, r).end;
    (void)start;
  } catch (const ppdeploy::Error&) {
  }
  try {
    (void)ppdeploy::DefaultPartition(layers, pp);
  } catch (const ppdeploy::Error&) {
  }
  return 0;
}
