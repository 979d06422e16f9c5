#include "vllm/calibrate.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/units.h"
#include "memory/pool.h"

namespace ppdeploy {
namespace {

// A V0 engine: its driver worker runs in the unprefixed engine process as global rank 0, the other workers are
// Ray actors (`RayWorkerWrapper`) or `VllmWorkerProcess`es whose prefixes carry no rank.
bool IsV0Style(const BootLog& log) {
  for (const auto& w : log.workers) {
    if (w.process.name == "RayWorkerWrapper" || w.process.name == "VllmWorkerProcess" || w.v0_profile) return true;
  }
  return false;
}

// The PP rank a worker process belongs to: its own rank line (by pid), the _PP part of its name, its global
// rank (`VllmWorker rank=N`; rank layout DP x PP x TP, vllm-rules.md §1.4), a name without PP part (PP size 1),
// the V0 driver (global rank 0). nullopt: unknown (an unranked Ray actor / process).
std::optional<int> PpRankOf(const WorkerLog& w, int tp, int pp, bool v0) {
  const LogProcess& p = w.process;
  if (w.ranks && w.ranks->pp) return *w.ranks->pp;
  if (w.ranks && w.ranks->rank) return (*w.ranks->rank / std::max(1, tp)) % std::max(1, pp);
  if (p.pp) return *p.pp;
  if (p.rank) return (*p.rank / std::max(1, tp)) % std::max(1, pp);
  if (p.name.starts_with("Worker_")) return 0;  // ranked name without _PP part: PP size 1
  if (pp == 1 && (p.name == "Worker" || p.name.empty() || p.name.starts_with("EngineCore"))) return 0;
  if (p.name.empty() && v0) return 0;  // the V0 driver worker is global rank 0
  return std::nullopt;
}

// V0 at PP = 2 without rank lines (before ~v0.8 the workers did not print their ranks): the driver is PP0; the
// unranked workers are placed by their "Loading model weights took" figure when it splits them exactly into
// the driver's stage (TP - 1 workers with the driver's figure) and the other (TP workers with one other figure).
std::vector<std::pair<const WorkerLog*, int>> PlaceUnrankedV0(const BootLog& log, int tp, int pp, bool v0,
                                                            std::vector<std::string>& warnings) {
  std::vector<std::pair<const WorkerLog*, int>> out;
  std::vector<const WorkerLog*> unranked;
  const WorkerLog* driver = log.FindWorker("");
  for (const auto& w : log.workers) {
    bool has_figures = w.available_kv_gib || (w.v0_profile && w.v0_profile->kv_cache_gib) || w.model_loading_gib;
    if (has_figures && !PpRankOf(w, tp, pp, v0)) unranked.push_back(&w);
  }
  if (unranked.empty()) return out;
  auto names = [&] {
    std::string s;
    for (const auto* w : unranked) s += (s.empty() ? "" : ", ") + w->key;
    return s;
  };
  if (pp == 2 && v0 && driver && driver->model_loading_gib &&
      static_cast<int>(unranked.size()) == 2 * tp - 1) {
    const double x0 = *driver->model_loading_gib;
    std::vector<const WorkerLog*> same, other;
    std::optional<double> x1;
    bool ok = true;
    for (const auto* w : unranked) {
      if (!w->model_loading_gib) {
        ok = false;
        break;
      }
      double x = *w->model_loading_gib;
      if (std::abs(x - x0) < 5e-5) {
        same.push_back(w);
      } else if (!x1 || std::abs(x - *x1) < 5e-5) {
        x1 = x;
        other.push_back(w);
      } else {
        ok = false;
        break;
      }
    }
    if (ok && static_cast<int>(same.size()) == tp - 1 && static_cast<int>(other.size()) == tp) {
      for (const auto* w : same) out.emplace_back(w, 0);
      for (const auto* w : other) out.emplace_back(w, 1);
      warnings.push_back(fmt::format(
          "the V0 workers print no rank: {} placed by their weights (PP0 = the driver's {:.4f} GiB, PP1 = {:.4f} GiB)",
          names(), x0, *x1));
      return out;
    }
  }
  warnings.push_back(fmt::format("{}: the PP rank of {} is unknown (no rank line, no rank in the name); their "
                                 "figures are not used",
                                 log.WhereBoot(), names()));
  return out;
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

void RequireUsableBoot(const BootLog& log) {
  if (!log.boot_error.empty()) Fail("{}", log.boot_error);
  if (log.failure) {
    const BootFailure& f = *log.failure;
    std::string what = f.cause.empty() ? f.message : f.cause;
    if (what.ends_with(".") && !what.ends_with("...")) what.pop_back();
    Fail("{}: boot {} of {} failed{}: {}; no calibration is written from a failed boot{}",
         log.Where(f.cause.empty() ? f.line : f.cause_line), log.boot, log.boot_list.size(),
         f.process.empty() ? "" : " in " + f.process, what,
         log.boot_list.size() > 1 ? " (--boot N picks another boot)" : "");
  }
}

LogCalibration CalibrateFromLog(const BootLog& log, const Deployment& d, const LayoutSpec& hint) {
  LogCalibration out;
  const std::string where = log.WhereBoot();
  RequireUsableBoot(log);
  if (log.boots > 1) out.warnings.push_back("used " + log.DescribeBoot());
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

  // Per-rank figures logged by the workers. vLLM sizes one pool for all ranks of a stage from the smallest
  // available KV memory, so each stage keeps the minimum over its TP (and DP) ranks; the memory used by
  // weights, CUDA graphs and activation keeps the maximum (the rank that leaves the least).
  std::vector<std::optional<double>> avail(pp), loading(pp), graphs(pp), activation(pp);
  std::vector<std::string> who(pp);
  std::vector<int> printed(pp, 0);
  const bool v0 = IsV0Style(log);
  std::vector<std::pair<const WorkerLog*, int>> placed;
  for (const auto& w : log.workers)
    if (auto r = PpRankOf(w, tp, pp, v0)) placed.emplace_back(&w, *r);
  for (const auto& p : PlaceUnrankedV0(log, tp, pp, v0, out.warnings)) placed.push_back(p);
  auto keep_max = [](std::optional<double>& slot, double v) { slot = slot ? std::max(*slot, v) : v; };
  for (const auto& [wp, r] : placed) {
    const WorkerLog& w = *wp;
    if (r < 0 || r >= pp) continue;
    std::optional<double> a;
    std::string src = w.key.empty() ? std::string("the unprefixed process") : w.key;
    if (w.available_kv_gib) {
      a = *w.available_kv_gib;
    } else if (w.v0_profile && w.v0_profile->kv_cache_gib) {  // V0: "kv_cache_size=X GiB"
      a = *w.v0_profile->kv_cache_gib;
      src += " (V0 memory profile)";
    }
    if (a) {
      ++printed[r];
      if (!avail[r] || *a < *avail[r]) {
        avail[r] = *a;
        who[r] = src;
      }
    }
    if (w.model_loading_gib) keep_max(loading[r], *w.model_loading_gib);
    if (w.cuda_graph_actual_gib) {
      keep_max(graphs[r], *w.cuda_graph_actual_gib);
    } else if (w.graph_capture_gib) {
      keep_max(graphs[r], *w.graph_capture_gib);
    }
    if (w.usage_summary && w.usage_summary->peak_activation_gib) keep_max(activation[r], *w.usage_summary->peak_activation_gib);
  }
  for (int r = 0; r < pp; ++r)
    if (printed[r] > 1) who[r] += fmt::format(", the smallest of {} ranks", printed[r]);
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
    Fail("{}: the log has no \"Available KV cache memory\" line and no \"GPU KV cache size\" line to infer it from",
         where);
  for (int r = 0; r < pp; ++r) {
    CalibratedRank cr;
    cr.pp_rank = r;
    if (avail[r]) {
      cr.available_kv_gib = *avail[r];
      cr.source = "logged by " + who[r];
    } else {
      if (!out.logged_blocks)
        Fail("{}: PP rank {} printed no available KV memory and the log's pool ({} tokens) could not be mapped to blocks "
             "of {} tokens at max_model_len {}",
             where, r, out.logged_kv_tokens ? WithThousands(*out.logged_kv_tokens) : std::string("no"), out.block_size,
             out.max_model_len);
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
  if (!args) out.warnings.push_back("the log has no \"non-default args\" line: TP/PP/max_model_len come from the flags");
  for (const auto& w : log.warnings) {
    if (w.starts_with("the log holds more than one boot")) continue;  // said above ("used boot ...")
    out.warnings.push_back("log: " + w);
  }
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
