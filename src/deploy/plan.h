// `ppdeploy plan`'s result for a resolved deployment: every layout for its GPUs, the requested
// layout in detail, the split optimiser where a pipeline split is to be chosen. Pure; computed
// once and rendered by src/report/plan_render.h.
#pragma once

#include "deploy/resolve.h"
#include "layout/plan_report.h"

namespace ppdeploy {

struct PlanChoices {
  bool enumerate = true;         ///< every TP x PP (x DP) for the GPUs
  bool optimize = false;         ///< show the optimiser's best split in detail (--optimize)
  bool zero_dependency = false;  ///< optimiser: only splits with no fix-B forced layers
  double max_imbalance = 0;      ///< optimiser: max / min stage compute; 0 = any
  bool no_optimize = false;      ///< no optimiser table in the default plan
};

/// Throws Error for what cannot be planned at all (a bad layer split, MTP on a model without MTP
/// layers, --optimize without a PP >= 2 layout); everything else is in the report.
PlanReport PlanDeployment(const ResolvedDeployment& d, const PlanChoices& choices);

}  // namespace ppdeploy
