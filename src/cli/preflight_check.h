// The index-share preflight of a resolved deployment's split (docs/seed.md §6-§7, issue 3/8): shared by
// `ppdeploy preflight` and `ppdeploy rebalance preflight`.
#pragma once

#include "deploy/resolve.h"
#include "report/split_render.h"

namespace ppdeploy::cli {

/// The preflight report of `resolved`'s split. Throws Error for an invalid split or PP < 2.
PreflightReport PreflightReportOf(const ResolvedDeployment& resolved);

}  // namespace ppdeploy::cli
