// vLLM version profiles: the behaviours that change the planner's numbers, by version
// (data/vllm/versions.json, from vllm-rules.md §1 and §4). Dates are main-branch dates.
#pragma once

#include <string>
#include <vector>

#include "layout/index_share.h"

namespace ppdeploy {

/// How the logged "GPU KV cache size" is computed (vllm-rules.md §1.12).
enum class TokensFormula {
  kBlocksTimesBlockSize,        ///< v0.8 .. 2026-04-27: num_blocks * block_size
  kConcurrencyTimesMaxModelLen  ///< 2026-04-28 (#41069) ..: int(num_blocks / cdiv(L, B) * L)
};

/// How per-rank block counts combine into the pool (vllm-rules.md §1.6).
enum class PoolCombine {
  kPerRankMin,      ///< min over ranks of floor(avail_p / page_p)
  kV08MinMemory,    ///< v0.8: floor(min avail / (B * max per-token bytes over ranks))
  kDsaGlobalPage,   ///< v0.11 .. 2026-02-09 with DSA and PP>1: every rank divides by the page of ALL layers
};

/// Where fix B (forced self-computed indices at stage starts) comes from (issue 8).
enum class FixBSource { kNone, kBuiltin, kPattern };

struct VllmProfile {
  std::string name;  ///< e.g. "0.30-custom"
  std::string date;  ///< main-branch date the behaviour corresponds to
  double default_gpu_memory_utilization = 0.9;
  std::string available_kv;  ///< accounting era: v1_absolute, v1_profiled, n_consumed (display only)
  bool subtracts_cuda_graph_estimate = false;  ///< since 2026-04-21 (#38284, v0.21)
  PoolCombine pool_combine = PoolCombine::kPerRankMin;
  TokensFormula tokens_formula = TokensFormula::kBlocksTimesBlockSize;
  bool one_line_capacity_log = false;  ///< since 2026-08-04 (#50462)
  IndexShareMode index_share = IndexShareMode::kNone;
  bool supports_dsa = false;
  bool pp_with_mtp = false;
  FixBSource fix_b = FixBSource::kNone;
  bool preferred_block_size = false;  ///< since 2026-03-09 (#35122) block size from the backend preference
  bool kv_cache_memory_bytes = false;
  bool indexer_weights_on_all_layers = false;  ///< custom images: indexer modules built on shared layers too (weights), k-cache only on full ones
  std::string dsa_auto_kv;  ///< "model_dtype" or "fp8_ds_mla" (v0.11.0)
  std::string dsa_fp8_kv;   ///< "fp8_ds_mla" or "by_gpu" (backend-dependent since 2026-03-07)
  std::string note;
};

/// All profiles in data/vllm/versions.json, oldest first.
const std::vector<VllmProfile>& VllmProfiles();
/// The profile named `name` (Error listing the known names otherwise).
const VllmProfile& FindVllmProfile(const std::string& name);
/// The default profile ("0.30-custom", the seed's image).
const VllmProfile& DefaultVllmProfile();

std::string ToString(FixBSource s);

}  // namespace ppdeploy
