#include "layout/planner.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
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

StagePlacement PlaceStage(int tp, int dp, const std::vector<int>& partition, int pp_rank,
                          const std::vector<int>& forced) {
  const LayerRange range = RankRange(partition, pp_rank);
  return StagePlacement{tp, static_cast<int>(partition.size()), dp, pp_rank, range.start, range.end, forced};
}

std::int64_t StageWeightsBytes(const Deployment& d, int tp, int dp, const std::vector<int>& partition, int pp_rank,
                               const std::vector<int>& forced) {
  return StageWeightsBytes(d, EffectiveModel(d), PlaceStage(tp, dp, partition, pp_rank, forced));
}

std::int64_t StageWeightsBytes(const Deployment& d, const ModelConfig& m, int tp, int dp,
                               const std::vector<int>& partition, int pp_rank, const std::vector<int>& forced) {
  return StageWeightsBytes(d, m, PlaceStage(tp, dp, partition, pp_rank, forced));
}

std::vector<KvLayer> StageKvLayers(const Deployment& d, const EffectiveKv& kv, int tp, int block_size,
                                   const std::vector<int>& partition, int pp_rank, const std::vector<int>& forced) {
  return StageKvLayers(d, EffectiveModel(d), kv, block_size, PlaceStage(tp, 1, partition, pp_rank, forced));
}

std::int64_t StageKvBytesPerToken(const Deployment& d, const EffectiveKv& kv, int tp, const std::vector<int>& partition,
                                  int pp_rank, const std::vector<int>& forced) {
  std::int64_t total = 0;
  for (const auto& l : StageKvLayers(d, kv, tp, 16, partition, pp_rank, forced))
    if (l.spec.type != KvSpecType::kMamba) total += l.spec.bytes_per_token;
  return total;
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

// ---- PlanLayout, in phases: resolve the stages, each stage's memory, the pool, the limits, the report ----

int DefaultPlanBlockSize(const Deployment& d, const ModelConfig& m, const EffectiveKv& kv) {
  return d.vllm.legacy_block_16 || d.engine == Engine::kV0 ? 16 : DefaultBlockSize(m, kv, d.vllm, d.gpu);
}

namespace {

using Kind = PlanProblem::Kind;

std::string Gib(std::int64_t bytes) { return fmt::format("{:.2f} GiB", ToGiB(bytes)); }

// vLLM's format_gib: str(round(bytes / 2**30, 2)) ("24.0", "3.18").
std::string FormatGib(std::int64_t bytes) {
  double v = std::round(ToGiB(bytes) * 100.0) / 100.0;
  std::string s = fmt::format("{:.2f}", v);
  while (s.size() > 1 && s.back() == '0' && s[s.size() - 2] != '.') s.pop_back();
  return s;
}

bool Contains(const std::vector<int>& v, int x) { return std::find(v.begin(), v.end(), x) != v.end(); }

// What resolving the stages decides for the later phases (the plan's own fields are set in `plan`).
struct LayoutStages {
  ModelConfig m;  ///< EffectiveModel(d)
  int tp = 1, pp = 1, dp = 1, dcp = 1;
  bool v0 = false;                                 ///< the V0 engine's block arithmetic
  std::vector<int> forced;                         ///< fix-B forced layers (every stage's)
  MemoryConstants constants;                       ///< of d.gpu (ConstantsFor)
  std::vector<std::vector<KvLayer>> stage_layers;  ///< each stage's cache-owning layers
  KvLimits limits;
  bool global_page = false;       ///< the v0.11 .. 2026-02-09 DSA global page (memory/kv.h)
  bool whole_model = false;       ///< the 0.14-0.15 whole-model start-up check
  std::vector<WorkerKv> workers;  ///< each stage's view of the KV-cache groups
};

// The split: vLLM's default, or the given one with vLLM's checks.
void ResolveSplit(const Deployment& d, const ModelConfig& m, const LayoutSpec& spec, LayoutPlan& plan) {
  const int pp = spec.pipeline_parallel_size;
  if (spec.layer_partition.empty()) {
    plan.partition = DefaultSplit(d.vllm, m.num_hidden_layers, pp);
    return;
  }
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

// The KV dtype and the block size: the user's (a multiple of the kernel's), else the version's default; a
// hybrid attention + mamba model grows the attention block until its page covers one sequence's state.
void ResolveBlockSize(const Deployment& d, const ModelConfig& m, int tp, LayoutPlan& plan) {
  plan.kv = ResolveKvDtype(m, d.kv_cache_dtype, d.vllm, d.gpu);
  int multiple = BlockSizeMultiple(m, plan.kv, d.gpu);
  if (d.block_size > 0) {
    if (d.block_size % multiple != 0)
      Fail("--block-size {} is not a multiple of {}, the kernel block size of this model's attention backend",
           d.block_size, multiple);
    plan.block_size = d.block_size;
  } else {
    plan.block_size = DefaultPlanBlockSize(d, m, plan.kv);
  }
  if (m.CountLayers(LayerKind::kLinear) == 0 || d.engine == Engine::kV0) return;
  // HybridAttentionMambaModelConfig.verify_and_update_config (mamba_cache_mode "none"): the
  // attention block grows until its page covers one sequence's state; the state is padded to it.
  const std::int64_t attn = AttentionBytesPerTokenPerLayer(m, plan.kv, tp);
  const std::int64_t state = m.LinearStateBytes(tp, m.dtype_bytes);
  int alignment = m.attention == AttentionKind::kMla ? 64 : 16;
  int block = HybridMambaBlockSize(attn, state, alignment, d.block_size);
  if (block == plan.block_size) return;
  plan.kv_notes.push_back(fmt::format(
      "attention block size {} tokens so that the attention page ({} B/token x {} = {} B) covers the {} state "
      "of one sequence ({} B, padded by {:.2f}%) (vllm models/config.py HybridAttentionMambaModelConfig)",
      block, attn, block, attn * block, StateKindName(m.linear.kind), state,
      100.0 * static_cast<double>(attn * block - state) / static_cast<double>(state)));
  plan.block_size = block;
}

// V0's CacheEngine: one page of every attention layer (no sliding-window saving; mamba state lives in the
// MambaCacheManager outside the KV pool).
std::vector<KvLayer> V0CacheLayers(const std::vector<KvLayer>& layers) {
  std::vector<KvLayer> full;
  for (auto l : layers)
    if (l.spec.type != KvSpecType::kMamba) {
      l.spec.type = l.spec.type == KvSpecType::kMla ? KvSpecType::kMla : KvSpecType::kFullAttention;
      l.spec.window = 0;
      full.push_back(l);
    }
  return full;
}

// The KV-cache specs of every stage, vLLM's groups over the whole model, and each stage's view of them.
void GroupStageKv(const Deployment& d, const LayoutPlan& plan, LayoutStages& st, KvCacheGroups& groups) {
  std::vector<KvLayer> model_layers;
  for (int r = 0; r < st.pp; ++r) {
    std::vector<KvLayer> layers =
        StageKvLayers(d, st.m, plan.kv, plan.block_size, PlaceStage(st.tp, 1, plan.partition, r, st.forced));
    if (st.v0) layers = V0CacheLayers(layers);
    model_layers.insert(model_layers.end(), layers.begin(), layers.end());
    st.stage_layers.push_back(std::move(layers));
  }
  KvGroupingOptions gopt;
  gopt.hybrid_manager = !st.v0 && d.vllm.hybrid_kv_cache_manager;
  gopt.chunked_local_hybrid = d.vllm.chunked_local_hybrid;
  gopt.group_size_ratio = d.vllm.hybrid_group_size_ratio;
  groups = GroupKvCacheSpecs(model_layers, gopt);
}

void ProjectWorkers(const LayoutPlan& plan, LayoutStages& st) {
  const KvCacheGroups& groups = plan.kv_groups;
  for (int r = 0; r < st.pp; ++r) {
    // A stage with no cache-owning layer: under one UniformTypeKVCacheSpecs group (DSA) the worker
    // keeps the global spec (ProjectKvGroupsToWorker); otherwise vLLM stops at start-up.
    if (st.stage_layers[r].empty() && groups.grouping != KvGrouping::kAttentionFree &&
        groups.grouping != KvGrouping::kUniformType)
      Fail(
          "PP rank {} holds no attention layer (layers {}; a stage with 0 layers and no MTP layer): vLLM cannot "
          "size its KV cache (kv_cache_utils.py get_kv_cache_config_from_groups: \"group_size must be greater than "
          "0\"); give every stage at least one attention layer",
          r, FormatPartition(plan.partition));
    st.workers.push_back(
        ProjectKvGroupsToWorker(groups, st.stage_layers[r], st.limits, st.global_page, st.whole_model));
  }
  if (groups.grouping == KvGrouping::kAttentionFree)
    Fail("{}: no layer caches KV or state; an attention-free model has nothing to plan", st.m.source);
}

// Phase 1: the split, the block size, the index share, the constants, each stage's KV specs and worker view.
LayoutStages ResolveStages(const Deployment& d, const LayoutSpec& spec, LayoutPlan& plan) {
  LayoutStages st;
  st.m = EffectiveModel(d);
  st.tp = spec.tensor_parallel_size;
  st.pp = spec.pipeline_parallel_size;
  st.dp = spec.data_parallel_size;
  const ModelConfig& m = st.m;
  if (st.tp < 1 || st.pp < 1) Fail("tensor/pipeline parallel sizes must be >= 1, got TP{} PP{}", st.tp, st.pp);
  if (m.num_attention_heads % st.tp != 0)
    Fail("tensor_parallel_size={} does not divide num_attention_heads={} ({})", st.tp, m.num_attention_heads, m.source);
  plan.spec = spec;
  plan.max_model_len = d.effective_max_model_len();
  ResolveSplit(d, m, spec, plan);
  ResolveBlockSize(d, m, st.tp, plan);
  st.v0 = d.engine == Engine::kV0;
  const bool fix = FixApplied(d);
  plan.index_share = AnalyzeIndexShare(m, plan.partition, d.vllm.index_share, fix);
  if (fix) st.forced = plan.index_share.forced;
  plan.index_share_safe = plan.index_share.safe;
  st.constants = ConstantsFor(d);
  plan.constants = st.constants.name;
  GroupStageKv(d, plan, st, plan.kv_groups);
  for (const auto& n : plan.kv_groups.notes) plan.kv_notes.push_back(n);
  st.dcp = std::max(1, d.decode_context_parallel_size);
  st.limits = KvLimits{plan.max_model_len, MaxNumBatchedTokens(d), st.dcp};
  st.global_page = d.vllm.pool_combine == PoolCombine::kDsaGlobalPage && m.dsa && st.pp > 1;
  st.whole_model = d.vllm.fit_check_scope == FitCheckScope::kWholeModel;
  ProjectWorkers(plan, st);
  return st;
}

// Where stage `r` sits: its layers, MTP layers, forced layers and indexer caches.
RankPlan PlaceRank(const Deployment& d, const LayoutStages& st, const LayoutPlan& plan, int r) {
  RankPlan rp;
  rp.pp_rank = r;
  rp.layers = RankRange(plan.partition, r);
  rp.mtp_layers = r == st.pp - 1 && d.mtp_on() ? st.m.num_nextn_predict_layers : 0;
  rp.attention_layers = rp.layers.size() + rp.mtp_layers;
  for (int i = rp.layers.start; i < rp.layers.end; ++i) {
    if (Contains(st.forced, i)) rp.forced_layers.push_back(i);
    if (LayerOwnsIndexerCache(st.m, i, d.vllm.index_share, Contains(st.forced, i))) ++rp.indexer_caches;
  }
  if (st.m.dsa) rp.indexer_caches += rp.mtp_layers;
  return rp;
}

// Phase 2: each stage's memory (memory/stage_memory.h), once per stage, with the constants of its GPU.
void PlanStages(const Deployment& d, const LayoutStages& st, LayoutPlan& plan) {
  for (int r = 0; r < st.pp; ++r) {
    RankPlan rp = PlaceRank(d, st, plan, r);
    // A stage on another GPU type (stage_gpus) plans with that GPU's constants.
    std::optional<MemoryConstants> stage_k;
    if (!d.stage_gpus.empty()) {
      Deployment ds = d;
      ds.gpu = d.StageGpu(r);
      stage_k = ConstantsFor(ds);
    }
    static_cast<StageMemoryPlan&>(rp) =
        PlanStageMemory(d, st.m, PlaceStage(st.tp, st.dp, plan.partition, r, st.forced), st.workers[r],
                        stage_k ? *stage_k : st.constants, plan.spec.describe);
    plan.ranks.push_back(std::move(rp));
  }
  const bool mixed_arch = std::any_of(d.stage_gpus.begin(), d.stage_gpus.end(),
                                      [&](const GpuSpec& g) { return g.arch != d.StageGpu(0).arch; });
  if (mixed_arch)
    plan.warnings.push_back(
        "PP stages on different GPU architectures: vLLM picks the attention backend and the block size on each "
        "worker; the plan uses stage 0's (a backend the other stage lacks stops vLLM at start-up)");
}

// The version's pool arithmetic for this layout (V0: per-rank minimum, blocks x block size, no null block).
PoolRules PoolRulesFor(const Deployment& d, const LayoutStages& st, const LayoutPlan& plan) {
  PoolRules rules;
  rules.block_size = plan.block_size;
  rules.max_model_len = plan.max_model_len;
  rules.combine = st.v0 ? PoolCombine::kPerRankMin : d.vllm.pool_combine;
  rules.tokens_formula = st.v0 ? TokensFormula::kBlocksTimesBlockSize : d.vllm.tokens_formula;
  rules.num_gpu_blocks_override = d.num_gpu_blocks_override;
  rules.dsa = st.m.dsa;
  rules.num_groups = static_cast<int>(std::max<size_t>(1, plan.kv_groups.groups.size()));
  rules.min_block_size = plan.kv_groups.min_block_size();
  rules.blocks_per_request = BlocksPerRequest(plan.kv_groups, st.limits);
  rules.decode_context_parallel_size = st.dcp;
  rules.null_block = !st.v0;
  rules.concurrency_from_tokens = st.v0;
  return rules;
}

// The line(s) this version logs for the pool.
std::string CapacityLog(const Deployment& d, const LayoutStages& st, const LayoutPlan& plan) {
  if (st.v0)
    return fmt::format("# GPU blocks: {}\nMaximum concurrency for {} tokens per request: {:.2f}x",
                       plan.pool.num_gpu_blocks, plan.max_model_len, plan.pool.max_concurrency);
  std::string log = CapacityLogText(plan.pool, plan.max_model_len, d.vllm.one_line_capacity_log);
  if (st.dcp > 1 && d.vllm.tokens_formula == TokensFormula::kBlocksPerGroupTimesBlockSize)
    log = fmt::format("Multiplying the GPU KV cache size by the dcp_world_size {}.\n", st.dcp) + log;
  return log;
}

// Phase 3: the pool at every stage's available memory and at the ends of its range; with several KV-cache
// groups, the longest request the pool holds (vLLM's _estimate_max_model_len over every worker).
void PlanPool(const Deployment& d, const LayoutStages& st, LayoutPlan& plan) {
  std::vector<StageKv> stages;
  for (const auto& rp : plan.ranks) stages.push_back(rp.pool_input());
  const PoolRules rules = PoolRulesFor(d, st, plan);
  plan.pool = ComputePool(rules, stages);
  plan.pool_lo = ComputePool(rules, stages, PoolBound::kLow);
  plan.pool_hi = ComputePool(rules, stages, PoolBound::kHigh);
  plan.capacity_log = CapacityLog(d, st, plan);
  plan.aggregate_kv_tokens = plan.pool.kv_tokens * plan.spec.data_parallel_size;
  if (st.v0 || plan.kv_groups.groups.size() <= 1) return;
  std::int64_t longest = INT64_MAX;
  const std::int64_t upper =
      std::max<std::int64_t>(plan.max_model_len, plan.pool.num_gpu_blocks * plan.block_size * st.dcp);
  for (int r = 0; r < st.pp; ++r)
    longest = std::min(longest,
                       LongestFittingMaxModelLen(plan.kv_groups, st.stage_layers[r], st.limits, st.global_page, false,
                                                 plan.pool.num_blocks_per_rank[r] * st.workers[r].block_bytes, upper));
  plan.pool.largest_max_model_len = longest;
}

void AddProblem(LayoutPlan& plan, Kind kind, std::string message, int pp_rank, std::int64_t need, std::int64_t have) {
  plan.problems.push_back(PlanProblem{kind, std::move(message), pp_rank, need, have});
}

// More GPUs than the deployment has is a problem; fewer leaves some idle.
void CheckGpuCount(const Deployment& d, const LayoutStages& st, LayoutPlan& plan) {
  const int dp = st.dp;
  const int world = st.tp * st.pp * std::max(1, dp);
  const std::string dp_text = dp > 1 ? fmt::format(" x DP{}", dp) : "";
  if (world > d.total_gpus())
    AddProblem(plan, Kind::kGpuCount,
               fmt::format("TP{} x PP{}{} needs {} GPUs; the deployment has {} ({} node{} x {})", st.tp, st.pp, dp_text,
                           world, d.total_gpus(), d.nodes, d.nodes == 1 ? "" : "s", d.gpus_per_node),
               -1, world, d.total_gpus());
  else if (world < d.total_gpus())
    plan.warnings.push_back(fmt::format(
        "TP{} x PP{}{} uses {} of the {} GPUs; {} stay idle{}", st.tp, st.pp, dp_text, world, d.total_gpus(),
        d.total_gpus() - world,
        d.total_gpus() % world == 0 ? fmt::format(" (DP{} would use them)", d.total_gpus() / (st.tp * st.pp)) : ""));
}

// A stage whose weights exceed its budget, or that has nothing left for the KV cache.
void CheckStageBudgets(const Deployment& d, const LayoutStages& st, LayoutPlan& plan) {
  for (const auto& rp : plan.ranks) {
    std::string where = st.pp > 1 ? fmt::format(" on PP rank {}", rp.pp_rank) : "";
    const GpuSpec& gpu = d.StageGpu(rp.pp_rank);
    if (rp.weights.bytes > rp.requested_bytes) {
      AddProblem(
          plan, Kind::kWeightsOverBudget,
          fmt::format(
              "weights need {} per GPU{}, more than {} ({:.2f} GiB budget = gpu_memory_utilization {} x {:.2f} GiB)",
              Gib(rp.weights.bytes), where,
              rp.weights.bytes > gpu.total_bytes() ? fmt::format("the GPU's {:.2f} GiB", gpu.total_gib) : "the budget",
              ToGiB(rp.requested_bytes), d.gpu_memory_utilization, gpu.total_gib),
          rp.pp_rank, rp.weights.bytes, rp.requested_bytes);
    } else if (rp.available_kv.bytes <= 0) {
      AddProblem(plan, Kind::kNoKvMemory,
                 fmt::format("no memory left for the KV cache{} (available {})", where, Gib(rp.available_kv.bytes)),
                 rp.pp_rank, 0, rp.available_kv.bytes);
    }
  }
}

// V1 get_kv_cache_configs -> _check_enough_kv_cache_memory, per worker (or the whole model against one worker
// in 0.14-0.15), with vLLM's binary-searched estimate of the longest length.
void CheckV1MaxModelLen(const Deployment& d, const LayoutStages& st, LayoutPlan& plan) {
  for (int r = 0; r < st.pp; ++r) {
    const RankPlan& rp = plan.ranks[r];
    std::int64_t have = d.num_gpu_blocks_override && d.vllm.override_in_fit_check
                            ? *d.num_gpu_blocks_override * rp.page_bytes
                            : rp.available_kv.bytes;
    const std::int64_t need = st.workers[r].needed_bytes;
    if (need <= have) continue;
    const std::int64_t best = LongestFittingMaxModelLen(plan.kv_groups, st.stage_layers[r], st.limits, st.global_page,
                                                        st.whole_model, have, plan.max_model_len);
    AddProblem(
        plan, Kind::kMaxModelLenTooLarge,
        fmt::format("To serve at least one request with the model's max seq len ({}), ({} GiB KV cache is "
                    "needed, which is larger than the available KV cache memory ({} GiB){}.{}",
                    plan.max_model_len, FormatGib(need), FormatGib(have),
                    st.pp > 1 ? fmt::format(" on PP rank {}", r) : "",
                    best > 0 ? fmt::format(" Based on the available memory, the estimated maximum model length "
                                           "is {}.",
                                           best)
                             : "",
                    st.whole_model ? fmt::format(" (vLLM {} compares the whole model's KV, all {} stages, with one "
                                                 "worker's memory: #29431, fixed by #33698)",
                                                 d.vllm.name, st.pp)
                                   : ""),
        r, plan.max_model_len, best);
    break;
  }
}

// One request of max_model_len must fit the pool (V0 _verify_args: num_gpu_blocks x block_size; V1 per worker).
void CheckMaxModelLen(const Deployment& d, const LayoutStages& st, LayoutPlan& plan) {
  if (plan.Problem(Kind::kWeightsOverBudget) || plan.Problem(Kind::kNoKvMemory)) return;
  if (!st.v0) return CheckV1MaxModelLen(d, st, plan);
  // V0 LLMEngine._initialize_kv_caches -> _verify_args: max_model_len must fit num_gpu_blocks x block_size.
  const std::int64_t max_tokens = plan.pool.num_gpu_blocks * plan.block_size;
  if (plan.max_model_len > max_tokens)
    AddProblem(plan, Kind::kMaxModelLenTooLarge,
               fmt::format("The model's max seq len ({}) is larger than the maximum number of tokens that can be "
                           "stored in KV cache ({}) (vLLM V0)",
                           plan.max_model_len, max_tokens),
               plan.pool.binding_rank, plan.max_model_len, max_tokens);
}

// Phase 4: what stops the layout (problems) and what the operator must know (warnings).
void CheckLimits(const Deployment& d, const LayoutStages& st, LayoutPlan& plan) {
  CheckGpuCount(d, st, plan);
  CheckStageBudgets(d, st, plan);
  if (std::string why = DcpRefusal(d, st.m, plan.kv, st.tp, st.dcp); !why.empty())
    AddProblem(plan, Kind::kDcpUnsupported, fmt::format("--decode-context-parallel-size {}: {}", st.dcp, why), -1,
               st.dcp, 1);
  CheckMaxModelLen(d, st, plan);
  if (st.pp > 1 && d.mtp_on() && !d.vllm.pp_speculation)
    AddProblem(plan, Kind::kPpSpeculation,
               fmt::format("vLLM {} rejects pipeline parallelism with MTP speculation (DeepSeekMTP lost SupportsPP "
                           "on 2026-01-12, #32150); use --num-speculative-tokens 0 or a version with PP + MTP",
                           d.vllm.name),
               -1, 0, 0);
  if (st.tp > d.gpus_per_node)
    plan.warnings.push_back(
        fmt::format("TP{} spans nodes ({} GPUs per node): all-reduce crosses the network", st.tp, d.gpus_per_node));
  if (plan.index_share.applies && !plan.index_share.safe)
    plan.warnings.push_back(fmt::format(
        "unsafe split: layers {} read a top-k index never written on their stage (seed §7: 19-21% degenerate answers); "
        "vLLM {} provides no fix B",
        FormatPartition(plan.index_share.forced), d.vllm.name));
  plan.pp_gated = plan.index_share.applies && st.pp > 2;
  if (plan.pp_gated)
    plan.warnings.push_back(
        "PP > 2 with DSA index sharing: the seed measured 20% degeneration (45% with MTP) at PP=4 "
        "even with fix B; run `ppdeploy degen` before serving");
  plan.feasible = plan.problems.empty();
}

// Phase 5: what each stage ends up with (its blocks, the idle KV memory, nvidia-smi's figure) and the compute
// balance in layer-equivalents (the last stage's MTP forwards count k times, docs/seed.md §6).
void Report(const Deployment& d, LayoutPlan& plan) {
  const int pp = plan.spec.pipeline_parallel_size;
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
  double lo = 1e18, hi = 0;
  for (const auto& rp : plan.ranks) {
    double eq = rp.layers.size() + (rp.mtp_layers ? rp.mtp_layers * d.num_speculative_tokens : 0);
    lo = std::min(lo, eq);
    hi = std::max(hi, eq);
  }
  plan.compute_balance = lo > 0 ? hi / lo : 0;
}

}  // namespace

LayoutPlan PlanLayout(const Deployment& d, const LayoutSpec& spec) {
  LayoutPlan plan;
  const LayoutStages stages = ResolveStages(d, spec, plan);
  PlanStages(d, stages, plan);
  PlanPool(d, stages, plan);
  CheckLimits(d, stages, plan);
  Report(d, plan);
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
