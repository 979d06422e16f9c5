#include "memory/kv.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"
#include "core/escape.h"
#include "core/units.h"

namespace ppdeploy {

KvCacheDtype ParseKvCacheDtype(const std::string& t) {
  if (t == "auto") return KvCacheDtype::kAuto;
  if (t == "bfloat16" || t == "bf16") return KvCacheDtype::kBfloat16;
  if (t == "float16" || t == "fp16" || t == "half") return KvCacheDtype::kFloat16;
  if (t == "fp8") return KvCacheDtype::kFp8;
  if (t == "fp8_e4m3") return KvCacheDtype::kFp8E4m3;
  if (t == "fp8_e5m2") return KvCacheDtype::kFp8E5m2;
  if (t == "fp8_ds_mla") return KvCacheDtype::kFp8DsMla;
  Fail("--kv-cache-dtype: unknown value {} (accepted: auto, bfloat16, float16, fp8, fp8_e4m3, fp8_e5m2, fp8_ds_mla)",
       QuoteForMessage(t));
}

std::string ToString(KvCacheDtype d) {
  switch (d) {
    case KvCacheDtype::kAuto:
      return "auto";
    case KvCacheDtype::kBfloat16:
      return "bfloat16";
    case KvCacheDtype::kFloat16:
      return "float16";
    case KvCacheDtype::kFp8:
      return "fp8";
    case KvCacheDtype::kFp8E4m3:
      return "fp8_e4m3";
    case KvCacheDtype::kFp8E5m2:
      return "fp8_e5m2";
    case KvCacheDtype::kFp8DsMla:
      return "fp8_ds_mla";
  }
  return "auto";
}

namespace {
bool IsBlackwellDatacenter(const GpuSpec& gpu) {
  return gpu.arch == "sm100" || gpu.arch == "sm103" || gpu.arch == "sm110";
}

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
      if (m.dsa && vllm.dsa_auto_kv == "fp8_ds_mla")
        return DsMla(m, "auto -> fp8_ds_mla (DeepSeek-V3.2 default of v0.11.0)");
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
    if (hopper) return 64;      // "Forcing kv cache block size to 64 for FlashMLA backend."
    if (blackwell) return 128;  // CUTLASS_MLA
    return 16;                  // Triton MLA
  }
  if (hopper) return kv.layout == "fp8" ? 64 : 16;  // FLASHMLA [64] vs FLASH_ATTN_MLA MultipleOf(16)
  if (blackwell) return 32;                         // FLASHINFER_MLA [32, 64]
  return 16;
}

int BlockSizeMultiple(const ModelConfig& m, const EffectiveKv& kv, const GpuSpec& gpu) {
  if (m.dsa) return 64;
  if (m.attention == AttentionKind::kMla && gpu.arch == "sm90" && kv.layout == "fp8") return 64;
  return 16;
}

}  // namespace ppdeploy

namespace ppdeploy {

std::string_view KvSpecTypeName(KvSpecType type) {
  switch (type) {
    case KvSpecType::kFullAttention:
      return "full_attention";
    case KvSpecType::kMla:
      return "mla";
    case KvSpecType::kSlidingWindow:
      return "sliding_window";
    case KvSpecType::kChunkedLocal:
      return "chunked_local";
    case KvSpecType::kMamba:
      return "mamba";
  }
  return "?";
}

std::int64_t KvSpec::PageBytes() const {
  if (type == KvSpecType::kMamba) return page_padded > 0 ? page_padded : state_bytes;
  return static_cast<std::int64_t>(block_size) * bytes_per_token;
}

std::int64_t MaxMemoryUsageBytes(const KvSpec& s, const KvLimits& l) {
  const std::int64_t B = s.block_size;
  switch (s.type) {
    case KvSpecType::kFullAttention:
    case KvSpecType::kMla: {
      std::int64_t len = l.max_model_len;
      if (l.decode_context_parallel_size > 1) len = CeilDiv(len, l.decode_context_parallel_size);
      return CeilDiv(len, B) * s.PageBytes();
    }
    case KvSpecType::kSlidingWindow: {
      std::int64_t tokens = std::min<std::int64_t>(s.window - 1 + l.max_num_batched_tokens, l.max_model_len);
      return (CeilDiv(tokens, B) + 1) * s.PageBytes();
    }
    case KvSpecType::kChunkedLocal: {
      std::int64_t tokens = std::min<std::int64_t>(s.window + l.max_num_batched_tokens, l.max_model_len);
      return CeilDiv(tokens, B) * s.PageBytes();
    }
    case KvSpecType::kMamba:
      return s.PageBytes();
  }
  return 0;
}

int KvCacheGroups::min_block_size() const {
  int b = 0;
  for (const auto& g : groups)
    if (b == 0 || g.spec.block_size < b) b = g.spec.block_size;
  return b;
}

namespace {

bool UniformType(const std::vector<KvLayer>& layers) {
  const KvSpec& one = layers.front().spec;
  for (const auto& l : layers)
    if (l.spec.block_size != one.block_size) return false;
  for (const auto& l : layers) {
    const KvSpec& s = l.spec;
    if (one.FullFamily()) {
      if (!s.FullFamily()) return false;
    } else if (s.type != one.type || s.window != one.window) {
      return false;
    } else if (s.type == KvSpecType::kMamba && s != one) {
      return false;
    }
  }
  return true;
}

}  // namespace

namespace {

// unify_hybrid_kv_cache_specs: without the hybrid manager every sliding / chunked layer is cached as full
// attention (blocks for every token; the compute stays windowed); mamba state cannot join attention then.
void UnifyHybridSpecs(std::vector<KvLayer>& layers, const KvGroupingOptions& o, KvCacheGroups& out) {
  auto any = [&](KvSpecType t) {
    return std::any_of(layers.begin(), layers.end(), [&](const KvLayer& l) { return l.spec.type == t; });
  };
  const bool has_full = std::any_of(layers.begin(), layers.end(), [](const KvLayer& l) { return l.spec.FullFamily(); });
  const bool unify_sliding = !o.hybrid_manager;
  const bool unify_chunked = !o.hybrid_manager || !o.chunked_local_hybrid;
  if (has_full &&
      ((unify_sliding && any(KvSpecType::kSlidingWindow)) || (unify_chunked && any(KvSpecType::kChunkedLocal)))) {
    int n = 0;
    for (auto& l : layers) {
      bool sw = l.spec.type == KvSpecType::kSlidingWindow && unify_sliding;
      bool cl = l.spec.type == KvSpecType::kChunkedLocal && unify_chunked;
      if (sw || cl) {
        l.spec.type = KvSpecType::kFullAttention;
        l.spec.window = 0;
        ++n;
      }
    }
    out.notes.push_back(fmt::format(
        "{} windowed layers are cached as full attention: {} (vllm kv_cache_utils.py unify_hybrid_kv_cache_specs)", n,
        o.hybrid_manager ? "chunked local attention runs with the hybrid KV-cache manager disabled in this version"
                         : "this version has no hybrid KV-cache manager"));
  }
  if (!o.hybrid_manager && any(KvSpecType::kMamba) && has_full)
    Fail(
        "this vLLM version has no hybrid KV-cache manager, so it cannot put mamba / linear-attention state and "
        "attention KV into one cache (\"Hybrid KV cache manager is disabled but failed to convert the KV cache specs "
        "to one unified type\"); use a version with one");
}

// One group of every layer (one spec, or one spec type: UniformTypeKVCacheSpecs).
void OneGroup(const std::vector<KvLayer>& layers, KvGrouping grouping, int group_size, KvCacheGroups& out) {
  out.grouping = grouping;
  KvGroup g{layers[0].spec, {}};
  for (const auto& l : layers) g.layers.push_back(l.name);
  out.group_size = group_size < 0 ? static_cast<int>(g.layers.size()) : group_size;
  out.groups.push_back(std::move(g));
}

// unify_kv_cache_spec_page_size: smaller pages grow their block size to the largest page.
void UnifyPageSize(std::vector<KvLayer>& layers, KvCacheGroups& out) {
  std::int64_t max_page = 0;
  for (const auto& l : layers) max_page = std::max(max_page, l.spec.PageBytes());
  for (auto& l : layers) {
    std::int64_t page = l.spec.PageBytes();
    if (page == max_page) continue;
    if (l.spec.type == KvSpecType::kMamba || page <= 0 || max_page % page != 0)
      Fail(
          "layer {} ({} page {} B) cannot be unified with the largest page {} B: vLLM raises NotImplementedError "
          "(\"The page size of the layer is not divisible by the maximum page size\")",
          l.name, KvSpecTypeName(l.spec.type), page, max_page);
    l.spec.block_size = static_cast<int>(l.spec.block_size * (max_page / page));
    out.notes.push_back(fmt::format("{} layers' block size raised to {} to match the {} B page",
                                    KvSpecTypeName(l.spec.type), l.spec.block_size, max_page));
  }
  std::sort(out.notes.begin(), out.notes.end());
  out.notes.erase(std::unique(out.notes.begin(), out.notes.end()), out.notes.end());
}

// _get_kv_cache_groups_uniform_page_size: same-spec layers, split into groups of equal size (padded).
void HybridGroups(const std::vector<KvLayer>& layers, const KvGroupingOptions& o, KvCacheGroups& out) {
  std::vector<std::pair<KvSpec, std::vector<std::string>>> same;
  for (const auto& l : layers) {
    auto it = std::find_if(same.begin(), same.end(), [&](const auto& p) { return p.first == l.spec; });
    if (it == same.end())
      same.push_back({l.spec, {l.name}});
    else
      it->second.push_back(l.name);
  }
  size_t min_n = SIZE_MAX, max_n = 0;
  for (const auto& [spec, names] : same) {
    min_n = std::min(min_n, names.size());
    max_n = std::max(max_n, names.size());
  }
  size_t group_size = min_n;
  if (o.group_size_ratio > 0 && static_cast<double>(max_n) < static_cast<double>(min_n) * o.group_size_ratio)
    group_size = max_n;
  out.grouping = KvGrouping::kHybrid;
  out.group_size = static_cast<int>(group_size);
  for (const auto& [spec, names] : same) {
    size_t padding = group_size - names.size() % group_size;
    if (padding != group_size) {
      double pct = 100.0 * static_cast<double>(padding) / static_cast<double>(names.size());
      if (static_cast<int>(padding) > out.padding_layers) out.padding_layers = static_cast<int>(padding);
      out.padding_waste_pct = std::max(out.padding_waste_pct, pct);
      out.notes.push_back(fmt::format("Add {} padding layers, may waste at most {:.2f}% KV cache memory ({} layers)",
                                      padding, pct, KvSpecTypeName(spec.type)));
    }
    size_t num_groups = (names.size() + group_size - 1) / group_size;
    for (size_t i = 0; i < num_groups; ++i) {
      KvGroup g{spec, {}};
      for (size_t k = i; k < names.size(); k += num_groups) g.layers.push_back(names[k]);
      out.groups.push_back(std::move(g));
    }
  }
}

}  // namespace

KvCacheGroups GroupKvCacheSpecs(const std::vector<KvLayer>& model_layers, const KvGroupingOptions& o) {
  KvCacheGroups out;
  if (model_layers.empty()) {
    out.grouping = KvGrouping::kAttentionFree;
    return out;
  }
  std::vector<KvLayer> layers = model_layers;
  UnifyHybridSpecs(layers, o, out);
  const bool uniform =
      std::all_of(layers.begin(), layers.end(), [&](const KvLayer& l) { return l.spec == layers[0].spec; });
  out.model_layers = layers;
  if (uniform) {
    OneGroup(layers, KvGrouping::kUniform, -1, out);
    return out;
  }
  if (UniformType(layers)) {
    OneGroup(layers, KvGrouping::kUniformType, 1, out);
    return out;
  }
  UnifyPageSize(layers, out);
  HybridGroups(layers, o, out);
  return out;
}

WorkerKv ProjectKvGroupsToWorker(const KvCacheGroups& groups, const std::vector<KvLayer>& worker,
                                 const KvLimits& limits, bool global_page_for_uniform_type, bool whole_model_check) {
  WorkerKv w;
  for (const auto& l : worker)
    if (l.spec.type != KvSpecType::kMamba) w.bytes_per_token += l.spec.bytes_per_token;
  if (groups.grouping == KvGrouping::kAttentionFree) return w;
  auto on_worker = [&](const std::string& name) {
    return std::any_of(worker.begin(), worker.end(), [&](const KvLayer& l) { return l.name == name; });
  };
  if (groups.grouping == KvGrouping::kUniformType) {
    // One UniformTypeKVCacheSpecs group: num_blocks = available // the sum of the pages of this
    // worker's layers (of every layer of the model in the global-page era). A worker with no layer
    // of it keeps the global spec (`if worker_layer_names and isinstance(...)` in
    // _project_kv_cache_groups_to_worker), so it divides by the page of all layers too.
    for (const auto& l : global_page_for_uniform_type || worker.empty() ? groups.model_layers : worker)
      w.block_bytes += l.spec.PageBytes();
    for (const auto& l : whole_model_check ? groups.model_layers : worker)
      w.needed_bytes += MaxMemoryUsageBytes(l.spec, limits);
    w.local_group_size = worker.empty() ? 0 : 1;
    return w;
  }
  int local = 0;
  for (const auto& g : groups.groups)
    local = std::max(local, static_cast<int>(std::count_if(g.layers.begin(), g.layers.end(), on_worker)));
  w.local_group_size = local;
  const std::int64_t page = groups.groups.front().spec.PageBytes();
  w.block_bytes = page * local;
  std::int64_t blocks = 0;
  for (const auto& g : groups.groups) blocks += CeilDiv(MaxMemoryUsageBytes(g.spec, limits), g.spec.PageBytes());
  w.needed_bytes = static_cast<std::int64_t>(whole_model_check ? groups.group_size : local) * page * blocks;
  return w;
}

std::int64_t BlocksPerRequest(const KvCacheGroups& groups, const KvLimits& limits) {
  if (groups.grouping == KvGrouping::kAttentionFree) return 1;
  std::int64_t blocks = 0;
  for (const auto& g : groups.groups) blocks += CeilDiv(MaxMemoryUsageBytes(g.spec, limits), g.spec.PageBytes());
  return std::max<std::int64_t>(1, blocks);
}

int HybridMambaBlockSize(std::int64_t attn_per_token, std::int64_t mamba_state, int alignment, int user_block) {
  if (attn_per_token <= 0 || mamba_state <= 0) return user_block;
  std::int64_t block = alignment * CeilDiv(mamba_state, static_cast<std::int64_t>(alignment) * attn_per_token);
  if (user_block > 0 && user_block >= block) block = user_block;
  if (mamba_state > block * attn_per_token) block = CeilDiv(mamba_state, attn_per_token);
  return static_cast<int>(block);
}

bool LayerIsFull(const ModelConfig& m, int layer) {
  if (!m.dsa) return true;
  if (layer >= m.num_hidden_layers) return true;  // MTP layers always build an indexer
  if (m.index_topk_pattern) {
    const std::string& p = *m.index_topk_pattern;
    if (layer >= 0 && layer < static_cast<int>(p.size())) return p[layer] != 'S';
    return true;
  }
  int freq = std::max(1, m.index_topk_freq);
  return std::max(layer - m.index_skip_topk_offset + 1, 0) % freq == 0;
}

bool LayerOwnsIndexerCache(const ModelConfig& m, int layer, IndexShareMode mode, bool forced) {
  if (!m.dsa) return false;
  if (mode != IndexShareMode::kFull) return true;
  return forced || LayerIsFull(m, layer);
}

std::int64_t LongestFittingMaxModelLen(const KvCacheGroups& groups, const std::vector<KvLayer>& worker_layers,
                                       const KvLimits& limits, bool global_page_for_uniform_type,
                                       bool whole_model_check, std::int64_t have_bytes, std::int64_t upper) {
  auto needed = [&](std::int64_t len) {
    KvLimits l = limits;
    l.max_model_len = len;
    return ProjectKvGroupsToWorker(groups, worker_layers, l, global_page_for_uniform_type, whole_model_check)
        .needed_bytes;
  };
  if (needed(1) > have_bytes) return 0;
  std::int64_t lo = 1, hi = upper, best = 0;
  while (lo <= hi) {
    const std::int64_t mid = lo + (hi - lo) / 2;
    if (needed(mid) <= have_bytes) {
      best = mid;
      lo = mid + 1;
    } else {
      hi = mid - 1;
    }
  }
  return best;
}

}  // namespace ppdeploy
