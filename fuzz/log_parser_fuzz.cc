// libFuzzer target for ParseBootLog (src/vllm/log_parser.h): any byte sequence must parse without a crash,
// a sanitizer report or an exception, every string the parser returns must stay bounded, and the boots must
// tile the input in order (fuzz/log_records_fuzz.cc fuzzes the record splitter alone).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "vllm/log_parser.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  ppdeploy::BootLog log = ppdeploy::ParseBootLog(text);
  if (log.warnings.size() > ppdeploy::kMaxLogWarnings + 1) std::abort();
  if (log.lines < 0 || log.recognized_lines < 0 || static_cast<std::size_t>(log.recognized_lines) > size) std::abort();
  for (const auto& w : log.workers) {
    if (w.key.size() > size + 64) std::abort();
  }
  // Boots tile the input in order, the chosen one exists, a failure lies inside the file.
  if (log.boots != static_cast<std::int64_t>(log.boot_list.size())) std::abort();
  if (log.boot < 0 || log.boot > static_cast<int>(log.boot_list.size())) std::abort();
  if (!log.boot_list.empty() && log.boot == 0) std::abort();  // default choice: always some boot
  std::int64_t next = 1;
  for (const auto& b : log.boot_list) {
    if (b.first_line < next || b.last_line < b.first_line || b.last_line > std::max<std::int64_t>(1, log.lines))
      std::abort();
    // (a record rejoined after a restart may carry an earlier line: only the file's range holds)
    if (b.failure && (b.failure->line < 1 || b.failure->line > log.lines)) std::abort();
    if ((b.status == ppdeploy::BootStatus::kFailed) != b.failure.has_value()) std::abort();
    next = b.first_line + 1;
  }
  return 0;
}
