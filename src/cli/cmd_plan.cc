// `ppdeploy plan`: per-GPU memory and KV pool of every layout (the main job).
#include <memory>

#include "cli/command.h"
#include "cli/deployment_options.h"
#include "core/error.h"
#include "deploy/plan.h"
#include "report/plan_render.h"

namespace ppdeploy::cli {
namespace {

struct PlanOptions {
  DeploymentOptions deployment;
  PlanChoices choices;
  bool no_enumerate = false;
  std::string format = "table";
};

}  // namespace

RunFunction DeclarePlan(CLI::App* sub) {
  auto o = std::make_shared<PlanOptions>();
  o->deployment.Add(sub);
  sub->add_flag("--no-enumerate", o->no_enumerate, "Only the detailed layout, not every TP x PP");
  sub->add_flag("--optimize", o->choices.optimize,
                "Find the split with the largest pool (exact search) and show it in detail");
  sub->add_flag("--zero-dependency", o->choices.zero_dependency, "Optimiser: only splits with no fix-B forced layers");
  sub->add_option("--max-imbalance", o->choices.max_imbalance,
                  "Optimiser: max / min stage compute (layer-equivalents), e.g. 1.1");
  sub->add_flag("--no-optimize", o->choices.no_optimize, "Do not print the split optimiser table in the default plan");
  sub->add_option("--format", o->format,
                  "table, json, md, csv, html (self-contained page with charts) or svg (memory chart)")
      ->capture_default_str();
  return [o](CommandIo& io) {
    OutputFormat format = ParseOutputFormat(o->format, {"table", "json", "md", "csv", "html", "svg"});
    PlanChoices choices = o->choices;
    choices.enumerate = !o->no_enumerate;
    RenderPlan(PlanDeployment(o->deployment.Resolve(), choices), format, io.out);
    return ExitCode::kOk;
  };
}

}  // namespace ppdeploy::cli
