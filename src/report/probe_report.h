// Markdown renderings of the verification results (the JSON forms are the ToJson functions next to
// each result type in src/probes). Pure: return strings, never print.
#pragma once

#include <optional>
#include <string>

#include "probes/degen_run.h"
#include "probes/needle.h"
#include "probes/quality.h"
#include "probes/verdict.h"

namespace ppdeploy::report {

/// The verdict as a Markdown table: | metric | A (label) | B (label) | better | significant | test | p | note |,
/// preceded by a title line and followed by "partial verdict" when a metric was missing.
std::string VerdictMarkdown(const probes::Verdict& verdict);

/// Degeneration summary: rate, 95% Clopper-Pearson CI, median normal length, degenerate trials'
/// periods; plus the baseline comparison when given.
std::string DegenMarkdown(const probes::DegenSummary& summary,
                          const std::optional<probes::BaselineComparison>& baseline = std::nullopt);

/// Needle grid: rows = lengths, columns = depths, cells pass / FAIL / skip / err.
std::string NeedleMarkdown(const probes::NeedleResult& result);

/// Probe counts per kind and the failed probes with their details.
std::string ProbesMarkdown(const probes::ProbeSummary& summary);

/// p-value for display: "1.80e-08", "0.0099", "0.43".
std::string FormatP(double p);

}  // namespace ppdeploy::report
