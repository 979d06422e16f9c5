// DSA IndexShare ("IndexCache"): which layers compute their own top-k index and own an
// indexer k-cache, and which layers of a pipeline stage would reuse an index produced on an
// earlier stage (the seed's PP defect, docs/seed.md §7) and so need "fix B".
//
// Rule (vLLM DeepseekV2MLAAttention.__init__, main 2026-06-07 #44420 / 2026-06-19 #45895;
// docs/vllm-rules.md §1.3): without `index_topk_pattern`, layer i is shared ("skip top-k") when
// max(i - offset + 1, 0) % freq != 0; with a pattern, when pattern[i] == 'S'. MTP layers
// (ids >= num_hidden_layers) always build an indexer. Defaults freq 1, offset 2.
#pragma once

#include <string>
#include <vector>

#include "layout/partition.h"
#include "memory/kv.h"
#include "model/config.h"
#include "vllm/profile.h"  // IndexShareMode

namespace ppdeploy {

// LayerIsFull and LayerOwnsIndexerCache (which layers compute their own index and own an indexer
// cache) are in memory/kv.h: the stage memory reads them too.

/// Index-share analysis of one PP rank.
struct RankIndexShare {
  int pp_rank = 0;
  LayerRange range;                 ///< from get_pp_indices
  std::vector<int> self_computing;  ///< full layers in range (absolute ids)
  std::vector<int> forced;          ///< shared layers before the rank's first producer: read an
                                    ///< index never written on this rank; fix B forces them
  int residual_unsafe = 0;          ///< forced layers left unfixed (0 when the fix is applied)
  LayerRange legacy_range;          ///< the old hand-written interval rank*n//w .. (rank+1)*n//w
  std::vector<int> legacy_forced;   ///< what the old formula would force
};

/// Whole-split analysis (docs/seed.md §6-§7, `v030_pp_rebalance.sh preflight`).
struct IndexShareReport {
  bool applies = false;      ///< DSA model whose schedule has shared layers and a version that skips
  bool fix_applied = false;  ///< the vLLM profile provides fix B (builtin or pattern)
  std::vector<RankIndexShare> ranks;
  std::vector<int> forced;        ///< all forced layers, ascending
  bool zero_dependency = true;    ///< no forced layers at all
  bool safe = true;               ///< no residual unsafe layer
  bool legacy_disagrees = false;  ///< the old interval formula gives another forced set
};

/// Analyses `partition` (entries sum to num_hidden_layers). PP=1 is always safe.
IndexShareReport AnalyzeIndexShare(const ModelConfig& model, const std::vector<int>& partition, IndexShareMode mode,
                                   bool fix_applied);

/// The `index_topk_pattern` string ('F'/'S' per backbone layer) that makes vLLM >= 2026-06-07
/// build an indexer on the model's own full layers plus `forced` (fix B without a patch, issue 8).
std::string IndexTopkPattern(const ModelConfig& model, const std::vector<int>& forced);

}  // namespace ppdeploy
