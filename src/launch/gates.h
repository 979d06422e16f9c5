// Launch gates of the seed's deploy.sh (docs/seed.md §8), as pure functions over the resolved
// deployment (deploy/resolve.h) and the planner's result for the launched layout.
//
// Every gate returns a CheckResult: pass (possibly with notices), warn (passes, but the operator
// must read it) or fail (the launch is refused, exit 1). The decisions that choose a value (the
// speculation method, the V2-runner pin, --disable-custom-all-reduce, the layer split) are the
// resolver's; RunGates lists them among the gates in the seed's order.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "deploy/check.h"
#include "deploy/resolve.h"
#include "layout/planner.h"

namespace ppdeploy::launch {

using GateStatus = CheckStatus;
using GateResult = CheckResult;

/// "pass", "warn", "FAIL".
inline std::string_view GateStatusName(GateStatus status) { return CheckStatusName(status); }

/// One layout the PP > 2 gate proposes instead, computed by the planner.
struct PpAlternative {
  std::string settings;                    ///< e.g. "TP_SIZE=4 PP_SIZE=2 PP_LAYER_PARTITION=41,37"
  std::int64_t kv_tokens = 0;              ///< the predicted pool
  std::int64_t largest_max_model_len = 0;  ///< the alternative's LayoutPlan::limit
  std::string limit_text = {};             ///< its LimitText (point estimate, low end, check)
};

/// PP > 2 on a DSA model with index sharing is refused: the seed measured PP=4 degenerating
/// 20% with speculation off and 45% with MTP k=3 (docs/seed.md §1, §11). `allow_unverified_pp`
/// (ALLOW_UNVERIFIED_PP=1) turns the refusal into a warning that asks for `ppdeploy degen`.
/// The refusal lists `alternatives` (planned layouts with PP <= 2 on the same GPUs).
GateResult CheckDsaPpGate(int pp_size, bool dsa_with_index_sharing, bool allow_unverified_pp,
                          const std::vector<PpAlternative>& alternatives);

/// DSA index-sharing facts of the launched split (docs/seed.md §7, docs/vllm-rules.md §1.3-§1.4).
struct IndexShareFacts {
  bool dsa_with_index_sharing = false;  ///< DSA model whose layers reuse a previous layer's top-k
  /// Per PP rank, the absolute layer ids that read a shared top-k buffer never written on that
  /// rank (they need Fix B's forced self-compute). Size pp_size; empty vectors = safe rank.
  std::vector<std::vector<int>> forced_layers_per_rank;
  /// `index_topk_pattern` that switches the forced layers to 'F' (fix B without a patch, issue 8);
  /// "" when no layer is forced.
  std::string pattern = {};
  /// Whether the served checkpoint could be checked for the forced layers' indexer tensors, and
  /// what is missing or mismatched (empty = all present).
  bool checkpoint_checked = false;
  std::vector<std::string> checkpoint_problems = {};
};

/// The facts of `plan` (its index-share analysis) plus the checkpoint check of the resolved
/// deployment's checkpoint headers.
IndexShareFacts IndexShareFactsOf(const ResolvedDeployment& d, const LayoutPlan& plan);

/// Index-share safety (docs/seed.md §7): on a DSA model with index sharing, a split whose ranks have
/// forced layers is refused unless the vLLM row carries Fix B.
GateResult CheckIndexShareSafety(const IndexShareFacts& facts, bool fix_b, std::string_view vllm_version);

/// Fix B without a patch (issue 8), for versions that read `index_topk_pattern`: merges
/// {"index_topk_pattern": facts.pattern} into `hf_overrides` (refusing to replace a different user
/// pattern) and writes the result to `merged_hf_overrides`; fails when the checkpoint lacks
/// indexer tensors for a forced layer, or could not be checked and ALLOW_UNCHECKED_INDEXER is
/// not set (then it passes with a loud warning).
GateResult CheckIndexSharePatternFix(const IndexShareFacts& facts, const std::string& hf_overrides,
                                     const std::string& model_path, bool allow_unchecked_indexer,
                                     std::string* merged_hf_overrides);

/// --kv-cache-dtype must be one the version accepts; --kv-cache-memory-bytes needs >= ~0.11; a
/// passed setting flag must exist in the version's release line and have the engine its settings
/// row needs (ServeArg first_line / last_line / needs_v0 in deploy/settings.h).
GateResult CheckVersionFlags(const ResolvedDeployment& d);

/// The layout must fit the GPUs given (TP x PP x DP, the planner's gpu-count problem), the GPUS
/// list must hold a node's share, and a layout above one node needs NODES (warning otherwise: the
/// preview uses placeholders); a TP group that spans nodes is refused (ALLOW_CROSS_NODE_TP=1: warns).
GateResult CheckGpuCount(const ResolvedDeployment& d, const LayoutPlan& plan);

/// The TP groups that span nodes of `per_node` GPUs, as "PP stage 1 on ranks 6-8 spans nodes 0-1"
/// (vLLM's rank order: DP, PP, TP from outer to inner; ranks fill the nodes in order). Empty = none.
std::vector<std::string> CrossNodeTpGroups(int tp, int pp, int dp, int per_node);

/// Multi-node only: the executor must exist in the version (native needs native_multinode), and
/// NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME must be set (passed to every node).
GateResult CheckMultiNode(const ResolvedDeployment& d);

/// Every problem of the plan but the GPU count (the gpus gate's) -> fail with the planner's figures, a
/// max_model_len above the plan's limit (LayoutPlan::limit, the point estimate) naming the largest that
/// fits; above the limit's low end -> warn.
GateResult CheckMemory(const LayoutPlan& plan);

struct GateReport {
  std::string hf_overrides;         ///< effective --hf-overrides (fix B's pattern merged in)
  std::vector<GateResult> results;  ///< in the seed's order
  bool Refused() const;             ///< any gate failed
};

/// Runs all gates in the seed's order: dsa-pp, layer-partition, index-share, v2-runner,
/// speculation, custom-all-reduce, version-flags, gpus, then multi-node (only with more than one
/// node), `nodes` (the probes' gate, launch/node_gates.h, when given), memory. `plan` is null when
/// the planner could not plan the deployment (`plan_error` says why; the memory gate fails with it).
/// Pure.
GateReport RunGates(const ResolvedDeployment& d, const LayoutPlan* plan, const std::string& plan_error,
                    const IndexShareFacts& index, const std::vector<PpAlternative>& alternatives,
                    const GateResult* nodes = nullptr);

}  // namespace ppdeploy::launch
