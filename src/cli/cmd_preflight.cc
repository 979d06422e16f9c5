// `ppdeploy preflight`: DSA index-share safety of a layer split (seed digest §6-§7, issue 3/8).
#include <memory>

#include "cli/command.h"
#include "cli/deployment_options.h"
#include "core/error.h"
#include "io/model_input.h"
#include "model/indexer_check.h"
#include "report/split_render.h"

namespace ppdeploy::cli {
namespace {

struct PreflightOptions {
  DeploymentOptions deployment;
  std::string partition;
  int tp = 0;
  std::string format = "table";
};

int RunPreflight(const PreflightOptions& o, CommandIo& io) {
  OutputFormat format = ParseOutputFormat(o.format, {"table", "json", "md", "csv"});
  Deployment d = o.deployment.Build();
  int pp = static_cast<int>(std::count(o.partition.begin(), o.partition.end(), ',')) + 1;
  PreflightReport r;
  r.model = d.model_name;
  r.partition = ParsePartitionFlag(o.partition, pp, d.model.num_hidden_layers);
  ModelConfig m = EffectiveModel(d);
  bool fix = FixApplied(d);
  r.analysis = AnalyzeIndexShare(m, r.partition, d.vllm.index_share, fix);
  switch (d.index_fix) {
    case IndexFix::kProfile: r.fix = ToString(d.vllm.fix_b); break;
    case IndexFix::kNone: r.fix = "none"; break;
    case IndexFix::kPattern: r.fix = "pattern"; break;
    case IndexFix::kAllFull: r.fix = "all-full"; break;
  }
  bool pattern = d.index_fix == IndexFix::kPattern ||
                 (d.index_fix == IndexFix::kProfile && d.vllm.fix_b == FixBSource::kPattern);
  if (pattern && r.analysis.applies && !r.analysis.forced.empty()) r.pattern = IndexTopkPattern(m, r.analysis.forced);
  if (pattern && !r.analysis.forced.empty()) {
    ResolvedModel rm = ResolveModel(o.deployment.model.empty() ? d.model_name : o.deployment.model);
    if (rm.tensors.empty()) {
      r.checkpoint_note = "warning: no checkpoint directory with safetensors given (--model DIR): the indexer-weight "
                          "check of the forced layers could not run";
    } else {
      r.checkpoint_problems = CheckForcedIndexerTensors(m, rm.tensors, r.analysis.forced);
      r.checkpoint_note = fmt::format("checkpoint {}: indexer tensors of forced layers {} checked against a "
                                      "self-computing layer: {}", rm.checkpoint_dir, FormatPartition(r.analysis.forced),
                                      r.checkpoint_problems.empty() ? "all present" : "PROBLEMS");
    }
  }
  RenderPreflight(r, format, io.out);
  return r.safe() ? 0 : 2;
}

RunFunction AddPreflightCommand(CLI::App& app) {
  auto o = std::make_shared<PreflightOptions>();
  CLI::App* cmd = app.add_subcommand("preflight", "Check a layer split for the DSA index-share PP defect (exit 2 if unsafe)");
  o->deployment.Add(cmd);
  cmd->add_option("--partition", o->partition, "Layer split, VLLM_PP_LAYER_PARTITION syntax (e.g. 41,37)")->required();
  cmd->add_option("--tp", o->tp, "Tensor parallel size (does not change the analysis)");
  cmd->add_option("--format", o->format, "table, json, md or csv")->capture_default_str();
  cmd->footer(
      "Exit codes: 0 safe, 1 bad input, 2 unsafe split.\n"
      "Examples:\n"
      "  ppdeploy preflight --partition 41,37             # rank1 forced [41], fixed by the seed's image\n"
      "  ppdeploy preflight --partition 45,33 --fix none  # unsafe: layer 45 reuses layer 42's index on PP0\n"
      "  ppdeploy preflight --partition 39,39 --fix pattern --vllm 0.26   # print the index_topk_pattern override");
  return [o](CommandIo& io) { return RunPreflight(*o, io); };
}

}  // namespace

PPDEPLOY_COMMAND(20, AddPreflightCommand);

}  // namespace ppdeploy::cli
