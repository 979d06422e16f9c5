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

std::string_view LimitCheckName(LimitCheck check) {
  switch (check) {
    case LimitCheck::kV0Pool:
      return "v0-pool";
    case LimitCheck::kPerWorker:
      return "per-worker";
    case LimitCheck::kMinMemory:
      return "min-memory";
    case LimitCheck::kWholeModel:
      return "whole-model";
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

// Phase 3: the pool at every stage's available memory and at the ends of its range.
void PlanPool(const Deployment& d, const LayoutStages& st, LayoutPlan& plan) {
  std::vector<StageKv> stages;
  for (const auto& rp : plan.ranks) stages.push_back(rp.pool_input());
  const PoolRules rules = PoolRulesFor(d, st, plan);
  plan.pool = ComputePool(rules, stages);
  plan.pool_lo = ComputePool(rules, stages, PoolBound::kLow);
  plan.pool_hi = ComputePool(rules, stages, PoolBound::kHigh);
  plan.capacity_log = CapacityLog(d, st, plan);
  plan.aggregate_kv_tokens = plan.pool.kv_tokens * plan.spec.data_parallel_size;
}

// The memory vLLM's start-up check compares with on worker r, at `bound` of every stage's range (the
// override's blocks where the version counts --num-gpu-blocks-override in the check, #41069).
std::int64_t CheckedBytes(const Deployment& d, const LayoutPlan& plan, int r, PoolBound bound) {
  const RankPlan& rp = plan.ranks[r];
  if (d.num_gpu_blocks_override && d.vllm.override_in_fit_check) return *d.num_gpu_blocks_override * rp.page_bytes;
  const Interval a = rp.available_kv.interval();
  return bound == PoolBound::kLow ? a.lo : bound == PoolBound::kHigh ? a.hi : a.value;
}

// The longest request worker r's check accepts with `have` bytes: vLLM's _estimate_max_model_len binary search,
// here not capped at max_model_len (the search range grows until the need exceeds the memory).
std::int64_t LongestAccepted(const LayoutStages& st, const LayoutPlan& plan, int r, std::int64_t have) {
  std::int64_t upper = std::max<std::int64_t>(plan.max_model_len, 1);
  for (;;) {
    const std::int64_t best = LongestFittingMaxModelLen(plan.kv_groups, st.stage_layers[r], st.limits, st.global_page,
                                                        st.whole_model, have, upper);
    if (best < upper || upper > (std::int64_t{1} << 40)) return best;
    upper *= 4;
  }
}

// What the check gives at one bound: the longest length, the rank that sets it, the memory it compares with.
struct LimitAt {
  std::int64_t largest = 0;
  int rank = 0;
  std::int64_t have = 0;
};

LimitAt ComputeLimitAt(const Deployment& d, const LayoutStages& st, const LayoutPlan& plan, const PoolResult& pool,
                       PoolBound bound) {
  if (st.v0) return {pool.num_gpu_blocks * plan.block_size, pool.binding_rank, 0};
  std::vector<std::int64_t> have;
  for (int r = 0; r < st.pp; ++r) have.push_back(CheckedBytes(d, plan, r, bound));
  const int min_rank = static_cast<int>(std::min_element(have.begin(), have.end()) - have.begin());
  // 0.14-0.15: one check, the whole model against min(available_memory); v0.8: every worker against the minimum.
  if (st.whole_model) return {LongestAccepted(st, plan, min_rank, have[min_rank]), min_rank, have[min_rank]};
  if (d.vllm.pool_combine == PoolCombine::kV08MinMemory) have.assign(have.size(), have[min_rank]);
  LimitAt out{INT64_MAX, 0, 0};
  for (int r = 0; r < st.pp; ++r)
    if (const std::int64_t l = LongestAccepted(st, plan, r, have[r]); l < out.largest) out = {l, r, have[r]};
  return out;
}

// The one limit function (LayoutPlan::limit): the check this version applies, the largest max_model_len at the
// point estimate and at the ends of the range, the binding rank. The pool's largest_max_model_len follows it.
void ComputeLimit(const Deployment& d, const LayoutStages& st, LayoutPlan& plan) {
  MaxModelLenLimit& k = plan.limit;
  k.check = st.v0                                               ? LimitCheck::kV0Pool
            : st.whole_model                                    ? LimitCheck::kWholeModel
            : d.vllm.pool_combine == PoolCombine::kV08MinMemory ? LimitCheck::kMinMemory
                                                                : LimitCheck::kPerWorker;
  k.hybrid = plan.kv_groups.groups.size() > 1;
  const LimitAt v = ComputeLimitAt(d, st, plan, plan.pool, PoolBound::kValue);
  const bool ranged = plan.spec.describe;  // the split optimiser's candidates decide on the point alone
  k.largest = v.largest;
  k.largest_lo = ranged ? ComputeLimitAt(d, st, plan, plan.pool_lo, PoolBound::kLow).largest : v.largest;
  k.largest_hi = ranged ? ComputeLimitAt(d, st, plan, plan.pool_hi, PoolBound::kHigh).largest : v.largest;
  k.binding_rank = v.rank;
  k.available_bytes = st.v0 ? plan.ranks[v.rank].available_kv.bytes : v.have;
  k.needed_bytes = st.workers[v.rank].needed_bytes;
  k.fits = plan.max_model_len <= k.largest;
  k.fits_low_end = plan.max_model_len <= k.largest_lo;
  plan.pool.largest_max_model_len = k.largest;
  plan.pool_lo.largest_max_model_len = k.largest_lo;
  plan.pool_hi.largest_max_model_len = k.largest_hi;
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

// vLLM's words when the profiled available memory is not positive (V1 kv_cache_utils.py
// check_enough_kv_cache_memory; V0 raise_if_cache_size_invalid for num_gpu_blocks <= 0).
constexpr const char* kNoCacheMemoryText =
    "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.";

// A stage whose weights exceed its budget, or that has nothing left for the KV cache.
void CheckStageBudgets(const Deployment& d, const LayoutStages& st, LayoutPlan& plan) {
  for (const auto& rp : plan.ranks) {
    std::string where = st.pp > 1 ? fmt::format(" on PP rank {}", rp.pp_rank) : "";
    const GpuSpec& gpu = d.StageGpu(rp.pp_rank);
    if (rp.weights.bytes > rp.requested_bytes) {
      AddProblem(
          plan, Kind::kWeightsOverBudget,
          fmt::format(
              "weights need {} per GPU{}, more than {} ({:.2f} GiB budget = gpu_memory_utilization {} x {:.2f} GiB){}",
              Gib(rp.weights.bytes), where,
              rp.weights.bytes > gpu.total_bytes() ? fmt::format("the GPU's {:.2f} GiB", gpu.total_gib) : "the budget",
              ToGiB(rp.requested_bytes), d.gpu_memory_utilization, gpu.total_gib,
              rp.weights.bytes > gpu.total_bytes()
                  ? ""
                  : fmt::format(": they load, then vLLM stops at start-up with \"{}\"", kNoCacheMemoryText)),
          rp.pp_rank, rp.weights.bytes, rp.requested_bytes);
    } else if (rp.available_kv.bytes <= 0) {
      AddProblem(plan, Kind::kNoKvMemory,
                 fmt::format("no memory left for the KV cache{} (available {}): vLLM stops at start-up with \"{}\"",
                             where, Gib(rp.available_kv.bytes), kNoCacheMemoryText),
                 rp.pp_rank, 0, rp.available_kv.bytes);
    } else if (rp.available_kv.lo <= 0) {
      plan.warnings.push_back(fmt::format(
          "at the low end of its range the KV cache has no memory left{} (available {} .. {}): a boot there stops "
          "with \"{}\"",
          where, Gib(rp.available_kv.lo), Gib(rp.available_kv.bytes), kNoCacheMemoryText));
    }
  }
}

// V1 get_kv_cache_configs -> _check_enough_kv_cache_memory as vLLM raises it: at the first worker whose check
// fails (in 0.14-0.15 once, the whole model against the minimum worker), with vLLM's estimate for that worker.
void CheckV1MaxModelLen(const Deployment& d, const LayoutStages& st, LayoutPlan& plan) {
  const MaxModelLenLimit& k = plan.limit;
  if (k.fits) return;
  int r = k.binding_rank;
  std::int64_t have = k.available_bytes;
  for (int i = 0; i < st.pp && k.check != LimitCheck::kWholeModel; ++i) {
    const std::int64_t h =
        k.check == LimitCheck::kMinMemory ? k.available_bytes : CheckedBytes(d, plan, i, PoolBound::kValue);
    if (st.workers[i].needed_bytes > h) {
      r = i;
      have = h;
      break;
    }
  }
  const std::int64_t need = st.workers[r].needed_bytes;
  const std::int64_t best = std::min(plan.max_model_len, LongestAccepted(st, plan, r, have));
  AddProblem(
      plan, Kind::kMaxModelLenTooLarge,
      fmt::format("To serve at least one request with the model's max seq len ({}), ({} GiB KV cache is "
                  "needed, which is larger than the available KV cache memory ({} GiB){}.{}{}{}",
                  plan.max_model_len, FormatGib(need), FormatGib(have),
                  st.pp > 1 ? fmt::format(" on PP rank {}", r) : "",
                  best > 0 ? fmt::format(" Based on the available memory, the estimated maximum model length "
                                         "is {}.",
                                         best)
                           : "",
                  k.check == LimitCheck::kWholeModel
                      ? fmt::format(" (vLLM {} compares the whole model's KV, all {} stages, with the smallest "
                                    "worker's memory: #29431, fixed by #33698)",
                                    d.vllm.name, st.pp)
                      : "",
                  best != k.largest && st.pp > 1
                      ? fmt::format(" Every worker accepts at most {} (PP rank {} binds).", k.largest, k.binding_rank)
                      : ""),
      r, plan.max_model_len, best);
}

// One request of max_model_len must fit the pool (V0 _verify_args: num_gpu_blocks x block_size; V1 per worker).
void CheckMaxModelLen(const Deployment& d, const LayoutStages& st, LayoutPlan& plan) {
  if (plan.Problem(Kind::kWeightsOverBudget) || plan.Problem(Kind::kNoKvMemory)) return;
  if (!st.v0) return CheckV1MaxModelLen(d, st, plan);
  // V0 LLMEngine._initialize_kv_caches -> _verify_args: max_model_len must fit num_gpu_blocks x block_size.
  const std::int64_t max_tokens = plan.limit.largest;  // num_gpu_blocks x block_size (ComputeLimit)
  if (!plan.limit.fits)
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
    if (rp.headroom_bytes < 0)
      plan.warnings.push_back(fmt::format(
          "PP rank {}: the plan puts {} MiB on a GPU whose nvidia-smi total is {} MiB ({}; headroom {} MiB): a "
          "figure of the plan exceeds the GPU (check --gpu, --gpu-total-gib, --stage-gpus)",
          rp.pp_rank, rp.nvidia_smi_used_bytes / kMiB, smi_total / kMiB, d.StageGpu(rp.pp_rank).name,
          rp.headroom_bytes / kMiB));
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

namespace {

LayoutPlan PlanLayoutAt(const Deployment& d, const LayoutSpec& spec) {
  LayoutPlan plan;
  const LayoutStages stages = ResolveStages(d, spec, plan);
  PlanStages(d, stages, plan);
  PlanPool(d, stages, plan);
  ComputeLimit(d, stages, plan);
  CheckLimits(d, stages, plan);
  Report(d, plan);
  return plan;
}

}  // namespace

LayoutPlan PlanLayout(const Deployment& d, const LayoutSpec& spec) {
  LayoutPlan plan = PlanLayoutAt(d, spec);
  // The memory outside the pool can grow with max_model_len (the DSA workspace, batch defaults), so the limit f(M)
  // found at M is a value a launch at it accepts only where M does not fit (then f(f(M)) >= f(M)). Where it fits,
  // the plan at L0 = f(M) gives L1 = f(L0) <= L0, and f(L1) >= f(L0) = L1: L1 is accepted when launched.
  MaxModelLenLimit& k = plan.limit;
  if (!spec.describe || !k.fits || k.largest <= plan.max_model_len) return plan;
  Deployment at = d;
  at.max_model_len = k.largest;
  try {
    const LayoutPlan again = PlanLayoutAt(at, spec);
    const std::int64_t m = plan.max_model_len, g0 = k.largest_lo, g1 = again.limit.largest_lo;
    k.largest = std::max(m, std::min(k.largest, again.limit.largest));
    // The same at the low end: g(M) itself where M does not fit there, else at least M.
    k.largest_lo = std::min(k.largest, g0 < m ? g0 : std::max(m, std::min(g0, g1)));
    k.largest_hi = std::max(k.largest, std::min(k.largest_hi, again.limit.largest_hi));
  } catch (const Error&) {
    return plan;  // a length the planner refuses (e.g. a kernel limit): keep f(M)
  }
  k.fits_low_end = plan.max_model_len <= k.largest_lo;
  plan.pool.largest_max_model_len = k.largest;
  plan.pool_lo.largest_max_model_len = k.largest_lo;
  plan.pool_hi.largest_max_model_len = k.largest_hi;
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
