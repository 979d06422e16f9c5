#include "layout/planner.h"

#include <algorithm>
#include <cmath>

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

namespace {

bool Contains(const std::vector<int>& v, int x) { return std::find(v.begin(), v.end(), x) != v.end(); }

int MaxNumBatchedTokens(const Deployment& d) {
  return d.max_num_batched_tokens > 0 ? d.max_num_batched_tokens : DefaultBatchLimits(d.gpu, d.vllm).first;
}
int MaxNumSeqs(const Deployment& d) {
  return d.max_num_seqs > 0 ? d.max_num_seqs : DefaultBatchLimits(d.gpu, d.vllm).second;
}

std::int64_t Requested(std::int64_t total_bytes, double util) {
  return static_cast<std::int64_t>(std::ceil(static_cast<double>(total_bytes) * util));
}

std::string Gib(std::int64_t bytes) { return fmt::format("{:.2f} GiB", ToGiB(bytes)); }

}  // namespace

std::int64_t StageWeightsBytes(const Deployment& d, int tp, int dp, const std::vector<int>& partition, int pp_rank,
                               const std::vector<int>& forced) {
  const ModelConfig m = EffectiveModel(d);
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
  if (last) {
    total += PerGpuBytes(w.final_norm, sp, false, 0);
    if (!m.tie_word_embeddings || pp > 1) {
      const SlotWeights& head = w.lm_head.items.empty() ? w.embedding : w.lm_head;
      total += PerGpuBytes(head, sp, false, 0);
    }
    if (d.mtp_on())
      for (const auto& slot : w.mtp) total += PerGpuBytes(slot, sp, m.dsa, w.indexer_bytes_estimate);
  }
  if (m.dsa) total += static_cast<std::int64_t>(MaxNumBatchedTokens(d)) * m.index_topk * 4;  // topk_indices_buffer
  return total;
}

std::int64_t StageKvBytesPerToken(const Deployment& d, const EffectiveKv& kv, int tp, const std::vector<int>& partition,
                                  int pp_rank, const std::vector<int>& forced) {
  const ModelConfig m = EffectiveModel(d);
  const std::int64_t attn = AttentionBytesPerTokenPerLayer(m, kv, tp);
  const std::int64_t idx = IndexerBytesPerTokenPerLayer(m);
  LayerRange range = RankRange(partition, pp_rank);
  std::int64_t total = 0;
  for (int i = range.start; i < range.end; ++i)
    total += attn + (LayerOwnsIndexerCache(m, i, d.vllm.index_share, Contains(forced, i)) ? idx : 0);
  if (pp_rank == static_cast<int>(partition.size()) - 1 && d.mtp_on())
    total += static_cast<std::int64_t>(m.num_nextn_predict_layers) * (attn + (m.dsa ? idx : 0));
  return total;
}

namespace {

// Non-KV memory of a stage other than weights, from the calibration: requested - available -
// our weight estimate at the calibration's own layout, so only per-layer weight deltas move.
struct CalibratedOverhead {
  std::int64_t non_torch = 0, activation = 0, cuda_graph_actual = 0, cuda_context = 0;
};

CalibratedOverhead FromCalibration(const Deployment& d, int pp_rank, int pp) {
  const Calibration& c = *d.calibration;
  const int cpp = c.pipeline_parallel_size;
  int role_rank;
  if (pp == 1 || pp_rank == pp - 1)
    role_rank = cpp - 1;
  else if (pp_rank == 0)
    role_rank = 0;
  else
    role_rank = cpp >= 3 ? 1 : 0;
  const CalibrationRank* cr = nullptr;
  for (const auto& r : c.ranks)
    if (r.pp_rank == role_rank) cr = &r;
  if (!cr) cr = &c.ranks.back();
  std::vector<int> cpart =
      c.layer_partition.empty() ? DefaultPartition(d.model.num_hidden_layers, cpp) : c.layer_partition;
  Deployment cd = d;
  cd.num_speculative_tokens = c.num_speculative_tokens;
  std::vector<int> cforced = ForcedLayersFor(cd, cpart);
  std::int64_t weights = StageWeightsBytes(cd, c.tensor_parallel_size, 1, cpart, cr->pp_rank, cforced);
  std::int64_t requested = Requested(GiBToBytes(c.total_gib), c.gpu_memory_utilization);
  std::int64_t overhead = requested - GiBToBytes(cr->available_kv_gib) - weights;
  CalibratedOverhead o;
  o.activation = cr->peak_activation_gib ? GiBToBytes(*cr->peak_activation_gib) : 0;
  o.non_torch = overhead - o.activation;
  // The DSA indexer workspace scales with max_model_len (memory-overheads.md §3).
  o.non_torch += DsaWorkspaceBytes(d.model, d.effective_max_model_len()) - DsaWorkspaceBytes(d.model, c.max_model_len);
  o.cuda_graph_actual = cr->cuda_graph_gib ? GiBToBytes(*cr->cuda_graph_gib) : 0;
  o.cuda_context = c.cuda_context_gib ? GiBToBytes(*c.cuda_context_gib) : 0;
  return o;
}

}  // namespace

std::int64_t RequestedBytes(const Deployment& d) { return Requested(d.gpu.total_bytes(), d.gpu_memory_utilization); }

StageOverhead StageOverheads(const Deployment& d, int tp, int pp, int dp, int pp_rank, int local_layers) {
  StageOverhead so;
  if (d.calibration) {
    CalibratedOverhead o = FromCalibration(d, pp_rank, pp);
    so.non_torch = {o.non_torch, Provenance::kCalibrated};
    so.activation = {o.activation, Provenance::kCalibrated};
    so.cuda_graph_estimate = {0, Provenance::kCalibrated};  // inside the logged peak activation
    so.cuda_graph_actual = {o.cuda_graph_actual, Provenance::kCalibrated};
    so.cuda_context = {o.cuda_context, Provenance::kCalibrated};
    return so;
  }
  OverheadInputs in;
  in.tensor_parallel_size = tp;
  in.pipeline_parallel_size = pp;
  in.first_stage = pp_rank == 0;
  in.last_stage = pp_rank == pp - 1;
  in.local_layers = local_layers;
  in.mtp_on = d.mtp_on();
  in.max_model_len = d.effective_max_model_len();
  in.max_num_seqs = MaxNumSeqs(d);
  in.max_num_batched_tokens = MaxNumBatchedTokens(d);
  in.enforce_eager = d.enforce_eager;
  in.expert_shards = d.enable_expert_parallel ? tp * dp : tp;
  Overheads o = EstimateOverheads(EffectiveModel(d), d.gpu, d.vllm, in);
  so.non_torch = {o.non_torch_bytes, Provenance::kEstimated};
  so.activation = {o.activation_bytes, Provenance::kEstimated};
  so.cuda_graph_estimate = {o.cuda_graph_estimate_bytes, Provenance::kEstimated};
  so.cuda_graph_actual = {o.cuda_graph_actual_bytes, Provenance::kEstimated};
  so.cuda_context = {o.cuda_context_bytes, Provenance::kEstimated};
  return so;
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
    plan.partition = DefaultPartition(m.num_hidden_layers, pp);
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
    plan.block_size = DefaultBlockSize(m, plan.kv, d.vllm, d.gpu);
  }

  const bool fix = FixApplied(d);
  plan.index_share = AnalyzeIndexShare(m, plan.partition, d.vllm.index_share, fix);
  std::vector<int> forced = fix ? plan.index_share.forced : std::vector<int>{};
  plan.index_share_safe = plan.index_share.safe;

  std::vector<std::int64_t> avail, bpt;
  for (int r = 0; r < pp; ++r) {
    const std::int64_t requested = Requested(d.StageGpu(r).total_bytes(), d.gpu_memory_utilization);
    RankPlan rp;
    rp.pp_rank = r;
    rp.layers = RankRange(plan.partition, r);
    const bool last = r == pp - 1;
    rp.mtp_layers = last && d.mtp_on() ? m.num_nextn_predict_layers : 0;
    rp.attention_layers = rp.layers.size() + rp.mtp_layers;
    for (int i = rp.layers.start; i < rp.layers.end; ++i) {
      if (Contains(forced, i)) rp.forced_layers.push_back(i);
      if (LayerOwnsIndexerCache(m, i, d.vllm.index_share, Contains(forced, i))) ++rp.indexer_caches;
    }
    if (m.dsa) rp.indexer_caches += rp.mtp_layers;
    rp.bytes_per_token = StageKvBytesPerToken(d, plan.kv, tp, plan.partition, r, forced);
    rp.page_bytes = rp.bytes_per_token * plan.block_size;
    rp.requested_bytes = requested;
    rp.weights = Figure{StageWeightsBytes(d, tp, spec.data_parallel_size, plan.partition, r, forced),
                        d.weights.from_checkpoint ? Provenance::kMeasured : Provenance::kEstimated};
    StageOverhead so = StageOverheads(d, tp, pp, spec.data_parallel_size, r, rp.layers.size());
    rp.non_torch = so.non_torch;
    rp.activation = so.activation;
    rp.cuda_graph_estimate = so.cuda_graph_estimate;
    rp.cuda_graph_actual = so.cuda_graph_actual;
    rp.cuda_context = so.cuda_context;
    if (d.kv_cache_memory_bytes) {
      rp.available_kv = {*d.kv_cache_memory_bytes, Provenance::kGiven};
    } else {
      std::int64_t a =
          requested - rp.weights.bytes - rp.non_torch.bytes - rp.activation.bytes - rp.cuda_graph_estimate.bytes;
      Provenance p = d.calibration ? Provenance::kCalibrated : Provenance::kEstimated;
      rp.available_kv = {a, p};
    }
    avail.push_back(rp.available_kv.bytes);
    bpt.push_back(rp.bytes_per_token);
    plan.ranks.push_back(std::move(rp));
  }

  PoolInputs pin;
  pin.available_bytes = avail;
  pin.bytes_per_token = bpt;
  pin.block_size = plan.block_size;
  pin.max_model_len = plan.max_model_len;
  pin.combine = d.vllm.pool_combine;
  pin.tokens_formula = d.vllm.tokens_formula;
  pin.num_gpu_blocks_override = d.num_gpu_blocks_override;
  pin.dsa = m.dsa;
  plan.pool = ComputePool(pin);
  plan.capacity_log = CapacityLogText(plan.pool, plan.max_model_len, d.vllm.one_line_capacity_log);
  plan.aggregate_kv_tokens = plan.pool.kv_tokens * spec.data_parallel_size;

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
    const std::int64_t total = gpu.total_bytes(), requested = rp.requested_bytes;
    if (rp.weights.bytes > requested) {
      problem(
          Kind::kWeightsOverBudget,
          fmt::format(
              "weights need {} per GPU{}, more than {} ({:.2f} GiB budget = gpu_memory_utilization {} x {:.2f} GiB)",
              Gib(rp.weights.bytes), where,
              rp.weights.bytes > total ? fmt::format("the GPU's {:.2f} GiB", gpu.total_gib) : "the budget",
              ToGiB(requested), d.gpu_memory_utilization, gpu.total_gib),
          rp.pp_rank, rp.weights.bytes, requested);
    } else if (rp.available_kv.bytes <= 0) {
      problem(Kind::kNoKvMemory,
              fmt::format("no memory left for the KV cache{} (available {})", where, Gib(rp.available_kv.bytes)),
              rp.pp_rank, 0, rp.available_kv.bytes);
    }
  }
  if (!plan.Problem(Kind::kWeightsOverBudget) && !plan.Problem(Kind::kNoKvMemory)) {
    const std::int64_t need_blocks = plan.pool.blocks_per_request;
    for (const auto& rp : plan.ranks) {
      std::int64_t blocks = d.num_gpu_blocks_override && d.vllm.override_in_fit_check
                                ? *d.num_gpu_blocks_override
                                : rp.available_kv.bytes / std::max<std::int64_t>(1, rp.page_bytes);
      if (blocks < need_blocks) {
        problem(Kind::kMaxModelLenTooLarge,
                fmt::format(
                    "max_model_len {} needs {} of KV cache{}, more than the available {}; the largest that fits is {}",
                    WithThousands(plan.max_model_len), Gib(need_blocks * rp.page_bytes),
                    pp > 1 ? fmt::format(" on PP rank {}", rp.pp_rank) : "", Gib(rp.available_kv.bytes),
                    WithThousands(plan.pool.largest_max_model_len)),
                rp.pp_rank, plan.max_model_len, plan.pool.largest_max_model_len);
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
