#include "report/split_render.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "memory/pool.h"

namespace ppdeploy {
namespace {

std::string Compute(const SplitCandidate& c) {
  std::vector<std::string> parts;
  for (double v : c.layer_equivalents) parts.push_back(fmt::format("{:g}", v));
  return fmt::format("{}", fmt::join(parts, " vs "));
}

std::string Forced(const std::vector<int>& v) { return v.empty() ? "none" : FormatPartition(v); }

Table SplitTable(const OptimizeResult& r) {
  Table t;
  t.headers = {"split", "KV tokens (predicted)", "measured", "vs default", "blocks", "bottleneck", "compute (layer-eq)",
               "balance", "forced layers", "note"};
  t.right_align = {false, true, true, true, true, false, false, true, false, false};
  for (const auto& c : r.table) {
    std::string note;
    if (c.is_optimum) note += "optimum";
    if (c.is_default) note += note.empty() ? "vLLM default" : ", vLLM default";
    if (c.zero_dependency && !c.forced_layers.empty()) {}
    if (c.zero_dependency) note += note.empty() ? "zero-dependency" : ", zero-dependency";
    t.AddRow({FormatPartition(c.partition), WithThousands(c.kv_tokens),
              c.measured_kv_tokens ? WithThousands(*c.measured_kv_tokens) : "-",
              fmt::format("{:+.1f}%", 100.0 * c.delta_vs_default), WithThousands(c.num_gpu_blocks),
              fmt::format("PP{}", c.binding_rank), Compute(c), fmt::format("{:.3f}", c.compute_balance),
              Forced(c.forced_layers), note});
  }
  return t;
}

nlohmann::json CandidateJson(const SplitCandidate& c) {
  nlohmann::json j = {{"layer_partition", c.partition},   {"kv_tokens", c.kv_tokens},
                      {"num_gpu_blocks", c.num_gpu_blocks}, {"binding_pp_rank", c.binding_rank},
                      {"compute_balance", c.compute_balance}, {"layer_equivalents", c.layer_equivalents},
                      {"forced_layers", c.forced_layers}, {"zero_dependency", c.zero_dependency},
                      {"is_default", c.is_default},         {"is_optimum", c.is_optimum},
                      {"delta_vs_default", c.delta_vs_default}};
  j["measured_kv_tokens"] = c.measured_kv_tokens ? nlohmann::json(*c.measured_kv_tokens) : nlohmann::json();
  return j;
}

}  // namespace

nlohmann::json OptimizeToJson(const OptimizeResult& r) {
  nlohmann::json j;
  j["schema"] = "ppdeploy.split-optimizer/1";
  j["tensor_parallel_size"] = r.tensor_parallel_size;
  j["pipeline_parallel_size"] = r.pipeline_parallel_size;
  j["best"] = CandidateJson(r.best);
  j["default"] = CandidateJson(r.default_split);
  j["candidates"] = nlohmann::json::array();
  for (const auto& c : r.table) j["candidates"].push_back(CandidateJson(c));
  j["stage_evaluations"] = r.evaluations;
  return j;
}

void RenderOptimize(const OptimizeResult& r, OutputFormat format, std::ostream& out) {
  if (format == OutputFormat::kJson) {
    out << OptimizeToJson(r).dump(2) << "\n";
    return;
  }
  Table t = SplitTable(r);
  if (format == OutputFormat::kCsv) {
    t.RenderCsv(out);
    return;
  }
  bool md = format == OutputFormat::kMarkdown;
  std::string head = fmt::format("Split optimiser, TP{} PP{}: best {} -> {} tokens ({:+.1f}% vs the default {})",
                                 r.tensor_parallel_size, r.pipeline_parallel_size, FormatPartition(r.best.partition),
                                 WithThousands(r.best.kv_tokens), 100.0 * r.best.delta_vs_default,
                                 FormatPartition(r.default_split.partition));
  if (md) {
    out << "\n## " << head << "\n\n";
    t.RenderMarkdown(out);
  } else {
    out << "\n" << head << "\n";
    t.RenderText(out, "  ");
  }
  out << (md ? "\n" : "  ")
      << "compute = layer-equivalents per stage (the last stage's MTP forwards count k times); balance = max / min\n";
}

nlohmann::json PreflightToJson(const PreflightReport& r) {
  nlohmann::json j;
  j["schema"] = "ppdeploy.preflight/1";
  j["model"] = r.model;
  j["layer_partition"] = r.partition;
  j["index_share_applies"] = r.analysis.applies;
  j["fix"] = r.fix;
  j["fix_applied"] = r.analysis.fix_applied;
  j["safe"] = r.safe();
  j["zero_dependency"] = r.analysis.zero_dependency;
  j["legacy_formula_disagrees"] = r.analysis.legacy_disagrees;
  j["index_topk_pattern"] = r.pattern;
  j["checkpoint_problems"] = r.checkpoint_problems;
  j["checkpoint_note"] = r.checkpoint_note;
  j["ranks"] = nlohmann::json::array();
  for (const auto& rk : r.analysis.ranks)
    j["ranks"].push_back({{"pp_rank", rk.pp_rank},
                          {"layer_start", rk.range.start},
                          {"layer_end", rk.range.end},
                          {"self_computing", rk.self_computing},
                          {"cross_stage_reuse", rk.forced},
                          {"forced_by_fix", r.analysis.fix_applied ? rk.forced : std::vector<int>{}},
                          {"residual_unsafe", rk.residual_unsafe},
                          {"legacy_layer_start", rk.legacy_range.start},
                          {"legacy_layer_end", rk.legacy_range.end},
                          {"legacy_forced", rk.legacy_forced}});
  return j;
}

void RenderPreflight(const PreflightReport& r, OutputFormat format, std::ostream& out) {
  if (format == OutputFormat::kJson) {
    out << PreflightToJson(r).dump(2) << "\n";
    return;
  }
  Table t;
  t.headers = {"PP rank", "layers [start,end)", "self-computing top-k", "reuse across stage", "forced by fix B",
               "residual unsafe", "old rank*n//w interval", "old formula forces"};
  t.right_align = {false, false, false, false, false, true, false, false};
  for (const auto& rk : r.analysis.ranks)
    t.AddRow({std::to_string(rk.pp_rank), fmt::format("[{},{})", rk.range.start, rk.range.end),
              rk.self_computing.empty() ? "-" : FormatPartition(rk.self_computing), Forced(rk.forced),
              r.analysis.fix_applied ? Forced(rk.forced) : "-", std::to_string(rk.residual_unsafe),
              fmt::format("[{},{})", rk.legacy_range.start, rk.legacy_range.end), Forced(rk.legacy_forced)});
  if (format == OutputFormat::kCsv) {
    t.RenderCsv(out);
    return;
  }
  bool md = format == OutputFormat::kMarkdown;
  out << (md ? "## " : "") << fmt::format("Preflight {} split {}", r.model, FormatPartition(r.partition)) << "\n"
      << (md ? "\n" : "");
  if (md) t.RenderMarkdown(out);
  else t.RenderText(out, "  ");
  std::string p = md ? "- " : "  ";
  if (!r.analysis.applies) out << p << "index sharing does not apply (not a DSA model with shared layers, or PP=1 semantics)\n";
  out << p << (r.analysis.zero_dependency ? "zero-dependency split: no layer needs a forced self-compute"
                                          : fmt::format("forced layers: {} (fix: {})", FormatPartition(r.analysis.forced), r.fix))
      << "\n";
  if (r.analysis.legacy_disagrees)
    out << p << "the old interval formula rank*n//w disagrees with get_pp_indices for this split (see the last columns)\n";
  if (!r.pattern.empty()) out << p << "index_topk_pattern: " << r.pattern << "\n";
  if (!r.checkpoint_note.empty()) out << p << r.checkpoint_note << "\n";
  for (const auto& c : r.checkpoint_problems) out << p << "checkpoint: " << c << "\n";
  out << p << (r.safe() ? "SAFE" : "UNSAFE: layers would read a top-k index never written on their stage (seed §7)")
      << "\n";
}

}  // namespace ppdeploy
