#include "core/json_fields.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <tuple>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/escape.h"

namespace ppdeploy {

JsonContext JsonContext::Child(std::string_view key) const {
  return JsonContext{source, path.empty() ? std::string(key) : path + "." + std::string(key)};
}

std::string JsonContext::Where(std::string_view key) const {
  // Keys come from the file: "name\u0000" or a bidi override in a key must not reach the message raw.
  std::string p = EscapeForMessage(path.empty() ? std::string(key) : path + "." + std::string(key), 0);
  return source.empty() ? p : EscapeForMessage(source, 0) + ": " + p;
}

std::string ShortJson(const nlohmann::json& value) {
  // dump() escapes control characters as \u00XX and replaces invalid UTF-8 in strings by U+FFFD;
  // EscapeForMessage names invisible code points and cuts on a character boundary.
  std::string s = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (s.size() <= 60) return EscapeForMessage(s, 0);
  std::size_t cut = 57;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;  // dump() output is UTF-8
  return EscapeForMessage(std::string_view(s).substr(0, cut), 0) + "...";
}

namespace {

// A second pass over a text that failed to parse, with nlohmann's SAX interface: it keeps the JSON path of the
// value being read and the parser's error position, so that the message can name the field, the line and the
// column (nlohmann's own message has only a byte offset for a number overflow, and never a path).
class PathTrackingSax : public nlohmann::json_sax<nlohmann::json> {
 public:
  bool null() override { return Value(); }
  bool boolean(bool) override { return Value(); }
  bool number_integer(number_integer_t) override { return Value(); }
  bool number_unsigned(number_unsigned_t) override { return Value(); }
  bool number_float(number_float_t, const string_t&) override { return Value(); }
  bool string(string_t&) override { return Value(); }
  bool binary(binary_t&) override { return Value(); }
  bool start_object(std::size_t) override { return Value() && Push(false); }
  bool key(string_t& k) override {
    if (!frames_.empty()) frames_.back().key = k;
    return true;
  }
  bool end_object() override { return Pop(); }
  bool start_array(std::size_t) override { return Value() && Push(true); }
  bool end_array() override { return Pop(); }
  bool parse_error(std::size_t position, const std::string& token, const nlohmann::detail::exception& ex) override {
    failed = true;
    position_ = position;
    token_ = token;
    message_ = ex.what();
    field_ = Path();
    return false;
  }

  bool failed = false;
  std::size_t position_ = 0;
  std::string token_, message_, field_;

 private:
  struct Frame {
    bool array = false;
    std::size_t next = 0;  // elements of an array seen so far
    std::string key;       // the current key of an object
  };
  bool Value() {
    if (!frames_.empty() && frames_.back().array) ++frames_.back().next;
    return true;
  }
  bool Push(bool array) {
    frames_.push_back(Frame{array, 0, {}});
    return true;
  }
  bool Pop() {
    if (!frames_.empty()) frames_.pop_back();
    return true;
  }
  // "ranks[0].available_kv_gib": the failing element of the innermost array is the next one, not yet counted.
  std::string Path() const {
    std::string p;
    for (std::size_t i = 0; i < frames_.size(); ++i) {
      const Frame& f = frames_[i];
      if (f.array)
        p += fmt::format("[{}]", i + 1 == frames_.size() ? f.next : f.next - 1);
      else if (!f.key.empty())
        p += (p.empty() ? "" : ".") + f.key;
    }
    return p;
  }

  std::vector<Frame> frames_;
};

// 1-based line and byte column of byte `offset` of `text`.
std::pair<std::size_t, std::size_t> LineColumn(std::string_view text, std::size_t offset) {
  offset = std::min(offset, text.size());
  const std::string_view before = text.substr(0, offset);
  const std::size_t line = 1 + static_cast<std::size_t>(std::count(before.begin(), before.end(), '\n'));
  const std::size_t nl = before.rfind('\n');
  return {line, nl == std::string_view::npos ? offset + 1 : offset - nl};
}

// (L, C) of nlohmann's "parse error at line L, column C: ...", or nullopt.
std::optional<std::pair<std::size_t, std::size_t>> NlohmannLineColumn(std::string_view msg) {
  constexpr std::string_view kLine = "parse error at line ", kColumn = ", column ";
  if (!msg.starts_with(kLine)) return std::nullopt;
  std::size_t line = 0, column = 0;
  const char* p = msg.data() + kLine.size();
  const char* end = msg.data() + msg.size();
  auto r = std::from_chars(p, end, line);
  if (r.ec != std::errc() || std::string_view(r.ptr, end - r.ptr).substr(0, kColumn.size()) != kColumn)
    return std::nullopt;
  if (std::from_chars(r.ptr + kColumn.size(), end, column).ec != std::errc()) return std::nullopt;
  return std::make_pair(line, column);
}

[[noreturn]] void FailParse(std::string_view text, const std::string& source, const PathTrackingSax& sax) {
  std::string msg = sax.message_;
  // nlohmann prefixes "[json.exception.parse_error.101] "; a syntax error then says "parse error at line L,
  // column C: " (kept as nlohmann counts it), a number overflow (out_of_range.406) only its token, found here
  // before the parser's position.
  if (auto pos = msg.find("] "); pos != std::string::npos) msg = msg.substr(pos + 2);
  std::size_t line = 0, column = 0;
  if (auto lc = NlohmannLineColumn(msg)) {
    std::tie(line, column) = *lc;
    if (auto colon = msg.find(": "); colon != std::string::npos) msg = msg.substr(colon + 2);
  } else {
    std::size_t start = sax.token_.empty() ? std::string_view::npos : text.rfind(sax.token_, sax.position_);
    std::tie(line, column) = LineColumn(text, start == std::string_view::npos ? sax.position_ : start);
  }
  Fail("{}: malformed JSON: line {}, column {}{}: {}", EscapeForMessage(source, 0), line, column,
       sax.field_.empty() ? "" : fmt::format(" (field {})", EscapeForMessage(sax.field_, 200)),
       EscapeForMessage(msg, 300));
}

}  // namespace

nlohmann::json ParseJsonText(std::string_view text, const std::string& source) {
  if (auto nul = text.find('\0'); nul != std::string_view::npos)
    Fail("{}: malformed JSON: NUL byte at offset {}", EscapeForMessage(source, 0), nul);
  // JSON text is UTF-8 (RFC 8259 section 8.1; Python's json.loads on bytes decodes it strictly).
  // Checked first so that no raw byte of a broken file reaches the parser's message.
  if (auto bad = FindInvalidUtf8(text))
    Fail("{}: malformed JSON: invalid UTF-8 at byte offset {} (byte 0x{:02x})", EscapeForMessage(source, 0), *bad,
         static_cast<unsigned char>(text[*bad]));
  // Bounded nesting: deeper documents would exhaust the stack when destroyed or printed.
  constexpr int kMaxDepth = 256;
  auto limit_depth = [&](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
    if (depth > kMaxDepth)
      Fail("{}: malformed JSON: nested deeper than {} levels", EscapeForMessage(source, 0), kMaxDepth);
    return true;
  };
  std::string first_message;
  try {
    return nlohmann::json::parse(text.begin(), text.end(), limit_depth);
  } catch (const nlohmann::json::exception& e) {
    first_message = e.what();
  }
  PathTrackingSax sax;
  nlohmann::json::sax_parse(text.begin(), text.end(), &sax);
  if (!sax.failed) {  // not expected: the same parser; keep its first word
    sax.message_ = first_message;
    sax.position_ = sax.token_.size();
  }
  FailParse(text, source, sax);
}

void RequireObject(const nlohmann::json& obj, const JsonContext& ctx) {
  if (!obj.is_object())
    Fail("{}: expected a JSON object, got {}",
         EscapeForMessage(ctx.path.empty() ? ctx.source : ctx.source + ": " + ctx.path, 0), ShortJson(obj));
}

namespace {
const nlohmann::json* Find(const nlohmann::json& obj, std::string_view key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(std::string(key));
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}
}  // namespace

std::int64_t JsonIntValue(const nlohmann::json& v, const std::string& where, std::int64_t min, std::int64_t max,
                          bool float_ok) {
  std::int64_t value = 0;
  if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)) {
    Fail("{}: value {} is out of range (expected an integer from {} to {})", where, ShortJson(v), min, max);
  } else if (v.is_number_integer()) {
    value = v.get<std::int64_t>();
  } else if (float_ok && v.is_number_float() && std::isfinite(v.get<double>()) &&
             v.get<double>() == std::floor(v.get<double>()) && std::fabs(v.get<double>()) < 9.0e15) {
    value = static_cast<std::int64_t>(v.get<double>());  // 78.0 is accepted as 78, as Python would
  } else {
    Fail("{}: expected an integer, got {}", where, ShortJson(v));
  }
  if (value < min && max == std::numeric_limits<std::int64_t>::max())
    Fail("{}: expected an integer >= {}, got {}", where, min, value);
  if (value < min || value > max)
    Fail("{}: value {} is out of range (expected an integer from {} to {})", where, value, min, max);
  return value;
}

std::optional<std::int64_t> OptInt(const nlohmann::json& obj, std::string_view key, const JsonContext& ctx,
                                   std::int64_t min, std::int64_t max) {
  const nlohmann::json* v = Find(obj, key);
  if (!v) return std::nullopt;
  return JsonIntValue(*v, ctx.Where(key), min, max);
}

std::vector<std::int64_t> OptIntList(const nlohmann::json& obj, std::string_view key, const JsonContext& ctx,
                                     std::int64_t min, std::int64_t max) {
  std::vector<std::int64_t> out;
  const nlohmann::json* v = Find(obj, key);
  if (!v) return out;
  if (!v->is_array()) Fail("{}: expected a list of integers, got {}", ctx.Where(key), ShortJson(*v));
  for (std::size_t i = 0; i < v->size(); ++i)
    out.push_back(JsonIntValue((*v)[i], ctx.Where(fmt::format("{}[{}]", key, i)), min, max));
  return out;
}

std::optional<std::int64_t> ParseIntText(std::string_view text) {
  std::int64_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
  return v;
}

std::int64_t ReqInt(const nlohmann::json& obj, std::string_view key, const JsonContext& ctx, std::int64_t min,
                    std::int64_t max) {
  auto v = OptInt(obj, key, ctx, min, max);
  if (!v) Fail("{}: required field is missing", ctx.Where(key));
  return *v;
}

std::optional<double> OptNumber(const nlohmann::json& obj, std::string_view key, const JsonContext& ctx, double min) {
  const nlohmann::json* v = Find(obj, key);
  if (!v) return std::nullopt;
  if (!v->is_number()) Fail("{}: expected a number, got {}", ctx.Where(key), ShortJson(*v));
  double d = v->get<double>();
  if (!std::isfinite(d) || d < min) Fail("{}: expected a number >= {}, got {}", ctx.Where(key), min, ShortJson(*v));
  return d;
}

double ReqNumber(const nlohmann::json& obj, std::string_view key, const JsonContext& ctx, double min) {
  auto v = OptNumber(obj, key, ctx, min);
  if (!v) Fail("{}: required field is missing", ctx.Where(key));
  return *v;
}

std::optional<std::string> OptString(const nlohmann::json& obj, std::string_view key, const JsonContext& ctx) {
  const nlohmann::json* v = Find(obj, key);
  if (!v) return std::nullopt;
  if (!v->is_string()) Fail("{}: expected a string, got {}", ctx.Where(key), ShortJson(*v));
  return v->get<std::string>();
}

std::string ReqString(const nlohmann::json& obj, std::string_view key, const JsonContext& ctx) {
  auto v = OptString(obj, key, ctx);
  if (!v) Fail("{}: required field is missing", ctx.Where(key));
  return *v;
}

std::optional<bool> OptBool(const nlohmann::json& obj, std::string_view key, const JsonContext& ctx) {
  const nlohmann::json* v = Find(obj, key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) Fail("{}: expected true or false, got {}", ctx.Where(key), ShortJson(*v));
  return v->get<bool>();
}

}  // namespace ppdeploy
