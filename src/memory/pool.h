// vLLM's KV block arithmetic: per-rank block counts, the pool (min over ranks), the logged
// "GPU KV cache size" and "Maximum concurrency" (vllm/v1/core/kv_cache_utils.py
// get_kv_cache_configs / get_kv_cache_capacity; docs/vllm-rules.md §1.5, §1.6, §1.8, §1.12).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/interval.h"
#include "vllm/profile.h"

namespace ppdeploy {

/// The rules of one layout's pool: the block arithmetic of the version and the layout's KV-cache
/// groups (layout/planner.cc derives them once per layout).
struct PoolRules {
  int block_size = 16;
  std::int64_t max_model_len = 0;
  PoolCombine combine = PoolCombine::kPerRankMin;
  TokensFormula tokens_formula = TokensFormula::kConcurrencyTimesMaxModelLen;
  std::optional<std::int64_t> num_gpu_blocks_override;
  bool dsa = false;  ///< for PoolCombine::kDsaGlobalPage
  // The KV-cache groups (memory/kv.h); the defaults describe one full-attention group.
  int num_groups = 1;                    ///< KV-cache groups (the logged token figure divides by it)
  int min_block_size = 0;                ///< smallest group block size (0 = block_size)
  std::int64_t blocks_per_request = 0;   ///< one max_model_len request over all groups (0 = cdiv(L, B))
  int decode_context_parallel_size = 1;  ///< DCP: the v0.10 .. 2026-04-27 log multiplies the tokens by it
  bool null_block = true;                ///< V1 BlockPool reserves block 0 (V0 has no null block)
  bool concurrency_from_tokens = false;  ///< V0: "Maximum concurrency" = num_gpu_blocks x B / L
};

/// What one PP stage brings to the pool (memory/stage_memory.h StageMemoryPlan::pool_input): its
/// available KV memory, with its range, and its page.
struct StageKv {
  Interval available;                ///< bytes; may be negative (then the rank has 0 blocks)
  std::int64_t bytes_per_token = 0;  ///< sum over its layers' KV specs
  std::int64_t block_bytes = 0;      ///< one block on this rank (memory/kv.h ProjectKvGroupsToWorker)
};

/// The pool's inputs as per-rank vectors (the tests' and the calibration's form).
struct PoolInputs : PoolRules {
  std::vector<std::int64_t> available_bytes;  ///< per PP rank (TP ranks of a stage are identical)
  std::vector<std::int64_t> bytes_per_token;  ///< per PP rank: sum over its layers' KV specs
  /// Per PP rank: the bytes one block takes on that rank (available // this = the rank's blocks;
  /// memory/kv.h ProjectKvGroupsToWorker). Empty = block_size x bytes_per_token (one group).
  std::vector<std::int64_t> block_bytes;
};

struct PoolResult {
  std::vector<std::int64_t> num_blocks_per_rank;  ///< floor(avail_p / page_p) (or the version's variant)
  std::int64_t num_gpu_blocks = 0;         ///< the pool: min over ranks (or the override); includes the null block
  int binding_rank = 0;                    ///< the rank that sets the minimum
  std::int64_t blocks_per_request = 0;     ///< cdiv(max_model_len, block_size)
  double max_concurrency = 0;              ///< as logged
  std::int64_t kv_tokens = 0;              ///< "GPU KV cache size" as logged
  std::int64_t usable_tokens = 0;          ///< (num_gpu_blocks - 1) x block_size: without the null block
  std::int64_t largest_max_model_len = 0;  ///< largest max_model_len one request can have
  bool tokens_derived = false;             ///< the logged token figure is not blocks x block size (groups, DCP)
  std::string tokens_formula;  ///< how the logged figure follows from the blocks, e.g. "15,997 // 7 groups x 16"
};

/// Computes the pool. `available_bytes` may be negative (then that rank has 0 blocks).
/// A rank with `bytes_per_token` 0 (no attention layer: a 0-layer stage without MTP) follows vLLM:
/// with DSA under per-rank pools it divides by the page of all layers (the global spec vLLM keeps
/// for a worker without layers); otherwise vLLM cannot start and this throws Error saying so.
/// Exact to vLLM: num_blocks_p = floor(avail_p / block_bytes_p); pool = min_p; tokens =
/// num_blocks x B (V0, v0.8-v0.9), num_blocks // groups x min B (x DCP) (v0.10 .. 2026-04-27) or
/// int(num_blocks / blocks_per_request x L) (since #41069).
PoolResult ComputePool(const PoolInputs& in);

/// Which end of the stages' available memory a pool is computed at (the range printed with it).
enum class PoolBound { kValue, kLow, kHigh };
/// The pool of a layout's stages under `rules`, at `bound` of every stage's available memory.
PoolResult ComputePool(const PoolRules& rules, const std::vector<StageKv>& stages, PoolBound bound = PoolBound::kValue);

/// The capacity line(s) exactly as the version logs them, e.g.
/// "GPU KV cache size: 729,280 tokens, Maximum concurrency for 524,288 tokens per request: 1.39x".
std::string CapacityLogText(const PoolResult& pool, std::int64_t max_model_len, bool one_line);

/// 729280 -> "729,280" (Python's f"{n:,}").
std::string WithThousands(std::int64_t n);

}  // namespace ppdeploy
