// The model classes ppdeploy plans (data/architectures.json): each `architectures[0]` name with the
// KV-cache and weight rules it is sized by and the config keys those rules read. A class the table does not
// list is refused naming it, and so is a config key that changes the KV cache or the weights but that no
// rule reads (DeepSeek-V4's `compress_ratios`, Gemma-4's global-attention keys); an MLA class without its
// MLA fields is an error naming the field (docs/vllm-rules.md §3.1). Pure: no I/O.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ppdeploy {

/// How a class's KV cache and weights are sized.
enum class ArchitectureRules {
  kMla,              ///< MLA latent (DeepSeek-V2/V3, Kimi-K2)
  kMlaDsa,           ///< MLA + the DSA lightning indexer (DeepSeek-V3.2, GLM-5)
  kAttention,        ///< GQA / MHA / MQA with per-layer full, sliding-window or chunked-local kinds
  kLinearHybrid,     ///< linear / mamba layers with a recurrent state beside GQA attention layers
  kLinearHybridMla,  ///< linear layers beside MLA attention layers (Kimi-Linear)
  kAttentionFree,    ///< mamba layers only
};

struct ArchitectureEntry {
  std::string name;        ///< e.g. "DeepseekV3ForCausalLM"
  std::string rules_name;  ///< e.g. "mla" (a key of the table's `rules`)
  ArchitectureRules rules = ArchitectureRules::kAttention;
  std::string family;  ///< e.g. "DeepSeek-V3 / R1, Kimi-K2"
  std::string source;  ///< where the class is defined
  std::string kv;      ///< the rule's KV-cache sizing, in words
  /// Fields the rule cannot size the model without (their absence is an error naming the field).
  std::vector<std::string> required;
  std::vector<std::string> reads;  ///< the config keys the rule reads
  bool mla() const {
    return rules == ArchitectureRules::kMla || rules == ArchitectureRules::kMlaDsa ||
           rules == ArchitectureRules::kLinearHybridMla;
  }
};

/// A config key that changes the KV cache or the weights and is read by no rule.
struct UnreadKey {
  std::string key;
  std::string effect;                   ///< what it changes, for the refusal
  std::optional<nlohmann::json> inert;  ///< a value that changes nothing (e.g. attention_k_eq_v false)
};

/// Every class of data/architectures.json, in file order.
const std::vector<ArchitectureEntry>& Architectures();
/// The unread keys of data/architectures.json.
const std::vector<UnreadKey>& UnreadKeys();
/// The class named exactly `name`, or nullptr.
const ArchitectureEntry* FindArchitecture(std::string_view name);

}  // namespace ppdeploy
