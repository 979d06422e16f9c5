#include "vllm/calibrate.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/units.h"

namespace ppdeploy {
namespace {

// The PP rank a worker process belongs to (rank layout DP x PP x TP, vllm-rules.md §1.4).
std::optional<int> PpRankOf(const LogProcess& p, int tp, int pp) {
  if (p.pp) return *p.pp;
  if (p.rank) return (*p.rank / std::max(1, tp)) % std::max(1, pp);
  if (p.name.rfind("Worker", 0) == 0) return 0;  // no _PP part: PP size 1
  if (p.name.empty() && pp == 1) return 0;       // unprefixed (V0 / single process)
  return std::nullopt;
}

// num_gpu_blocks that gives `tokens` under the profile's formula.
std::optional<std::int64_t> BlocksForTokens(std::int64_t tokens, int block, std::int64_t mml, TokensFormula f) {
  if (f == TokensFormula::kBlocksTimesBlockSize) {
    if (tokens % block != 0) return std::nullopt;
    return tokens / block;
  }
  std::int64_t per_req = CeilDiv(mml, block);
  auto guess =
      static_cast<std::int64_t>(std::llround(static_cast<double>(tokens) * per_req / static_cast<double>(mml)));
  for (std::int64_t b = std::max<std::int64_t>(0, guess - 3); b <= guess + 3; ++b)
    if (static_cast<std::int64_t>(static_cast<double>(b) / per_req * static_cast<double>(mml)) == tokens) return b;
  return std::nullopt;
}

}  // namespace

LogCalibration CalibrateFromLog(const BootLog& log, const Deployment& d, const LayoutSpec& hint) {
  LogCalibration out;
  const LaunchArgs* args = log.launch_args ? &*log.launch_args : (log.engine_config ? &*log.engine_config : nullptr);
  out.layout = hint;
  if (args && args->tensor_parallel_size && hint.tensor_parallel_size <= 1)
    out.layout.tensor_parallel_size = *args->tensor_parallel_size;
  if (args && args->pipeline_parallel_size && hint.pipeline_parallel_size <= 1)
    out.layout.pipeline_parallel_size = *args->pipeline_parallel_size;
  out.layout.tensor_parallel_size = std::max(1, out.layout.tensor_parallel_size);
  out.layout.pipeline_parallel_size = std::max(1, out.layout.pipeline_parallel_size);
  const int tp = out.layout.tensor_parallel_size, pp = out.layout.pipeline_parallel_size;
  if (out.layout.layer_partition.empty() && !log.partition.empty() && static_cast<int>(log.partition.size()) == pp)
    out.layout.layer_partition = log.partition;
  std::vector<int> partition =
      out.layout.layer_partition.empty() ? DefaultPartition(d.model.num_hidden_layers, pp) : out.layout.layer_partition;

  out.max_model_len = d.effective_max_model_len();
  if (args && args->max_model_len)
    out.max_model_len = *args->max_model_len;
  else if (!log.max_concurrency.empty())
    out.max_model_len = log.max_concurrency.back().tokens_per_request;
  double util = d.gpu_memory_utilization;
  if (args && args->gpu_memory_utilization) util = *args->gpu_memory_utilization;

  Deployment dd = d;
  dd.max_model_len = out.max_model_len;
  dd.gpu_memory_utilization = util;
  if (log.block_size && d.block_size == 0) dd.block_size = *log.block_size;
  LayoutPlan shape = PlanLayout(dd, LayoutSpec{tp, pp, 1, partition});
  out.block_size = shape.block_size;

  // Per-rank figures logged by the workers.
  std::vector<std::optional<double>> avail(pp), loading(pp), graphs(pp), activation(pp);
  std::vector<std::string> who(pp);
  for (const auto& w : log.workers) {
    auto r = PpRankOf(w.process, tp, pp);
    if (!r || *r < 0 || *r >= pp) continue;
    if (w.available_kv_gib && !avail[*r]) {
      avail[*r] = *w.available_kv_gib;
      who[*r] = w.key.empty() ? "the log" : w.key;
    }
    if (!avail[*r] && w.v0_profile && w.v0_profile->kv_cache_gib) {  // V0: "kv_cache_size=X GiB"
      avail[*r] = *w.v0_profile->kv_cache_gib;
      who[*r] = (w.key.empty() ? std::string("the log") : w.key) + " (V0 memory profile)";
    }
    if (w.model_loading_gib && !loading[*r]) loading[*r] = *w.model_loading_gib;
    if (!graphs[*r]) {
      if (w.cuda_graph_actual_gib)
        graphs[*r] = *w.cuda_graph_actual_gib;
      else if (w.graph_capture_gib)
        graphs[*r] = *w.graph_capture_gib;
    }
    if (w.usage_summary && w.usage_summary->peak_activation_gib && !activation[*r])
      activation[*r] = *w.usage_summary->peak_activation_gib;
  }
  if (!log.kv_tokens.empty()) out.logged_kv_tokens = *std::min_element(log.kv_tokens.begin(), log.kv_tokens.end());
  if (out.logged_kv_tokens)
    out.logged_blocks =
        BlocksForTokens(*out.logged_kv_tokens, out.block_size, out.max_model_len, d.vllm.tokens_formula);
  if (!out.logged_blocks && log.num_gpu_blocks) out.logged_blocks = *log.num_gpu_blocks;
  if (!out.logged_blocks && log.not_enough_kv && pp == 1 && !avail[0]) avail[0] = log.not_enough_kv->available_gib;

  // Ranks that printed nothing (since late 2025 only local rank 0 prints): infer from the pool.
  int missing = 0;
  for (int r = 0; r < pp; ++r) missing += !avail[r];
  if (missing == pp && !out.logged_blocks)
    Fail("the log has no \"Available KV cache memory\" line and no \"GPU KV cache size\" line to infer it from");
  for (int r = 0; r < pp; ++r) {
    CalibratedRank cr;
    cr.pp_rank = r;
    if (avail[r]) {
      cr.available_kv_gib = *avail[r];
      cr.source = "logged by " + who[r];
    } else {
      if (!out.logged_blocks)
        Fail("PP rank {} printed no available KV memory and the log's pool could not be mapped to blocks", r);
      // The binding rank holds pool blocks: avail in [blocks x page, (blocks + 1) x page).
      std::int64_t page = shape.ranks[r].page_bytes;
      double lo = ToGiB(*out.logged_blocks * page), hi = ToGiB((*out.logged_blocks + 1) * page);
      cr.available_kv_gib = (lo + hi) / 2;
      cr.uncertainty_gib = (hi - lo) / 2;
      cr.inferred = true;
      cr.source = fmt::format("inferred from the logged pool ({} blocks x {} B page) assuming this rank binds",
                              *out.logged_blocks, page);
      if (missing > 1)
        out.warnings.push_back(
            fmt::format("PP rank {}: {} ranks printed nothing; each is assumed to bind, so its figure is a lower bound",
                        r, missing));
    }
    out.ranks.push_back(cr);
  }

  Calibration& c = out.calibration;
  c.source = "ppdeploy calibrate from a vLLM boot log" + (log.version ? " (vLLM " + *log.version + ")" : std::string());
  c.model = d.model_name;
  c.gpu = d.gpu.name;
  c.vllm = d.vllm.name;
  c.tensor_parallel_size = tp;
  c.pipeline_parallel_size = pp;
  c.layer_partition = partition;
  c.gpu_memory_utilization = util;
  c.max_model_len = out.max_model_len;
  c.kv_cache_dtype = args && args->kv_cache_dtype ? *args->kv_cache_dtype : ToString(d.kv_cache_dtype);
  c.num_speculative_tokens = d.num_speculative_tokens;
  c.total_gib = d.gpu.total_gib;
  for (const auto& w : log.workers)
    if (w.usage_summary && w.usage_summary->total_gib) c.total_gib = *w.usage_summary->total_gib;
  c.logged_kv_tokens = out.logged_kv_tokens;
  for (int r = 0; r < pp; ++r) {
    CalibrationRank cr;
    cr.pp_rank = r;
    cr.available_kv_gib = out.ranks[r].available_kv_gib;
    cr.model_loading_gib = loading[r];
    cr.cuda_graph_gib = graphs[r];
    cr.peak_activation_gib = activation[r];
    c.ranks.push_back(cr);
  }
  if (!args)
    out.warnings.push_back("the log has no \"non-default args\" line: TP/PP/max_model_len come from the flags");
  for (const auto& w : log.warnings) out.warnings.push_back("log: " + w);
  return out;
}

CalibrationCheck CheckCalibration(const LogCalibration& c, const Deployment& d) {
  CalibrationCheck k;
  Deployment cd = d;
  cd.calibration = c.calibration;
  cd.max_model_len = c.max_model_len;
  cd.gpu_memory_utilization = c.calibration.gpu_memory_utilization;
  cd.gpu.total_gib = c.calibration.total_gib;
  if (d.block_size == 0) cd.block_size = c.block_size;
  LayoutSpec spec = c.layout;
  spec.layer_partition = c.calibration.layer_partition;
  LayoutPlan p = PlanLayout(cd, spec);
  k.predicted_kv_tokens = p.pool.kv_tokens;
  k.predicted_blocks = p.pool.num_gpu_blocks;
  k.logged_kv_tokens = c.logged_kv_tokens;
  k.logged_blocks = c.logged_blocks;
  std::int64_t lo = INT64_MAX, hi = INT64_MAX;
  for (size_t r = 0; r < p.ranks.size(); ++r) {
    const auto& cr = c.ranks[r];
    std::int64_t page = p.ranks[r].page_bytes;
    k.bytes_per_token.push_back(p.ranks[r].bytes_per_token);
    lo = std::min(lo, std::max<std::int64_t>(0, GiBToBytes(cr.available_kv_gib - cr.uncertainty_gib)) / page);
    hi = std::min(hi, GiBToBytes(cr.available_kv_gib + cr.uncertainty_gib) / page);
  }
  k.blocks_lo = lo;
  k.blocks_hi = hi;
  if (c.logged_blocks) k.within_rounding = *c.logged_blocks >= lo && *c.logged_blocks <= hi;
  Deployment est = cd;
  est.calibration.reset();
  k.estimated_kv_tokens = PlanLayout(est, spec).pool.kv_tokens;
  return k;
}

}  // namespace ppdeploy
