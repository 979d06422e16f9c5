// The settings of a deployment: one table of every setting that changes memory or the launch
// (deploy/settings_table.cc), where each value came from, and the layered resolution that fills
// them. Each row names the setting's TOML key, environment variable, command-line flag (and its
// older spellings), vLLM's own default, the `vllm serve` flag it renders to or the vLLM
// environment variable it injects, and the release lines that flag exists in; `plan`, `cmd`,
// `start`, the renderer and the gates all read the row.
//
// Layers, lowest first: vLLM's own defaults (the table's vllm_default column) < the default
// deployment (data/deployments/default.toml, the seed; its model-specific values apply only
// while the model is the default deployment's) < a profile file (ppdeploy.toml, --profile)
// < environment variables (the seed deploy.sh's names) < command-line flags. `plan` and the
// launch commands are two front-ends that fill the same layers. Pure: the caller passes the
// environment as a lookup function and the file texts.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
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

/// The type of a setting's value (how TOML values and texts are read). kBytes: vLLM's
/// human-readable integers ("20G", "1.5g"; ParseHumanReadableInt in deploy/request.h).
enum class SettingType { kString, kInt, kFloat, kBool, kEnum, kJson, kBytes };

/// When a setting's `vllm serve` flag is passed.
enum class ServeWhen {
  kNotDefault,  ///< `--flag VALUE` (a kBool: `--flag` alone) when the value is not vLLM's default
  kAlways,      ///< `--flag VALUE` always (the seed's deploy.sh passes these explicitly)
  kDecided,     ///< rendered from the resolver's or the gates' decision (launch/render.cc), not the value
};

/// The `vllm serve` side of a setting.
struct ServeArg {
  std::string_view flag;  ///< e.g. "--tensor-parallel-size"; "" = not a `vllm serve` flag
  int order = 0;          ///< position among the settings' flags in the argv (ascending)
  ServeWhen when = ServeWhen::kNotDefault;
  /// The vLLM release lines (MAJOR.MINOR) the flag exists in, inclusive; "" = every row of
  /// data/vllm/versions.json. The version-flags gate refuses the flag elsewhere.
  std::string_view first_line = "", last_line = "";
  /// A value other than vLLM's default needs the V0 engine (the V1 engine refuses it).
  bool needs_v0 = false;
};

/// No upper limit for a kInt / kFloat setting.
inline constexpr double kNoLimit = std::numeric_limits<double>::infinity();

/// Static description of one setting (one row of deploy/settings_table.cc).
struct SettingSpec {
  std::string_view key;                     ///< TOML key and display name, e.g. "tp_size"
  std::string_view env;                     ///< environment variable, e.g. "TP_SIZE"
  std::string_view alt_env = "";            ///< second environment variable read when `env` is unset
  SettingType type = SettingType::kString;  ///< how values are read and checked
  std::string_view vllm_default = "";       ///< vLLM's own default as text: the lowest layer
  double min = 0, max = 0;                  ///< kInt / kFloat: accepted range, inclusive (max kNoLimit: none)
  std::string_view choices = "";            ///< kEnum: "a|b|c" ("" allowed when listed as an empty alternative, "|a|b")
  bool model_specific = false;              ///< dropped from the default deployment when another model is asked for
  std::string_view aliases = "";            ///< older spellings of the flag, comma-separated ("--tp"); kept working
  ServeArg serve = {};                      ///< the `vllm serve` flag it renders to
  std::string_view vllm_env = "";           ///< the vLLM environment variable it injects ("VLLM_PP_LAYER_PARTITION")
  std::string_view help;                    ///< one line for --help; "{flag}" / "{vllm_env}" stand for those columns
};

/// Every setting, in display order. The flag of a setting is "--" + key with '_' -> '-'.
std::span<const SettingSpec> SettingSpecs();

/// The spec of `key`, or nullptr.
const SettingSpec* FindSettingSpec(std::string_view key);

/// The setting whose `vllm serve` flag is `flag` ("--max-num-seqs" -> max_num_seqs), or nullptr.
const SettingSpec* FindSettingByServeFlag(std::string_view flag);

/// The `vllm serve` flag of `key` (throws Error when the setting has none).
std::string_view ServeFlagOf(std::string_view key);

/// The vLLM environment variable `key` injects (throws Error when the setting injects none).
std::string_view VllmEnvOf(std::string_view key);

/// "--tp-size" for "tp_size".
std::string FlagName(std::string_view key);

/// The older spellings of a setting's flag, in the row's order ({"--tp"} for tp_size).
std::vector<std::string> FlagAliases(const SettingSpec& spec);

/// The help line with the row's `vllm serve` flag and injected variable filled in.
std::string SettingHelp(const SettingSpec& spec);

/// vLLM's own defaults (the vllm_default column) as a TOML table, one key per setting: the
/// lowest layer, read like any other settings file.
std::string VllmDefaultsToml();

/// Why `spec`'s `vllm serve` flag cannot be passed to vLLM release line `line` ("0.26"; the row
/// `row` is named in the message) running the V0 engine or not, or nullopt when it can. Only
/// meaningful when the flag is passed (the value is not vLLM's default).
std::optional<std::string> ServeFlagVersionProblem(const SettingSpec& spec, std::string_view line, std::string_view row,
                                                   bool v0_engine);

/// One resolved setting: its value as text and where it came from.
struct SettingValue {
  std::string key;
  std::string value;
  SettingSource source = SettingSource::kDefault;
  std::string origin;  ///< "vLLM 0.19 default", "default deployment", "env TP_SIZE", "flag --tp" (deploy/layers.h)
};

/// All settings after precedence, in SettingSpecs() order.
using ResolvedSettings = std::vector<SettingValue>;

/// Parses a flat TOML table of settings into key -> text, checked against each setting's type:
/// integers for kInt (or a string of one), numbers for kFloat, booleans or 0/1 for kBool,
/// strings for the others. Integers and floats are written in their shortest form, booleans as
/// "1"/"0". Throws Error "<source>: line N: ..." for malformed TOML, an unknown key (with the list
/// of known keys), a wrongly typed value, a nested table, NUL bytes or invalid UTF-8.
std::map<std::string, std::string> ParseSettingsToml(std::string_view text, const std::string& source);

/// One value given by a front-end flag: the value text and the flag as the user typed it (for
/// the origin, e.g. "--tp").
struct FlagValue {
  std::string value;
  std::string flag;
};

/// Inputs of ResolveSettings.
struct SettingInputs {
  std::string vllm_defaults_text;        ///< TOML text of vLLM's own defaults (VllmDefaultsToml())
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

/// Applies precedence flag > env > file > default deployment > vLLM defaults. The default deployment's
/// model-specific settings are skipped unless it applies (deploy/layers.h DefaultDeploymentApplies, the one
/// decision). Throws Error when the vLLM defaults miss a key or a flag names an unknown key.
ResolvedSettings ResolveSettings(const SettingInputs& inputs);

/// The setting `key` of `settings` (throws Error when absent).
const SettingValue& Get(const ResolvedSettings& settings, std::string_view key);

/// Whether `s` is valid UTF-8.
bool IsValidUtf8(std::string_view s);

}  // namespace ppdeploy
