// `ppdeploy plan`: per-GPU memory and KV pool of every layout (the main job).
#include <algorithm>
#include <memory>
#include <sstream>

#include "cli/command.h"
#include "cli/deployment_options.h"
#include "core/error.h"
#include "deploy/plan.h"
#include "io/output_file.h"
#include "report/plan_render.h"

namespace ppdeploy::cli {
namespace {

struct PlanOptions {
  DeploymentOptions deployment;
  PlanChoices choices;
  bool no_enumerate = false;
  std::string format = "table";
  std::string out;  ///< "" = stdout
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
  sub->add_option("--out", o->out,
                  "Write the plan (in --format) to this file instead of stdout: a regular file, replaced "
                  "atomically (docs/safety.md)");
  return [o](CommandIo& io) {
    OutputFormat format = ParseOutputFormat(o->format, {"table", "json", "md", "csv", "html", "svg"});
    if (!o->out.empty()) CheckOutputTarget(o->out);  // a FIFO, device or directory: refused before planning
    PlanChoices choices = o->choices;
    choices.enumerate = !o->no_enumerate;
    const ResolvedDeployment resolved = o->deployment.Resolve();
    CheckOutputIsNotInput(o->out, resolved.request.calibration, "calibration");
    CheckOutputIsNotInput(o->out, resolved.request.model_path, "model config");
    const PlanReport plan = PlanDeployment(resolved, choices);
    // A problem ("problem:" lines) in a layout asked for is a check that found a problem: exit 2.
    const bool problem =
        std::any_of(plan.detailed.begin(), plan.detailed.end(), [](const LayoutPlan& l) { return !l.feasible; });
    const ExitCode code = problem ? ExitCode::kCheckFailed : ExitCode::kOk;
    if (o->out.empty()) {
      RenderPlan(plan, format, io.out);
      return code;
    }
    std::ostringstream text;
    RenderPlan(plan, format, text);
    WriteOutputFile(o->out, text.str());
    return code;
  };
}

}  // namespace ppdeploy::cli
