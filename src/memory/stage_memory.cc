#include "memory/stage_memory.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

namespace ppdeploy {

bool StagePlacement::Forced(int layer) const { return std::find(forced.begin(), forced.end(), layer) != forced.end(); }

std::int64_t StageWeightsBytes(const Deployment& d, const ModelConfig& m, const StagePlacement& s) {
  const WeightTable& w = d.weights;
  const int tp = s.tensor_parallel_size, pp = s.pipeline_parallel_size;
  ShardParams sp{tp, d.enable_expert_parallel ? tp * std::max(1, s.data_parallel_size) : tp, m.num_key_value_heads,
                 m.vocab_size};
  std::int64_t total = 0;
  for (int i = s.layer_start; i < s.layer_end && i < static_cast<int>(w.layers.size()); ++i)
    total += PerGpuBytes(
        w.layers[i], sp,
        (m.dsa && d.vllm.indexer_weights_on_all_layers) || LayerOwnsIndexerCache(m, i, d.vllm.index_share, s.Forced(i)),
        w.indexer_bytes_estimate);
  if (s.first()) {
    total += PerGpuBytes(w.embedding, sp, false, 0);
    total += PerGpuBytes(w.other, sp, false, 0);
  }
  const SlotWeights& head = w.lm_head.items.empty() ? w.embedding : w.lm_head;
  // DeepSeek-V2/V3 built ParallelLMHead unconditionally, on every PP rank, until #13833
  // (deepseek_v2.py DeepseekV2ForCausalLM; vllm#12895 / #14120 PP OOM reports).
  if (!s.last() && d.vllm.lm_head_every_pp_rank && m.architecture.rfind("Deepseek", 0) == 0)
    total += PerGpuBytes(head, sp, false, 0);
  if (s.last()) {
    total += PerGpuBytes(w.final_norm, sp, false, 0);
    if (!m.tie_word_embeddings || pp > 1) total += PerGpuBytes(head, sp, false, 0);
    if (d.mtp_on())
      for (const auto& slot : w.mtp) total += PerGpuBytes(slot, sp, m.dsa, w.indexer_bytes_estimate);
    total += MtpDrafterVocabBytes(d, sp, pp);
  }
  if (m.dsa) total += static_cast<std::int64_t>(MaxNumBatchedTokens(d)) * m.index_topk * 4;  // topk_indices_buffer
  return total;
}

std::int64_t MtpDrafterVocabBytes(const Deployment& d, const ShardParams& sp, int pp) {
  if (pp <= 1 || !d.mtp_on()) return 0;
  return d.vllm.mtp_own_vocab_weights_with_pp * PerGpuBytes(d.weights.embedding, sp, false, 0);
}

std::vector<KvLayer> StageKvLayers(const Deployment& d, const ModelConfig& m, const EffectiveKv& kv, int block_size,
                                   const StagePlacement& s) {
  const std::int64_t attn = AttentionBytesPerTokenPerLayer(m, kv, s.tensor_parallel_size);
  const std::int64_t idx = IndexerBytesPerTokenPerLayer(m);
  const bool mla = m.attention == AttentionKind::kMla;
  const KvSpecType full = mla ? KvSpecType::kMla : KvSpecType::kFullAttention;
  // The attention page vLLM pads mamba states to (HybridAttentionMambaModelConfig).
  const std::int64_t mamba_state = m.LinearStateBytes(s.tensor_parallel_size, m.dtype_bytes);
  const std::int64_t attn_page = static_cast<std::int64_t>(block_size) * attn;
  std::vector<KvLayer> out;
  auto attention = [&](const std::string& name, KvSpecType type, int window) {
    out.push_back(KvLayer{name, KvSpec{type, block_size, attn, 0, 0, window, kv.layout}});
  };
  auto indexer = [&](const std::string& name) {
    out.push_back(KvLayer{name, KvSpec{KvSpecType::kMla, block_size, idx, 0, 0, 0, "indexer uint8"}});
  };
  for (int i = s.layer_start; i < s.layer_end; ++i) {
    const LayerInfo info = i < static_cast<int>(m.layers.size()) ? m.layers[i] : LayerInfo{};
    if (info.kv_source >= 0 || info.kind == LayerKind::kNone) continue;
    const std::string name = fmt::format("layers.{}", i);
    switch (info.kind) {
      case LayerKind::kFull:
        attention(name + ".attn", full, 0);
        break;
      case LayerKind::kSlidingWindow:
        attention(name + ".attn", KvSpecType::kSlidingWindow, info.window);
        break;
      case LayerKind::kChunkedLocal:
        attention(name + ".attn", KvSpecType::kChunkedLocal, info.window);
        break;
      case LayerKind::kLinear:
        out.push_back(
            KvLayer{name + ".mixer",
                    KvSpec{KvSpecType::kMamba, static_cast<int>(std::max<std::int64_t>(1, d.effective_max_model_len())),
                           0, mamba_state, attn_page > mamba_state ? attn_page : 0, 0,
                           std::string("state ") + std::string(StateKindName(m.linear.kind))}});
        break;
      case LayerKind::kNone:
        break;
    }
    if (mla && LayerOwnsIndexerCache(m, i, d.vllm.index_share, s.Forced(i))) indexer(name + ".indexer");
  }
  if (s.last() && d.mtp_on())
    for (int k = 0; k < m.num_nextn_predict_layers; ++k) {
      attention(fmt::format("mtp.{}.attn", k), full, 0);
      if (m.dsa) indexer(fmt::format("mtp.{}.indexer", k));
    }
  return out;
}

int DenseMlpLayers(const ModelConfig& m, int start, int end) {
  int n = 0;
  for (int i = start; i < end; ++i) n += m.n_routed_experts > 0 ? !m.IsMoeLayer(i) : 1;
  return n;
}

StageInputs StageInputsFor(const Deployment& d, const ModelConfig& m, int tp, int pp, int dp, int pp_rank,
                           int local_layers, int dense_layers) {
  StageInputs in;
  in.tensor_parallel_size = tp;
  in.pipeline_parallel_size = pp;
  in.pp_rank = pp_rank;
  in.local_layers = local_layers;
  in.dense_mlp_layers = dense_layers;
  in.mtp_on = d.mtp_on();
  in.num_speculative_tokens = d.num_speculative_tokens;
  in.mtp_layers = m.num_nextn_predict_layers;
  in.max_model_len = d.effective_max_model_len();
  in.max_num_seqs = MaxNumSeqs(d);
  in.max_num_batched_tokens = MaxNumBatchedTokens(d);
  in.enforce_eager = d.enforce_eager;
  in.expert_shards = d.enable_expert_parallel ? tp * std::max(1, dp) : tp;
  in.v2_model_runner = UsesV2ModelRunner(d, pp);
  in.activation_dtype_bytes = m.dtype_bytes;
  return in;
}

StageOverhead StageOverheads(const Deployment& d, const MemoryConstants& k, int tp, int pp, int dp, int pp_rank,
                             int local_layers, int dense_layers, bool describe) {
  return StageOverheads(d, EffectiveModel(d), d.gpu, k, tp, pp, dp, pp_rank, local_layers, dense_layers, describe);
}

StageOverhead StageOverheads(const Deployment& d, const ModelConfig& m, const GpuSpec& gpu, const MemoryConstants& k,
                             int tp, int pp, int dp, int pp_rank, int local_layers, int dense_layers, bool describe) {
  StageInputs in = StageInputsFor(d, m, tp, pp, dp, pp_rank, local_layers, dense_layers);
  in.describe = describe;
  StageMemory sm = EstimateStageMemory(m, gpu, d.vllm, in, k);
  const Provenance p = k.calibrated ? Provenance::kCalibrated : Provenance::kEstimated;
  StageOverhead so;
  so.non_torch = Figure::Of(sm.non_torch, p);
  so.activation = Figure::Of(sm.activation, p);
  so.cuda_graph_estimate = Figure::Of(sm.cuda_graph_estimate, p);
  so.cuda_graph_actual = Figure::Of(sm.cuda_graph_actual, p);
  so.cuda_context = Figure::Of(sm.cuda_context, p);
  so.budget = sm.budget();
  so.terms = std::move(sm.terms);
  return so;
}

std::int64_t StageBudgetBytes(const Deployment& d, const ModelConfig& m, const MemoryConstants& k, int tp, int pp,
                              int dp, int pp_rank, int local_layers, int dense_layers) {
  StageInputs in = StageInputsFor(d, m, tp, pp, dp, pp_rank, local_layers, dense_layers);
  in.describe = false;
  return EstimateStageMemory(m, d.gpu, d.vllm, in, k).budget().value;
}

StageMemoryPlan PlanStageMemory(const Deployment& d, const ModelConfig& m, const StagePlacement& s,
                                const WorkerKv& worker, const MemoryConstants& k, bool describe) {
  const GpuSpec& gpu = d.StageGpu(s.pp_rank);
  StageMemoryPlan out;
  out.bytes_per_token = worker.bytes_per_token;
  out.page_bytes = worker.block_bytes;
  out.kv_needed_bytes = worker.needed_bytes;
  out.requested_bytes = RequestedBytes(gpu.total_bytes(), d.gpu_memory_utilization);
  const std::int64_t w = StageWeightsBytes(d, m, s);
  out.weights = Figure::Of(Interval::Relative(w, WeightsUncertainty(d)),
                           d.weights.from_checkpoint ? Provenance::kMeasured : Provenance::kEstimated);
  // A stage on another GPU type (stage_gpus) runs with that GPU's batch defaults. (A copy of the
  // deployment only then: copying it per stage dominated the split optimiser.)
  std::optional<Deployment> ds;
  if (!d.stage_gpus.empty()) {
    ds = d;
    ds->gpu = gpu;
  }
  StageOverhead so =
      StageOverheads(ds ? *ds : d, m, gpu, k, s.tensor_parallel_size, s.pipeline_parallel_size, s.data_parallel_size,
                     s.pp_rank, s.local_layers(), DenseMlpLayers(m, s.layer_start, s.layer_end), describe);
  out.non_torch = so.non_torch;
  out.activation = so.activation;
  out.cuda_graph_estimate = so.cuda_graph_estimate;
  out.cuda_graph_actual = so.cuda_graph_actual;
  out.cuda_context = so.cuda_context;
  out.memory_terms = std::move(so.terms);
  if (d.kv_cache_memory_bytes) {
    out.available_kv = Figure::Exact(*d.kv_cache_memory_bytes, Provenance::kGiven);
  } else {
    Interval a = SubtractIndependent(SubtractIndependent(Interval::Exact(out.requested_bytes), out.weights.interval()),
                                     so.budget);
    out.available_kv = Figure::Of(a, d.calibration ? Provenance::kCalibrated : Provenance::kEstimated);
  }
  return out;
}

}  // namespace ppdeploy
