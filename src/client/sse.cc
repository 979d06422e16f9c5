#include "client/sse.h"

namespace ppdeploy::client {

bool SseParser::Feed(std::string_view bytes, std::vector<SseEvent>& events) {
  if (!error_.empty()) return false;
  for (char c : bytes) {
    if (c == '\0') {
      error_ = "NUL byte in event stream";
      return false;
    }
    if (c == '\n' && last_was_cr_) {  // the "\n" of "\r\n": the line was already ended by "\r"
      last_was_cr_ = false;
      continue;
    }
    last_was_cr_ = (c == '\r');
    if (c == '\n' || c == '\r') {
      ProcessLine(line_, events);
      line_.clear();
      continue;
    }
    if (line_.size() >= max_line_bytes_) {
      error_ = "event-stream line longer than " + std::to_string(max_line_bytes_) + " bytes";
      return false;
    }
    line_.push_back(c);
  }
  return true;
}

void SseParser::ProcessLine(std::string_view line, std::vector<SseEvent>& events) {
  if (line.empty()) {  // blank line: dispatch
    if (has_data_) events.push_back(std::move(pending_));
    pending_ = SseEvent{};
    has_fields_ = false;
    has_data_ = false;
    return;
  }
  if (line.front() == ':') return;  // comment
  std::string_view field = line, value;
  if (auto colon = line.find(':'); colon != std::string_view::npos) {
    field = line.substr(0, colon);
    value = line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  }
  has_fields_ = true;
  if (field == "data") {
    if (has_data_) pending_.data.push_back('\n');
    pending_.data.append(value);
    has_data_ = true;
  } else if (field == "event") {
    pending_.event.assign(value);
  } else if (field == "id") {
    pending_.id.assign(value);
  }  // "retry" and unknown fields are ignored (spec)
}

bool ParseSse(std::string_view bytes, std::vector<SseEvent>& events, std::size_t max_line_bytes) {
  SseParser parser(max_line_bytes);
  return parser.Feed(bytes, events);
}

}  // namespace ppdeploy::client
