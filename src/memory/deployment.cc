#include "memory/deployment.h"

#include <cmath>

namespace ppdeploy {

ModelConfig EffectiveModel(const Deployment& d) {
  ModelConfig m = d.model;
  if (m.attention == AttentionKind::kMla && !d.mla_kv) {
    // The pre-MLA layout (vLLM < 0.7.1, or VLLM_MLA_DISABLE=1): DeepseekV2Attention caches K and V
    // for every head, num_kv_heads = num_local_heads; the head is qk_nope + qk_rope (v padded to
    // it), and 256 before #12067 (0.5.x / 0.6.x padded q/k/v to 256 for FlashAttention).
    m.attention = AttentionKind::kGqa;
    m.num_key_value_heads = m.num_attention_heads;
    m.head_dim = d.vllm.pre_mla_head_256 ? 256 : m.qk_nope_head_dim + m.qk_rope_head_dim;
    m.dsa = false;
  }
  if (d.index_fix == IndexFix::kAllFull && m.dsa) {
    m.index_topk_freq = 1;  // HF_OVERRIDES='{"index_topk_freq":1}' (docs/seed.md §7 diagnostic)
    m.index_topk_pattern.reset();
  }
  return m;
}

bool UsesV2ModelRunner(std::string_view force_v2_runner, int pipeline_parallel_size, const VllmProfile& vllm) {
  if (!vllm.v2_model_runner_env || force_v2_runner == "0") return false;
  return force_v2_runner == "1" || (force_v2_runner == "auto" && pipeline_parallel_size > 1);
}

bool UsesV2ModelRunner(const Deployment& d, int pipeline_parallel_size) {
  return UsesV2ModelRunner(d.force_v2_runner, pipeline_parallel_size, d.vllm);
}

int MaxNumBatchedTokens(const Deployment& d) {
  if (d.max_num_batched_tokens > 0) return d.max_num_batched_tokens;
  if (d.engine == Engine::kV0) {
    // V0 without chunked prefill batches a whole max_model_len prompt (SchedulerConfig:
    // max(max_model_len, 2048)); V0 turns chunked prefill on above 32K tokens (then 2048).
    const std::int64_t L = d.effective_max_model_len();
    return L > 32768 ? 2048 : static_cast<int>(std::max<std::int64_t>(L, 2048));
  }
  return DefaultBatchLimits(d.gpu, d.vllm).first;
}

int MaxNumSeqs(const Deployment& d) {
  return d.max_num_seqs > 0 ? d.max_num_seqs : DefaultBatchLimits(d.gpu, d.vllm).second;
}

std::int64_t RequestedBytes(std::int64_t total_bytes, double gpu_memory_utilization) {
  return static_cast<std::int64_t>(std::ceil(static_cast<double>(total_bytes) * gpu_memory_utilization));
}

std::int64_t RequestedBytes(const Deployment& d) {
  return RequestedBytes(d.gpu.total_bytes(), d.gpu_memory_utilization);
}

double WeightsUncertainty(const Deployment& d) {
  if (d.weights.from_checkpoint) return 0.003;  // headers; allocator rounding, buffers made at load
  if (d.calibration)
    for (const auto& r : d.calibration->ranks)
      if (r.model_loading_gib) return 0.004;  // the estimate was checked against a logged load
  return 0.01;
}

}  // namespace ppdeploy
