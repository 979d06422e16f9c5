// KV-cache bytes per token per layer, exactly as vLLM sizes its pages
// (vllm/v1/kv_cache_interface.py, mla_attention.py, deepseek_v2.py Indexer; vllm-rules.md §1.1-1.2, §1.9).
#pragma once

#include <cstdint>
#include <string>

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

/// Resolves `requested` for `model` under a vLLM version and GPU (vllm-rules.md §1.9):
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

/// The block size vLLM uses when --block-size is not given (vllm-rules.md §1.9): DSA 64;
/// dense MLA: before 2026-03-09 forced 64 on Hopper (FlashMLA), 128 on Blackwell (CUTLASS_MLA),
/// else 16; since then Hopper bf16 16 (FLASH_ATTN_MLA), fp8 64, Blackwell 32; GQA 16.
int DefaultBlockSize(const ModelConfig& model, const EffectiveKv& kv, const VllmProfile& vllm, const GpuSpec& gpu);

/// The kernel block size a user --block-size must be a multiple of (DSA: 64).
int BlockSizeMultiple(const ModelConfig& model, const EffectiveKv& kv, const GpuSpec& gpu);

}  // namespace ppdeploy
