// Launch gates of the seed's deploy.sh (digest §8), as pure functions over plain values.
//
// Every gate returns a GateResult: pass (possibly with notices), warn (passes, but the operator
// must read it) or fail (the launch is refused, exit 1). Gates that also decide a value (the
// effective speculation method, the V2-runner pin, --disable-custom-all-reduce) return it next
// to their result. RunGates() runs them all in the seed's order and returns the effective
// profile that the renderer must use.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "launch/capabilities.h"
#include "launch/planner_facts.h"
#include "launch/profile.h"

namespace ppdeploy::launch {

enum class GateStatus { kPass, kWarn, kFail };

/// "pass", "warn", "FAIL".
std::string_view GateStatusName(GateStatus status);

struct GateResult {
  std::string gate;  ///< e.g. "dsa-pp", "layer-partition"
  GateStatus status = GateStatus::kPass;
  std::vector<std::string> messages;  ///< lines for the operator (figures included)
  bool Failed() const { return status == GateStatus::kFail; }
};

// --- DSA PP gate (seed check_pp_dsa_gate) --------------------------------------------------

/// PP > 2 on a DSA model with index sharing is refused: the seed measured PP=4 degenerating
/// 20% with speculation off and 45% with MTP k=3 (digest §1, §11). `allow_unverified_pp`
/// (ALLOW_UNVERIFIED_PP=1) turns the refusal into a warning that asks for `ppdeploy degen`.
GateResult CheckDsaPpGate(int pp_size, bool dsa_with_index_sharing, bool allow_unverified_pp);

// --- Layer split (seed check_pp_layer_partition; vLLM get_pp_indices, vllm-rules §1.4) -------

/// Parses VLLM_PP_LAYER_PARTITION exactly as vLLM does: split on ',', then Python int() on each
/// field (surrounding whitespace, a leading sign and '_' between digits accepted). nullopt when
/// vLLM would raise "Invalid partition string". Values are clamped to +-1e12.
std::optional<std::vector<std::int64_t>> ParsePartitionLikeVllm(std::string_view text);

/// vLLM's default split when VLLM_PP_LAYER_PARTITION is unset: the remainder goes one layer each
/// to partitions[-2], [-3], ... (get_pp_indices). E.g. (78, 4) -> 19,20,20,19.
std::vector<int> DefaultPartition(int num_hidden_layers, int pp_size);

struct PartitionCheck {
  GateResult result;
  std::vector<int> partition;  ///< effective layers per stage (vLLM default split when text is "")
  bool pass_env = false;       ///< inject VLLM_PP_LAYER_PARTITION (PP > 1 and text non-empty)
};

/// Segment count == pp_size, sum == num_hidden_layers, non-negative integers only; the messages
/// reuse vLLM's texts: "Invalid partition string: 41,x", "len(partitions)=3 does not match
/// pp_size=2.", "sum(partitions)=79 does not match num_hidden_layers=78.". pp_size <= 1 with a
/// partition only warns (vLLM ignores it) and the variable is not passed.
PartitionCheck CheckLayerPartition(std::string_view text, int pp_size, int num_hidden_layers);

/// Index-share safety (digest §7): on a DSA model with index sharing, a split whose ranks have
/// forced layers is refused unless the vLLM profile carries Fix B.
GateResult CheckIndexShareSafety(const IndexShareFacts& facts, bool fix_b, std::string_view vllm_version);

/// Fix B without a patch (issue 8), for versions that read `index_topk_pattern`: merges
/// {"index_topk_pattern": facts.pattern} into the profile's HF_OVERRIDES (refusing to replace a
/// different user pattern) and writes the result to `merged_hf_overrides`; fails when the
/// checkpoint lacks indexer tensors for a forced layer, or could not be checked and
/// ALLOW_UNCHECKED_INDEXER is not set (then it passes with a loud warning).
GateResult CheckIndexSharePatternFix(const IndexShareFacts& facts, const LaunchProfile& profile,
                                     std::string* merged_hf_overrides);

// --- Speculation and model runner (seed check_pp_mtp_compat / check_pp_ngram_compat /
// resolve_defaults) ---

struct RunnerDecision {
  GateResult result;
  std::optional<int> v2_env;  ///< value of VLLM_USE_V2_MODEL_RUNNER to inject, nullopt = none
};

/// FORCE_V2_RUNNER "" (auto) pins VLLM_USE_V2_MODEL_RUNNER=1 when PP > 1 (V2 silently falls back
/// to V1 for unsupported methods, and V1's PP + speculation is the broken path); "0"/"1" are
/// passed as given. "1" on a version without the V2 runner fails.
RunnerDecision ResolveV2Runner(std::string_view force_v2_runner, int pp_size, const VllmCapabilities& caps);

struct SpecDecision {
  GateResult result;
  std::string method;  ///< effective method: "mtp", "ngram" or "none"
};

/// SPEC_METHOD auto -> mtp when the model has MTP layers, else none; an auto-chosen MTP is
/// downgraded to none (notice) when PP > 1 and the version lacks PP + speculation. An explicit
/// mtp with PP > 1 on such a version fails, as does mtp on a model without MTP layers, and
/// ngram under the V2 runner (`v2_runner_on`) when the version does not support it.
SpecDecision ResolveSpeculation(std::string_view requested, int pp_size, int mtp_layers, bool v2_runner_on,
                                const VllmCapabilities& caps);

// --- Custom all-reduce ---

struct AllReduceDecision {
  GateResult result;
  bool disable_custom_all_reduce = false;
};

/// TP = 2 (including TP2/PP4) needs --disable-custom-all-reduce: otherwise CUDA-graph profiling
/// crashes in custom_all_reduce ('invalid argument', digest §8). Added with a notice.
AllReduceDecision CheckCustomAllReduce(int tp_size, bool disable_custom_all_reduce, const VllmCapabilities& caps);

// --- Flags of the version ---

/// --kv-cache-dtype must be one the version accepts; --kv-cache-memory-bytes needs >= ~0.11.
GateResult CheckVersionFlags(const LaunchProfile& profile, const VllmCapabilities& caps);

/// TP x PP GPUs must be listed in GPUS on one node; above GPUS_PER_NODE the layout is multi-node
/// and NODES should list the hosts (warning otherwise: the preview uses placeholders).
GateResult CheckGpuCount(const LaunchProfile& profile);

// --- Memory (from the planner) ---

/// Weights over budget -> fail with the planner's reason; max_model_len above the largest value
/// the predicted pool accepts -> fail naming that value.
GateResult CheckMemory(const MemoryFacts& facts, std::int64_t max_model_len);

// --- Everything ---

struct GateReport {
  LaunchProfile effective;  ///< profile after the gates' decisions (spec method, all-reduce)
  std::optional<int> v2_runner_env;  ///< VLLM_USE_V2_MODEL_RUNNER to inject
  bool pass_partition_env = false;   ///< inject VLLM_PP_LAYER_PARTITION
  std::vector<GateResult> results;   ///< in the seed's order
  bool Refused() const;              ///< any gate failed
  int ExitCode() const;              ///< 0, or 1 when refused
};

/// Runs all gates in the seed's order: dsa-pp, layer-partition, index-share, v2-runner,
/// speculation, custom-all-reduce, version-flags, gpus, memory. Pure given `facts`.
GateReport RunGates(const LaunchProfile& profile, PlannerFacts& facts, const VllmCapabilities& caps);

}  // namespace ppdeploy::launch
