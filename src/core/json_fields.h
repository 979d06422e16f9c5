// Strict typed reads from nlohmann::json objects, with errors that name the source file,
// the JSON path and the bad value: `config.json: num_hidden_layers: expected a positive
// integer, got "78"`. A capacity planner must never silently default a wrong-typed field.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

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

/// Parses JSON text; on failure throws Error "<source>: malformed JSON: <parser message>".
nlohmann::json ParseJsonText(std::string_view text, const std::string& source);

/// Requires `obj` to be a JSON object (throws otherwise).
void RequireObject(const nlohmann::json& obj, const JsonContext& ctx);

/// Optional integer field: absent or null -> nullopt; non-integer -> Error. `min` is inclusive.
std::optional<std::int64_t> OptInt(const nlohmann::json& obj, std::string_view key, const JsonContext& ctx,
                                   std::int64_t min = 0);
/// Required integer field (missing, null or wrong type -> Error). `min` is inclusive.
std::int64_t ReqInt(const nlohmann::json& obj, std::string_view key, const JsonContext& ctx, std::int64_t min = 1);
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

}  // namespace ppdeploy
