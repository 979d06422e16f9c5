// libFuzzer target for ParseBootLog (src/vllm/log_parser.h): any byte sequence must parse without a crash,
// a sanitizer report or an exception, and every string the parser returns must stay bounded.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "vllm/log_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  ppdeploy::BootLog log = ppdeploy::ParseBootLog(text);
  if (log.warnings.size() > ppdeploy::kMaxLogWarnings + 1) std::abort();
  if (log.lines < 0 || log.recognized_lines > log.lines) std::abort();
  for (const auto& w : log.workers) {
    if (w.key.size() > size + 64) std::abort();
  }
  return 0;
}
