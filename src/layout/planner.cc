#include "layout/planner.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "core/error.h"
#include "core/units.h"

namespace ppdeploy {

std::string_view ProblemKindName(PlanProblem::Kind kind) {
  switch (kind) {
    case PlanProblem::Kind::kWeightsOverBudget:
      return "weights-over-budget";
    case PlanProblem::Kind::kNoKvMemory:
      return "no-kv-memory";
    case PlanProblem::Kind::kMaxModelLenTooLarge:
      return "max-model-len-too-large";
    case PlanProblem::Kind::kPpSpeculation:
      return "pp-speculation";
    case PlanProblem::Kind::kGpuCount:
      return "gpu-count";
    case PlanProblem::Kind::kDcpUnsupported:
      return "dcp-unsupported";
  }
  return "?";
}

const PlanProblem* LayoutPlan::Problem(PlanProblem::Kind kind) const {
  for (const auto& p : problems)
    if (p.kind == kind) return &p;
  return nullptr;
}

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
    m.index_topk_freq = 1;  // HF_OVERRIDES='{"index_topk_freq":1}' (seed §7 diagnostic)
    m.index_topk_pattern.reset();
  }
  return m;
}

bool FixApplied(const Deployment& d) {
  switch (d.index_fix) {
    case IndexFix::kProfile:
      return d.vllm.fix_b != FixBSource::kNone;
    case IndexFix::kNone:
      return false;
    case IndexFix::kPattern:
      if (d.vllm.index_share != IndexShareMode::kFull && d.vllm.index_share != IndexShareMode::kComputeOnly)
        Fail("--fix pattern needs a vLLM that reads index_topk_pattern (main >= 2026-06-07); profile {} does not",
             d.vllm.name);
      return true;
    case IndexFix::kAllFull:
      return true;
  }
  return false;
}

std::vector<int> ForcedLayersFor(const Deployment& d, const std::vector<int>& partition) {
  if (!d.model.dsa || !FixApplied(d)) return {};
  ModelConfig m = EffectiveModel(d);
  return AnalyzeIndexShare(m, partition, d.vllm.index_share, true).forced;
}

std::vector<int> DefaultSplit(const VllmProfile& vllm, int num_hidden_layers, int pp_size) {
  if (vllm.default_split == DefaultSplitRule::kRemainderLast && pp_size >= 1 && pp_size <= num_hidden_layers) {
    // get_pp_indices before #13839 (2025-02-25): layers // pp on every stage, the remainder on the last.
    std::vector<int> out(pp_size, num_hidden_layers / pp_size);
    out.back() += num_hidden_layers % pp_size;
    return out;
  }
  return DefaultPartition(num_hidden_layers, pp_size);
}

namespace {

bool Contains(const std::vector<int>& v, int x) { return std::find(v.begin(), v.end(), x) != v.end(); }

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

std::int64_t Requested(std::int64_t total_bytes, double util) {
  return static_cast<std::int64_t>(std::ceil(static_cast<double>(total_bytes) * util));
}

std::string Gib(std::int64_t bytes) { return fmt::format("{:.2f} GiB", ToGiB(bytes)); }

// vLLM's format_gib: str(round(bytes / 2**30, 2)) ("24.0", "3.18").
std::string FormatGib(std::int64_t bytes) {
  double v = std::round(ToGiB(bytes) * 100.0) / 100.0;
  std::string s = fmt::format("{:.2f}", v);
  while (s.size() > 1 && s.back() == '0' && s[s.size() - 2] != '.') s.pop_back();
  return s;
}

}  // namespace

std::int64_t StageWeightsBytes(const Deployment& d, int tp, int dp, const std::vector<int>& partition, int pp_rank,
                               const std::vector<int>& forced) {
  return StageWeightsBytes(d, EffectiveModel(d), tp, dp, partition, pp_rank, forced);
}

std::int64_t StageWeightsBytes(const Deployment& d, const ModelConfig& m, int tp, int dp,
                               const std::vector<int>& partition, int pp_rank, const std::vector<int>& forced) {
  const WeightTable& w = d.weights;
  const int pp = static_cast<int>(partition.size());
  ShardParams sp{tp, d.enable_expert_parallel ? tp * std::max(1, dp) : tp, m.num_key_value_heads, m.vocab_size};
  LayerRange range = RankRange(partition, pp_rank);
  std::int64_t total = 0;
  for (int i = range.start; i < range.end && i < static_cast<int>(w.layers.size()); ++i)
    total += PerGpuBytes(w.layers[i], sp,
                         (m.dsa && d.vllm.indexer_weights_on_all_layers) ||
                             LayerOwnsIndexerCache(m, i, d.vllm.index_share, Contains(forced, i)),
                         w.indexer_bytes_estimate);
  const bool first = pp_rank == 0, last = pp_rank == pp - 1;
  if (first) {
    total += PerGpuBytes(w.embedding, sp, false, 0);
    total += PerGpuBytes(w.other, sp, false, 0);
  }
  // DeepSeek-V2/V3 built ParallelLMHead unconditionally, on every PP rank, until #13833
  // (deepseek_v2.py DeepseekV2ForCausalLM; vllm#12895 / #14120 PP OOM reports).
  if (!last && d.vllm.lm_head_every_pp_rank && m.architecture.rfind("Deepseek", 0) == 0) {
    const SlotWeights& head = w.lm_head.items.empty() ? w.embedding : w.lm_head;
    total += PerGpuBytes(head, sp, false, 0);
  }
  if (last) {
    total += PerGpuBytes(w.final_norm, sp, false, 0);
    if (!m.tie_word_embeddings || pp > 1) {
      const SlotWeights& head = w.lm_head.items.empty() ? w.embedding : w.lm_head;
      total += PerGpuBytes(head, sp, false, 0);
    }
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

std::vector<KvLayer> StageKvLayers(const Deployment& d, const EffectiveKv& kv, int tp, int block_size,
                                   const std::vector<int>& partition, int pp_rank, const std::vector<int>& forced) {
  return StageKvLayers(d, EffectiveModel(d), kv, tp, block_size, partition, pp_rank, forced);
}

std::vector<KvLayer> StageKvLayers(const Deployment& d, const ModelConfig& m, const EffectiveKv& kv, int tp,
                                   int block_size, const std::vector<int>& partition, int pp_rank,
                                   const std::vector<int>& forced) {
  const std::int64_t attn = AttentionBytesPerTokenPerLayer(m, kv, tp);
  const std::int64_t idx = IndexerBytesPerTokenPerLayer(m);
  const bool mla = m.attention == AttentionKind::kMla;
  const KvSpecType full = mla ? KvSpecType::kMla : KvSpecType::kFullAttention;
  // The attention page vLLM pads mamba states to (HybridAttentionMambaModelConfig).
  const std::int64_t mamba_state = m.LinearStateBytes(tp, m.dtype_bytes);
  const std::int64_t attn_page = static_cast<std::int64_t>(block_size) * attn;
  LayerRange range = RankRange(partition, pp_rank);
  std::vector<KvLayer> out;
  auto attention = [&](const std::string& name, KvSpecType type, int window) {
    out.push_back(KvLayer{name, KvSpec{type, block_size, attn, 0, 0, window, kv.layout}});
  };
  for (int i = range.start; i < range.end; ++i) {
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
    if (mla && LayerOwnsIndexerCache(m, i, d.vllm.index_share, Contains(forced, i)))
      out.push_back(KvLayer{name + ".indexer", KvSpec{KvSpecType::kMla, block_size, idx, 0, 0, 0, "indexer uint8"}});
  }
  if (pp_rank == static_cast<int>(partition.size()) - 1 && d.mtp_on())
    for (int k = 0; k < m.num_nextn_predict_layers; ++k) {
      attention(fmt::format("mtp.{}.attn", k), full, 0);
      if (m.dsa)
        out.push_back(KvLayer{fmt::format("mtp.{}.indexer", k),
                              KvSpec{KvSpecType::kMla, block_size, idx, 0, 0, 0, "indexer uint8"}});
    }
  return out;
}

std::int64_t StageKvBytesPerToken(const Deployment& d, const EffectiveKv& kv, int tp, const std::vector<int>& partition,
                                  int pp_rank, const std::vector<int>& forced) {
  std::int64_t total = 0;
  for (const auto& l : StageKvLayers(d, kv, tp, 16, partition, pp_rank, forced))
    if (l.spec.type != KvSpecType::kMamba) total += l.spec.bytes_per_token;
  return total;
}

bool UsesV2ModelRunner(const Deployment& d, int pipeline_parallel_size) {
  if (d.force_v2_runner == "1") return true;
  if (d.force_v2_runner == "0") return false;
  return pipeline_parallel_size > 1 && d.vllm.v2_model_runner_env;
}

std::string DcpRefusal(const Deployment& d, const ModelConfig& m, const EffectiveKv& kv, int tp, int dcp) {
  if (dcp <= 1) return "";
  if (!d.vllm.dcp)
    return fmt::format("vLLM {} has no --decode-context-parallel-size (decode context parallelism came with v0.11)",
                       d.vllm.name);
  if (tp % dcp != 0)
    return fmt::format("tp_size={} must be divisible by dcp_size={} (vLLM ParallelConfig: DCP reuses the TP ranks)", tp,
                       dcp);
  if (d.engine == Engine::kV0) return "DCP exists only in the V1 engine";
  for (const auto& l : m.layers)
    if (l.kind == LayerKind::kSlidingWindow || l.kind == LayerKind::kChunkedLocal || l.kind == LayerKind::kLinear)
      return fmt::format(
          "{} has {} layers: vLLM supports DCP only for full attention (SlidingWindowSpec.max_memory_usage_bytes "
          "asserts \"DCP not support sliding window\"; chunked and mamba state cannot be split by token)",
          m.source, LayerKindName(l.kind));
  const bool blackwell = d.gpu.arch == "sm100" || d.gpu.arch == "sm103" || d.gpu.arch == "sm110";
  if (m.attention == AttentionKind::kMla) {
    if (!m.dsa) return "";  // FLASHMLA, FLASH_ATTN_MLA, TRITON_MLA, CUTLASS_MLA, FLASHINFER_MLA return the decode LSE
    if (blackwell && kv.layout == "fp8" && d.vllm.dcp_dsa_blackwell) return "";  // FLASHINFER_MLA_SPARSE (#46076)
    return fmt::format(
        "the sparse MLA backend here ({}) cannot return the softmax LSE during decode: vLLM stops at start-up "
        "(cp_utils.py check_attention_cp_compatibility: \"Decode Context Parallelism (DCP) requires attention "
        "implementations to return the softmax LSE during decode\"){}",
        blackwell ? "FLASHMLA_SPARSE for this KV dtype" : "FLASHMLA_SPARSE / the sm80 Triton sparse path",
        blackwell && !d.vllm.dcp_dsa_blackwell
            ? fmt::format("; FLASHINFER_MLA_SPARSE returns it from 2026-07-01 (#46076), not in vLLM {}", d.vllm.name)
        : blackwell ? "; FLASHINFER_MLA_SPARSE (fp8 KV) would"
                    : "");
  }
  if (!d.vllm.dcp_gqa)
    return fmt::format(
        "vLLM {}: DCP needs an MLA model (the GQA attention backends of this version do not return the "
        "decode LSE)",
        d.vllm.name);
  if (tp <= m.num_key_value_heads)
    return fmt::format(
        "GQA DCP needs tensor_parallel_size ({}) > num_key_value_heads ({}) (vllm/config/model.py): "
        "the DCP ranks must hold replicated KV heads",
        tp, m.num_key_value_heads);
  if (dcp > tp / m.num_key_value_heads)
    return fmt::format("GQA DCP needs dcp_size ({}) <= tensor_parallel_size / num_key_value_heads ({} / {} = {})", dcp,
                       tp, m.num_key_value_heads, tp / m.num_key_value_heads);
  return "";
}

std::int64_t RequestedBytes(const Deployment& d) { return Requested(d.gpu.total_bytes(), d.gpu_memory_utilization); }

namespace {

int DenseLayers(const ModelConfig& m, int start, int end) {
  int n = 0;
  for (int i = start; i < end; ++i) n += m.n_routed_experts > 0 ? !m.IsMoeLayer(i) : 1;
  return n;
}

StageInputs InputsFor(const Deployment& d, const ModelConfig& m, const EffectiveKv* kv, int tp, int pp, int dp,
                      int pp_rank, int local_layers, int dense_layers) {
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
  if (kv) in.kv_layout = kv->layout;
  return in;
}

}  // namespace

MemoryConstants ConstantsFor(const Deployment& d, std::vector<std::string>* notes) {
  MemoryConstants defaults = DefaultMemoryConstants(d.gpu, d.vllm);
  if (!d.calibration) return defaults;
  const Calibration& c = *d.calibration;
  // The calibration's own boot, as the planner models it.
  Deployment cd = d;
  cd.calibration.reset();
  cd.num_speculative_tokens = c.num_speculative_tokens;
  cd.max_model_len = c.max_model_len;
  cd.gpu_memory_utilization = c.gpu_memory_utilization;
  cd.gpu.total_gib = c.total_gib;
  if (c.max_num_seqs) cd.max_num_seqs = *c.max_num_seqs;
  if (c.max_num_batched_tokens) cd.max_num_batched_tokens = *c.max_num_batched_tokens;
  if (!c.kv_cache_dtype.empty()) {
    try {
      cd.kv_cache_dtype = ParseKvCacheDtype(c.kv_cache_dtype);
    } catch (const Error&) {
      // an unknown dtype string in an older file: keep the deployment's
    }
  }
  const int cpp = c.pipeline_parallel_size, ctp = c.tensor_parallel_size;
  std::vector<int> cpart =
      c.layer_partition.empty() ? DefaultSplit(d.vllm, d.model.num_hidden_layers, cpp) : c.layer_partition;
  const ModelConfig m = EffectiveModel(cd);
  EffectiveKv kv = ResolveKvDtype(m, cd.kv_cache_dtype, cd.vllm, cd.gpu);
  std::vector<int> cforced = ForcedLayersFor(cd, cpart);
  // The GPU each calibration rank booted on: a deployment with a GPU type per PP stage (stage_gpus) and
  // the calibration's PP size is the calibration's own boot (as `calibrate --stage-gpus` reads it), so a
  // rank on another GPU type than the calibration's `gpu` requested that GPU's total x utilisation
  // (gpu_worker.py determine_available_memory: requested_memory = total x gpu_memory_utilization, per
  // worker). total_gib is the figure of the calibration's own GPU (the logged one when logged).
  auto rank_total_gib = [&](int pp_rank) {
    if (static_cast<int>(d.stage_gpus.size()) != cpp || pp_rank < 0 || pp_rank >= cpp) return c.total_gib;
    const GpuSpec& g = d.stage_gpus[static_cast<size_t>(pp_rank)];
    return g.name == c.gpu ? c.total_gib : g.total_gib;
  };
  std::vector<CalibrationStage> stages;
  for (const auto& r : c.ranks) {
    LayerRange range = RankRange(cpart, r.pp_rank);
    CalibrationStage st;
    st.inputs = InputsFor(cd, m, &kv, ctp, cpp, 1, r.pp_rank, range.size(), DenseLayers(m, range.start, range.end));
    st.weights_bytes = StageWeightsBytes(cd, ctp, 1, cpart, r.pp_rank, cforced);
    st.requested_bytes = Requested(GiBToBytes(rank_total_gib(r.pp_rank)), c.gpu_memory_utilization);
    stages.push_back(st);
  }
  return FitConstants(c, stages, m, cd.gpu, cd.vllm, defaults, notes);
}

double WeightsUncertainty(const Deployment& d) {
  if (d.weights.from_checkpoint) return 0.003;  // headers; allocator rounding, buffers made at load
  if (d.calibration)
    for (const auto& r : d.calibration->ranks)
      if (r.model_loading_gib) return 0.004;  // the estimate was checked against a logged load
  return 0.01;
}

StageOverhead StageOverheads(const Deployment& d, const MemoryConstants& k, int tp, int pp, int dp, int pp_rank,
                             int local_layers, int dense_layers, bool describe) {
  return StageOverheads(d, EffectiveModel(d), d.gpu, k, tp, pp, dp, pp_rank, local_layers, dense_layers, describe);
}

StageOverhead StageOverheads(const Deployment& d, const ModelConfig& m, const GpuSpec& gpu, const MemoryConstants& k,
                             int tp, int pp, int dp, int pp_rank, int local_layers, int dense_layers, bool describe) {
  StageInputs in = InputsFor(d, m, nullptr, tp, pp, dp, pp_rank, local_layers, dense_layers);
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
  StageInputs in = InputsFor(d, m, nullptr, tp, pp, dp, pp_rank, local_layers, dense_layers);
  in.describe = false;
  return EstimateStageMemory(m, d.gpu, d.vllm, in, k).budget().value;
}

LayoutPlan PlanLayout(const Deployment& d, const LayoutSpec& spec) {
  const ModelConfig m = EffectiveModel(d);
  const int tp = spec.tensor_parallel_size, pp = spec.pipeline_parallel_size;
  if (tp < 1 || pp < 1) Fail("tensor/pipeline parallel sizes must be >= 1, got TP{} PP{}", tp, pp);
  if (m.num_attention_heads % tp != 0)
    Fail("tensor_parallel_size={} does not divide num_attention_heads={} ({})", tp, m.num_attention_heads, m.source);
  LayoutPlan plan;
  plan.spec = spec;
  plan.max_model_len = d.effective_max_model_len();
  if (spec.layer_partition.empty()) {
    plan.partition = DefaultSplit(d.vllm, m.num_hidden_layers, pp);
  } else {
    plan.partition_given = true;
    plan.partition = spec.layer_partition;
    if (static_cast<int>(plan.partition.size()) != pp)
      Fail("len(partitions)={} does not match pp_size={}.", plan.partition.size(), pp);
    long long sum = 0;
    for (int v : plan.partition) sum += v;
    if (sum != m.num_hidden_layers)
      Fail("sum(partitions)={} does not match num_hidden_layers={}.", sum, m.num_hidden_layers);
    ValidatePartitionForPlanning(plan.partition);
  }

  plan.kv = ResolveKvDtype(m, d.kv_cache_dtype, d.vllm, d.gpu);
  int multiple = BlockSizeMultiple(m, plan.kv, d.gpu);
  if (d.block_size > 0) {
    if (d.block_size % multiple != 0)
      Fail("--block-size {} is not a multiple of {}, the kernel block size of this model's attention backend",
           d.block_size, multiple);
    plan.block_size = d.block_size;
  } else {
    plan.block_size =
        d.vllm.legacy_block_16 || d.engine == Engine::kV0 ? 16 : DefaultBlockSize(m, plan.kv, d.vllm, d.gpu);
  }
  const bool v0 = d.engine == Engine::kV0;
  const bool has_state = m.CountLayers(LayerKind::kLinear) > 0;
  if (has_state && !v0) {
    // HybridAttentionMambaModelConfig.verify_and_update_config (mamba_cache_mode "none"): the
    // attention block grows until its page covers one sequence's state; the state is padded to it.
    const std::int64_t attn = AttentionBytesPerTokenPerLayer(m, plan.kv, tp);
    const std::int64_t state = m.LinearStateBytes(tp, m.dtype_bytes);
    int alignment = m.attention == AttentionKind::kMla ? 64 : 16;
    int block = HybridMambaBlockSize(attn, state, alignment, d.block_size);
    if (block != plan.block_size) {
      plan.kv_notes.push_back(fmt::format(
          "attention block size {} tokens so that the attention page ({} B/token x {} = {} B) covers the {} state "
          "of one sequence ({} B, padded by {:.2f}%) (vllm models/config.py HybridAttentionMambaModelConfig)",
          block, attn, block, attn * block, StateKindName(m.linear.kind), state,
          100.0 * static_cast<double>(attn * block - state) / static_cast<double>(state)));
      plan.block_size = block;
    }
  }

  const bool fix = FixApplied(d);
  plan.index_share = AnalyzeIndexShare(m, plan.partition, d.vllm.index_share, fix);
  std::vector<int> forced = fix ? plan.index_share.forced : std::vector<int>{};
  plan.index_share_safe = plan.index_share.safe;

  // The KV-cache specs of every stage, vLLM's groups over the whole model, and each stage's view.
  std::vector<std::vector<KvLayer>> stage_layers;
  std::vector<KvLayer> model_layers;
  const MemoryConstants constants = ConstantsFor(d);
  plan.constants = constants.name;
  const double w_unc = WeightsUncertainty(d);
  for (int r = 0; r < pp; ++r) {
    std::vector<KvLayer> layers = StageKvLayers(d, m, plan.kv, tp, plan.block_size, plan.partition, r, forced);
    if (v0) {
      // V0's CacheEngine: one page of every attention layer (no sliding-window saving; mamba
      // state lives in the MambaCacheManager outside the KV pool).
      std::vector<KvLayer> full;
      for (auto l : layers)
        if (l.spec.type != KvSpecType::kMamba) {
          l.spec.type = l.spec.type == KvSpecType::kMla ? KvSpecType::kMla : KvSpecType::kFullAttention;
          l.spec.window = 0;
          full.push_back(l);
        }
      layers = std::move(full);
    }
    model_layers.insert(model_layers.end(), layers.begin(), layers.end());
    stage_layers.push_back(std::move(layers));
  }
  KvGroupingOptions gopt;
  gopt.hybrid_manager = !v0 && d.vllm.hybrid_kv_cache_manager;
  gopt.chunked_local_hybrid = d.vllm.chunked_local_hybrid;
  gopt.group_size_ratio = d.vllm.hybrid_group_size_ratio;
  plan.kv_groups = GroupKvCacheSpecs(model_layers, gopt);
  for (const auto& n : plan.kv_groups.notes) plan.kv_notes.push_back(n);
  const int dcp = std::max(1, d.decode_context_parallel_size);
  KvLimits limits{plan.max_model_len, MaxNumBatchedTokens(d), dcp};
  const bool global_page = d.vllm.pool_combine == PoolCombine::kDsaGlobalPage && m.dsa && pp > 1;
  const bool whole_model = d.vllm.fit_check_scope == FitCheckScope::kWholeModel;
  std::vector<WorkerKv> workers;
  for (int r = 0; r < pp; ++r) {
    // A stage with no cache-owning layer: under one UniformTypeKVCacheSpecs group (DSA) the worker
    // keeps the global spec (ProjectKvGroupsToWorker); otherwise vLLM stops at start-up.
    if (stage_layers[r].empty() && plan.kv_groups.grouping != KvGrouping::kAttentionFree &&
        plan.kv_groups.grouping != KvGrouping::kUniformType)
      Fail(
          "PP rank {} holds no attention layer (layers {}; a stage with 0 layers and no MTP layer): vLLM cannot "
          "size its KV cache (kv_cache_utils.py get_kv_cache_config_from_groups: \"group_size must be greater than "
          "0\"); give every stage at least one attention layer",
          r, FormatPartition(plan.partition));
    workers.push_back(ProjectKvGroupsToWorker(plan.kv_groups, stage_layers[r], limits, global_page, whole_model));
  }
  if (plan.kv_groups.grouping == KvGrouping::kAttentionFree)
    Fail("{}: no layer caches KV or state; an attention-free model has nothing to plan", m.source);

  std::vector<std::int64_t> avail, avail_lo, avail_hi, bpt, block_bytes;
  for (int r = 0; r < pp; ++r) {
    const GpuSpec& gpu = d.StageGpu(r);
    const std::int64_t requested = Requested(gpu.total_bytes(), d.gpu_memory_utilization);
    RankPlan rp;
    rp.pp_rank = r;
    rp.layers = RankRange(plan.partition, r);
    const bool last = r == pp - 1;
    rp.mtp_layers = last && d.mtp_on() ? m.num_nextn_predict_layers : 0;
    rp.attention_layers = rp.layers.size() + rp.mtp_layers;
    int dense = 0;
    for (int i = rp.layers.start; i < rp.layers.end; ++i) {
      if (Contains(forced, i)) rp.forced_layers.push_back(i);
      if (LayerOwnsIndexerCache(m, i, d.vllm.index_share, Contains(forced, i))) ++rp.indexer_caches;
      dense += m.n_routed_experts > 0 ? !m.IsMoeLayer(i) : 1;
    }
    if (m.dsa) rp.indexer_caches += rp.mtp_layers;
    rp.bytes_per_token = workers[r].bytes_per_token;
    rp.page_bytes = workers[r].block_bytes;
    rp.kv_needed_bytes = workers[r].needed_bytes;
    rp.requested_bytes = requested;
    const std::int64_t w = StageWeightsBytes(d, m, tp, spec.data_parallel_size, plan.partition, r, forced);
    rp.weights = Figure::Of(Interval::Relative(w, w_unc),
                            d.weights.from_checkpoint ? Provenance::kMeasured : Provenance::kEstimated);
    // A stage on another GPU type (stage_gpus) plans with that GPU's constants.
    // (A copy of the deployment only then: copying it per stage dominated the split optimiser.)
    std::optional<Deployment> ds;
    MemoryConstants stage_k_storage;
    const MemoryConstants* stage_k = &constants;
    if (!d.stage_gpus.empty()) {
      ds = d;
      ds->gpu = gpu;
      stage_k_storage = ConstantsFor(*ds);
      stage_k = &stage_k_storage;
    }
    StageOverhead so = StageOverheads(ds ? *ds : d, m, gpu, *stage_k, tp, pp, spec.data_parallel_size, r,
                                      rp.layers.size(), dense, spec.describe);
    rp.non_torch = so.non_torch;
    rp.activation = so.activation;
    rp.cuda_graph_estimate = so.cuda_graph_estimate;
    rp.cuda_graph_actual = so.cuda_graph_actual;
    rp.cuda_context = so.cuda_context;
    rp.memory_terms = std::move(so.terms);
    if (d.kv_cache_memory_bytes) {
      rp.available_kv = Figure::Exact(*d.kv_cache_memory_bytes, Provenance::kGiven);
    } else {
      Interval a =
          SubtractIndependent(SubtractIndependent(Interval::Exact(requested), rp.weights.interval()), so.budget);
      rp.available_kv = Figure::Of(a, d.calibration ? Provenance::kCalibrated : Provenance::kEstimated);
    }
    avail.push_back(rp.available_kv.bytes);
    avail_lo.push_back(rp.available_kv.lo);
    avail_hi.push_back(rp.available_kv.hi);
    bpt.push_back(rp.bytes_per_token);
    block_bytes.push_back(rp.page_bytes);
    plan.ranks.push_back(std::move(rp));
  }
  const bool mixed_arch = std::any_of(d.stage_gpus.begin(), d.stage_gpus.end(),
                                      [&](const GpuSpec& g) { return g.arch != d.StageGpu(0).arch; });
  if (mixed_arch)
    plan.warnings.push_back(
        "PP stages on different GPU architectures: vLLM picks the attention backend and the block size on each "
        "worker; the plan uses stage 0's (a backend the other stage lacks stops vLLM at start-up)");

  PoolInputs pin;
  pin.available_bytes = avail;
  pin.bytes_per_token = bpt;
  pin.block_bytes = block_bytes;
  pin.block_size = plan.block_size;
  pin.max_model_len = plan.max_model_len;
  pin.combine = v0 ? PoolCombine::kPerRankMin : d.vllm.pool_combine;
  if (pin.combine == PoolCombine::kV08MinMemory) pin.block_bytes.clear();  // v0.8: min memory / largest page
  pin.tokens_formula = v0 ? TokensFormula::kBlocksTimesBlockSize : d.vllm.tokens_formula;
  pin.num_gpu_blocks_override = d.num_gpu_blocks_override;
  pin.dsa = m.dsa;
  pin.num_groups = static_cast<int>(std::max<size_t>(1, plan.kv_groups.groups.size()));
  pin.min_block_size = plan.kv_groups.min_block_size();
  pin.blocks_per_request = BlocksPerRequest(plan.kv_groups, limits);
  pin.decode_context_parallel_size = dcp;
  pin.null_block = !v0;
  pin.concurrency_from_tokens = v0;
  plan.pool = ComputePool(pin);
  pin.available_bytes = avail_lo;
  plan.pool_lo = ComputePool(pin);
  pin.available_bytes = avail_hi;
  plan.pool_hi = ComputePool(pin);
  plan.capacity_log = v0 ? fmt::format("# GPU blocks: {}\nMaximum concurrency for {} tokens per request: {:.2f}x",
                                       plan.pool.num_gpu_blocks, plan.max_model_len, plan.pool.max_concurrency)
                         : CapacityLogText(plan.pool, plan.max_model_len, d.vllm.one_line_capacity_log);
  if (!v0 && dcp > 1 && d.vllm.tokens_formula == TokensFormula::kBlocksPerGroupTimesBlockSize)
    plan.capacity_log =
        fmt::format("Multiplying the GPU KV cache size by the dcp_world_size {}.\n", dcp) + plan.capacity_log;
  plan.aggregate_kv_tokens = plan.pool.kv_tokens * spec.data_parallel_size;

  // The longest request the pool holds (vLLM's _estimate_max_model_len: the largest length whose
  // need fits every worker's memory).
  auto needed_on = [&](int r, std::int64_t len) {
    KvLimits l = limits;
    l.max_model_len = len;
    return ProjectKvGroupsToWorker(plan.kv_groups, stage_layers[r], l, global_page, false).needed_bytes;
  };
  auto longest_fit = [&](int r, std::int64_t have, std::int64_t upper) {
    std::int64_t lo = 1, hi = upper, best = 0;
    if (needed_on(r, 1) > have) return std::int64_t{0};
    while (lo <= hi) {
      std::int64_t mid = lo + (hi - lo) / 2;
      if (needed_on(r, mid) <= have) {
        best = mid;
        lo = mid + 1;
      } else {
        hi = mid - 1;
      }
    }
    return best;
  };
  if (!v0 && plan.kv_groups.groups.size() > 1) {
    std::int64_t longest = INT64_MAX;
    const std::int64_t upper =
        std::max<std::int64_t>(plan.max_model_len, plan.pool.num_gpu_blocks * plan.block_size * dcp);
    for (int r = 0; r < pp; ++r)
      longest = std::min(longest, longest_fit(r, plan.pool.num_blocks_per_rank[r] * workers[r].block_bytes, upper));
    plan.pool.largest_max_model_len = longest;
  }

  for (auto& rp : plan.ranks) {
    const std::int64_t smi_total = d.StageGpu(rp.pp_rank).nvidia_smi_mib * kMiB;
    rp.num_blocks = plan.pool.num_blocks_per_rank[rp.pp_rank];
    rp.binding = rp.pp_rank == plan.pool.binding_rank && pp > 1;
    rp.kv_allocated_bytes = plan.pool.num_gpu_blocks * rp.page_bytes;
    rp.kv_unusable_bytes = std::max<std::int64_t>(0, rp.available_kv.bytes - rp.kv_allocated_bytes);
    rp.nvidia_smi_used_bytes = rp.cuda_context.bytes + rp.weights.bytes + rp.non_torch.bytes + rp.activation.bytes +
                               rp.cuda_graph_estimate.bytes + rp.kv_allocated_bytes + rp.cuda_graph_actual.bytes;
    rp.headroom_bytes = smi_total - rp.nvidia_smi_used_bytes;
  }
  // Feasibility.
  using Kind = PlanProblem::Kind;
  auto problem = [&](Kind kind, std::string message, int pp_rank, std::int64_t need, std::int64_t have) {
    plan.problems.push_back(PlanProblem{kind, std::move(message), pp_rank, need, have});
  };
  const int world = tp * pp * std::max(1, spec.data_parallel_size);
  if (world > d.total_gpus())
    problem(Kind::kGpuCount,
            fmt::format("TP{} x PP{}{} needs {} GPUs; the deployment has {} ({} node{} x {})", tp, pp,
                        spec.data_parallel_size > 1 ? fmt::format(" x DP{}", spec.data_parallel_size) : "", world,
                        d.total_gpus(), d.nodes, d.nodes == 1 ? "" : "s", d.gpus_per_node),
            -1, world, d.total_gpus());
  else if (world < d.total_gpus())
    plan.warnings.push_back(fmt::format(
        "TP{} x PP{}{} uses {} of the {} GPUs; {} stay idle{}", tp, pp,
        spec.data_parallel_size > 1 ? fmt::format(" x DP{}", spec.data_parallel_size) : "", world, d.total_gpus(),
        d.total_gpus() - world,
        d.total_gpus() % world == 0 ? fmt::format(" (DP{} would use them)", d.total_gpus() / (tp * pp)) : ""));
  for (const auto& rp : plan.ranks) {
    std::string where = pp > 1 ? fmt::format(" on PP rank {}", rp.pp_rank) : "";
    const GpuSpec& gpu = d.StageGpu(rp.pp_rank);
    if (rp.weights.bytes > rp.requested_bytes) {
      problem(
          Kind::kWeightsOverBudget,
          fmt::format(
              "weights need {} per GPU{}, more than {} ({:.2f} GiB budget = gpu_memory_utilization {} x {:.2f} GiB)",
              Gib(rp.weights.bytes), where,
              rp.weights.bytes > gpu.total_bytes() ? fmt::format("the GPU's {:.2f} GiB", gpu.total_gib) : "the budget",
              ToGiB(rp.requested_bytes), d.gpu_memory_utilization, gpu.total_gib),
          rp.pp_rank, rp.weights.bytes, rp.requested_bytes);
    } else if (rp.available_kv.bytes <= 0) {
      problem(Kind::kNoKvMemory,
              fmt::format("no memory left for the KV cache{} (available {})", where, Gib(rp.available_kv.bytes)),
              rp.pp_rank, 0, rp.available_kv.bytes);
    }
  }
  if (std::string why = DcpRefusal(d, m, plan.kv, tp, dcp); !why.empty())
    problem(Kind::kDcpUnsupported, fmt::format("--decode-context-parallel-size {}: {}", dcp, why), -1, dcp, 1);
  if (!plan.Problem(Kind::kWeightsOverBudget) && !plan.Problem(Kind::kNoKvMemory)) {
    if (v0) {
      // V0 LLMEngine._initialize_kv_caches -> _verify_args: max_model_len must fit num_gpu_blocks x block_size.
      const std::int64_t max_tokens = plan.pool.num_gpu_blocks * plan.block_size;
      if (plan.max_model_len > max_tokens)
        problem(Kind::kMaxModelLenTooLarge,
                fmt::format("The model's max seq len ({}) is larger than the maximum number of tokens that can be "
                            "stored in KV cache ({}) (vLLM V0)",
                            plan.max_model_len, max_tokens),
                plan.pool.binding_rank, plan.max_model_len, max_tokens);
    } else {
      // get_kv_cache_configs -> _check_enough_kv_cache_memory, per worker (or the whole model
      // against one worker in 0.14-0.15), with vLLM's binary-searched estimate of the longest length.
      for (int r = 0; r < pp; ++r) {
        const RankPlan& rp = plan.ranks[r];
        std::int64_t have = d.num_gpu_blocks_override && d.vllm.override_in_fit_check
                                ? *d.num_gpu_blocks_override * rp.page_bytes
                                : rp.available_kv.bytes;
        auto needed = [&](std::int64_t len) {
          KvLimits l = limits;
          l.max_model_len = len;
          return ProjectKvGroupsToWorker(plan.kv_groups, stage_layers[r], l, global_page, whole_model).needed_bytes;
        };
        const std::int64_t need = workers[r].needed_bytes;
        if (need <= have) continue;
        std::int64_t lo = 1, hi = plan.max_model_len, best = 0;
        if (needed(1) <= have)
          while (lo <= hi) {
            std::int64_t mid = lo + (hi - lo) / 2;
            if (needed(mid) <= have) {
              best = mid;
              lo = mid + 1;
            } else {
              hi = mid - 1;
            }
          }
        problem(
            Kind::kMaxModelLenTooLarge,
            fmt::format("To serve at least one request with the model's max seq len ({}), ({} GiB KV cache is "
                        "needed, which is larger than the available KV cache memory ({} GiB){}.{}",
                        plan.max_model_len, FormatGib(need), FormatGib(have),
                        pp > 1 ? fmt::format(" on PP rank {}", r) : "",
                        best > 0 ? fmt::format(" Based on the available memory, the estimated maximum model length "
                                               "is {}.",
                                               best)
                                 : "",
                        whole_model ? fmt::format(" (vLLM {} compares the whole model's KV, all {} stages, with one "
                                                  "worker's memory: #29431, fixed by #33698)",
                                                  d.vllm.name, pp)
                                    : ""),
            r, plan.max_model_len, best);
        break;
      }
    }
  }
  if (pp > 1 && d.mtp_on() && !d.vllm.pp_speculation)
    problem(Kind::kPpSpeculation,
            fmt::format("vLLM {} rejects pipeline parallelism with MTP speculation (DeepSeekMTP lost SupportsPP on "
                        "2026-01-12, #32150); use --num-speculative-tokens 0 or a version with PP + MTP",
                        d.vllm.name),
            -1, 0, 0);
  if (tp > d.gpus_per_node)
    plan.warnings.push_back(
        fmt::format("TP{} spans nodes ({} GPUs per node): all-reduce crosses the network", tp, d.gpus_per_node));
  if (plan.index_share.applies && !plan.index_share.safe)
    plan.warnings.push_back(fmt::format(
        "unsafe split: layers {} read a top-k index never written on their stage (seed §7: 19-21% degenerate answers); "
        "vLLM {} provides no fix B",
        FormatPartition(plan.index_share.forced), d.vllm.name));
  plan.pp_gated = plan.index_share.applies && pp > 2;
  if (plan.pp_gated)
    plan.warnings.push_back(
        "PP > 2 with DSA index sharing: the seed measured 20% degeneration (45% with MTP) at PP=4 "
        "even with fix B; run `ppdeploy degen` before serving");
  plan.feasible = plan.problems.empty();

  // Compute balance in layer-equivalents (the last stage's MTP forwards count k times, seed §6).
  double lo = 1e18, hi = 0;
  for (const auto& rp : plan.ranks) {
    double eq = rp.layers.size() + (rp.mtp_layers ? rp.mtp_layers * d.num_speculative_tokens : 0);
    lo = std::min(lo, eq);
    hi = std::max(hi, eq);
  }
  plan.compute_balance = lo > 0 ? hi / lo : 0;
  return plan;
}

std::vector<LayoutSpec> EnumerateLayouts(const Deployment& d) {
  std::vector<LayoutSpec> out;
  const int n = d.total_gpus();
  for (int tp = 1; tp <= n; ++tp) {
    if (d.model.num_attention_heads % tp != 0) continue;
    for (int pp = 1; tp * pp <= n && pp <= d.model.num_hidden_layers; ++pp) {
      if (n % (tp * pp) != 0) continue;
      out.push_back(LayoutSpec{tp, pp, n / (tp * pp), {}});
    }
  }
  std::sort(out.begin(), out.end(), [](const LayoutSpec& a, const LayoutSpec& b) {
    int ga = a.tensor_parallel_size * a.pipeline_parallel_size, gb = b.tensor_parallel_size * b.pipeline_parallel_size;
    if (ga != gb) return ga > gb;
    return a.tensor_parallel_size > b.tensor_parallel_size;
  });
  return out;
}

}  // namespace ppdeploy
