#include "memory/pool.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "core/error.h"
#include "core/units.h"

namespace ppdeploy {

std::string WithThousands(std::int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n);
  std::string out;
  int count = 0;
  for (auto it = digits.rbegin(); it != digits.rend(); ++it) {
    if (count && count % 3 == 0) out.push_back(',');
    out.push_back(*it);
    ++count;
  }
  if (n < 0) out.push_back('-');
  std::reverse(out.begin(), out.end());
  return out;
}

namespace {

// Each rank's blocks: floor(available / the rank's block bytes), or the version's variant.
std::vector<std::int64_t> BlocksPerRank(const PoolRules& in, const std::vector<std::int64_t>& available_bytes,
                                        const std::vector<std::int64_t>& bytes_per_token,
                                        const std::vector<std::int64_t>& block_bytes) {
  if (available_bytes.size() != bytes_per_token.size() || available_bytes.empty())
    Fail("internal: pool inputs for {} ranks but {} page sizes", available_bytes.size(), bytes_per_token.size());
  if (in.block_size <= 0) Fail("block size must be positive, got {}", in.block_size);
  if (in.max_model_len <= 0) Fail("max_model_len must be positive, got {}", in.max_model_len);
  const std::int64_t B = in.block_size;
  const size_t n = available_bytes.size();
  auto floor_div = [](std::int64_t a, std::int64_t b) { return a <= 0 || b <= 0 ? 0 : a / b; };
  // A rank with no attention layer (a 0-layer stage without MTP). DSA layers form one
  // UniformTypeKVCacheSpecs group, and `_project_kv_cache_groups_to_worker` keeps the global spec
  // for a worker with no layer of it (`if worker_layer_names and isinstance(...)`), so
  // get_kv_cache_config_from_groups divides that worker's memory by the page of ALL layers
  // (vllm/v1/core/kv_cache_utils.py; derived from the code, not observed on a GPU); the
  // kDsaGlobalPage era did that on every rank anyway. With one plain spec (non-DSA MLA, GQA) the
  // worker's group has no layer and vLLM stops in get_kv_cache_config_from_groups
  // (`assert group_size > 0`; ZeroDivisionError in get_num_blocks before the assert;
  // NotImplementedError in v0.8's get_kv_cache_configs).
  const bool global_page_for_empty_ranks =
      in.dsa && (in.combine == PoolCombine::kPerRankMin || (in.combine == PoolCombine::kDsaGlobalPage && n > 1));
  for (size_t p = 0; p < n; ++p)
    if (bytes_per_token[p] <= 0 && !global_page_for_empty_ranks)
      Fail(
          "PP rank {} holds no attention layer (a stage with 0 layers and no MTP layer): vLLM cannot size its KV "
          "cache and stops at start-up (vllm/v1/core/kv_cache_utils.py get_kv_cache_config_from_groups: "
          "AssertionError \"group_size must be greater than 0\"); give every stage at least one layer",
          p);
  const std::int64_t global = std::accumulate(bytes_per_token.begin(), bytes_per_token.end(), std::int64_t{0});
  std::vector<std::int64_t> blocks;
  if (in.combine == PoolCombine::kV08MinMemory) {
    // v0.8: the executor takes min(available) and the largest layer count over workers.
    std::int64_t min_avail = *std::min_element(available_bytes.begin(), available_bytes.end());
    std::int64_t max_bpt = *std::max_element(bytes_per_token.begin(), bytes_per_token.end());
    blocks.assign(n, floor_div(min_avail, B * max_bpt));
  } else if (block_bytes.size() == n) {
    // The planner's per-rank block bytes (memory/kv.h ProjectKvGroupsToWorker, which already
    // applies the global-page era for DSA).
    for (size_t p = 0; p < n; ++p) blocks.push_back(floor_div(available_bytes[p], block_bytes[p]));
  } else if (in.combine == PoolCombine::kDsaGlobalPage && in.dsa && n > 1) {
    // v0.11 .. 2026-02-09: every worker divided by the page of ALL layers (docs/vllm-rules.md §1.6).
    for (size_t p = 0; p < n; ++p) blocks.push_back(floor_div(available_bytes[p], B * global));
  } else {
    for (size_t p = 0; p < n; ++p)
      blocks.push_back(floor_div(available_bytes[p], B * (bytes_per_token[p] > 0 ? bytes_per_token[p] : global)));
  }
  return blocks;
}

// The logged token figure and the concurrency under the version's formula.
void TokensAndConcurrency(const PoolRules& in, int groups, std::int64_t min_b, int dcp, PoolResult& r) {
  const std::int64_t B = in.block_size;
  switch (in.tokens_formula) {
    case TokensFormula::kBlocksTimesBlockSize:
      r.kv_tokens = r.num_gpu_blocks * B;
      r.max_concurrency = in.combine == PoolCombine::kV08MinMemory || in.concurrency_from_tokens
                              ? static_cast<double>(r.kv_tokens) / static_cast<double>(in.max_model_len)
                              : static_cast<double>(r.num_gpu_blocks) / static_cast<double>(r.blocks_per_request);
      break;
    case TokensFormula::kBlocksPerGroupTimesBlockSize:
      r.kv_tokens = r.num_gpu_blocks / groups * min_b * dcp;
      r.max_concurrency = static_cast<double>(r.num_gpu_blocks) / static_cast<double>(r.blocks_per_request);
      if (groups > 1 || dcp > 1) {
        r.tokens_derived = true;
        r.tokens_formula = fmt::format("{} blocks // {} group{} x {}{}", WithThousands(r.num_gpu_blocks), groups,
                                       groups == 1 ? "" : "s", min_b, dcp > 1 ? fmt::format(" x DCP {}", dcp) : "");
      }
      break;
    case TokensFormula::kConcurrencyTimesMaxModelLen:
      r.max_concurrency = static_cast<double>(r.num_gpu_blocks) / static_cast<double>(r.blocks_per_request);
      r.kv_tokens = static_cast<std::int64_t>(r.max_concurrency * static_cast<double>(in.max_model_len));
      if (groups > 1 || dcp > 1 || r.blocks_per_request != CeilDiv(in.max_model_len, B)) {
        r.tokens_derived = true;
        r.tokens_formula = fmt::format("int({} blocks / {} blocks per request x {})", WithThousands(r.num_gpu_blocks),
                                       WithThousands(r.blocks_per_request), WithThousands(in.max_model_len));
      }
      break;
  }
}

// vLLM's pool arithmetic over the ranks' available memory, bytes per token and block bytes.
PoolResult PoolOf(const PoolRules& in, const std::vector<std::int64_t>& available_bytes,
                  const std::vector<std::int64_t>& bytes_per_token, const std::vector<std::int64_t>& block_bytes) {
  PoolResult r;
  r.num_blocks_per_rank = BlocksPerRank(in, available_bytes, bytes_per_token, block_bytes);
  const std::int64_t B = in.block_size;
  auto it = std::min_element(r.num_blocks_per_rank.begin(), r.num_blocks_per_rank.end());
  r.binding_rank = static_cast<int>(it - r.num_blocks_per_rank.begin());
  if (in.combine == PoolCombine::kV08MinMemory)  // every rank has the same count: the least memory binds
    r.binding_rank =
        static_cast<int>(std::min_element(available_bytes.begin(), available_bytes.end()) - available_bytes.begin());
  r.num_gpu_blocks = *it;
  if (in.num_gpu_blocks_override) r.num_gpu_blocks = *in.num_gpu_blocks_override;
  const int groups = std::max(1, in.num_groups);
  const std::int64_t min_b = in.min_block_size > 0 ? in.min_block_size : B;
  const int dcp = std::max(1, in.decode_context_parallel_size);
  r.blocks_per_request = in.blocks_per_request > 0 ? in.blocks_per_request : CeilDiv(CeilDiv(in.max_model_len, dcp), B);
  // The longest request one pool holds: every group needs its blocks; full attention grows with
  // the length (the other groups' need is bounded), so this is exact only for one group.
  r.largest_max_model_len = groups == 1 ? *it * B * dcp : (*it / groups) * min_b * dcp;
  TokensAndConcurrency(in, groups, min_b, dcp, r);
  // Usable: without the null block, a request's tokens spread over every group's blocks.
  r.usable_tokens = std::max<std::int64_t>(0, r.num_gpu_blocks - (in.null_block ? 1 : 0)) / groups * min_b;
  return r;
}

}  // namespace

PoolResult ComputePool(const PoolInputs& in) {
  return PoolOf(in, in.available_bytes, in.bytes_per_token, in.block_bytes);
}

PoolResult ComputePool(const PoolRules& rules, const std::vector<StageKv>& stages, PoolBound bound) {
  std::vector<std::int64_t> available, bytes_per_token, block_bytes;
  for (const StageKv& s : stages) {
    available.push_back(bound == PoolBound::kLow    ? s.available.lo
                        : bound == PoolBound::kHigh ? s.available.hi
                                                    : s.available.value);
    bytes_per_token.push_back(s.bytes_per_token);
    block_bytes.push_back(s.block_bytes);
  }
  return PoolOf(rules, available, bytes_per_token, block_bytes);
}

std::string CapacityLogText(const PoolResult& pool, std::int64_t max_model_len, bool one_line) {
  std::string size = fmt::format("GPU KV cache size: {} tokens", WithThousands(pool.kv_tokens));
  std::string conc = fmt::format("Maximum concurrency for {} tokens per request: {:.2f}x", WithThousands(max_model_len),
                                 pool.max_concurrency);
  return one_line ? size + ", " + conc : size + "\n" + conc;
}

}  // namespace ppdeploy
