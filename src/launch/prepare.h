// Glue of the launch commands, pure: resolved deployment -> the planner's result for the
// launched layout -> gates -> rendering. The same planner call `plan` makes for the layout.
#pragma once

#include <vector>

#include "deploy/resolve.h"
#include "launch/gates.h"
#include "launch/node_gates.h"
#include "launch/render.h"
#include "layout/planner.h"

namespace ppdeploy::launch {

struct PreparedLaunch {
  ResolvedDeployment deployment;
  LayoutPlan plan;         ///< PlanLayout(deployment.planner, deployment.layout): what `plan` shows for it
  std::string plan_error;  ///< why the planner could not plan it at all ("" = planned); the memory gate fails
  GateReport gates;
  RenderedLaunch rendered;  ///< rendered even when a gate fails (the preview still shows it)
};

/// Plans the launched layout, runs the gates and renders the command. With `probes` (what each node
/// of a multi-node launch reported, in NODES order), the `nodes` gate joins the gates and the plan
/// uses the nodes' GPU types (ApplyNodeGpus).
PreparedLaunch PrepareLaunch(ResolvedDeployment deployment, const std::vector<NodeProbe>* probes = nullptr);

/// What the PP > 2 gate proposes instead: every layout with PP <= 2 on the same GPUs (PP 2 with
/// the split optimiser's best split), feasible ones by pool, at most three.
std::vector<PpAlternative> PlanPpAlternatives(const ResolvedDeployment& d);

}  // namespace ppdeploy::launch
