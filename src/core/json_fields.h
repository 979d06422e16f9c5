// Strict typed reads from nlohmann::json objects, with errors that name the source file,
// the JSON path and the bad value: `config.json: num_hidden_layers: expected a positive
// integer, got "78"`. A capacity planner must never silently default a wrong-typed field.
#pragma once

#include <algorithm>
#include <concepts>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ppdeploy {

/// Context for error messages: the source (file path or preset name) and the JSON path prefix.
struct JsonContext {
  std::string source;  ///< e.g. "/models/glm/config.json" or "preset glm-5.3-w4a16"
  std::string path;    ///< e.g. "quantization_config" ("" at top level)

  /// The context of a nested object.
  JsonContext Child(std::string_view key) const;
  /// "source: path.key" for messages.
  std::string Where(std::string_view key) const;
};

/// A short rendering of a JSON value for error messages (strings quoted, long values cut).
std::string ShortJson(const nlohmann::json& value);

/// Parses JSON text; on failure throws Error "<source>: malformed JSON: <parser message>". The message names the
/// line and column (1-based, columns in bytes) and, when the error is inside a value, the field's JSON path:
/// `cal.json: malformed JSON: line 9, column 27 (field ranks[0].available_kv_gib): number overflow parsing
/// '1e400'` (nlohmann reports only a byte offset for a number too large for a double).
nlohmann::json ParseJsonText(std::string_view text, const std::string& source);

/// Requires `obj` to be a JSON object (throws otherwise).
void RequireObject(const nlohmann::json& obj, const JsonContext& ctx);

/// One JSON value as an integer in [min, max] (both inclusive): a JSON integer, or an integral float below 9e15
/// (78.0 reads as 78, as Python's int() would) when `float_ok`. Anything else throws Error naming `where` and
/// the value: `c.json: layer_partition[1]: value 4294967335 is out of range (expected an integer from 0 to
/// 2147483647)`. The one integer check every JSON reader uses: a 64-bit value is never narrowed unchecked.
std::int64_t JsonIntValue(const nlohmann::json& v, const std::string& where, std::int64_t min, std::int64_t max,
                          bool float_ok = true);

/// Optional integer field: absent or null -> nullopt; non-integer or outside [min, max] -> Error.
std::optional<std::int64_t> OptInt(const nlohmann::json& obj, std::string_view key, const JsonContext& ctx,
                                   std::int64_t min = 0, std::int64_t max = std::numeric_limits<std::int64_t>::max());
/// Required integer field (missing, null, wrong type or outside [min, max] -> Error).
std::int64_t ReqInt(const nlohmann::json& obj, std::string_view key, const JsonContext& ctx, std::int64_t min = 1,
                    std::int64_t max = std::numeric_limits<std::int64_t>::max());
/// OptInt bounded by the range of the target type T (an `int` field refuses 2^32 + 39 instead of reading 39).
template <std::integral T>
std::optional<T> OptIntAs(const nlohmann::json& obj, std::string_view key, const JsonContext& ctx,
                          std::int64_t min = 0) {
  auto v = OptInt(obj, key, ctx, min, static_cast<std::int64_t>(std::numeric_limits<T>::max()));
  return v ? std::optional<T>(static_cast<T>(*v)) : std::nullopt;
}
/// ReqInt bounded by the range of the target type T.
template <std::integral T>
T ReqIntAs(const nlohmann::json& obj, std::string_view key, const JsonContext& ctx, std::int64_t min = 1) {
  return static_cast<T>(ReqInt(obj, key, ctx, min, static_cast<std::int64_t>(std::numeric_limits<T>::max())));
}
/// Optional list of integers, each in [min, max] and in range of T: absent or null -> empty; a non-list or a
/// bad element -> Error naming the element (`c.json: layer_partition[0]: ...`).
template <std::integral T>
std::vector<T> OptIntListAs(const nlohmann::json& obj, std::string_view key, const JsonContext& ctx,
                            std::int64_t min = 0,
                            std::int64_t max = static_cast<std::int64_t>(std::numeric_limits<T>::max()));

/// A decimal integer written as text (a Prometheus label value, a log field): optional '-', digits, nothing
/// else; nullopt for anything else, including a value outside int64.
std::optional<std::int64_t> ParseIntText(std::string_view text);
/// Optional number (integer or float); non-number -> Error. Must be >= min.
std::optional<double> OptNumber(const nlohmann::json& obj, std::string_view key, const JsonContext& ctx,
                                double min = 0.0);
/// Required number.
double ReqNumber(const nlohmann::json& obj, std::string_view key, const JsonContext& ctx, double min = 0.0);
/// Optional string; non-string -> Error.
std::optional<std::string> OptString(const nlohmann::json& obj, std::string_view key, const JsonContext& ctx);
/// Required string.
std::string ReqString(const nlohmann::json& obj, std::string_view key, const JsonContext& ctx);
/// Optional bool; non-bool -> Error.
std::optional<bool> OptBool(const nlohmann::json& obj, std::string_view key, const JsonContext& ctx);

/// The integers of list `key` (implementation of OptIntListAs).
std::vector<std::int64_t> OptIntList(const nlohmann::json& obj, std::string_view key, const JsonContext& ctx,
                                     std::int64_t min, std::int64_t max);

template <std::integral T>
std::vector<T> OptIntListAs(const nlohmann::json& obj, std::string_view key, const JsonContext& ctx, std::int64_t min,
                            std::int64_t max) {
  max = std::min(max, static_cast<std::int64_t>(std::numeric_limits<T>::max()));
  std::vector<T> out;
  for (std::int64_t v : OptIntList(obj, key, ctx, min, max)) out.push_back(static_cast<T>(v));
  return out;
}

}  // namespace ppdeploy
