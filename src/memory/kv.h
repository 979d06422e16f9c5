// KV-cache bytes per token per layer, exactly as vLLM sizes its pages
// (vllm/v1/kv_cache_interface.py, mla_attention.py, deepseek_v2.py Indexer; docs/vllm-rules.md §1.1-1.2, §1.9).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/config.h"
#include "model/gpu.h"
#include "vllm/profile.h"

namespace ppdeploy {

/// `--kv-cache-dtype` values vLLM accepts for these models.
enum class KvCacheDtype { kAuto, kBfloat16, kFloat16, kFp8, kFp8E4m3, kFp8E5m2, kFp8DsMla };

/// Parses a --kv-cache-dtype value (Error listing the accepted ones otherwise).
KvCacheDtype ParseKvCacheDtype(const std::string& text);
std::string ToString(KvCacheDtype d);

/// The storage layout a layer's main KV ends up in after vLLM's canonicalisation.
struct EffectiveKv {
  std::string layout;              ///< "bfloat16", "float16", "float32", "fp8", "fp8_ds_mla"
  std::int64_t bytes_per_element;  ///< 0 for fp8_ds_mla (packed state)
  std::string reason;              ///< why (e.g. "fp8 -> fp8_ds_mla: FLASHMLA_SPARSE on sm90")
};

/// Resolves `requested` for `model` under a vLLM version and GPU (docs/vllm-rules.md §1.9):
/// auto = the model dtype (v0.11.0 DSA: fp8_ds_mla); fp8* on DSA = fp8_ds_mla on FlashMLA-sparse
/// backends, standard fp8 (576 B) on Blackwell FlashInfer-sparse (profile "by_gpu").
/// Errors: fp8_ds_mla on a non-DSA model, or with latent dims other than 512 + 64.
EffectiveKv ResolveKvDtype(const ModelConfig& model, KvCacheDtype requested, const VllmProfile& vllm,
                           const GpuSpec& gpu);

/// Main attention bytes per token per layer on one GPU (any TP rank):
/// MLA: (kv_lora_rank + qk_rope_head_dim) x element size, or 656 for fp8_ds_mla; TP never divides it.
/// GQA: 2 x max(1, num_kv_heads / tp) x head_dim x element size (heads replicate once TP exceeds them).
std::int64_t AttentionBytesPerTokenPerLayer(const ModelConfig& model, const EffectiveKv& kv, int tensor_parallel_size);

/// DSA indexer k-cache bytes per token per layer: index_head_dim + 4 x floor(index_head_dim / 128)
/// (uint8, replicated on every TP rank, ignores --kv-cache-dtype): 132 for DeepSeek-V3.2 / GLM-5.
std::int64_t IndexerBytesPerTokenPerLayer(const ModelConfig& model);

/// The block size vLLM uses when --block-size is not given (docs/vllm-rules.md §1.9): DSA 64;
/// dense MLA: before 2026-03-09 forced 64 on Hopper (FlashMLA), 128 on Blackwell (CUTLASS_MLA),
/// else 16; since then Hopper bf16 16 (FLASH_ATTN_MLA), fp8 64, Blackwell 32; GQA 16.
int DefaultBlockSize(const ModelConfig& model, const EffectiveKv& kv, const VllmProfile& vllm, const GpuSpec& gpu);

/// The kernel block size a user --block-size must be a multiple of (DSA: 64).
int BlockSizeMultiple(const ModelConfig& model, const EffectiveKv& kv, const GpuSpec& gpu);

// ---------------------------------------------------------------------------------------------
// vLLM's hybrid KV-cache manager (vllm/v1/core/kv_cache_utils.py get_kv_cache_groups,
// get_kv_cache_config_from_groups, get_max_concurrency_for_kv_cache_config;
// vllm/v1/kv_cache_interface.py; vllm/model_executor/models/config.py
// HybridAttentionMambaModelConfig).

/// The spec classes that size a layer's cache.
enum class KvSpecType {
  kFullAttention,  ///< FullAttentionSpec (GQA/MHA/MQA)
  kMla,            ///< MLAAttentionSpec (latent, or the DSA indexer k-cache): a FullAttentionSpec subclass
  kSlidingWindow,  ///< SlidingWindowSpec
  kChunkedLocal,   ///< ChunkedLocalAttentionSpec
  kMamba,          ///< MambaSpec: one state per sequence
};

/// "full_attention", "mla", "sliding_window", "chunked_local", "mamba".
std::string_view KvSpecTypeName(KvSpecType type);

/// One layer's KV-cache spec, reduced to what decides its size and its grouping. Two specs are
/// the same spec (vLLM's dataclass equality) when every field is equal.
struct KvSpec {
  KvSpecType type = KvSpecType::kFullAttention;
  int block_size = 16;               ///< tokens per block (mamba: mamba_block_size = max_model_len)
  std::int64_t bytes_per_token = 0;  ///< attention: page = block_size x bytes_per_token
  std::int64_t state_bytes = 0;      ///< mamba: one sequence's state (the page before padding)
  std::int64_t page_padded = 0;      ///< mamba: page padded up to the attention page (0 = none)
  int window = 0;                    ///< sliding window / attention chunk, tokens
  std::string tag;                   ///< dtype, heads and layout: specs with other tags never merge

  /// page_size_bytes: block_size x bytes_per_token, or the (padded) mamba state.
  std::int64_t PageBytes() const;
  /// FullAttentionSpec family (full attention and MLA, incl. the DSA indexer).
  bool FullFamily() const { return type == KvSpecType::kFullAttention || type == KvSpecType::kMla; }
  bool operator==(const KvSpec&) const = default;
};

/// A cache-owning layer: its name (for grouping order and messages) and spec.
struct KvLayer {
  std::string name;  ///< e.g. "layers.5.attn", "layers.5.indexer", "mtp.0.attn"
  KvSpec spec;
};

/// What max_memory_usage_bytes reads from the engine config.
struct KvLimits {
  std::int64_t max_model_len = 0;
  std::int64_t max_num_batched_tokens = 8192;
  int decode_context_parallel_size = 1;
};

/// One request's maximum memory in one layer (KVCacheSpec.max_memory_usage_bytes): full
/// attention cdiv(cdiv(L, DCP), B) pages; sliding window (cdiv(min(W - 1 + mbt, L), B) + 1)
/// pages; chunked local cdiv(min(C + mbt, L), B) pages; mamba one page (mamba_cache_mode "none").
std::int64_t MaxMemoryUsageBytes(const KvSpec& spec, const KvLimits& limits);

/// How vLLM grouped the layers.
enum class KvGrouping {
  kAttentionFree,  ///< no cache-owning layer
  kUniform,        ///< one spec for every layer: one group
  kUniformType,    ///< one spec type, different sizes (DSA: latent + indexer): UniformTypeKVCacheSpecs
  kHybrid,         ///< several types: groups of equal layer count and equal page size
};

struct KvGroup {
  KvSpec spec;                      ///< the group's spec (for kUniformType: the first layer's)
  std::vector<std::string> layers;  ///< the model's layers in the group (all PP ranks)
};

/// Options that changed with versions (data/vllm/versions.json).
struct KvGroupingOptions {
  bool hybrid_manager = true;        ///< the hybrid allocator exists (else every spec is unified to full)
  bool chunked_local_hybrid = true;  ///< chunked local attention stays its own type (else unified)
  double group_size_ratio = 1.5;     ///< group_size = max count if max < min x ratio (0 = always min)
};

/// The model's KV-cache groups (get_kv_cache_groups on the specs of every worker merged).
struct KvCacheGroups {
  KvGrouping grouping = KvGrouping::kUniform;
  std::vector<KvGroup> groups;
  std::vector<KvLayer> model_layers;  ///< every layer with its spec after unification
  int group_size = 0;                 ///< layers per group (kHybrid; padding included)
  int padding_layers = 0;             ///< "Add N padding layers" (largest per type)
  double padding_waste_pct = 0;       ///< "may waste at most X% KV cache memory" (largest per type)
  std::vector<std::string> notes;
  int min_block_size() const;  ///< over the groups (the logged token formula uses it)
};

/// Groups the layers of the whole model (every PP rank's layers, in order). Page sizes of a
/// hybrid model are made equal first (unify_kv_cache_spec_page_size: smaller pages grow their
/// block size by max_page / page; Error when that does not divide).
KvCacheGroups GroupKvCacheSpecs(const std::vector<KvLayer>& model_layers, const KvGroupingOptions& options);

/// One worker's view (projected groups, get_kv_cache_config_from_groups).
struct WorkerKv {
  std::int64_t block_bytes = 0;      ///< available // block_bytes = this worker's num_blocks
  int local_group_size = 0;          ///< layers of the largest projected group
  std::int64_t bytes_per_token = 0;  ///< sum of the attention specs' bytes per token (display)
  std::int64_t needed_bytes = 0;     ///< one max_model_len request on this worker (the start-up check)
};

/// Projects `groups` onto one worker's layers. `global_page_for_uniform_type`: the v0.11 ..
/// 2026-02-09 behaviour (the UniformTypeKVCacheSpecs of the whole model on every worker).
/// `whole_model_check`: the 0.14-0.15 start-up check that compared the whole model's need with
/// one worker's memory (#29431, fixed by #33698).
WorkerKv ProjectKvGroupsToWorker(const KvCacheGroups& groups, const std::vector<KvLayer>& worker_layers,
                                 const KvLimits& limits, bool global_page_for_uniform_type, bool whole_model_check);

/// Blocks one request of max_model_len takes across all groups (the concurrency divisor):
/// sum over groups of cdiv(max_memory_usage_bytes, page_size_bytes).
std::int64_t BlocksPerRequest(const KvCacheGroups& groups, const KvLimits& limits);

/// HybridAttentionMambaModelConfig (mamba_cache_mode "none"): the attention block size that makes
/// the attention page >= the mamba state, from the per-token attention page and the kernel
/// alignment (16; MLA 64, CUTLASS_MLA 128); then raised until the page covers the state.
int HybridMambaBlockSize(std::int64_t attention_bytes_per_token, std::int64_t mamba_state_bytes, int alignment,
                         int user_block_size);

/// True when backbone layer `layer` computes its own top-k under the model's DSA schedule (vLLM
/// DeepseekV2MLAAttention.__init__, layout/index_share.h): without `index_topk_pattern`, when
/// max(i - offset + 1, 0) % freq == 0; with a pattern, when pattern[i] != 'S'; MTP layers always.
/// Always true for non-DSA models' sake of callers (they have no indexer at all).
bool LayerIsFull(const ModelConfig& model, int layer);

/// True when layer `layer` (backbone or MTP) owns an indexer k-cache under `mode`.
/// `forced` = fix B makes this layer compute (and so own) its index.
bool LayerOwnsIndexerCache(const ModelConfig& model, int layer, IndexShareMode mode, bool forced = false);

/// The longest request one worker's KV memory holds (vLLM's _estimate_max_model_len: a binary
/// search for the largest max_model_len in [1, upper] whose one-request need on this worker,
/// ProjectKvGroupsToWorker's needed_bytes with `limits` at that length, is at most `have_bytes`).
/// 0 when not even one token fits.
std::int64_t LongestFittingMaxModelLen(const KvCacheGroups& groups, const std::vector<KvLayer>& worker_layers,
                                       const KvLimits& limits, bool global_page_for_uniform_type,
                                       bool whole_model_check, std::int64_t have_bytes, std::int64_t upper);

}  // namespace ppdeploy
