#include "report/plan_render.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>

#include "core/units.h"
#include "memory/pool.h"
#include "report/plan_html.h"
#include "report/split_render.h"

namespace ppdeploy {
namespace {

std::string G(std::int64_t bytes) { return fmt::format("{:.2f}", ToGiB(bytes)); }
std::string M(std::int64_t bytes) { return fmt::format("{:.0f}", ToMiB(bytes)); }
std::string N(std::int64_t n) { return WithThousands(n); }
char Tag(Provenance p) {
  switch (p) {
    case Provenance::kMeasured:
      return 'm';
    case Provenance::kCalibrated:
      return 'c';
    case Provenance::kEstimated:
      return 'e';
    case Provenance::kRule:
      return 'r';
    case Provenance::kGiven:
      return 'g';
  }
  return 'e';
}
std::string GT(const Figure& f) { return G(f.bytes) + Tag(f.provenance); }

std::string Layers(const RankPlan& r) {
  std::string s = r.layers.size() ? fmt::format("{}-{}", r.layers.start, r.layers.end - 1) : "-";
  if (r.mtp_layers) s += fmt::format(" +MTP{}", r.mtp_layers);
  return s;
}

std::string Status(const LayoutPlan& l) {
  if (!l.feasible) return "rejected: " + l.problems.front().message;
  if (!l.index_share_safe) return "unsafe split (no fix B)";
  if (l.pp_gated) return "gated: PP > 2 with DSA index sharing";
  return "ok";
}

nlohmann::json FigureJson(const Figure& f) {
  return {{"bytes", f.bytes}, {"provenance", ToString(f.provenance)}, {"lo_bytes", f.lo}, {"hi_bytes", f.hi}};
}

std::string MemoryColumnName(MemoryColumn c) {
  switch (c) {
    case MemoryColumn::kNonTorch:
      return "non_torch";
    case MemoryColumn::kActivation:
      return "activation";
    case MemoryColumn::kCudaGraphEstimate:
      return "cuda_graph_estimate";
    case MemoryColumn::kOutsideBudget:
      return "outside_budget";
  }
  return "?";
}

// "19.33c" plus " (19.10-19.55)" when the figure has a range.
std::string GR(const Figure& f) {
  if (!f.has_range()) return GT(f);
  return GT(f) + fmt::format(" ({}-{})", G(f.lo), G(f.hi));
}

}  // namespace

std::string GpusText(const Deployment& d, bool with_memory) {
  if (d.stage_gpus.empty())
    return with_memory ? fmt::format("{} x {} ({:.2f} GiB each)", d.total_gpus(), d.gpu.name, d.gpu.total_gib)
                       : fmt::format("{} x {}", d.total_gpus(), d.gpu.name);
  std::vector<std::string> stages;
  for (const auto& g : d.stage_gpus)
    stages.push_back(with_memory ? fmt::format("{} ({:.2f} GiB)", g.name, g.total_gib) : g.name);
  return with_memory ? fmt::format("{} GPUs, PP stages on {}", d.total_gpus(), fmt::join(stages, ", "))
                     : fmt::format("{} x {}", d.total_gpus(), fmt::join(stages, "/"));
}

std::string PoolWithRangeText(const LayoutPlan& l) {
  const std::int64_t v = l.pool.kv_tokens, lo = l.pool_lo.kv_tokens, hi = l.pool_hi.kv_tokens;
  if (lo == v && hi == v) return N(v);
  const std::int64_t lo_r = lo / 1000 * 1000, hi_r = (hi + 999) / 1000 * 1000;
  return fmt::format("{} (range {}-{})", N(v), N(lo_r), N(hi_r));
}

std::string LimitText(const LayoutPlan& l) {
  const MaxModelLenLimit& k = l.limit;
  std::string check;
  switch (k.check) {
    case LimitCheck::kV0Pool:
      check = "vLLM V0's check: num_gpu_blocks x block_size";
      break;
    case LimitCheck::kPerWorker:
      check = "vLLM's per-worker check";
      break;
    case LimitCheck::kMinMemory:
      check = fmt::format("vLLM's per-worker check over the smallest worker's {:.2f} GiB", ToGiB(k.available_bytes));
      break;
    case LimitCheck::kWholeModel:
      check = fmt::format("vLLM's whole-model check over the smallest worker's {:.2f} GiB", ToGiB(k.available_bytes));
      break;
  }
  if (k.hybrid) check += fmt::format(", per-request block need of {} KV-cache groups", l.kv_groups.groups.size());
  if (l.spec.pipeline_parallel_size > 1) check += fmt::format(", PP rank {} binds", k.binding_rank);
  const bool ranged = k.largest_lo != k.largest || k.largest_hi != k.largest;
  return fmt::format("{} ({}; {})", N(k.largest),
                     ranged ? fmt::format("point estimate, {} at the low end of the range", N(k.largest_lo))
                            : std::string("every figure measured or given"),
                     check);
}

std::string SplitText(const LayoutPlan& l) { return FormatPartition(l.partition); }

nlohmann::json LayoutToJson(const LayoutPlan& l) {
  nlohmann::json j;
  j["tensor_parallel_size"] = l.spec.tensor_parallel_size;
  j["pipeline_parallel_size"] = l.spec.pipeline_parallel_size;
  j["data_parallel_size"] = l.spec.data_parallel_size;
  j["layer_partition"] = l.partition;
  j["partition_given"] = l.partition_given;
  j["block_size"] = l.block_size;
  j["kv_layout"] = l.kv.layout;
  j["feasible"] = l.feasible;
  j["problems"] = nlohmann::json::array();
  for (const auto& pr : l.problems) {
    nlohmann::json pj{{"kind", ProblemKindName(pr.kind)}, {"message", pr.message}};
    if (pr.pp_rank >= 0) pj["pp_rank"] = pr.pp_rank;
    if (pr.need || pr.have) {
      pj["need"] = pr.need;
      pj["have"] = pr.have;
    }
    j["problems"].push_back(std::move(pj));
  }
  j["warnings"] = l.warnings;
  j["num_gpu_blocks"] = l.pool.num_gpu_blocks;
  j["binding_pp_rank"] = l.pool.binding_rank;
  j["kv_tokens"] = l.pool.kv_tokens;
  j["kv_tokens_lo"] = l.pool_lo.kv_tokens;
  j["kv_tokens_hi"] = l.pool_hi.kv_tokens;
  j["num_gpu_blocks_lo"] = l.pool_lo.num_gpu_blocks;
  j["num_gpu_blocks_hi"] = l.pool_hi.num_gpu_blocks;
  j["usable_kv_tokens"] = l.pool.usable_tokens;
  j["max_concurrency"] = l.pool.max_concurrency;
  j["max_model_len"] = l.max_model_len;
  j["largest_max_model_len"] = l.pool.largest_max_model_len;
  j["largest_max_model_len_lo"] = l.pool_lo.largest_max_model_len;
  j["max_model_len_limit"] = {{"check", LimitCheckName(l.limit.check)},
                              {"decided_on", "point"},
                              {"hybrid", l.limit.hybrid},
                              {"largest", l.limit.largest},
                              {"largest_lo", l.limit.largest_lo},
                              {"largest_hi", l.limit.largest_hi},
                              {"binding_pp_rank", l.limit.binding_rank},
                              {"available_bytes", l.limit.available_bytes},
                              {"needed_bytes", l.limit.needed_bytes},
                              {"fits", l.limit.fits},
                              {"fits_low_end", l.limit.fits_low_end},
                              {"text", LimitText(l)}};
  j["memory_constants"] = l.constants;
  j["aggregate_kv_tokens"] = l.aggregate_kv_tokens;
  j["compute_balance"] = l.compute_balance;
  j["capacity_log"] = l.capacity_log;
  {
    // vLLM's KV-cache groups (memory/kv.h) and how the logged token figure follows from the blocks.
    static const char* kGrouping[] = {"attention_free", "uniform", "uniform_type", "hybrid"};
    nlohmann::json g;
    g["grouping"] = kGrouping[static_cast<int>(l.kv_groups.grouping)];
    g["group_size"] = l.kv_groups.group_size;
    g["padding_layers"] = l.kv_groups.padding_layers;
    g["groups"] = nlohmann::json::array();
    for (const auto& grp : l.kv_groups.groups)
      g["groups"].push_back({{"spec", KvSpecTypeName(grp.spec.type)},
                             {"window", grp.spec.window},
                             {"block_size", grp.spec.block_size},
                             {"page_bytes", grp.spec.PageBytes()},
                             {"layers", grp.layers.size()}});
    g["blocks_per_request"] = l.pool.blocks_per_request;
    g["kv_tokens_derived"] = l.pool.tokens_derived;
    if (l.pool.tokens_derived) g["kv_tokens_formula"] = l.pool.tokens_formula;
    g["notes"] = l.kv_notes;
    j["kv_cache_groups"] = std::move(g);
  }
  j["index_share"] = {{"applies", l.index_share.applies},
                      {"fix_applied", l.index_share.fix_applied},
                      {"safe", l.index_share.safe},
                      {"zero_dependency", l.index_share.zero_dependency},
                      {"forced_layers", l.index_share.forced}};
  j["ranks"] = nlohmann::json::array();
  for (const auto& r : l.ranks) {
    nlohmann::json jr;
    jr["pp_rank"] = r.pp_rank;
    jr["layer_start"] = r.layers.start;
    jr["layer_end"] = r.layers.end;
    jr["attention_layers"] = r.attention_layers;
    jr["mtp_layers"] = r.mtp_layers;
    jr["indexer_caches"] = r.indexer_caches;
    jr["forced_layers"] = r.forced_layers;
    jr["kv_bytes_per_token"] = r.bytes_per_token;
    jr["page_bytes"] = r.page_bytes;
    jr["requested_bytes"] = r.requested_bytes;
    jr["weights"] = FigureJson(r.weights);
    jr["non_torch"] = FigureJson(r.non_torch);
    jr["activation"] = FigureJson(r.activation);
    jr["cuda_graph_estimate"] = FigureJson(r.cuda_graph_estimate);
    jr["cuda_graph_actual"] = FigureJson(r.cuda_graph_actual);
    jr["cuda_context"] = FigureJson(r.cuda_context);
    jr["available_kv"] = FigureJson(r.available_kv);
    jr["num_blocks"] = r.num_blocks;
    jr["kv_allocated_bytes"] = r.kv_allocated_bytes;
    jr["kv_unusable_bytes"] = r.kv_unusable_bytes;
    jr["nvidia_smi_used_bytes"] = r.nvidia_smi_used_bytes;
    jr["headroom_bytes"] = r.headroom_bytes;
    jr["binding"] = r.binding;
    jr["memory_terms"] = nlohmann::json::array();
    for (const auto& t : r.memory_terms)
      jr["memory_terms"].push_back({{"name", t.name},
                                    {"column", MemoryColumnName(t.column)},
                                    {"bytes", t.bytes.value},
                                    {"lo_bytes", t.bytes.lo},
                                    {"hi_bytes", t.bytes.hi},
                                    {"detail", t.detail},
                                    {"source", t.source}});
    j["ranks"].push_back(jr);
  }
  return j;
}

nlohmann::json PlanToJson(const PlanReport& rep) {
  const Deployment& d = rep.deployment;
  nlohmann::json j;
  j["schema"] = "ppdeploy.plan/3";
  j["deployment"] = {{"model", d.model_name},
                     {"architecture", d.model.architecture},
                     {"gpu", d.gpu.name},
                     {"gpu_total_gib", d.gpu.total_gib},
                     {"gpus", d.total_gpus()},
                     {"gpus_per_node", d.gpus_per_node},
                     {"nodes", d.nodes},
                     {"vllm", d.vllm.name},
                     {"gpu_memory_utilization", d.gpu_memory_utilization},
                     {"kv_cache_dtype", ToString(d.kv_cache_dtype)},
                     {"num_speculative_tokens", d.num_speculative_tokens},
                     {"max_model_len", d.effective_max_model_len()},
                     {"weights_source", d.weights.source},
                     {"weights_total_bytes", d.weights.total_bytes},
                     {"calibration", d.calibration ? d.calibration->source : ""}};
  j["layouts"] = nlohmann::json::array();
  for (const auto& l : rep.layouts) j["layouts"].push_back(LayoutToJson(l));
  j["best_layout"] = rep.best;
  j["detailed"] = nlohmann::json::array();
  for (const auto& l : rep.detailed) j["detailed"].push_back(LayoutToJson(l));
  j["other_dimensions"] = nlohmann::json::array();
  for (const auto& n : rep.dimensions)
    j["other_dimensions"].push_back(
        {{"dimension", n.dimension}, {"flag", n.flag}, {"capacity_effect", n.capacity_effect}, {"verdict", n.verdict}});
  j["notes"] = rep.notes;
  j["split_optimizer"] = nlohmann::json::array();
  for (const auto& o : rep.optimizations) j["split_optimizer"].push_back(OptimizeToJson(o));
  return j;
}

std::string PlanGiBText(std::int64_t bytes) { return G(bytes); }

Table PlanSummaryTable(const PlanReport& rep) {
  Table t;
  t.headers = {"TP",
               "PP",
               "DP",
               "split",
               "ckpt/GPU GiB",
               "weights/GPU GiB",
               "min avail KV GiB",
               "blocks",
               "KV tokens",
               "concurrency",
               "max_model_len fits",
               "status"};
  for (size_t i = 0; i < rep.layouts.size(); ++i) {
    const auto& l = rep.layouts[i];
    std::int64_t wmax = 0, amin = INT64_MAX;
    for (const auto& r : l.ranks) {
      wmax = std::max(wmax, r.weights.bytes);
      amin = std::min(amin, r.available_kv.bytes);
    }
    bool weights_over = false;
    weights_over |= l.Problem(PlanProblem::Kind::kWeightsOverBudget) != nullptr;
    t.AddRow({std::to_string(l.spec.tensor_parallel_size) + (static_cast<int>(i) == rep.best ? "*" : ""),
              std::to_string(l.spec.pipeline_parallel_size), std::to_string(l.spec.data_parallel_size), SplitText(l),
              G(rep.deployment.weights.total_bytes / (l.spec.tensor_parallel_size * l.spec.pipeline_parallel_size)),
              G(wmax), weights_over ? "-" : G(amin), weights_over ? "-" : N(l.pool.num_gpu_blocks),
              weights_over ? "-" : PoolWithRangeText(l),
              weights_over ? "-" : fmt::format("{:.2f}x", l.pool.max_concurrency),
              weights_over ? "-" : N(l.pool.largest_max_model_len), Status(l)});
  }
  return t;
}

Table PlanRankTable(const LayoutPlan& l) {
  Table t;
  t.headers = {"PP rank",  "layers",   "attn",      "idx",        "forced",      "B/token",
               "page KiB", "weights",  "non-torch", "activation", "CG est",      "avail KV",
               "blocks",   "KV alloc", "idle KV",   "smi used",   "headroom MiB"};
  for (const auto& r : l.ranks) {
    t.AddRow({std::to_string(r.pp_rank) + (r.binding ? " (binds)" : ""), Layers(r), std::to_string(r.attention_layers),
              std::to_string(r.indexer_caches), r.forced_layers.empty() ? "-" : FormatPartition(r.forced_layers),
              N(r.bytes_per_token), fmt::format("{:.1f}", r.page_bytes / 1024.0), GT(r.weights), GT(r.non_torch),
              GT(r.activation), GT(r.cuda_graph_estimate), GR(r.available_kv), N(r.num_blocks), G(r.kv_allocated_bytes),
              G(r.kv_unusable_bytes), G(r.nvidia_smi_used_bytes), M(r.headroom_bytes)});
  }
  return t;
}

std::string PlanLayoutTitle(const LayoutPlan& l) {
  return fmt::format("TP{} PP{}{} split {}{}", l.spec.tensor_parallel_size, l.spec.pipeline_parallel_size,
                     l.spec.data_parallel_size > 1 ? fmt::format(" DP{}", l.spec.data_parallel_size) : "", SplitText(l),
                     l.partition_given ? " (given)" : " (vLLM default)");
}

namespace {

void RenderDetailText(const LayoutPlan& l, std::ostream& out, bool markdown) {
  std::string title = PlanLayoutTitle(l);
  if (markdown)
    out << "\n### " << title << "\n\n";
  else
    out << "\nLayout " << title << "\n";
  Table t = PlanRankTable(l);
  if (markdown)
    t.RenderMarkdown(out);
  else
    t.RenderText(out, "  ");
  std::string p = markdown ? "- " : "  ";
  out << p
      << fmt::format("pool: {} blocks of {} tokens{} -> ", N(l.pool.num_gpu_blocks), l.block_size,
                     l.spec.pipeline_parallel_size > 1 ? fmt::format(" (PP rank {} binds)", l.pool.binding_rank) : "");
  std::string log = l.capacity_log;
  for (auto& c : log)
    if (c == '\n') c = ';';
  out << log << "\n";
  out << p
      << fmt::format("predicted pool: {} tokens{}", PoolWithRangeText(l),
                     l.pool_lo.kv_tokens != l.pool.kv_tokens || l.pool_hi.kv_tokens != l.pool.kv_tokens
                         ? fmt::format(" ({} blocks at the low end; memory constants: {})", N(l.pool_lo.num_gpu_blocks),
                                       l.constants)
                         : "")
      << "\n";
  out << p
      << fmt::format("largest max_model_len that fits: {}; usable tokens without the null block: {}", LimitText(l),
                     N(l.pool.usable_tokens))
      << "\n";
  if (l.kv_groups.groups.size() > 1 || l.kv_groups.grouping == KvGrouping::kUniformType) {
    std::vector<std::string> order;
    std::map<std::string, std::vector<size_t>> layers_of;
    for (const auto& g : l.kv_groups.groups) {
      std::string k(KvSpecTypeName(g.spec.type));
      if (g.spec.window) k += fmt::format("({})", g.spec.window);
      if (!layers_of.count(k)) order.push_back(k);
      layers_of[k].push_back(g.layers.size());
    }
    std::vector<std::string> kinds;
    for (const auto& k : order)
      kinds.push_back(fmt::format("{} x {} ({} layers)", layers_of[k].size(), k, fmt::join(layers_of[k], "/")));
    out << p
        << fmt::format("KV-cache groups: {} ({}){}", l.kv_groups.groups.size(), fmt::join(kinds, ", "),
                       l.kv_groups.grouping == KvGrouping::kUniformType
                           ? "; one UniformTypeKVCacheSpecs group: a block holds every layer's page"
                           : fmt::format("; one request needs {} blocks", N(l.pool.blocks_per_request)))
        << "\n";
  }
  if (l.pool.tokens_derived)
    out << p << "GPU KV cache size is derived, not tokens of KV: " << l.pool.tokens_formula << "\n";
  for (const auto& n : l.kv_notes) out << p << "kv: " << n << "\n";
  if (l.index_share.applies) {
    std::string fr;
    for (const auto& r : l.index_share.ranks)
      if (!r.forced.empty()) fr += fmt::format(" rank{} [{}]", r.pp_rank, FormatPartition(r.forced));
    out << p << "index share: "
        << (l.index_share.zero_dependency
                ? "zero-dependency split (no forced layers)"
                : "forced self-compute:" + fr + (l.index_share.fix_applied ? " (fix B applied)" : " (NO fix: unsafe)"))
        << fmt::format("; compute balance {:.3f} (layer-equivalents, MTP x k)", l.compute_balance) << "\n";
  }
  for (const auto& w : l.warnings) out << p << "warning: " << w << "\n";
  for (const auto& pr : l.problems) out << p << "problem: " << pr.message << "\n";
}

}  // namespace

namespace {

// --format csv: one row per PP rank of every layout (the enumerated ones, then the detailed ones).
void RenderPlanCsv(const PlanReport& rep, std::ostream& out) {
  Table t;
  t.headers = {"tensor_parallel_size",
               "pipeline_parallel_size",
               "data_parallel_size",
               "layer_partition",
               "detailed",
               "feasible",
               "num_gpu_blocks",
               "kv_tokens",
               "max_concurrency",
               "largest_max_model_len",
               "pp_rank",
               "layer_start",
               "layer_end",
               "attention_layers",
               "indexer_caches",
               "kv_bytes_per_token",
               "page_bytes",
               "weights_bytes",
               "non_torch_bytes",
               "activation_bytes",
               "cuda_graph_estimate_bytes",
               "available_kv_bytes",
               "num_blocks",
               "kv_allocated_bytes",
               "binding",
               "status",
               "kv_tokens_lo",
               "kv_tokens_hi",
               "available_kv_lo_bytes",
               "available_kv_hi_bytes"};
  auto rows = [&](const std::vector<LayoutPlan>& ls, bool detailed) {
    for (const auto& l : ls)
      for (const auto& r : l.ranks)
        t.AddRow({std::to_string(l.spec.tensor_parallel_size),
                  std::to_string(l.spec.pipeline_parallel_size),
                  std::to_string(l.spec.data_parallel_size),
                  SplitText(l),
                  detailed ? "1" : "0",
                  l.feasible ? "1" : "0",
                  std::to_string(l.pool.num_gpu_blocks),
                  std::to_string(l.pool.kv_tokens),
                  fmt::format("{:.4f}", l.pool.max_concurrency),
                  std::to_string(l.pool.largest_max_model_len),
                  std::to_string(r.pp_rank),
                  std::to_string(r.layers.start),
                  std::to_string(r.layers.end),
                  std::to_string(r.attention_layers),
                  std::to_string(r.indexer_caches),
                  std::to_string(r.bytes_per_token),
                  std::to_string(r.page_bytes),
                  std::to_string(r.weights.bytes),
                  std::to_string(r.non_torch.bytes),
                  std::to_string(r.activation.bytes),
                  std::to_string(r.cuda_graph_estimate.bytes),
                  std::to_string(r.available_kv.bytes),
                  std::to_string(r.num_blocks),
                  std::to_string(r.kv_allocated_bytes),
                  r.binding ? "1" : "0",
                  Status(l),
                  std::to_string(l.pool_lo.kv_tokens),
                  std::to_string(l.pool_hi.kv_tokens),
                  std::to_string(r.available_kv.lo),
                  std::to_string(r.available_kv.hi)});
  };
  rows(rep.layouts, false);
  rows(rep.detailed, true);
  t.RenderCsv(out);
}

}  // namespace

void RenderPlan(const PlanReport& rep, OutputFormat format, std::ostream& out) {
  const Deployment& d = rep.deployment;
  if (format == OutputFormat::kJson) {
    out << PlanToJson(rep).dump(2) << "\n";
    return;
  }
  if (format == OutputFormat::kHtml) return RenderPlanHtml(rep, out);
  if (format == OutputFormat::kSvg) return RenderPlanSvg(rep, out);
  if (format == OutputFormat::kCsv) return RenderPlanCsv(rep, out);
  const bool md = format == OutputFormat::kMarkdown;
  const LayoutPlan* any = !rep.layouts.empty() ? &rep.layouts[0] : (!rep.detailed.empty() ? &rep.detailed[0] : nullptr);
  if (md) out << "# ppdeploy plan\n\n";
  std::string p = md ? "- " : "";
  out << p
      << fmt::format("{} ({}) on {}, vLLM {}, gpu_memory_utilization {}", d.model_name, d.model.architecture,
                     GpusText(d), d.vllm.name, d.gpu_memory_utilization)
      << "\n";
  if (any) {
    std::string kvline = fmt::format("KV cache: {} ({} B/token/layer", any->kv.layout,
                                     AttentionBytesPerTokenPerLayer(EffectiveModel(d), any->kv, 1));
    if (d.model.dsa) kvline += fmt::format(", DSA indexer {} B/token/layer", IndexerBytesPerTokenPerLayer(d.model));
    kvline +=
        fmt::format("), block size {}, MTP {}, max_model_len {}", any->block_size,
                    d.mtp_on() ? fmt::format("k={}", d.num_speculative_tokens) : "off", N(d.effective_max_model_len()));
    out << (md ? "- " : "  ") << kvline << "\n";
  }
  for (const auto& n : rep.notes) out << (md ? "- " : "  ") << n << "\n";
  if (!rep.layouts.empty()) {
    out << (md ? "\n## Layouts (vLLM default split; * = largest feasible pool)\n\n"
               : "\nLayouts (vLLM default split; * = largest feasible pool):\n");
    Table t = PlanSummaryTable(rep);
    if (md)
      t.RenderMarkdown(out);
    else
      t.RenderText(out, "  ");
  }
  if (!rep.detailed.empty() && md) out << "\n## Detailed layouts\n";
  for (const auto& l : rep.detailed) RenderDetailText(l, out, md);
  if (rep.best >= 0 && rep.detailed.empty()) RenderDetailText(rep.layouts[rep.best], out, md);
  for (const auto& o : rep.optimizations) RenderOptimize(o, md ? OutputFormat::kMarkdown : OutputFormat::kTable, out);
  out << (md ? "\n## Other dimensions\n\n" : "\nOther dimensions:\n");
  Table dims;
  dims.headers = {"dimension", "flag", "capacity", "why / why not"};
  dims.right_align = {false, false, false, false};
  for (const auto& n : rep.dimensions) dims.AddRow({n.dimension, n.flag, n.capacity_effect, n.verdict});
  if (md)
    dims.RenderMarkdown(out);
  else
    dims.RenderText(out, "  ");
  out << (md ? "\n" : "") << (md ? "" : "\n") << (md ? "Figure suffixes: " : "  figure suffixes: ")
      << "m measured, c calibrated, e estimated, g given; (lo-hi) = the figure's range; GiB = 2^30 bytes\n";
}

}  // namespace ppdeploy
