#include "memory/kv.h"

#include "core/error.h"

namespace ppdeploy {

KvCacheDtype ParseKvCacheDtype(const std::string& t) {
  if (t == "auto") return KvCacheDtype::kAuto;
  if (t == "bfloat16" || t == "bf16") return KvCacheDtype::kBfloat16;
  if (t == "float16" || t == "fp16" || t == "half") return KvCacheDtype::kFloat16;
  if (t == "fp8") return KvCacheDtype::kFp8;
  if (t == "fp8_e4m3") return KvCacheDtype::kFp8E4m3;
  if (t == "fp8_e5m2") return KvCacheDtype::kFp8E5m2;
  if (t == "fp8_ds_mla") return KvCacheDtype::kFp8DsMla;
  Fail("--kv-cache-dtype: unknown value \"{}\" (accepted: auto, bfloat16, float16, fp8, fp8_e4m3, fp8_e5m2, fp8_ds_mla)",
       t);
}

std::string ToString(KvCacheDtype d) {
  switch (d) {
    case KvCacheDtype::kAuto: return "auto";
    case KvCacheDtype::kBfloat16: return "bfloat16";
    case KvCacheDtype::kFloat16: return "float16";
    case KvCacheDtype::kFp8: return "fp8";
    case KvCacheDtype::kFp8E4m3: return "fp8_e4m3";
    case KvCacheDtype::kFp8E5m2: return "fp8_e5m2";
    case KvCacheDtype::kFp8DsMla: return "fp8_ds_mla";
  }
  return "auto";
}

namespace {
bool IsBlackwellDatacenter(const GpuSpec& gpu) { return gpu.arch == "sm100" || gpu.arch == "sm103" || gpu.arch == "sm110"; }

EffectiveKv DsMla(const ModelConfig& m, std::string reason) {
  if (!m.dsa)
    Fail("--kv-cache-dtype fp8_ds_mla is the FlashMLA-sparse layout of DSA models; {} ({}) has no DSA indexer",
         m.source, m.architecture);
  if (m.kv_lora_rank != 512 || m.qk_rope_head_dim != 64)
    Fail("fp8_ds_mla assumes kv_lora_rank 512 and qk_rope_head_dim 64 (656 B per token); {} has {} and {}", m.source,
         m.kv_lora_rank, m.qk_rope_head_dim);
  return EffectiveKv{"fp8_ds_mla", 0, std::move(reason)};
}
EffectiveKv ModelDtype(const ModelConfig& m, std::string reason) {
  return EffectiveKv{m.dtype_bytes == 4 ? "float32" : (m.torch_dtype == "float16" ? "float16" : "bfloat16"),
                     m.dtype_bytes, std::move(reason)};
}
}  // namespace

EffectiveKv ResolveKvDtype(const ModelConfig& m, KvCacheDtype requested, const VllmProfile& vllm, const GpuSpec& gpu) {
  if (m.dsa && !vllm.supports_dsa)
    Fail("vLLM profile {} ({}) predates DeepSeek Sparse Attention support (2025-09-30, #25896); {} needs a later one",
         vllm.name, vllm.date, m.architecture);
  switch (requested) {
    case KvCacheDtype::kAuto:
      if (m.dsa && vllm.dsa_auto_kv == "fp8_ds_mla") return DsMla(m, "auto -> fp8_ds_mla (DeepSeek-V3.2 default of v0.11.0)");
      return ModelDtype(m, "auto -> model dtype " + m.torch_dtype);
    case KvCacheDtype::kBfloat16:
      return EffectiveKv{"bfloat16", 2, "bfloat16"};
    case KvCacheDtype::kFloat16:
      return EffectiveKv{"float16", 2, "float16"};
    case KvCacheDtype::kFp8DsMla:
      return DsMla(m, "fp8_ds_mla");
    case KvCacheDtype::kFp8:
    case KvCacheDtype::kFp8E4m3:
    case KvCacheDtype::kFp8E5m2:
      if (m.dsa) {
        if (vllm.dsa_fp8_kv == "by_gpu" && IsBlackwellDatacenter(gpu))
          return EffectiveKv{"fp8", 1, "fp8 stays standard fp8: FLASHINFER_MLA_SPARSE on " + gpu.arch};
        return DsMla(m, "fp8 -> fp8_ds_mla: FLASHMLA_SPARSE layout");
      }
      return EffectiveKv{"fp8", 1, ToString(requested)};
  }
  return ModelDtype(m, "auto");
}

std::int64_t AttentionBytesPerTokenPerLayer(const ModelConfig& m, const EffectiveKv& kv, int tp) {
  if (m.attention == AttentionKind::kMla) {
    if (kv.layout == "fp8_ds_mla") return 656;  // 512 fp8 NoPE + 16 scales + 128 bf16 RoPE
    return static_cast<std::int64_t>(m.kv_lora_rank + m.qk_rope_head_dim) * kv.bytes_per_element;
  }
  std::int64_t heads = std::max<std::int64_t>(1, m.num_key_value_heads / std::max(1, tp));
  return 2 * heads * m.head_dim * kv.bytes_per_element;
}

std::int64_t IndexerBytesPerTokenPerLayer(const ModelConfig& m) {
  if (!m.dsa) return 0;
  return m.index_head_dim + 4 * (m.index_head_dim / 128);
}

int DefaultBlockSize(const ModelConfig& m, const EffectiveKv& kv, const VllmProfile& vllm, const GpuSpec& gpu) {
  if (m.dsa) return 64;  // indexer [64] / FlashMLA-sparse [64]
  if (m.attention == AttentionKind::kGqa) return 16;
  bool hopper = gpu.arch == "sm90";
  bool blackwell = IsBlackwellDatacenter(gpu);
  if (!vllm.preferred_block_size) {
    if (hopper) return 64;       // "Forcing kv cache block size to 64 for FlashMLA backend."
    if (blackwell) return 128;   // CUTLASS_MLA
    return 16;                   // Triton MLA
  }
  if (hopper) return kv.layout == "fp8" ? 64 : 16;  // FLASHMLA [64] vs FLASH_ATTN_MLA MultipleOf(16)
  if (blackwell) return 32;                          // FLASHINFER_MLA [32, 64]
  return 16;
}

int BlockSizeMultiple(const ModelConfig& m, const EffectiveKv& kv, const GpuSpec& gpu) {
  if (m.dsa) return 64;
  if (m.attention == AttentionKind::kMla && gpu.arch == "sm90" && kv.layout == "fp8") return 64;
  return 16;
}

}  // namespace ppdeploy
