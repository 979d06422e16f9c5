// `ppdeploy plan`: per-GPU memory and KV pool of every layout (the main job).
#include <memory>
#include <optional>

#include "cli/command.h"
#include "cli/deployment_options.h"
#include "layout/plan_report.h"
#include "core/error.h"
#include "layout/optimizer.h"
#include "report/plan_render.h"

namespace ppdeploy::cli {
namespace {

struct PlanOptions {
  DeploymentOptions deployment;
  int tp = 0, pp = 0, dp = 1;
  std::optional<std::string> partition;  // given, even empty (vLLM refuses VLLM_PP_LAYER_PARTITION="")
  std::string format = "table";
  bool no_enumerate = false;
  bool optimize = false, zero_dependency = false, no_optimize = false;
  double max_imbalance = 0;
};

int RunPlan(const PlanOptions& o, CommandIo& io) {
  OutputFormat format = ParseOutputFormat(o.format, {"table", "json", "md", "csv", "html", "svg"});
  std::vector<LayoutSpec> layouts;
  Deployment d = o.deployment.Build(&layouts);
  if (o.tp > 0 || o.pp > 0 || o.partition) {
    LayoutSpec s;
    s.tensor_parallel_size = o.tp > 0 ? o.tp : 1;
    s.pipeline_parallel_size = o.pp > 0 ? o.pp : 1;
    s.data_parallel_size = std::max(1, o.dp);
    if (o.partition) {
      if (o.pp <= 0)
        s.pipeline_parallel_size = static_cast<int>(std::count(o.partition->begin(), o.partition->end(), ',')) + 1;
      s.layer_partition = ParsePartitionFlag(*o.partition, s.pipeline_parallel_size, d.model.num_hidden_layers);
    }
    layouts = {s};
  }
  bool explicit_layout = o.tp > 0 || o.pp > 0 || o.partition.has_value();
  PlanReport report = BuildPlanReport(d, {}, !o.no_enumerate);
  OptimizeOptions oo;
  oo.zero_dependency = o.zero_dependency;
  if (o.max_imbalance > 0) oo.max_imbalance = o.max_imbalance;
  bool want_opt = o.optimize || o.zero_dependency || o.max_imbalance > 0 || (!explicit_layout && !o.no_optimize);
  std::vector<LayoutSpec> detailed = layouts;
  if (want_opt) {
    std::vector<std::pair<int, int>> targets;
    for (const auto& l : layouts)
      if (l.pipeline_parallel_size >= 2) targets.emplace_back(l.tensor_parallel_size, l.pipeline_parallel_size);
    if (targets.empty() && report.best >= 0 && report.layouts[report.best].spec.pipeline_parallel_size >= 2)
      targets.emplace_back(report.layouts[report.best].spec.tensor_parallel_size,
                           report.layouts[report.best].spec.pipeline_parallel_size);
    if (targets.empty() && (o.optimize || o.zero_dependency || o.max_imbalance > 0))
      throw Error("--optimize needs a layout with pipeline_parallel_size >= 2 (give --tp and --pp)");
    for (auto [tp, pp] : targets) {
      OptimizeResult r = OptimizeSplit(d, tp, pp, oo);
      if (o.optimize || o.zero_dependency || o.max_imbalance > 0)
        for (auto& l : detailed)
          if (l.tensor_parallel_size == tp && l.pipeline_parallel_size == pp) l.layer_partition = r.best.partition;
      report.optimizations.push_back(std::move(r));
    }
  }
  for (const auto& spec : detailed) report.detailed.push_back(PlanLayout(d, spec));
  RenderPlan(report, format, io.out);
  return 0;
}

RunFunction AddPlanCommand(CLI::App& app) {
  auto o = std::make_shared<PlanOptions>();
  CLI::App* cmd = app.add_subcommand("plan", "Predict every GPU's memory and the KV-cache pool of each layout");
  o->deployment.Add(cmd);
  cmd->add_option("--tp", o->tp, "Tensor parallel size of a layout to show in detail");
  cmd->add_option("--pp", o->pp, "Pipeline parallel size of a layout to show in detail");
  cmd->add_option("--dp", o->dp, "Data parallel size of that layout");
  cmd->add_option("--partition", o->partition, "Layer split, VLLM_PP_LAYER_PARTITION syntax (e.g. 41,37)");
  cmd->add_flag("--no-enumerate", o->no_enumerate, "Only the detailed layout, not every TP x PP");
  cmd->add_flag("--optimize", o->optimize, "Find the split with the largest pool (exact search) and show it in detail");
  cmd->add_flag("--zero-dependency", o->zero_dependency, "Optimiser: only splits with no fix-B forced layers");
  cmd->add_option("--max-imbalance", o->max_imbalance, "Optimiser: max / min stage compute (layer-equivalents), e.g. 1.1");
  cmd->add_flag("--no-optimize", o->no_optimize, "Do not print the split optimiser table in the default plan");
  cmd->add_option("--format", o->format, "table, json, md, csv, html (self-contained page with charts) or svg (memory chart)")
      ->capture_default_str();
  cmd->footer(
      "Examples:\n"
      "  ppdeploy plan                                   # the seed's deployment (8 x A100, GLM-5.3 W4A16)\n"
      "  ppdeploy plan --tp 4 --pp 2 --partition 39,39   # one split in detail\n"
      "  ppdeploy plan --tp 4 --pp 2 --optimize          # the best split (41,37 for the seed) and its neighbours\n"
      "  ppdeploy plan --model deepseek-v3 --gpu h200 --gpus 8 --max-model-len 131072 --format json\n"
      "  ppdeploy plan --model /models/Kimi-K2/config.json --gpu h200 --kv-cache-dtype auto\n"
      "  ppdeploy plan --format html > plan.html         # charts: memory per stage, splits, layer map");
  return [o](CommandIo& io) { return RunPlan(*o, io); };
}

}  // namespace

PPDEPLOY_COMMAND(10, AddPlanCommand);

}  // namespace ppdeploy::cli
