#include "deploy/plan.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"
#include "layout/optimizer.h"

namespace ppdeploy {

PlanReport PlanDeployment(const ResolvedDeployment& r, const PlanChoices& c) {
  // What `cmd` shows as a failed gate and `plan` cannot plan at all. (A version refusing PP + MTP
  // is planned and shown as a problem.)
  if (r.partition_check.Failed()) throw Error(fmt::format("{}", fmt::join(r.partition_check.messages, "; ")));
  if (r.speculation_check.Failed() && r.planner.model.num_nextn_predict_layers == 0)
    throw Error(fmt::format("{}", fmt::join(r.speculation_check.messages, "; ")));
  std::vector<LayoutSpec> detailed;
  if (r.layout_explicit) detailed.push_back(r.layout);
  auto deployment_for = [&r](const LayoutSpec& spec) { return DeploymentFor(r, spec); };
  PlanReport report = BuildPlanReport(r.planner, {}, c.enumerate, deployment_for, r.notes);
  OptimizeOptions oo;
  oo.zero_dependency = c.zero_dependency;
  if (c.max_imbalance > 0) oo.max_imbalance = c.max_imbalance;
  const bool asked = c.optimize || c.zero_dependency || c.max_imbalance > 0;
  // A split the user chose is shown as given; the default deployment's split is what the
  // optimiser chose for it, so its table is shown.
  const bool user_split = r.request.Setting("pp_layer_partition").source >= SettingSource::kFile;
  if (asked || (!c.no_optimize && !user_split)) {
    std::vector<std::pair<int, int>> targets;
    for (const auto& l : detailed)
      if (l.pipeline_parallel_size >= 2) targets.emplace_back(l.tensor_parallel_size, l.pipeline_parallel_size);
    if (targets.empty() && report.best >= 0 && report.layouts[report.best].spec.pipeline_parallel_size >= 2)
      targets.emplace_back(report.layouts[report.best].spec.tensor_parallel_size,
                           report.layouts[report.best].spec.pipeline_parallel_size);
    if (targets.empty() && asked)
      throw Error("--optimize needs a layout with pipeline_parallel_size >= 2 (give --tp and --pp)");
    if (!asked && r.planner.vllm.pool_combine != PoolCombine::kPerRankMin) {
      report.notes.push_back(
          fmt::format("split optimiser not run: vLLM {} does not pool as a per-rank minimum", r.planner.vllm.name));
      targets.clear();
    }
    for (auto [tp, pp] : targets) {
      OptimizeResult res;
      try {
        res = OptimizeSplit(DeploymentFor(r, LayoutSpec{tp, pp, 1, {}}), tp, pp, oo);
      } catch (const Error& e) {
        if (asked) throw;
        report.notes.push_back(fmt::format("split optimiser not run for TP{}/PP{}: {}", tp, pp, e.what()));
        continue;
      }
      if (asked)
        for (auto& l : detailed)
          if (l.tensor_parallel_size == tp && l.pipeline_parallel_size == pp) l.layer_partition = res.best.partition;
      report.optimizations.push_back(std::move(res));
    }
  }
  for (const auto& spec : detailed) report.detailed.push_back(PlanLayout(DeploymentFor(r, spec), spec));
  return report;
}

}  // namespace ppdeploy
