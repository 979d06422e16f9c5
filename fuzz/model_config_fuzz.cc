// libFuzzer target: bytes as config.json text -> ParseModelConfigText. Must never crash, leak or
// throw anything but ppdeploy::Error (one-line message).
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "core/error.h"
#include "model/config.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    ppdeploy::ModelConfig m = ppdeploy::ParseModelConfigText(text, "config.json");
    for (int i = 0; i < m.num_hidden_layers + m.MtpLayers() && i < 1000; ++i) (void)m.IsMoeLayer(i);
  } catch (const ppdeploy::Error& e) {
    if (std::strchr(e.what(), '\n') != nullptr) std::abort();
  }
  return 0;
}
