// Server-Sent Events framing (WHATWG HTML "event stream interpretation"), as used by OpenAI-compatible
// streaming endpoints (vLLM serving_chat.py / serving_completion.py emit "data: {json}\n\n" and a final
// "data: [DONE]\n\n"; the OpenAI Responses API adds "event: <type>" lines).
//
// Pure: no I/O, no clocks. Feed it bytes in arbitrary pieces (as they come off the socket); it returns the
// complete events. Line endings "\n", "\r\n" and "\r" are accepted; ":" comment lines are ignored;
// multiple "data:" lines of one event are joined with "\n". A line longer than `max_line_bytes` makes
// the parser fail (it never grows without bound on a hostile stream).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace ppdeploy::client {

/// One dispatched SSE event.
struct SseEvent {
  std::string event;  ///< the "event:" field ("" when absent: the default "message" type)
  std::string data;   ///< the "data:" lines joined with "\n"
  std::string id;     ///< the "id:" field ("" when absent)
};

/// Incremental SSE parser.
class SseParser {
 public:
  explicit SseParser(std::size_t max_line_bytes = 16 << 20) : max_line_bytes_(max_line_bytes) {}

  /// Consumes `bytes` and appends every event completed by them to `events`. Returns false (and keeps
  /// returning false) once the stream is malformed: a line over `max_line_bytes`, or a NUL byte.
  bool Feed(std::string_view bytes, std::vector<SseEvent>& events);

  /// True when a partial line or an undispatched event is buffered (a stream that ends here was cut).
  bool HasPartial() const { return !line_.empty() || has_fields_; }
  /// Why Feed returned false ("" while healthy).
  const std::string& error() const { return error_; }

 private:
  void ProcessLine(std::string_view line, std::vector<SseEvent>& events);

  std::size_t max_line_bytes_;
  std::string line_;
  bool last_was_cr_ = false;
  bool has_fields_ = false;
  bool has_data_ = false;
  SseEvent pending_;
  std::string error_;
};

/// Parses a whole buffer in one go (helper for tests and the fuzz target). Returns false when malformed.
bool ParseSse(std::string_view bytes, std::vector<SseEvent>& events, std::size_t max_line_bytes = 16 << 20);

}  // namespace ppdeploy::client
