#include "cli/preflight_check.h"

#include <fmt/ranges.h>

#include "core/error.h"
#include "layout/indexer_check.h"

namespace ppdeploy::cli {

PreflightReport PreflightReportOf(const ResolvedDeployment& resolved) {
  if (!resolved.PartitionValid()) throw Error(fmt::format("{}", fmt::join(resolved.partition_check.messages, "; ")));
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

}  // namespace ppdeploy::cli
