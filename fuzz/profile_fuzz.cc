// libFuzzer target: bytes as a ppdeploy.toml profile -> the profile reader (deploy/settings.h
// ParseSettingsToml), then the settings resolved over the built-in vLLM defaults and default
// deployment and typed (deploy/request.h BuildRequest: ports, GPU ids, sizes, JSON overrides).
// Must never crash, leak or throw anything but ppdeploy::Error, and:
//  - every accepted key is a known setting and no value holds a NUL byte;
//  - every message is one line with nothing a terminal would hide or act on (core/escape.h:
//    valid UTF-8, no control character, no invisible code point), whatever bytes the file held.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/embedded_data.h"
#include "core/error.h"
#include "core/escape.h"
#include "deploy/request.h"
#include "deploy/settings.h"

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

void CheckMessage(std::string_view m) {
  Check(!m.empty());
  Check(ppdeploy::IsPrintableForMessage(m));
}

std::string Embedded(std::string_view path) {
  auto text = ppdeploy::FindEmbedded(path);
  Check(text.has_value());
  return std::string(*text);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string vllm_defaults = ppdeploy::VllmDefaultsToml();
  static const std::string defaults = Embedded("deployments/default.toml");
  std::string text(reinterpret_cast<const char*>(data), size);
  try {
    auto values = ppdeploy::ParseSettingsToml(text, "fuzz.toml");
    for (const auto& [key, value] : values) {
      Check(ppdeploy::FindSettingSpec(key) != nullptr);
      Check(value.find('\0') == std::string::npos);
    }
  } catch (const ppdeploy::Error& e) {
    CheckMessage(e.what());
    return 0;
  }
  try {
    ppdeploy::SettingInputs in;
    in.vllm_defaults_text = vllm_defaults;
    in.vllm_defaults_source = "vLLM defaults";
    in.defaults_text = defaults;
    in.defaults_source = "default.toml";
    in.file_text = text;
    in.file_source = "fuzz.toml";
    ppdeploy::BuildRequest(ppdeploy::ResolveSettings(in));
  } catch (const ppdeploy::Error& e) {
    CheckMessage(e.what());
  }
  return 0;
}
