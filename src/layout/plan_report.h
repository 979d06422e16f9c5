// The result of `ppdeploy plan`, computed once and rendered as table / JSON / Markdown / CSV
// (src/report/plan_render.h).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "layout/optimizer.h"
#include "layout/planner.h"

namespace ppdeploy {

/// Why another parallel dimension does or does not add KV capacity (docs/seed.md §9,
/// docs/vllm-rules.md §1.10), specialised to the deployment.
struct DimensionNote {
  std::string dimension;        ///< "TP", "PP", "DCP", "PCP", "DP", "EP", "block size", ...
  std::string flag;             ///< the vLLM flag
  std::string capacity_effect;  ///< e.g. "x1 (MLA latent replicated)"
  std::string verdict;          ///< why it helps or not, here
};

struct PlanReport {
  Deployment deployment;
  std::vector<LayoutPlan> layouts;   ///< every TP x PP (x DP) for the GPU count, default split
  std::vector<LayoutPlan> detailed;  ///< the layouts asked for explicitly (deployment file / flags)
  int best = -1;                     ///< index in `layouts` of the largest feasible pool using all GPUs
  std::vector<DimensionNote> dimensions;
  std::vector<std::string> notes;             ///< provenance of inputs, checks against measured figures
  std::vector<OptimizeResult> optimizations;  ///< split optimiser tables (plan --optimize / default plan)
};

/// The deployment a layout runs with (e.g. speculation decided per layout); identity when empty.
using DeploymentForLayout = std::function<Deployment(const LayoutSpec&)>;

/// Plans `explicit_layouts` in detail and, when `enumerate`, every layout for the GPU count,
/// each with `deployment_for(layout)` (default: `d`). `deployment_notes` (what resolving the
/// deployment decided, deploy/resolve.h ResolvedDeployment::notes) lead the report's notes.
PlanReport BuildPlanReport(const Deployment& d, const std::vector<LayoutSpec>& explicit_layouts, bool enumerate,
                           const DeploymentForLayout& deployment_for = {},
                           const std::vector<std::string>& deployment_notes = {});

}  // namespace ppdeploy
