// What a vLLM version profile can do at launch time: which flags exist and which combinations
// work. Read from data/vllm/capabilities.json (embedded). Release <-> commit mapping is
// approximate (vllm-rules §0, §5.1).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ppdeploy::launch {

struct VllmCapabilities {
  std::string name;         ///< profile name, e.g. "0.30-custom"
  std::string description;  ///< one line
  bool speculative_config_json = true;  ///< `--speculative-config JSON` (else legacy --num-speculative-tokens)
  bool disable_custom_all_reduce = true;  ///< `--disable-custom-all-reduce` exists
  bool kv_cache_memory_bytes = false;     ///< `--kv-cache-memory-bytes` exists (#21489, ~v0.11)
  bool v2_model_runner_env = false;       ///< env VLLM_USE_V2_MODEL_RUNNER is read
  bool pp_speculation = false;            ///< PP > 1 + speculative decoding works (vllm-rules §1.11)
  bool ngram_under_v2 = false;            ///< ngram speculation supported by the V2 model runner
  bool native_multinode = false;          ///< `--nnodes/--node-rank/--master-addr/--headless`
  bool index_share_fix_b = false;         ///< the seed's Fix B (digest §7) is in the image
  bool index_share_fix_pattern = false;   ///< reads index_topk_pattern (main >= 2026-06-07): fix B as an override
  std::vector<std::string> kv_cache_dtypes;  ///< accepted --kv-cache-dtype values
};

/// Parses a capabilities document (schema "ppdeploy.vllm-capabilities/1") and returns the
/// profile `name`. Throws Error naming the source and field, or listing the known profiles.
VllmCapabilities ParseCapabilities(std::string_view json_text, const std::string& source, std::string_view name);

/// The profile `name` from the embedded data/vllm/capabilities.json.
VllmCapabilities LoadCapabilities(std::string_view name);

/// Profile names in the embedded table, sorted.
std::vector<std::string> CapabilityProfileNames();

}  // namespace ppdeploy::launch
