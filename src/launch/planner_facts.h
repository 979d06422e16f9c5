// What the launcher's gates need from the capacity planner, as plain values.
//
// The launcher reaches the planner (src/{model,memory,layout,vllm}) only through the PlannerFacts
// interface below; MakeDefaultPlannerFacts() is the planner itself. Tests use fakes, or the seed
// stub that returns the seed's measured pools.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "launch/profile.h"

namespace ppdeploy::launch {

/// Memory verdict of the planner for one launch profile (per GPU; the tightest rank decides).
struct MemoryFacts {
  bool weights_fit = true;          ///< weights + non-KV overheads fit the per-rank budget
  std::string weights_reason;       ///< one line with figures, e.g. "weights 97.5 GiB/GPU > budget 75.29 GiB"
  std::int64_t predicted_kv_tokens = 0;     ///< predicted "GPU KV cache size" (tokens, min over ranks)
  std::int64_t largest_max_model_len = 0;   ///< largest max_model_len vLLM accepts with that pool (tokens)
};

/// DSA index-sharing facts for one launch profile (digest §7, vllm-rules §1.3-§1.4).
struct IndexShareFacts {
  bool dsa_with_index_sharing = false;  ///< DSA model whose layers reuse a previous layer's top-k
  /// Per PP rank, the absolute layer ids that read a shared top-k buffer never written on that
  /// rank (they need Fix B's forced self-compute). Size pp_size; empty vectors = safe rank.
  std::vector<std::vector<int>> forced_layers_per_rank;
  /// `index_topk_pattern` that switches the forced layers to 'F' (fix B without a patch, issue 8);
  /// "" when no layer is forced.
  std::string pattern = {};
  /// Whether the checkpoint at model_path could be checked for the forced layers' indexer tensors,
  /// and what is missing or mismatched (empty = all present).
  bool checkpoint_checked = false;
  std::vector<std::string> checkpoint_problems = {};
};

/// The planner as the launcher sees it. Implementations must not print or exit.
class PlannerFacts {
 public:
  virtual ~PlannerFacts() = default;
  /// Memory verdict for the effective profile (after speculation and runner resolution).
  virtual MemoryFacts Memory(const LaunchProfile& profile) = 0;
  /// Index-sharing facts for the profile's PP split (an invalid split may give empty lists).
  virtual IndexShareFacts IndexShare(const LaunchProfile& profile) = 0;
  /// config.json num_hidden_layers of the profile's model (MTP layers not counted).
  virtual int NumHiddenLayers(const LaunchProfile& profile) = 0;
  /// num_nextn_predict_layers (MTP heads) of the profile's model; 0 = no MTP.
  virtual int MtpLayers(const LaunchProfile& profile) = 0;
};

/// The default implementation: the planner (src/layout/planner.h) on the profile's model, GPU and
/// vLLM profile, with the seed's calibration when the profile is the seed's model and GPU.
std::unique_ptr<PlannerFacts> MakeDefaultPlannerFacts();

/// A stub that knows only the seed's model and returns the seed's measured pools (tests).
std::unique_ptr<PlannerFacts> MakeSeedStubPlannerFacts();

}  // namespace ppdeploy::launch
