#include "layout/optimizer.h"

#include <algorithm>
#include <limits>
#include <set>

#include "core/error.h"

namespace ppdeploy {
namespace {

// O(1) evaluation of a stage [s, e) on rank r of pp, from prefix sums.
class StageModel {
 public:
  StageModel(const Deployment& d, int tp, int pp)
      : d_(d), m_(EffectiveModel(d)), tp_(tp), pp_(pp), constants_(ConstantsFor(d)) {
    const int L = m_.num_hidden_layers;
    fix_ = FixApplied(d);
    bool any_shared = false;
    if (m_.dsa)
      for (int i = 0; i < L; ++i) any_shared |= !LayerIsFull(m_, i);
    share_applies_ = m_.dsa && any_shared && d.vllm.index_share != IndexShareMode::kNone;
    kv_ = ResolveKvDtype(m_, d.kv_cache_dtype, d.vllm, d.gpu);
    block_ = d.block_size > 0 ? d.block_size : DefaultPlanBlockSize(d, m_, kv_);
    attn_ = AttentionBytesPerTokenPerLayer(m_, kv_, tp);
    idx_ = IndexerBytesPerTokenPerLayer(m_);
    ShardParams sp{tp, d.enable_expert_parallel ? tp : tp, m_.num_key_value_heads, m_.vocab_size};
    const WeightTable& w = d.weights;
    w_prefix_.assign(L + 1, 0);
    forced_delta_prefix_.assign(L + 1, 0);
    full_prefix_.assign(L + 1, 0);
    dense_prefix_.assign(L + 1, 0);
    next_full_.assign(L + 1, L);
    const bool all_weights = m_.dsa && d.vllm.indexer_weights_on_all_layers;
    for (int i = 0; i < L; ++i) {
      bool owns = LayerOwnsIndexerCache(m_, i, d.vllm.index_share, false);
      std::int64_t base = PerGpuBytes(w.layers[i], sp, all_weights || owns, w.indexer_bytes_estimate);
      std::int64_t forced = PerGpuBytes(w.layers[i], sp, true, w.indexer_bytes_estimate);
      w_prefix_[i + 1] = w_prefix_[i] + base;
      forced_delta_prefix_[i + 1] = forced_delta_prefix_[i] + (forced - base);
      full_prefix_[i + 1] = full_prefix_[i] + (m_.dsa && owns ? 1 : 0);
      dense_prefix_[i + 1] = dense_prefix_[i] + (m_.n_routed_experts > 0 ? !m_.IsMoeLayer(i) : 1);
    }
    for (int i = L - 1; i >= 0; --i) next_full_[i] = LayerIsFull(m_, i) ? i : next_full_[i + 1];
    // Rank-position constants.
    first_extra_ = PerGpuBytes(w.embedding, sp, false, 0) + PerGpuBytes(w.other, sp, false, 0);
    last_extra_ = PerGpuBytes(w.final_norm, sp, false, 0);
    if (!m_.tie_word_embeddings || pp > 1)
      last_extra_ += PerGpuBytes(w.lm_head.items.empty() ? w.embedding : w.lm_head, sp, false, 0);
    mtp_layers_ = d.mtp_on() ? m_.num_nextn_predict_layers : 0;
    if (mtp_layers_)
      for (const auto& slot : w.mtp) last_extra_ += PerGpuBytes(slot, sp, m_.dsa, w.indexer_bytes_estimate);
    last_extra_ += MtpDrafterVocabBytes(d, sp, pp);
    mtp_kv_ = static_cast<std::int64_t>(mtp_layers_) * (attn_ + (m_.dsa ? idx_ : 0));
    topk_ = m_.dsa ? static_cast<std::int64_t>(d.max_num_batched_tokens > 0 ? d.max_num_batched_tokens
                                                                            : DefaultBatchLimits(d.gpu, d.vllm).first) *
                         m_.index_topk * 4
                   : 0;
    requested_ = RequestedBytes(d);
    // The overhead of a stage depends on its rank, its layer count and its dense-layer count; the
    // third index is whichever of dense / MoE count has the smaller range in this model.
    const int dense_total = static_cast<int>(dense_prefix_[L]);
    count_dense_ = dense_total <= L - dense_total;
    third_ = std::min(dense_total, L - dense_total) + 1;
    overhead_.assign(static_cast<size_t>(pp) * (L + 1) * third_, -1);
  }

  int layers() const { return m_.num_hidden_layers; }

  // Forced layers of a stage starting at s: [s, next full) when fix B applies.
  int ForcedEnd(int s, int e) const {
    if (!share_applies_) return s;
    return std::min(e, next_full_[s]);
  }
  bool ZeroDependency(int s) const { return !share_applies_ || next_full_[s] == s; }

  std::int64_t Blocks(int r, int s, int e) {
    ++evaluations;
    const bool first = r == 0, last = r == pp_ - 1;
    int fe = fix_ ? ForcedEnd(s, e) : s;
    std::int64_t weights = w_prefix_[e] - w_prefix_[s] + (forced_delta_prefix_[fe] - forced_delta_prefix_[s]) + topk_;
    if (first) weights += first_extra_;
    if (last) weights += last_extra_;
    std::int64_t idx_layers = d_.vllm.index_share == IndexShareMode::kFull
                                  ? (full_prefix_[e] - full_prefix_[s]) + (fe - s)
                                  : (m_.dsa ? e - s : 0);
    std::int64_t bpt = attn_ * (e - s) + idx_ * idx_layers + (last ? mtp_kv_ : 0);
    std::int64_t avail = d_.kv_cache_memory_bytes
                             ? *d_.kv_cache_memory_bytes
                             : requested_ - weights - Overhead(r, e - s, dense_prefix_[e] - dense_prefix_[s]);
    std::int64_t page = bpt * block_;
    return avail <= 0 || page <= 0 ? 0 : avail / page;
  }

  double Compute(int r, int s, int e) const {
    return (e - s) + (r == pp_ - 1 ? static_cast<double>(mtp_layers_) * d_.num_speculative_tokens : 0.0);
  }

  std::int64_t evaluations = 0;

 private:
  // The overhead depends on the rank, the stage's layer count and how many of them are dense.
  std::int64_t Overhead(int r, int local_layers, int dense_layers) {
    const int c = count_dense_ ? dense_layers : local_layers - dense_layers;
    std::int64_t& cached = overhead_[(static_cast<size_t>(r) * (m_.num_hidden_layers + 1) + local_layers) * third_ + c];
    if (cached < 0) cached = StageBudgetBytes(d_, m_, constants_, tp_, pp_, 1, r, local_layers, dense_layers);
    return cached;
  }

  const Deployment& d_;
  ModelConfig m_;
  int tp_, pp_;
  bool fix_ = false, share_applies_ = false;
  EffectiveKv kv_;
  int block_ = 16;
  std::int64_t attn_ = 0, idx_ = 0, first_extra_ = 0, last_extra_ = 0, mtp_kv_ = 0, topk_ = 0, requested_ = 0;
  int mtp_layers_ = 0;
  MemoryConstants constants_;
  std::vector<std::int64_t> w_prefix_, forced_delta_prefix_, full_prefix_, dense_prefix_;
  std::vector<int> next_full_;
  std::vector<std::int64_t> overhead_;  ///< [rank][local layers][dense or MoE layers], -1 = not computed
  bool count_dense_ = true;
  int third_ = 1;
};

constexpr std::int64_t kNone = std::numeric_limits<std::int64_t>::min();

struct Search {
  StageModel& model;
  int pp;
  const OptimizeOptions& opt;
  double lo_compute = 0, hi_compute = 1e18;

  bool Allowed(int r, int s, int e) const {
    if (e - s < opt.min_layers_per_stage) return false;
    if (opt.zero_dependency && s > 0 && !model.ZeroDependency(s)) return false;
    double c = model.Compute(r, s, e);
    return c >= lo_compute && c <= hi_compute;
  }

  // Phase 1: the largest pool. best[r][e] = max_s min(best[r-1][s], blocks_r(s, e)).
  std::int64_t MaxPool() {
    const int L = model.layers();
    std::vector<std::int64_t> prev(L + 1, kNone), cur(L + 1, kNone);
    prev[0] = std::numeric_limits<std::int64_t>::max();
    for (int r = 0; r < pp; ++r) {
      std::fill(cur.begin(), cur.end(), kNone);
      for (int e = 1; e <= L; ++e) {
        if (r == pp - 1 && e != L) continue;
        for (int s = 0; s < e; ++s) {
          if (prev[s] == kNone || !Allowed(r, s, e)) continue;
          std::int64_t v = std::min(prev[s], model.Blocks(r, s, e));
          cur[e] = std::max(cur[e], v);
        }
      }
      std::swap(prev, cur);
    }
    return prev[L];
  }

  // Phase 2: among splits whose every stage has >= pool blocks, the smallest max stage compute.
  std::vector<int> BalancedSplit(std::int64_t pool) {
    const int L = model.layers();
    const double kInf = 1e18;
    std::vector<std::vector<double>> cost(pp + 1, std::vector<double>(L + 1, kInf));
    std::vector<std::vector<int>> from(pp + 1, std::vector<int>(L + 1, -1));
    cost[0][0] = 0;
    for (int r = 0; r < pp; ++r)
      for (int e = 1; e <= L; ++e) {
        if (r == pp - 1 && e != L) continue;
        for (int s = 0; s < e; ++s) {
          if (cost[r][s] >= kInf || !Allowed(r, s, e)) continue;
          if (model.Blocks(r, s, e) < pool) continue;
          double c = std::max(cost[r][s], model.Compute(r, s, e));
          if (c < cost[r + 1][e]) {
            cost[r + 1][e] = c;
            from[r + 1][e] = s;
          }
        }
      }
    if (cost[pp][L] >= kInf) return {};
    std::vector<int> split(pp);
    int e = L;
    for (int r = pp; r >= 1; --r) {
      int s = from[r][e];
      split[r - 1] = e - s;
      e = s;
    }
    return split;
  }
};

SplitCandidate Candidate(const Deployment& d, int tp, const std::vector<int>& partition) {
  LayoutPlan p = PlanLayout(d, LayoutSpec{tp, static_cast<int>(partition.size()), 1, partition, false});
  SplitCandidate c;
  c.partition = partition;
  c.num_gpu_blocks = p.pool.num_gpu_blocks;
  c.kv_tokens = p.pool.kv_tokens;
  c.binding_rank = p.pool.binding_rank;
  c.compute_balance = p.compute_balance;
  for (const auto& r : p.ranks)
    c.layer_equivalents.push_back(r.layers.size() + (r.mtp_layers ? r.mtp_layers * d.num_speculative_tokens : 0));
  c.forced_layers = p.index_share.forced;
  c.zero_dependency = p.index_share.zero_dependency;
  if (d.calibration && d.calibration->logged_kv_tokens && d.calibration->tensor_parallel_size == tp &&
      d.calibration->layer_partition == partition && d.calibration->max_model_len == d.effective_max_model_len())
    c.measured_kv_tokens = d.calibration->logged_kv_tokens;
  return c;
}

}  // namespace

SplitCandidate EvaluateSplit(const Deployment& d, int tp, const std::vector<int>& partition) {
  StageModel model(d, tp, static_cast<int>(partition.size()));
  SplitCandidate c;
  c.partition = partition;
  std::int64_t pool = std::numeric_limits<std::int64_t>::max();
  int s = 0;
  for (size_t r = 0; r < partition.size(); ++r) {
    std::int64_t b = model.Blocks(static_cast<int>(r), s, s + partition[r]);
    if (b < pool) {
      pool = b;
      c.binding_rank = static_cast<int>(r);
    }
    s += partition[r];
  }
  c.num_gpu_blocks = pool;
  return c;
}

namespace {

// What the O(1) stage model assumes; anything else is refused by name.
void CheckOptimizable(const Deployment& d, const ModelConfig& m, int tp, int pp) {
  // V0 combines the workers by the per-rank minimum whatever the row's V1 rule (layout/planner.cc PoolRulesFor).
  if (d.engine != Engine::kV0 && d.vllm.pool_combine != PoolCombine::kPerRankMin)
    Fail("the split optimiser needs a vLLM whose pool is a per-rank minimum; profile {} is not", d.vllm.name);
  if (d.num_gpu_blocks_override) Fail("--num-gpu-blocks-override fixes the pool: there is no split to optimise");
  // The O(1) stage model assumes one KV-cache group whose page grows with the layer count.
  if (d.model.Hybrid() || d.model.CountLayers(LayerKind::kLinear) > 0)
    Fail(
        "the split optimiser models one KV-cache group; {} has several layer kinds ({}): plan the splits one by one "
        "with --partition",
        d.model.source, d.model.Describe());
  for (const auto& l : d.model.layers)
    if (l.kv_source >= 0)
      Fail("the split optimiser does not model cross-layer KV sharing ({}); plan the splits with --partition",
           d.model.source);
  if (!d.stage_gpus.empty()) Fail("the split optimiser assumes one GPU type; stage_gpus gives several");
  if (d.vllm.lm_head_every_pp_rank && d.model.architecture.rfind("Deepseek", 0) == 0)
    Fail("the split optimiser does not model vLLM {}'s lm_head on every PP rank; plan the splits with --partition",
         d.vllm.name);
  if (pp < 2) Fail("--optimize needs pipeline_parallel_size >= 2, got {}", pp);
  if (pp > m.num_hidden_layers)
    Fail("pipeline_parallel_size={} is larger than num_hidden_layers={}", pp, m.num_hidden_layers);
  if (m.num_attention_heads % tp != 0)
    Fail("tensor_parallel_size={} does not divide num_attention_heads={}", tp, m.num_attention_heads);
}

// The split with the largest pool (the most balanced among equals), under --max-imbalance for every
// smallest stage compute a feasible split can have.
std::vector<int> BestSplit(const Deployment& d, const ModelConfig& m, StageModel& model, int pp,
                           const OptimizeOptions& opt) {
  std::vector<int> best_split;
  std::int64_t best_pool = kNone;
  auto run = [&](double lo, double hi) {
    Search search{model, pp, opt, lo, hi};
    std::int64_t pool = search.MaxPool();
    if (pool == kNone || pool < 0) return;
    if (pool > best_pool) {
      std::vector<int> split = search.BalancedSplit(pool);
      if (split.empty()) return;
      best_pool = pool;
      best_split = split;
    }
  };
  if (opt.max_imbalance) {
    if (*opt.max_imbalance < 1.0) Fail("--max-imbalance must be >= 1.0, got {}", *opt.max_imbalance);
    // Every feasible split has a smallest stage compute c; enumerate it.
    std::set<double> lows;
    for (int n = opt.min_layers_per_stage; n <= m.num_hidden_layers; ++n) {
      lows.insert(n);
      lows.insert(n + (d.mtp_on() ? m.num_nextn_predict_layers * d.num_speculative_tokens : 0));
    }
    for (double lo : lows) run(lo, lo * *opt.max_imbalance);
  } else {
    run(0, 1e18);
  }
  return best_split;
}

// The comparison table: the default, the optimum, the best zero-dependency split, and the optimum with one
// boundary moved by up to 3 layers; each with its pool relative to the default's.
void FillTable(const Deployment& d, const ModelConfig& m, StageModel& model, int tp, int pp, const OptimizeOptions& opt,
               const std::vector<int>& def, const std::vector<int>& best_split, OptimizeResult& res) {
  std::set<std::vector<int>> seen;
  auto add = [&](const std::vector<int>& split) {
    for (int v : split)
      if (v < 1) return;
    if (!seen.insert(split).second) return;
    SplitCandidate c = Candidate(d, tp, split);
    c.is_default = split == def;
    c.is_optimum = split == best_split;
    res.table.push_back(c);
  };
  add(def);
  add(best_split);
  for (int b = 0; b + 1 < pp; ++b)
    for (int delta = -3; delta <= 3; ++delta) {
      if (!delta) continue;
      std::vector<int> s = best_split;
      s[b] += delta;
      s[b + 1] -= delta;
      add(s);
    }
  if (!opt.zero_dependency && m.dsa) {
    OptimizeOptions z = opt;
    z.zero_dependency = true;
    Search zs{model, pp, z, 0, 1e18};
    std::int64_t zp = zs.MaxPool();
    if (zp != kNone && zp >= 0) {
      auto zsplit = zs.BalancedSplit(zp);
      if (!zsplit.empty()) add(zsplit);
    }
  }
  for (auto& c : res.table) {
    c.delta_vs_default =
        res.default_split.kv_tokens > 0 ? static_cast<double>(c.kv_tokens) / res.default_split.kv_tokens - 1.0 : 0.0;
    if (c.partition == best_split) res.best = c;
  }
  std::sort(res.table.begin(), res.table.end(), [](const auto& a, const auto& b) { return a.partition < b.partition; });
}

}  // namespace

OptimizeResult OptimizeSplit(const Deployment& d, int tp, int pp, const OptimizeOptions& opt) {
  const ModelConfig m = EffectiveModel(d);
  CheckOptimizable(d, m, tp, pp);
  StageModel model(d, tp, pp);
  OptimizeResult res;
  res.tensor_parallel_size = tp;
  res.pipeline_parallel_size = pp;
  const std::vector<int> best_split = BestSplit(d, m, model, pp, opt);
  res.evaluations = model.evaluations;
  if (best_split.empty())
    Fail("no split of {} layers over {} stages satisfies the options{}{}", m.num_hidden_layers, pp,
         opt.zero_dependency ? " (--zero-dependency)" : "",
         opt.max_imbalance ? fmt::format(" (--max-imbalance {})", *opt.max_imbalance) : "");
  res.best = Candidate(d, tp, best_split);
  res.best.is_optimum = true;
  const std::vector<int> def = DefaultSplit(d.vllm, m.num_hidden_layers, pp);
  res.default_split = Candidate(d, tp, def);
  res.default_split.is_default = true;
  FillTable(d, m, model, tp, pp, opt, def, best_split, res);
  return res;
}

}  // namespace ppdeploy
