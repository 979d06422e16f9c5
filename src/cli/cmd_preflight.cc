// `ppdeploy preflight`: DSA index-share safety of a layer split (seed digest §6-§7, issue 3/8).
#include <fmt/ranges.h>

#include <memory>

#include "cli/command.h"
#include "cli/deployment_options.h"
#include "core/error.h"
#include "layout/indexer_check.h"
#include "report/split_render.h"

namespace ppdeploy::cli {
namespace {

struct PreflightOptions {
  DeploymentOptions deployment;
  std::string format = "table";
};

PreflightReport RunPreflight(const PreflightOptions& o) {
  const ResolvedDeployment resolved = o.deployment.Resolve();
  if (!resolved.PartitionValid()) throw Error(fmt::format("{}", fmt::join(resolved.partition_check.messages, "; ")));
  if (resolved.request.pp_size < 2)
    throw Error("preflight checks a pipeline split: give --partition with two or more stages (e.g. --partition 41,37)");
  const Deployment& d = resolved.planner;
  PreflightReport r;
  r.model = d.model_name;
  r.partition = resolved.partition;
  ModelConfig m = EffectiveModel(d);
  bool fix = FixApplied(d);
  r.analysis = AnalyzeIndexShare(m, r.partition, d.vllm.index_share, fix);
  switch (d.index_fix) {
    case IndexFix::kProfile:
      r.fix = ToString(d.vllm.fix_b);
      break;
    case IndexFix::kNone:
      r.fix = "none";
      break;
    case IndexFix::kPattern:
      r.fix = "pattern";
      break;
    case IndexFix::kAllFull:
      r.fix = "all-full";
      break;
  }
  bool pattern =
      d.index_fix == IndexFix::kPattern || (d.index_fix == IndexFix::kProfile && d.vllm.fix_b == FixBSource::kPattern);
  if (pattern && r.analysis.applies && !r.analysis.forced.empty()) r.pattern = IndexTopkPattern(m, r.analysis.forced);
  if (pattern && !r.analysis.forced.empty()) {
    if (resolved.checkpoint_tensors.empty()) {
      r.checkpoint_note =
          "warning: no checkpoint directory with safetensors given (--model DIR): the indexer-weight "
          "check of the forced layers could not run";
    } else {
      r.checkpoint_problems = CheckForcedIndexerTensors(m, resolved.checkpoint_tensors, r.analysis.forced);
      r.checkpoint_note = fmt::format(
          "checkpoint {}: indexer tensors of forced layers {} checked against a "
          "self-computing layer: {}",
          resolved.checkpoint_dir, FormatPartition(r.analysis.forced),
          r.checkpoint_problems.empty() ? "all present" : "PROBLEMS");
    }
  }
  return r;
}

}  // namespace

RunFunction DeclarePreflight(CLI::App* sub) {
  auto o = std::make_shared<PreflightOptions>();
  o->deployment.Add(sub);
  sub->get_option("--partition")->required();
  sub->add_option("--format", o->format, "table, json, md or csv")->capture_default_str();
  return [o](CommandIo& io) {
    OutputFormat format = ParseOutputFormat(o->format, {"table", "json", "md", "csv"});
    PreflightReport r = RunPreflight(*o);
    RenderPreflight(r, format, io.out);
    return r.safe() ? ExitCode::kOk : ExitCode::kCheckFailed;
  };
}

}  // namespace ppdeploy::cli
