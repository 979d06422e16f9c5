// libFuzzer target for the record splitter of the vLLM log reader (src/vllm/log_records.h): any byte sequence
// must split without a crash, a sanitizer report or an exception, and the records must keep the splitter's
// promises: every record has a message line, line numbers stay within the input and never go backwards inside a
// record, no byte is invented (the message text is at most the input), every record start the finder reports
// parses, and EscapeForMessage (core/escape.h) returns printable, valid UTF-8 for every record's text.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/escape.h"
#include "vllm/log_records.h"

namespace {

bool PrintableUtf8(const std::string& s) {
  for (std::size_t i = 0; i < s.size();) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f) return false;
    std::size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (std::size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return false;
    i += n;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  std::size_t message_bytes = 0;
  std::int64_t records = 0;
  ppdeploy::LogSplitStats st = ppdeploy::SplitLogRecords(text, [&](const ppdeploy::LogRecord& r) {
    ++records;
    if (r.lines.empty()) std::abort();
    if (r.line < 1) std::abort();
    std::int64_t prev = r.line;
    for (const auto& l : r.lines) {
      if (l.line < prev) std::abort();
      prev = l.line;
      message_bytes += l.text.size();
    }
    if (r.process.size() > 200 || r.source.size() > 400) std::abort();
    if (!PrintableUtf8(ppdeploy::EscapeForMessage(r.lines.front().text, 256))) std::abort();
  });
  if (records != st.records) std::abort();
  if (message_bytes > size) std::abort();
  if (st.lines < 0 || (size > 0 && st.lines == 0)) std::abort();
  for (std::size_t from : {std::size_t{0}, size / 2}) {
    std::size_t at = ppdeploy::FindLogRecordStart(text, from);
    if (at != std::string_view::npos && (at < from || !ppdeploy::ParseLogRecordStart(text, at))) std::abort();
  }
  return 0;
}
