// Deployment profile of `ppdeploy cmd|start|defaultcheck`: every launch setting, where its value
// came from, and the typed profile built from them.
//
// Precedence: CLI flag > environment variable > profile file (TOML) > built-in default
// (data/launch/defaults.toml, embedded). The environment variables keep the seed deploy.sh's
// names (digest §8: TP_SIZE, PP_SIZE, PP_LAYER_PARTITION, DISABLE_CUSTOM_ALL_REDUCE,
// ALLOW_UNVERIFIED_PP, FORCE_V2_RUNNER, MAX_MODEL_LEN, KV_CACHE_DTYPE, SPEC_METHOD, HF_OVERRIDES).
// Resolution is pure: the caller passes the environment as a lookup function and file texts.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ppdeploy::launch {

/// Where a setting's value came from.
enum class SettingSource { kDefault, kFile, kEnv, kFlag };

/// "default", "file", "env", "flag".
std::string_view SourceName(SettingSource source);

/// Static description of one setting.
struct SettingSpec {
  std::string_view key;      ///< TOML key and display name, e.g. "tp_size"
  std::string_view env;      ///< environment variable, e.g. "TP_SIZE"
  std::string_view alt_env;  ///< second environment variable read when `env` is unset ("" = none)
  std::string_view help;     ///< one line for --help
};

/// Every setting, in display order. The CLI flag of a setting is "--" + key with '_' -> '-'.
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
  std::string origin;  ///< "default", "file ppdeploy.toml", "env TP_SIZE", "flag --tp-size"
};

/// All settings after precedence, in SettingSpecs() order.
using ResolvedSettings = std::vector<SettingValue>;

/// Parses a flat TOML table of settings (the format of data/launch/defaults.toml and of
/// ppdeploy.toml) into key -> text. Integers and floats are written in their shortest form,
/// booleans as "1"/"0". Throws Error "<source>: ..." for malformed TOML, an unknown key (with the
/// list of known keys), a nested table or an array.
std::map<std::string, std::string> ParseSettingsToml(std::string_view text, const std::string& source);

/// Inputs of ResolveSettings.
struct SettingInputs {
  std::string defaults_text;     ///< TOML text of the built-in defaults (must define every key)
  std::string defaults_source;   ///< for messages, e.g. "built-in data/launch/defaults.toml"
  std::optional<std::string> file_text;  ///< profile file content, or nullopt when none
  std::string file_source;               ///< its path, for messages and origins
  std::function<std::optional<std::string>(std::string_view)> getenv;  ///< environment lookup
  std::map<std::string, std::string> flags;  ///< key -> value given on the command line
};

/// Applies precedence flag > env > file > default. Throws Error when the defaults miss a key or a
/// flag names an unknown key.
ResolvedSettings ResolveSettings(const SettingInputs& inputs);

/// The text of `key` in `settings` (throws Error when absent).
const SettingValue& Get(const ResolvedSettings& settings, std::string_view key);

/// The typed deployment profile. Units are in the names; token counts are tokens.
struct LaunchProfile {
  std::string model;              ///< planner preset name
  std::string model_path;         ///< path given to `vllm serve`
  std::string served_model_name;  ///< "" = not passed
  bool trust_remote_code = true;
  std::string gpu;                ///< planner GPU name
  std::string gpus;               ///< "0,1,2,3" or "all"
  int gpus_per_node = 8;
  std::vector<std::string> nodes;  ///< host names, first = head; empty = one local node
  std::string host;
  int port = 8000;
  std::string vllm_version;  ///< capability profile name
  std::string runtime;       ///< "docker" or "bare"
  std::string image;
  std::string docker_bin;
  std::string vllm_bin;
  std::string container_name;
  std::string shm_size;
  std::vector<std::string> volumes;  ///< docker -v specs
  int ray_port = 6379;
  int tp_size = 1;
  int pp_size = 1;
  std::string pp_layer_partition;  ///< raw text, checked by the split gate; "" = vLLM's default split
  bool disable_custom_all_reduce = false;
  bool allow_unverified_pp = false;
  bool allow_unchecked_indexer = false;  ///< waive the checkpoint check of the index_topk_pattern fix (printed loudly)
  std::string force_v2_runner;  ///< "", "0" or "1"
  std::int64_t max_model_len = 0;
  std::string kv_cache_dtype;
  double gpu_memory_utilization = 0.9;
  std::int64_t kv_cache_memory_bytes = 0;  ///< 0 = not passed
  std::string spec_method;                 ///< "auto", "mtp", "ngram" or "none"
  int num_spec_tokens = 0;
  std::string hf_overrides;  ///< JSON object text, "" = not passed

  /// Number of GPUs listed in `gpus` ("all" = gpus_per_node).
  int NumGpusListed() const;
};

/// Converts resolved settings to a typed profile. Throws Error naming the setting, its origin
/// and the bad value, e.g. `TP_SIZE (env TP_SIZE): expected an integer >= 1, got "x"`.
/// Value checks here are syntactic only (types, ranges, enums, JSON of hf_overrides); the
/// deployment rules are gates (gates.h).
LaunchProfile BuildProfile(const ResolvedSettings& settings);

}  // namespace ppdeploy::launch
