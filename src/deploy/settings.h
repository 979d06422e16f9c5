// The settings of a deployment: one table of every setting that changes memory or the launch,
// where each value came from, and the layered resolution that fills them.
//
// Layers, lowest first: vLLM's own defaults (data/deployments/vllm-defaults.toml) < the default
// deployment (data/deployments/default.toml, the seed; its model-specific values apply only
// while the model is the default deployment's) < a profile file (ppdeploy.toml, --profile)
// < environment variables (the seed deploy.sh's names) < command-line flags. `plan` and the
// launch commands are two front-ends that fill the same layers. Pure: the caller passes the
// environment as a lookup function and the file texts.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ppdeploy {

/// Where a setting's value came from.
enum class SettingSource { kVllmDefault, kDefault, kFile, kEnv, kFlag, kState };

/// "vllm-default", "default", "file", "env", "flag", "state".
std::string_view SourceName(SettingSource source);

/// The type of a setting's value (how TOML values and texts are read).
enum class SettingType { kString, kInt, kFloat, kBool, kEnum, kJson };

/// Static description of one setting.
struct SettingSpec {
  std::string_view key;      ///< TOML key and display name, e.g. "tp_size"
  std::string_view env;      ///< environment variable, e.g. "TP_SIZE"
  std::string_view alt_env;  ///< second environment variable read when `env` is unset ("" = none)
  SettingType type = SettingType::kString;
  std::string_view choices;     ///< kEnum: "a|b|c" ("" allowed when listed as an empty alternative, "|a|b")
  bool model_specific = false;  ///< dropped from the default deployment when another model is asked for
  std::string_view help;        ///< one line for --help
};

/// Every setting, in display order. The launch flag of a setting is "--" + key with '_' -> '-'.
std::span<const SettingSpec> SettingSpecs();

/// The spec of `key`, or nullptr.
const SettingSpec* FindSettingSpec(std::string_view key);

/// "--tp-size" for "tp_size".
std::string FlagName(std::string_view key);

/// One resolved setting: its value as text and where it came from.
struct SettingValue {
  std::string key;
  std::string value;
  SettingSource source = SettingSource::kDefault;
  std::string origin;  ///< "default", "file ppdeploy.toml", "env TP_SIZE", "flag --tp", "state (env TP_SIZE)"
};

/// All settings after precedence, in SettingSpecs() order.
using ResolvedSettings = std::vector<SettingValue>;

/// Parses a flat TOML table of settings into key -> text, checked against each setting's type:
/// integers for kInt (or a string of one), numbers for kFloat, booleans or 0/1 for kBool,
/// strings for the others. Integers and floats are written in their shortest form, booleans as
/// "1"/"0". Throws Error "<source>: line N: ..." for malformed TOML, an unknown key (with the list
/// of known keys), a wrongly typed value, a nested table, NUL bytes or invalid UTF-8.
std::map<std::string, std::string> ParseSettingsToml(std::string_view text, const std::string& source);

/// One value given by a front-end flag: the setting key, the value text, and the flag as the
/// user typed it (for the origin, e.g. "--tp").
struct FlagValue {
  std::string value;
  std::string flag;
};

/// Inputs of ResolveSettings.
struct SettingInputs {
  std::string vllm_defaults_text;        ///< TOML text of vLLM's own defaults (must define every key)
  std::string vllm_defaults_source;      ///< for messages
  std::string defaults_text;             ///< TOML text of the default deployment
  std::string defaults_source;           ///< for messages, e.g. "built-in data/deployments/default.toml"
  std::optional<std::string> file_text;  ///< profile file content, or nullopt when none
  std::string file_source;               ///< its path, for messages and origins
  std::function<std::optional<std::string>(std::string_view)> getenv;  ///< environment lookup (null = none)
  std::map<std::string, FlagValue> flags;                              ///< key -> value given on the command line
  /// Whether two model settings name the same model (preset aliases, paths); default: equal text.
  std::function<bool(const std::string&, const std::string&)> same_model;
};

/// Applies precedence flag > env > file > default deployment > vLLM defaults. The default
/// deployment's model-specific settings are skipped when the resolved `model` is not the default
/// deployment's model. Throws Error when the vLLM defaults miss a key or a flag names an unknown key.
ResolvedSettings ResolveSettings(const SettingInputs& inputs);

/// The setting `key` of `settings` (throws Error when absent).
const SettingValue& Get(const ResolvedSettings& settings, std::string_view key);

/// Whether `s` is valid UTF-8.
bool IsValidUtf8(std::string_view s);

}  // namespace ppdeploy
