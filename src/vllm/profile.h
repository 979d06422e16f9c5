// vLLM version rows: every behaviour the planner and the launcher depend on, by release line
// (data/vllm/versions.json, from docs/vllm-rules.md §1, §4 and docs/seed.md). This is the one
// version table: no other code compares versions or dates.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ppdeploy {

/// How the logged "GPU KV cache size" is computed (docs/vllm-rules.md §1.12).
enum class TokensFormula {
  kBlocksTimesBlockSize,          ///< V0, v0.8 .. v0.9: num_blocks * block_size
  kBlocksPerGroupTimesBlockSize,  ///< v0.10 .. 2026-04-27: num_blocks // num_groups * min_block_size (* DCP)
  kConcurrencyTimesMaxModelLen    ///< 2026-04-28 (#41069) ..: int(num_blocks / blocks_per_request * L)
};

/// How per-rank block counts combine into the pool (docs/vllm-rules.md §1.6).
enum class PoolCombine {
  kPerRankMin,     ///< min over ranks of floor(avail_p / page_p)
  kV08MinMemory,   ///< v0.8: floor(min avail / (B * max per-token bytes over ranks))
  kDsaGlobalPage,  ///< v0.11 .. 2026-02-09 with DSA and PP>1: every rank divides by the page of ALL layers
};

/// How a vLLM version treats the DSA IndexShare schedule ("index_share", docs/vllm-rules.md §1.3).
enum class IndexShareMode {
  kNone,         ///< <= 2026-04-28: every DSA layer computes its own index and owns a k-cache
  kComputeOnly,  ///< 2026-04-29 .. 2026-06-18: schedule skips compute, but every layer owns a k-cache
  kFull,         ///< >= 2026-06-19: shared layers build no indexer and own no k-cache
};

/// Which bytes vLLM's memory profiler books where ("available_kv", docs/vllm-rules.md §1.7,
/// docs/memory-overheads.md §1): decides the non-torch / activation columns of a plan.
enum class MemoryAccounting {
  kV1Absolute,  ///< v0.8-v0.9.0: (total - free) - torch allocated: the CUDA context counts as non-torch
  kV1Profiled,  ///< 2025-06-10 .. 2026-07-19: non-torch growth + torch peak increase + weights
  kNConsumed,   ///< since 2026-07-20 (#49208): consumed (free-memory drop) + transient peak headroom
};

/// The CUDA-graph capture sizes of a release (vllm/config/compilation.py, docs/memory-overheads.md §5).
enum class CudaGraphCapture {
  kStep8Piecewise,          ///< <= v0.10: [1, 2, 4] + 8..max step 8, PIECEWISE graphs only
  kStep16FullAndPiecewise,  ///< >= v0.11: [1, 2, 4] + 8..248 step 8 + 256..max step 16, FULL_AND_PIECEWISE
};

/// Where fix B (forced self-computed indices at stage starts, docs/seed.md §7) comes from.
enum class FixBSource {
  kNone,     ///< no fix: a split with forced layers is unsafe
  kBuiltin,  ///< patched into the image (the seed's 0.30-custom)
  kPattern,  ///< the launcher passes an `index_topk_pattern` override (issue 8); needs index_topk_pattern
};

/// The engine a release runs (V0: vllm/worker + vllm/core/block_manager; V1: vllm/v1).
enum class Engine { kV0, kV1 };

/// Which layers the start-up check "To serve at least one request with the model's max seq len"
/// sums (vllm/v1/core/kv_cache_utils.py).
enum class FitCheckScope {
  kWorkerLayers,  ///< each worker's own specs (check_enough_kv_cache_memory per worker)
  kWholeModel,    ///< the merged specs of every worker against one worker's memory (#29431 .. #33698)
  kWorkerGroups,  ///< each worker's projected groups, padding included (#33698, 2026-02-10)
};

/// vLLM's default split when VLLM_PP_LAYER_PARTITION is not set (get_pp_indices).
enum class DefaultSplitRule {
  kRemainderLast,        ///< before #13839 (2025-02-25): the last stage takes num_layers % PP
  kRemainderBeforeLast,  ///< #13839: one extra layer each on partitions[-2], [-3], ...
};

/// One row of data/vllm/versions.json.
struct VllmProfile {
  std::string name;                ///< e.g. "0.30-custom"
  std::vector<std::string> lines;  ///< release lines (MAJOR.MINOR) planned with this row
  std::string custom_of;           ///< "0.30" for "0.30-custom"; "" for upstream rows
  std::string date;                ///< main-branch date the behaviour corresponds to (display only)
  std::string description;
  std::string approximate_lines_note;  ///< why lines other than the row's own are approximate
  std::string note;

  // --- planner behaviour ---
  double default_gpu_memory_utilization = 0.9;
  std::string available_kv;                    ///< accounting era as written: v1_absolute, v1_profiled, n_consumed
  bool subtracts_cuda_graph_estimate = false;  ///< since 2026-04-21 (#38284, v0.21)
  PoolCombine pool_combine = PoolCombine::kPerRankMin;
  TokensFormula tokens_formula = TokensFormula::kBlocksTimesBlockSize;
  bool one_line_capacity_log = false;  ///< since 2026-08-04 (#50462)
  IndexShareMode index_share = IndexShareMode::kNone;
  bool supports_dsa = false;
  bool pp_speculation = false;  ///< PP > 1 with speculative decoding is accepted and works (docs/vllm-rules.md §1.11)
  FixBSource fix_b = FixBSource::kNone;
  bool index_topk_pattern = false;     ///< reads `index_topk_pattern` from the config (main >= 2026-06-07, #44420)
  bool preferred_block_size = false;   ///< since 2026-03-09 (#35122) block size from the backend preference
  bool kv_cache_memory_bytes = false;  ///< `--kv-cache-memory-bytes` exists (#21489, 2025-09-11)
  bool indexer_weights_on_all_layers = false;  ///< custom images: indexer modules built on shared layers too
  std::string dsa_auto_kv;                     ///< "model_dtype" or "fp8_ds_mla" (v0.11.0)
  std::string dsa_fp8_kv;                      ///< "fp8_ds_mla" or "by_gpu" (backend-dependent since 2026-03-07)
  bool override_in_fit_check = false;          ///< --num-gpu-blocks-override counts in the max_model_len check (#41069)
  bool nccl_in_non_torch = false;              ///< NCCL init before the memory snapshot (before #25359, 2025-09-23)
  bool large_gpu_batch_defaults = false;       ///< >= 160 GiB GPUs default to 16384 batched tokens (2026-08-11)
  bool dcp_dsa_blackwell = false;              ///< FLASHINFER_MLA_SPARSE returns the decode LSE (#46076, 2026-07-01)
  MemoryAccounting accounting = MemoryAccounting::kV1Profiled;  ///< parsed from "available_kv"
  bool workspace_manager =
      false;  ///< persistent shared WorkspaceManager for MoE / DSA / sparse-MLA (#27532, 2025-12-12)
  bool dsa_dummy_logits =
      false;  ///< DSA indexer allocates 512 MiB dummy logits in the profile run (#36178, 2026-04-01)
  bool cuda_graph_estimate_v1_runner = true;  ///< "cuda_graph_estimate_runners": "both" (true) or "v2_only" (false)
  int mtp_own_vocab_weights_with_pp = 1;      ///< vocab-sized matrices the MTP drafter loads itself when PP > 1
  CudaGraphCapture cuda_graph_capture = CudaGraphCapture::kStep16FullAndPiecewise;

  // --- engines, KV layouts and block arithmetic by release line (issue 12) ---
  std::vector<Engine> engines;    ///< the engines the release line ships, the default first
  int mla_kv_from_patch = 0;      ///< MLA latent cache from this patch release on (-1 never: pre-MLA layout; 1 = x.y.1)
  bool pre_mla_head_256 = false;  ///< the MLA-less DeepSeek attention pads q/k/v heads to 256 (before #12067)
  DefaultSplitRule default_split = DefaultSplitRule::kRemainderBeforeLast;
  bool lm_head_every_pp_rank = false;    ///< DeepSeek-V2/V3 built ParallelLMHead on every PP rank (before #13833)
  bool hybrid_kv_cache_manager = false;  ///< V1 hybrid allocator: groups per attention type
  bool chunked_local_hybrid = false;     ///< chunked local attention keeps its own groups (else unified to full)
  double hybrid_group_size_ratio = 0;    ///< group size = max layer count if max < min x ratio (0: min)
  FitCheckScope fit_check_scope = FitCheckScope::kWorkerGroups;
  bool dcp = false;              ///< --decode-context-parallel-size exists
  bool dcp_gqa = false;          ///< non-MLA attention backends return the decode LSE (tp > kv heads required)
  bool legacy_block_16 = false;  ///< every backend uses block 16 (before FlashMLA forced 64 on Hopper)

  // --- launch capabilities ---
  bool speculative_config_json = true;       ///< `--speculative-config JSON` (else the legacy flags)
  bool disable_custom_all_reduce = true;     ///< `--disable-custom-all-reduce` exists
  bool v2_model_runner_env = false;          ///< env VLLM_USE_V2_MODEL_RUNNER is read
  bool ngram_under_v2 = false;               ///< ngram speculation supported by the V2 model runner
  bool native_multinode = false;             ///< `--nnodes/--node-rank/--master-addr/--headless`
  std::vector<std::string> kv_cache_dtypes;  ///< accepted --kv-cache-dtype values
};

/// All rows of data/vllm/versions.json, oldest first.
const std::vector<VllmProfile>& VllmProfiles();
/// The default row ("0.30-custom", the seed's image).
const VllmProfile& DefaultVllmProfile();

/// A version string resolved to its row (data/vllm/versions.json "resolution_rule").
struct VersionMatch {
  const VllmProfile* profile = nullptr;
  std::string line;          ///< MAJOR.MINOR read from the string ("" when a row name was given)
  bool exact = true;         ///< false when the line is planned with another line's row (the note says so)
  std::string note;          ///< e.g. "vLLM 0.19 is planned with row 0.15 (...)"
  std::optional<int> patch;  ///< PATCH of MAJOR.MINOR.PATCH when the string has one ("0.7.1" -> 1)
};

/// Resolves a version string as users and logs write it: "0.30", "v0.9.2", "0.19.0",
/// "0.10.1.dev101+g1234", "0.30.0+custom", "0.30-custom". Throws Error naming the string and
/// listing the known rows when no row matches.
VersionMatch ResolveVllmVersion(std::string_view version);
/// nullopt instead of an Error.
std::optional<VersionMatch> TryResolveVllmVersion(std::string_view version);
/// The row named `name` exactly, or ResolveVllmVersion(name).profile.
const VllmProfile& FindVllmProfile(const std::string& name);

std::string ToString(FixBSource s);
/// "0.8, 0.10, ..., 0.30-custom" (row names and the lines they cover), for messages.
std::string KnownVllmVersions();

}  // namespace ppdeploy
