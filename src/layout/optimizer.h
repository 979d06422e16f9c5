// Pipeline split optimiser (issue 3): for a TP x PP layout, the layer split that maximises the KV
// pool (min over ranks of blocks), tie-broken by compute balance in layer-equivalents (the last
// stage's MTP forwards counted k times, docs/seed.md §6). Exact: dynamic programming over
// (rank, last layer) with O(1) stage evaluation from prefix sums, O(PP x L^2); not an
// enumeration of compositions. Every figure equals PlanLayout's for the same split.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "layout/planner.h"

namespace ppdeploy {

struct OptimizeOptions {
  bool zero_dependency = false;               ///< only splits with no fix-B forced layers
  std::optional<double> max_imbalance;        ///< max / min stage layer-equivalents, e.g. 1.10
  int min_layers_per_stage = 1;
};

/// One candidate split with its exact pool.
struct SplitCandidate {
  std::vector<int> partition;
  std::int64_t num_gpu_blocks = 0;
  std::int64_t kv_tokens = 0;
  int binding_rank = 0;
  double compute_balance = 0;       ///< max / min layer-equivalents
  std::vector<double> layer_equivalents;
  std::vector<int> forced_layers;   ///< all ranks
  bool zero_dependency = true;
  bool is_default = false;
  bool is_optimum = false;
  std::optional<std::int64_t> measured_kv_tokens;  ///< from the calibration when it is this split
  double delta_vs_default = 0;      ///< kv_tokens / default kv_tokens - 1
};

struct OptimizeResult {
  int tensor_parallel_size = 1;
  int pipeline_parallel_size = 1;
  SplitCandidate best;
  SplitCandidate default_split;
  std::vector<SplitCandidate> table;  ///< candidates near the optimum, the default and the best
                                      ///< zero-dependency split, sorted by partition
  std::int64_t evaluations = 0;       ///< stage evaluations the search made
};

/// Finds the best split. Throws Error when no split satisfies the options, or for vLLM profiles
/// whose pool is not a per-rank minimum (v0.8, the v0.11-v0.15 DSA + PP global-page bug).
OptimizeResult OptimizeSplit(const Deployment& d, int tensor_parallel_size, int pipeline_parallel_size,
                             const OptimizeOptions& options = {});

/// Evaluates one split with the optimiser's O(1)-per-stage model (used by tests to prove it
/// equals PlanLayout).
SplitCandidate EvaluateSplit(const Deployment& d, int tensor_parallel_size, const std::vector<int>& partition);

}  // namespace ppdeploy
