// `ppdeploy plan`: per-GPU memory and KV pool of every layout (the main job).
#include <memory>

#include "cli/command.h"
#include "cli/deployment_options.h"
#include "layout/plan_report.h"
#include "report/plan_render.h"

namespace ppdeploy::cli {
namespace {

struct PlanOptions {
  DeploymentOptions deployment;
  int tp = 0, pp = 0, dp = 1;
  std::string partition;
  std::string format = "table";
  bool no_enumerate = false;
};

int RunPlan(const PlanOptions& o, CommandIo& io) {
  OutputFormat format = ParseOutputFormat(o.format, {"table", "json", "md", "csv"});
  std::vector<LayoutSpec> layouts;
  Deployment d = o.deployment.Build(&layouts);
  if (o.tp > 0 || o.pp > 0 || !o.partition.empty()) {
    LayoutSpec s;
    s.tensor_parallel_size = o.tp > 0 ? o.tp : 1;
    s.pipeline_parallel_size = o.pp > 0 ? o.pp : 1;
    s.data_parallel_size = std::max(1, o.dp);
    if (!o.partition.empty()) {
      if (o.pp <= 0) s.pipeline_parallel_size = static_cast<int>(std::count(o.partition.begin(), o.partition.end(), ',')) + 1;
      s.layer_partition = ParsePartitionFlag(o.partition, s.pipeline_parallel_size, d.model.num_hidden_layers);
    }
    layouts = {s};
  }
  PlanReport report = BuildPlanReport(d, layouts, !o.no_enumerate);
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
  cmd->add_option("--format", o->format, "table, json, md or csv")->capture_default_str();
  cmd->footer(
      "Examples:\n"
      "  ppdeploy plan                                   # the seed's deployment (8 x A100, GLM-5.3 W4A16)\n"
      "  ppdeploy plan --tp 4 --pp 2 --partition 39,39   # one split in detail\n"
      "  ppdeploy plan --model deepseek-v3 --gpu h200 --gpus 8 --max-model-len 131072 --format json\n"
      "  ppdeploy plan --model /models/Kimi-K2/config.json --gpu h200 --kv-cache-dtype auto");
  return [o](CommandIo& io) { return RunPlan(*o, io); };
}

}  // namespace

PPDEPLOY_COMMAND(10, AddPlanCommand);

}  // namespace ppdeploy::cli
