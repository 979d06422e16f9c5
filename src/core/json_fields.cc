#include "core/json_fields.h"

#include <cmath>

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
  try {
    return nlohmann::json::parse(text.begin(), text.end(), limit_depth);
  } catch (const nlohmann::json::exception& e) {
    std::string msg = e.what();
    // nlohmann prefixes "[json.exception.parse_error.101] "; keep the human part.
    if (auto pos = msg.find("] "); pos != std::string::npos) msg = msg.substr(pos + 2);
    Fail("{}: malformed JSON: {}", EscapeForMessage(source, 0), EscapeForMessage(msg, 300));
  }
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

std::optional<std::int64_t> OptInt(const nlohmann::json& obj, std::string_view key, const JsonContext& ctx,
                                   std::int64_t min) {
  const nlohmann::json* v = Find(obj, key);
  if (!v) return std::nullopt;
  std::int64_t value = 0;
  if (v->is_number_integer()) {
    if (v->is_number_unsigned() && v->get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX))
      Fail("{}: value {} is too large", ctx.Where(key), ShortJson(*v));
    value = v->get<std::int64_t>();
  } else if (v->is_number_float() && std::isfinite(v->get<double>()) && v->get<double>() == std::floor(v->get<double>()) &&
             std::fabs(v->get<double>()) < 9.0e15) {
    value = static_cast<std::int64_t>(v->get<double>());  // 78.0 is accepted as 78, as Python would
  } else {
    Fail("{}: expected an integer, got {}", ctx.Where(key), ShortJson(*v));
  }
  if (value < min) Fail("{}: expected an integer >= {}, got {}", ctx.Where(key), min, value);
  return value;
}

std::int64_t ReqInt(const nlohmann::json& obj, std::string_view key, const JsonContext& ctx, std::int64_t min) {
  auto v = OptInt(obj, key, ctx, min);
  if (!v) Fail("{}: required field is missing", ctx.Where(key));
  return *v;
}

std::optional<double> OptNumber(const nlohmann::json& obj, std::string_view key, const JsonContext& ctx,
                                double min) {
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
