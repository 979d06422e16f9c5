// The one deployment request: every setting that changes memory or the launch, typed, with the
// origin of each value (flag, environment, profile file, default). `plan`'s flags and the
// launcher's settings both fill it (deploy/settings.h); ResolveDeployment (deploy/resolve.h)
// turns it into the resolved deployment every subcommand reads. Pure.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "deploy/settings.h"

namespace ppdeploy {

/// Typed settings. Units are in the names; token counts are tokens. 0 / "" = not passed (vLLM
/// decides), as in the settings table's vllm_default column (deploy/settings_table.cc). A
/// setting that only passes through to `vllm serve` has no field here: it is read from
/// `settings` (CanonicalValue) by the renderer.
struct DeploymentRequest {
  ResolvedSettings settings;  ///< the values as text, with their origins

  // What to serve.
  std::string model;              ///< planner model: preset, config.json path or checkpoint directory
  std::string model_path;         ///< path or HF id given to `vllm serve`
  std::string served_model_name;  ///< "" = not passed
  bool trust_remote_code = false;
  std::string dtype = "auto";  ///< --dtype
  std::string quantization;    ///< --quantization ("" = the checkpoint's)
  std::string hf_overrides;    ///< JSON object text, "" = not passed

  // Where.
  std::string gpu;                      ///< GPU type name (data/gpus.json)
  double gpu_total_gib = 0;             ///< torch-visible total override; 0 = the GPU table's
  std::vector<std::string> stage_gpus;  ///< GPU type per PP stage (mixed types); empty = `gpu` everywhere
  std::string gpus;                     ///< "0,1,2,3" or "all"
  int gpus_per_node = 8;
  std::vector<std::string> nodes;  ///< host names, first = head; empty = one local node
  int num_nodes = 1;               ///< nodes.size(), or the count given, or 1
  std::string host;
  int port = 8000;

  // Which vLLM.
  std::string vllm_version;  ///< as given; resolved to a row by ResolveVllmVersion
  std::string engine;        ///< "", "v0" or "v1" (VLLM_USE_V1 where a release ships both)
  bool mla_disable = false;  ///< VLLM_MLA_DISABLE=1
  std::string runtime;       ///< "docker" or "bare"
  std::string image, docker_bin, vllm_bin, container_name, shm_size;
  std::vector<std::string> volumes;  ///< docker -v specs
  int ray_port = 6379;

  // Multi-node.
  std::string executor = "auto";          ///< auto | ray | native (the resolver decides auto)
  std::vector<std::string> remote_shell;  ///< argv prefix; "{host}" in a word stands for the node
  std::string ray_bin = "ray";
  int master_port = 29501;                             ///< --master-port (native multi-node)
  std::string nccl_socket_ifname, gloo_socket_ifname;  ///< passed to every node ("" = not set)
  bool allow_cross_node_tp = false;

  // Parallel layout.
  int tp_size = 1, pp_size = 1, dp_size = 1, dcp_size = 1;
  bool enable_expert_parallel = false;
  std::string pp_layer_partition;  ///< raw text; "" = vLLM's default split
  bool disable_custom_all_reduce = false;
  bool allow_unverified_pp = false;
  bool allow_unchecked_indexer = false;
  std::string force_v2_runner;  ///< "", "0" or "1"

  // KV cache, context, batch.
  std::int64_t max_model_len = 0;  ///< 0 = the model's max_position_embeddings
  std::string kv_cache_dtype = "auto";
  int block_size = 0;                        ///< 0 = vLLM's for the backend
  double gpu_memory_utilization = 0;         ///< 0 = the version's default
  std::int64_t kv_cache_memory_bytes = 0;    ///< 0 = not passed
  std::int64_t num_gpu_blocks_override = 0;  ///< 0 = not passed
  int max_num_seqs = 0;                      ///< 0 = vLLM's default
  int max_num_batched_tokens = 0;            ///< 0 = vLLM's default
  bool enforce_eager = false;

  // Speculative decoding, as asked ("auto" is decided by the resolver).
  std::string spec_method = "auto";  ///< auto | mtp | ngram | none
  int num_spec_tokens = 3;

  std::vector<std::string> extra_vllm_args;  ///< passed to `vllm serve` as given
  std::string calibration;                   ///< path or embedded data/ name; "" = none

  /// GPUs used on each node: the ids listed in `gpus`, or gpus_per_node for "all".
  int GpusUsedPerNode() const;
  /// GPUs of the whole deployment.
  int TotalGpus() const { return GpusUsedPerNode() * num_nodes; }
  /// The SettingValue of `key` (origin included).
  const SettingValue& Setting(std::string_view key) const { return Get(settings, key); }
  /// Whether `key` was set by something other than vLLM's defaults.
  bool IsSet(std::string_view key) const { return Setting(key).source != SettingSource::kVllmDefault; }
};

/// Converts resolved settings to a typed request. Throws Error naming the setting, its origin
/// and the bad value (escaped), e.g. `tp_size (env TP_SIZE): expected an integer in [1, 4096], got "x"`.
/// Checks here are per setting (types and ranges from the settings table, enums, JSON, unique
/// GPU ids); every setting is checked, typed field or not. Rules between settings belong to the
/// resolver and the gates.
DeploymentRequest BuildRequest(const ResolvedSettings& settings);

/// A checked setting's value as `vllm serve` is given it: integers and byte sizes in decimal
/// ("20G" -> "21474836480"), numbers in their shortest form ("0.950" -> "0.95"), booleans "1" or
/// "0", text as it is. Throws Error (as BuildRequest) for a value BuildRequest refuses.
std::string CanonicalValue(const SettingValue& v);

/// Whether a checked setting holds vLLM's own default (compared in canonical form: "0" and "0.0").
bool IsVllmDefault(const SettingValue& v);

/// Parses vLLM's human-readable integers: "1k" = 1000, "1K" = 1024, "25.6G" (g = 10^9, G = 2^30).
/// `what` names the setting for messages.
std::int64_t ParseHumanReadableInt(std::string_view text, std::string_view what);

/// The settings as JSON [{"key","value","source","origin"}] (run state, `cmd --format json`).
nlohmann::ordered_json SettingsToJson(const ResolvedSettings& settings);

/// Reads settings written by SettingsToJson back, sources and origins as they were (every known
/// key must be present; unknown keys are skipped). Throws Error naming `source` for a malformed list.
/// A setting absent from `j` is taken from `missing_from` (vLLM's defaults: the launch that wrote
/// `j` did not know it, so did not pass it) when given and `j` holds at least one known setting;
/// otherwise it is an error.
ResolvedSettings SettingsFromJson(const nlohmann::json& j, const std::string& source,
                                  const ResolvedSettings* missing_from = nullptr);

}  // namespace ppdeploy
