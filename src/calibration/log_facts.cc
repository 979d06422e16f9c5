#include "calibration/log_facts.h"

#include <fmt/ranges.h>

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
// rank (`VllmWorker rank=N`; rank layout DP x PP x TP, docs/vllm-rules.md §1.4), a name without PP part (PP size 1),
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
  if (pp == 2 && v0 && driver && driver->model_loading_gib && static_cast<int>(unranked.size()) == 2 * tp - 1) {
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
  warnings.push_back(
      fmt::format("{}: the PP rank of {} is unknown (no rank line, no rank in the name); their "
                  "figures are not used",
                  log.WhereBoot(), names()));
  return out;
}

// The num_gpu_blocks that give `tokens` under the profile's formula: [lo, hi] (several when the formula divides
// by the number of KV-cache groups).
struct BlocksRange {
  std::int64_t lo = 0, hi = 0;
};
std::optional<BlocksRange> BlocksForTokens(std::int64_t tokens, int block, std::int64_t mml, TokensFormula f,
                                           int groups, int dcp, std::int64_t per_req) {
  if (f == TokensFormula::kBlocksTimesBlockSize) {
    if (tokens % block != 0) return std::nullopt;
    return BlocksRange{tokens / block, tokens / block};
  }
  if (f == TokensFormula::kBlocksPerGroupTimesBlockSize) {  // num_blocks // groups x min_block_size (x DCP)
    const std::int64_t unit = static_cast<std::int64_t>(block) * std::max(1, dcp);
    if (tokens % unit != 0) return std::nullopt;
    const std::int64_t g = std::max(1, groups);
    return BlocksRange{tokens / unit * g, tokens / unit * g + g - 1};
  }
  if (per_req <= 0) per_req = CeilDiv(mml, block);
  auto guess =
      static_cast<std::int64_t>(std::llround(static_cast<double>(tokens) * per_req / static_cast<double>(mml)));
  for (std::int64_t b = std::max<std::int64_t>(0, guess - 3); b <= guess + 3; ++b)
    if (static_cast<std::int64_t>(static_cast<double>(b) / per_req * static_cast<double>(mml)) == tokens)
      return BlocksRange{b, b};
  return std::nullopt;
}

}  // namespace

bool HasCalibrationFigures(const BootLog& log) {
  if (!log.kv_tokens.empty() || log.num_gpu_blocks || log.not_enough_kv || log.max_seq_len_error) return true;
  for (const auto& w : log.workers)
    if (w.available_kv_gib || (w.v0_profile && w.v0_profile->kv_cache_gib) || w.model_loading_gib) return true;
  return false;
}

namespace {

// "boot.log:7: boot 2 of 2 failed in Worker pid=61: ValueError: ..." (the root cause when one was seen).
std::string FailureText(const BootLog& log) {
  const BootFailure& f = *log.failure;
  std::string what = f.cause.empty() ? f.message : f.cause;
  while (!what.empty() && what.back() == ' ') what.pop_back();
  if (what.ends_with(".") && !what.ends_with("...")) what.pop_back();
  return fmt::format("{}: boot {} of {} failed{}: {}", log.Where(f.cause.empty() ? f.line : f.cause_line), log.boot,
                     log.boot_list.size(), f.process.empty() ? "" : " in " + f.process, what);
}

}  // namespace

void RequireUsableBoot(const BootLog& log) {
  if (!log.boot_error.empty()) Fail("{}", log.boot_error);
  if (log.failure && !HasCalibrationFigures(log))
    Fail("{}; it logged no memory figure before it failed, so no calibration is written{}", FailureText(log),
         log.boot_list.size() > 1 ? " (--boot N picks another boot)" : "");
}

namespace {

// What the boot log says about one PP stage. vLLM sizes one pool for all ranks of a stage from the smallest
// available KV memory, so a stage keeps the minimum over its TP (and DP) ranks; the memory used by weights,
// CUDA graphs and activation keeps the maximum (the rank that leaves the least).
struct StageFacts {
  std::optional<double> avail;  ///< available KV memory, GiB
  std::string who;              ///< where `avail` comes from
  int printed = 0;              ///< workers that printed an available-KV figure
  bool from_refusal = false;    ///< `avail` is the figure vLLM's not-enough-KV refusal states
  bool derived_non_kv = false;  ///< `avail` is derived from "Total non KV cache memory"
  std::optional<double> loading, graphs, activation, weights_non_torch, non_torch, torch_peak;
  std::string non_torch_src;  ///< where weights_non_torch comes from
  /// "Total non KV cache memory" (the V1 DEBUG profile line, every worker prints it): available KV =
  /// requested (total x util) - non-KV [- the CUDA-graph estimate since v0.21] (gpu_worker.py
  /// determine_available_memory, before the N era). Cross-checks a logged available figure; the figure of a
  /// stage whose workers printed no "Available KV cache memory" line.
  std::optional<double> from_non_kv;
  std::string non_kv_src;
};

void KeepMax(std::optional<double>& slot, double v) { slot = slot ? std::max(*slot, v) : v; }

// The launch facts of the boot: the layout, max_model_len, gpu_memory_utilization and DCP, from the log's
// "non-default args" (or engine config) where it has them, else from `hint` and `d`.
struct BootLaunch {
  const LaunchArgs* args = nullptr;
  std::vector<int> partition;  ///< the split in effect (vLLM's default when the log names none)
  double util = 0.9;
};

BootLaunch ReadLaunch(const BootLog& log, const Deployment& d, const LayoutSpec& hint, LogCalibration& out) {
  BootLaunch b;
  b.args = log.launch_args ? &*log.launch_args : (log.engine_config ? &*log.engine_config : nullptr);
  const LaunchArgs* args = b.args;
  out.layout = hint;
  if (args && args->tensor_parallel_size && hint.tensor_parallel_size <= 1)
    out.layout.tensor_parallel_size = *args->tensor_parallel_size;
  if (args && args->pipeline_parallel_size && hint.pipeline_parallel_size <= 1)
    out.layout.pipeline_parallel_size = *args->pipeline_parallel_size;
  out.layout.tensor_parallel_size = std::max(1, out.layout.tensor_parallel_size);
  out.layout.pipeline_parallel_size = std::max(1, out.layout.pipeline_parallel_size);
  const int pp = out.layout.pipeline_parallel_size;
  if (out.layout.layer_partition.empty() && !log.partition.empty() && static_cast<int>(log.partition.size()) == pp)
    out.layout.layer_partition = log.partition;
  b.partition =
      out.layout.layer_partition.empty() ? DefaultPartition(d.model.num_hidden_layers, pp) : out.layout.layer_partition;
  out.max_model_len = d.effective_max_model_len();
  if (args && args->max_model_len)
    out.max_model_len = *args->max_model_len;
  else if (log.not_enough_kv)  // the refusal states max_model_len
    out.max_model_len = log.not_enough_kv->max_seq_len;
  else if (log.max_seq_len_error)
    out.max_model_len = log.max_seq_len_error->max_seq_len;
  else if (!log.max_concurrency.empty())
    out.max_model_len = log.max_concurrency.back().tokens_per_request;
  b.util = args && args->gpu_memory_utilization ? *args->gpu_memory_utilization : d.gpu_memory_utilization;
  // DCP: the launch arguments' size, else the log's "Multiplying the GPU KV cache size by the dcp_world_size N".
  out.decode_context_parallel_size = d.decode_context_parallel_size;
  if (out.decode_context_parallel_size <= 1) {
    if (args && args->decode_context_parallel_size && *args->decode_context_parallel_size > 1) {
      out.decode_context_parallel_size = *args->decode_context_parallel_size;
      out.used.push_back(fmt::format("DCP {}: the launch arguments", out.decode_context_parallel_size));
    } else if (log.kv_tokens_cp_multiplier && *log.kv_tokens_cp_multiplier > 1) {
      out.decode_context_parallel_size = *log.kv_tokens_cp_multiplier;
      out.used.push_back(fmt::format("DCP {}: \"Multiplying the GPU KV cache size by the dcp_world_size {}\"",
                                     out.decode_context_parallel_size, out.decode_context_parallel_size));
    }
  }
  return b;
}

// The planner's view of the boot's own layout (block size, KV-cache groups, pages, the need of one request).
LayoutPlan PlanBootLayout(const BootLog& log, const Deployment& d, const BootLaunch& b, const LogCalibration& out) {
  Deployment dd = d;
  dd.max_model_len = out.max_model_len;
  dd.gpu_memory_utilization = b.util;
  if (log.block_size && d.block_size == 0) dd.block_size = *log.block_size;
  dd.decode_context_parallel_size = out.decode_context_parallel_size;
  return PlanLayout(dd, LayoutSpec{out.layout.tensor_parallel_size, out.layout.pipeline_parallel_size, 1, b.partition});
}

// A worker's available KV figure ("Available KV cache memory", or V0's "kv_cache_size=X GiB").
void AddAvailable(StageFacts& st, const WorkerLog& w, const std::string& src) {
  std::optional<double> a;
  if (w.available_kv_gib) {
    a = *w.available_kv_gib;
  } else if (w.v0_profile && w.v0_profile->kv_cache_gib) {  // V0: "kv_cache_size=X GiB"
    a = *w.v0_profile->kv_cache_gib;
  }
  if (!a) return;
  ++st.printed;
  if (!st.avail || *a < *st.avail) {
    st.avail = *a;
    st.who = src;
  }
}

// A worker's "Total non KV cache memory" (before the N era): a cross-check of its logged available figure, or
// the stage's figure when it logged none.
void AddNonKv(StageFacts& st, int r, const WorkerLog& w, const std::string& src, const Deployment& d, double util,
              const std::string& where, LogCalibration& out, std::vector<std::string>& checks) {
  if (d.vllm.accounting == MemoryAccounting::kNConsumed || !w.v1_profile || !w.v1_profile->non_kv_gib) return;
  const double total = w.usage_summary && w.usage_summary->total_gib ? *w.usage_summary->total_gib : d.gpu.total_gib;
  const double non_kv = *w.v1_profile->non_kv_gib;
  const double cg = d.vllm.subtracts_cuda_graph_estimate && w.cuda_graph_estimate_gib ? *w.cuda_graph_estimate_gib : 0;
  const double derived = total * util - non_kv - cg;
  const std::string how =
      fmt::format("{:.2f} GiB x {:.2f} - \"Total non KV cache memory\" {:.2f} GiB{} = {:.2f} GiB", total, util, non_kv,
                  cg > 0 ? fmt::format(" - CUDA graph estimate {:.2f} GiB", cg) : "", derived);
  if (w.available_kv_gib) {
    // Three figures rounded to 0.01 GiB (and total x util): within 0.02 GiB.
    if (std::abs(derived - *w.available_kv_gib) <= 0.02 + 1e-9)
      checks.push_back(fmt::format("cross-check, PP rank {}: {} ({}) matches the logged available {:.2f} GiB", r, how,
                                   src, *w.available_kv_gib));
    else
      out.warnings.push_back(
          fmt::format("{}: PP rank {}: {} ({}) differs from the logged available {:.2f} GiB (another total or "
                      "utilisation than the deployment's?)",
                      where, r, how, src, *w.available_kv_gib));
  } else if (!st.from_non_kv || derived < *st.from_non_kv) {
    st.from_non_kv = derived;
    st.non_kv_src = how + " (" + src + ")";
  }
}

// weights + non-torch: the memory summary's consumed memory (or its parts, v0.19), the V0 profile's "model
// weights take" + "non_torch_memory takes", or the V0 one-liner's non_torch_memory + the weights line.
void AddWeightsNonTorch(StageFacts& st, const WorkerLog& w) {
  std::optional<double> wnt;
  std::string wnt_src;
  if (const auto& u = w.usage_summary) {
    if (u->consumed_gib) {
      wnt = *u->consumed_gib;
    } else if (u->weights_gib && u->non_torch_gib) {
      wnt = *u->weights_gib + *u->non_torch_gib;
    }
    wnt_src = "the memory summary";
  }
  if (!wnt && w.v0_profile && w.v0_profile->non_torch_gib) {
    if (w.v0_profile->weights_gib) {
      wnt = *w.v0_profile->weights_gib + *w.v0_profile->non_torch_gib;
    } else if (w.model_loading_gib) {
      wnt = *w.model_loading_gib + *w.v0_profile->non_torch_gib;
    }
    wnt_src = "the V0 memory profile";
  }
  if (!wnt && w.v1_profile && w.v1_profile->total_consumed_gib) {  // the n_consumed era's DEBUG profile line
    wnt = *w.v1_profile->total_consumed_gib;
    wnt_src = "the memory profile";
  }
  if (wnt) {
    KeepMax(st.weights_non_torch, *wnt);
    st.non_torch_src = wnt_src;
  }
}

// The memory columns of one worker: weights, CUDA graphs, activation, and the v1_profiled profiler's
// non-torch growth and torch peak increase (memory/overheads.h), so FitConstants fits the communication and
// workspace constants.
void AddColumns(StageFacts& st, const WorkerLog& w) {
  if (w.model_loading_gib) KeepMax(st.loading, *w.model_loading_gib);
  if (w.cuda_graph_actual_gib) {
    KeepMax(st.graphs, *w.cuda_graph_actual_gib);
  } else if (w.graph_capture_gib) {
    KeepMax(st.graphs, *w.graph_capture_gib);
  }
  if (w.usage_summary && w.usage_summary->peak_activation_gib)
    KeepMax(st.activation, *w.usage_summary->peak_activation_gib);
  AddWeightsNonTorch(st, w);
  if (w.v1_profile && w.v1_profile->non_torch_increase_gib)
    KeepMax(st.non_torch, *w.v1_profile->non_torch_increase_gib);
  if (w.v1_profile && w.v1_profile->torch_peak_increase_gib)
    KeepMax(st.torch_peak, *w.v1_profile->torch_peak_increase_gib);
}

// Every placed worker's figures, per PP stage. `checks` receives the non-KV cross-checks (listed under `used`
// after the stages' own lines).
std::vector<StageFacts> CollectStageFacts(const BootLog& log, const Deployment& d, double util, LogCalibration& out,
                                          std::vector<std::string>& checks) {
  const int tp = out.layout.tensor_parallel_size, pp = out.layout.pipeline_parallel_size;
  const std::string where = log.WhereBoot();
  std::vector<StageFacts> stages(pp);
  const bool v0 = IsV0Style(log);
  std::vector<std::pair<const WorkerLog*, int>> placed;
  for (const auto& w : log.workers)
    if (auto r = PpRankOf(w, tp, pp, v0)) placed.emplace_back(&w, *r);
  for (const auto& p : PlaceUnrankedV0(log, tp, pp, v0, out.warnings)) placed.push_back(p);
  for (const auto& [wp, r] : placed) {
    if (r < 0 || r >= pp) continue;
    std::string src = wp->key.empty() ? std::string("the unprefixed process") : wp->key;
    if (!wp->available_kv_gib && wp->v0_profile && wp->v0_profile->kv_cache_gib) src += " (V0 memory profile)";
    AddAvailable(stages[r], *wp, src);
    AddNonKv(stages[r], r, *wp, src, d, util, where, out, checks);
    AddColumns(stages[r], *wp);
  }
  // Before the N era the activation column is the torch peak increase (the usage summary, when printed,
  // comes first).
  for (auto& st : stages)
    if (!st.activation && st.torch_peak && d.vllm.accounting != MemoryAccounting::kNConsumed)
      st.activation = st.torch_peak;
  for (auto& st : stages)
    if (st.printed > 1) st.who += fmt::format(", the smallest of {} ranks", st.printed);
  return stages;
}

// The pool as logged: "GPU KV cache size" (mapped to blocks under the version's formula), else "# GPU blocks".
void ReadLoggedPool(const BootLog& log, const Deployment& d, const LayoutPlan& shape, LogCalibration& out) {
  if (!log.kv_tokens.empty()) out.logged_kv_tokens = *std::min_element(log.kv_tokens.begin(), log.kv_tokens.end());
  if (out.logged_kv_tokens) {
    const int groups = static_cast<int>(std::max<std::size_t>(1, shape.kv_groups.groups.size()));
    const int min_block = shape.kv_groups.min_block_size() > 0 ? shape.kv_groups.min_block_size() : out.block_size;
    if (auto b = BlocksForTokens(*out.logged_kv_tokens, min_block, out.max_model_len, d.vllm.tokens_formula, groups,
                                 out.decode_context_parallel_size, shape.pool.blocks_per_request)) {
      out.logged_blocks = b->lo;
      out.logged_blocks_span = static_cast<int>(b->hi - b->lo + 1);
    }
  }
  if (out.logged_kv_tokens)
    out.used.push_back(fmt::format(
        "pool: {} tokens (\"GPU KV cache size\"{})", WithThousands(*out.logged_kv_tokens),
        out.logged_blocks ? out.logged_blocks_span > 1 ? fmt::format(", {}-{} blocks", *out.logged_blocks,
                                                                     *out.logged_blocks + out.logged_blocks_span - 1)
                                                       : fmt::format(", {} blocks", *out.logged_blocks)
                          : ""));
  if (!out.logged_blocks && log.num_gpu_blocks) {
    out.logged_blocks = *log.num_gpu_blocks;
    out.used.push_back(fmt::format("pool: {} blocks (\"# GPU blocks\")", *out.logged_blocks));
  }
}

// V0: "The model's max seq len (L) is larger than the maximum number of tokens that can be stored in KV cache
// (K)": K = num_gpu_blocks x block_size (V0 _verify_args).
void ReadV0Refusal(const BootLog& log, const std::string& where, LogCalibration& out) {
  if (!log.max_seq_len_error) return;
  const std::int64_t k_tokens = log.max_seq_len_error->kv_tokens;
  if (!out.logged_blocks) {
    if (k_tokens % out.block_size == 0) {
      out.logged_blocks = k_tokens / out.block_size;
      if (!out.logged_kv_tokens) out.logged_kv_tokens = k_tokens;
      out.used.push_back(fmt::format(
          "pool: {} tokens = {} blocks of {} from the V0 refusal \"max seq len ({}) is larger than the maximum "
          "number of tokens that can be stored in KV cache ({})\"",
          WithThousands(k_tokens), *out.logged_blocks, out.block_size, log.max_seq_len_error->max_seq_len, k_tokens));
    } else {
      out.warnings.push_back(
          fmt::format("{}: the V0 refusal's {} tokens are not a multiple of the block size {}; "
                      "not used",
                      where, k_tokens, out.block_size));
    }
  } else if (*out.logged_blocks * out.block_size != k_tokens) {
    out.warnings.push_back(fmt::format("{}: the V0 refusal's {} tokens differ from the logged pool ({} blocks x {})",
                                       where, k_tokens, *out.logged_blocks, out.block_size));
  }
}

// The stage vLLM's not-enough-KV refusal belongs to: the stage whose need for one max_model_len request is the
// stated need (vLLM checks the workers in rank order; the first such stage without a figure of its own, else
// one whose figure it confirms). -1 with `unused` saying why when none matches.
int RefusalStage(const NotEnoughKvError& e, const LayoutPlan& shape, const std::vector<StageFacts>& stages,
                 const std::string& where, LogCalibration& out, std::string& unused) {
  const int pp = static_cast<int>(stages.size());
  auto need_gib = [&](int r) { return ToGiB(shape.ranks[r].kv_needed_bytes); };
  auto matches = [&](int r) { return std::abs(need_gib(r) - e.needed_gib) <= 0.005 + 1e-9; };
  std::string needs;
  for (int r = 0; r < pp; ++r) needs += fmt::format("{}{:.2f}", r ? ", " : "", need_gib(r));
  if (pp == 1) {
    if (!matches(0))
      out.warnings.push_back(fmt::format(
          "{}: vLLM's refusal states {:.2f} GiB needed for one request of {} tokens, the planner's need is {} GiB",
          where, e.needed_gib, e.max_seq_len, needs));
    return 0;
  }
  for (int r = 0; r < pp; ++r)
    if (matches(r) && !stages[r].avail) return r;  // the first stage with that need and no figure of its own
  for (int r = 0; r < pp; ++r)
    if (matches(r) && stages[r].avail && std::abs(*stages[r].avail - e.available_gib) <= 0.01 + 1e-9)
      return r;  // it confirms a figure
  unused = fmt::format(
      "vLLM's refusal states {:.2f} GiB needed for one request of {} tokens, which matches no stage's need ({} "
      "GiB per PP rank) that lacks a figure; its {:.2f} GiB available is not used",
      e.needed_gib, e.max_seq_len, needs, e.available_gib);
  out.warnings.push_back(where + ": " + unused);
  return -1;
}

// vLLM's not-enough-KV refusal (_check_enough_kv_cache_memory, per worker in rank order; the whole model
// against one worker in the 0.14-0.15 rows) states the raising worker's available memory and its need. Returns
// why its figure was not attributed to a stage ("" when it was, or there is no refusal).
std::string UseRefusal(const BootLog& log, const LayoutPlan& shape, const std::string& where,
                       std::vector<StageFacts>& stages, LogCalibration& out) {
  if (!log.not_enough_kv) return "";
  const NotEnoughKvError& e = *log.not_enough_kv;
  out.refusal = e;
  std::string unused;
  const int at = RefusalStage(e, shape, stages, where, out, unused);
  if (at < 0) return unused;
  out.refusal_pp_rank = at;
  StageFacts& st = stages[at];
  const std::string what = fmt::format(
      "vLLM's not-enough-KV refusal ({:.2f} GiB needed for {} tokens, {:.2f} GiB available{})", e.needed_gib,
      e.max_seq_len, e.available_gib,
      e.estimated_max_model_len ? fmt::format(", estimated maximum model length {}", *e.estimated_max_model_len) : "");
  if (!st.avail) {
    st.avail = e.available_gib;
    st.who = what;
    st.from_refusal = true;
    out.used.push_back(fmt::format("available KV, PP rank {}: {:.2f} GiB from {}", at, e.available_gib, what));
  } else if (std::abs(*st.avail - e.available_gib) <= 0.01 + 1e-9) {
    out.used.push_back(fmt::format("refusal: {} confirms PP rank {}'s logged {:.2f} GiB", what, at, *st.avail));
  } else {
    out.warnings.push_back(fmt::format("{}: {} differs from PP rank {}'s logged {:.2f} GiB; the logged figure is used",
                                       where, what, at, *st.avail));
  }
  return "";
}

// "; unread: boot.log:7: malformed 'GPU KV cache size' line ..." for the KV budget and capacity lines the
// parser saw but could not read (odd digit separators, a binary byte), so a failure for want of them names them.
std::string UnreadKvLines(const BootLog& log) {
  std::vector<std::string> unread;
  for (const auto& w : log.warnings)
    if (w.find("'GPU KV cache size'") != std::string::npos ||
        w.find("'Available KV cache memory'") != std::string::npos || w.find("'# GPU blocks'") != std::string::npos)
      unread.push_back(w);
  if (unread.empty()) return "";
  const std::size_t shown = std::min<std::size_t>(unread.size(), 3);
  std::string s = "; unread: " + fmt::format("{}", fmt::join(unread.begin(), unread.begin() + shown, "; "));
  if (unread.size() > shown) s += fmt::format(" (and {} more)", unread.size() - shown);
  return s;
}

// A stage without an available-KV line takes its workers' "Total non KV cache memory" figure. Returns how many
// stages are still without a figure; marks a weights-only boot, and fails when nothing is left to infer from.
int FillFromNonKv(std::vector<StageFacts>& stages, const std::string& where, const std::string& refusal_unused,
                  const std::string& unread, LogCalibration& out) {
  for (auto& st : stages)
    if (!st.avail && st.from_non_kv) {
      st.avail = *st.from_non_kv;
      st.who = st.non_kv_src;
      st.derived_non_kv = true;
    }
  const int pp = static_cast<int>(stages.size());
  int missing = 0;
  bool any_weights = false;
  for (const auto& st : stages) {
    missing += !st.avail;
    any_weights = any_weights || st.loading.has_value();
  }
  if (missing == pp && !out.logged_blocks && any_weights) {
    // A boot that ended (or died) after loading the weights: their figures only.
    out.weights_only = true;
    out.warnings.push_back(fmt::format(
        "{}: the boot logged weights but no KV figure (no \"Available KV cache memory\", no pool, no refusal): "
        "the weights are compared with the plan, and no calibration is written",
        where));
  } else if (missing == pp && !out.logged_blocks) {
    Fail("{}: the log has no \"Available KV cache memory\" line and no \"GPU KV cache size\" line to infer it from{}{}",
         where, refusal_unused.empty() ? "" : "; " + refusal_unused, unread);
  }
  return missing;
}

// A stage that printed nothing (since late 2025 only local rank 0 prints): inferred from the logged pool,
// assuming it binds: avail in [blocks x page, (blocks + 1) x page).
void InferFromPool(CalibratedRank& cr, const LayoutPlan& shape, const std::string& where, const std::string& unread,
                   LogCalibration& out) {
  const int r = cr.pp_rank;
  if (!out.logged_blocks)
    Fail(
        "{}: PP rank {} printed no available KV memory and the log's pool ({} tokens) could not be mapped to "
        "blocks of {} tokens at max_model_len {}{}",
        where, r, out.logged_kv_tokens ? WithThousands(*out.logged_kv_tokens) : std::string("no"), out.block_size,
        out.max_model_len, unread);
  const std::int64_t page = shape.ranks[r].page_bytes;
  double lo = ToGiB(*out.logged_blocks * page), hi = ToGiB((*out.logged_blocks + out.logged_blocks_span) * page);
  cr.available_kv_gib = (lo + hi) / 2;
  cr.uncertainty_gib = (hi - lo) / 2;
  cr.inferred = true;
  cr.source = fmt::format("inferred from the logged pool ({} blocks x {} B page) assuming this rank binds",
                          *out.logged_blocks, page);
  out.used.push_back(fmt::format("available KV, PP rank {}: {:.3f} +/- {:.3f} GiB {}", r, cr.available_kv_gib,
                                 cr.uncertainty_gib, cr.source));
}

// Several stages inferred from one pool: each is assumed to bind. Said once, naming the ranks (issue 23 item 7:
// it was repeated once per rank).
void WarnInferredRanks(const std::vector<CalibratedRank>& ranks, LogCalibration& out) {
  std::vector<int> inferred;
  for (const auto& cr : ranks)
    if (cr.inferred) inferred.push_back(cr.pp_rank);
  if (inferred.size() > 1)
    out.warnings.push_back(
        fmt::format("PP ranks {}: {} ranks printed nothing; each is assumed to bind, so each figure is a lower bound",
                    fmt::join(inferred, ", "), inferred.size()));
}

// One stage's available-KV figure and where it comes from, with the lines saying which figures were used.
CalibratedRank RankFigure(int r, const StageFacts& st, const LayoutPlan& shape, const std::string& where,
                          const std::string& unread, LogCalibration& out) {
  CalibratedRank cr;
  cr.pp_rank = r;
  cr.weights_gib = st.loading;
  if (st.avail && st.derived_non_kv) {
    cr.available_kv_gib = *st.avail;
    cr.uncertainty_gib = 0.015;  // three printed figures
    cr.source = "derived: " + st.who;
    out.used.push_back(fmt::format("available KV, PP rank {}: {:.2f} GiB derived: {}", r, *st.avail, st.who));
  } else if (st.avail) {
    cr.available_kv_gib = *st.avail;
    cr.from_refusal = st.from_refusal;
    cr.source = st.from_refusal ? "from " + st.who : "logged by " + st.who;
    if (!st.from_refusal)
      out.used.push_back(fmt::format("available KV, PP rank {}: {:.2f} GiB logged by {}", r, *st.avail, st.who));
  } else if (out.weights_only) {
    cr.uncertainty_gib = 0;
    cr.source = "no KV figure (the boot ended before the KV cache was sized)";
  } else if (!out.logged_blocks && out.refusal_pp_rank >= 0) {
    // vLLM stopped at another stage's refusal before this stage printed anything.
    out.missing_ranks.push_back(r);
    cr.uncertainty_gib = 0;
    cr.source = "no KV figure (vLLM stopped at the refusal before this stage printed one)";
  } else {
    InferFromPool(cr, shape, where, unread, out);
  }
  if (st.loading)
    out.used.push_back(fmt::format("weights, PP rank {}: {:.2f} GiB (\"Model loading took\")", r, *st.loading));
  if (st.weights_non_torch)
    out.used.push_back(
        fmt::format("weights + non-torch, PP rank {}: {:.2f} GiB ({})", r, *st.weights_non_torch, st.non_torch_src));
  if (st.graphs) out.used.push_back(fmt::format("CUDA graphs, PP rank {}: {:.2f} GiB", r, *st.graphs));
  if (st.activation)
    out.used.push_back(fmt::format("peak activation, PP rank {}: {:.2f} GiB (the memory summary)", r, *st.activation));
  return cr;
}

// The calibration record (schema ppdeploy.calibration/1) of the boot: its launch facts and every stage with a
// KV figure.
void WriteCalibration(const BootLog& log, const Deployment& d, const BootLaunch& b,
                      const std::vector<StageFacts>& stages, LogCalibration& out) {
  const LaunchArgs* args = b.args;
  Calibration& c = out.calibration;
  c.source = "ppdeploy calibrate from a vLLM boot log" + (log.version ? " (vLLM " + *log.version + ")" : std::string());
  c.model = d.model_name;
  c.gpu = d.gpu.name;
  c.vllm = d.vllm.name;
  c.tensor_parallel_size = out.layout.tensor_parallel_size;
  c.pipeline_parallel_size = out.layout.pipeline_parallel_size;
  c.layer_partition = b.partition;
  c.gpu_memory_utilization = b.util;
  c.max_model_len = out.max_model_len;
  c.kv_cache_dtype = args && args->kv_cache_dtype ? *args->kv_cache_dtype : ToString(d.kv_cache_dtype);
  c.num_speculative_tokens = d.num_speculative_tokens;
  c.total_gib = d.gpu.total_gib;
  for (const auto& w : log.workers)
    if (w.usage_summary && w.usage_summary->total_gib) c.total_gib = *w.usage_summary->total_gib;
  c.logged_kv_tokens = out.logged_kv_tokens;
  if (args && args->max_num_seqs) c.max_num_seqs = static_cast<int>(*args->max_num_seqs);
  if (args && args->max_num_batched_tokens) c.max_num_batched_tokens = static_cast<int>(*args->max_num_batched_tokens);
  for (int r = 0; r < static_cast<int>(stages.size()); ++r) {
    if (std::find(out.missing_ranks.begin(), out.missing_ranks.end(), r) != out.missing_ranks.end()) continue;
    const StageFacts& st = stages[r];
    CalibrationRank cr;
    cr.pp_rank = r;
    cr.available_kv_gib = out.ranks[r].available_kv_gib;
    cr.model_loading_gib = st.loading;
    cr.cuda_graph_gib = st.graphs;
    cr.peak_activation_gib = st.activation;
    cr.non_torch_gib = st.non_torch;
    cr.weights_plus_non_torch_gib = st.weights_non_torch;
    c.ranks.push_back(cr);
  }
}

}  // namespace

LogCalibration CalibrateFromLog(const BootLog& log, const Deployment& d, const LayoutSpec& hint) {
  LogCalibration out;
  const std::string where = log.WhereBoot();
  RequireUsableBoot(log);
  if (log.failure) {
    out.failure = FailureText(log);
    out.warnings.push_back(out.failure + "; the figures it logged before failing are used");
  }
  if (log.boots > 1) out.warnings.push_back("used " + log.DescribeBoot());
  const BootLaunch launch = ReadLaunch(log, d, hint, out);
  const LayoutPlan shape = PlanBootLayout(log, d, launch, out);
  out.block_size = shape.block_size;

  std::vector<std::string> non_kv_checks;
  std::vector<StageFacts> stages = CollectStageFacts(log, d, launch.util, out, non_kv_checks);
  ReadLoggedPool(log, d, shape, out);
  ReadV0Refusal(log, where, out);
  const std::string refusal_unused = UseRefusal(log, shape, where, stages, out);
  const std::string unread = UnreadKvLines(log);
  FillFromNonKv(stages, where, refusal_unused, unread, out);
  for (int r = 0; r < static_cast<int>(stages.size()); ++r)
    out.ranks.push_back(RankFigure(r, stages[r], shape, where, unread, out));
  WarnInferredRanks(out.ranks, out);
  for (auto& line : non_kv_checks) out.used.push_back(std::move(line));

  WriteCalibration(log, d, launch, stages, out);
  if (!out.missing_ranks.empty())
    out.warnings.push_back(
        fmt::format("{}: PP rank(s) {} logged no KV figure: the refusal's stage is checked, but "
                    "no calibration is written",
                    where, fmt::join(out.missing_ranks, ", ")));
  if (!launch.args)
    out.warnings.push_back("the log has no \"non-default args\" line: TP/PP/max_model_len come from the flags");
  for (const auto& w : log.warnings) {
    if (w.starts_with("the log holds more than one boot")) continue;  // said above ("used boot ...")
    out.warnings.push_back("log: " + w);
  }
  return out;
}

}  // namespace ppdeploy
