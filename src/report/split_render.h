// Renders the split optimiser's comparison table (docs/seed.md §6 table) and preflight reports.
#pragma once

#include <ostream>

#include <nlohmann/json.hpp>

#include "layout/index_share.h"
#include "layout/optimizer.h"
#include "report/table.h"

namespace ppdeploy {

nlohmann::json OptimizeToJson(const OptimizeResult& r);
void RenderOptimize(const OptimizeResult& r, OutputFormat format, std::ostream& out);

/// Preflight of one split (schema ppdeploy.preflight/1). `pattern` is the index_topk_pattern
/// for fix B when requested ("" otherwise).
struct PreflightReport {
  std::string model;
  std::vector<int> partition;
  IndexShareReport analysis;
  std::string fix;              ///< "builtin", "pattern", "none", "all-full"
  std::string pattern;          ///< index_topk_pattern override ("" when none is needed)
  std::vector<std::string> checkpoint_problems;  ///< missing/mismatched indexer tensors
  std::string checkpoint_note;  ///< e.g. "no checkpoint given: the indexer-weight check did not run"
  bool safe() const { return analysis.safe && checkpoint_problems.empty(); }
};
nlohmann::json PreflightToJson(const PreflightReport& r);
void RenderPreflight(const PreflightReport& r, OutputFormat format, std::ostream& out);

}  // namespace ppdeploy
