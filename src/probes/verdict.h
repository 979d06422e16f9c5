// The A/B verdict between two verify results (docs/seed.md §12 `v030_pp_rebalance.sh verdict`: "a table
// comparing memory, pool, speed and degeneration of the two arms"; docs/sources.md §6: "A/B verdict with a
// significance test between two servers/configs" is the gap nobody fills).
//
// One row per metric, in the order of the seed's A/B (docs/seed.md §6) (pool, concurrency at max_model_len, step time,
// single stream, degeneration with Fisher p, quality / Responses / tool round trips, nvidia-smi per GPU,
// tightest headroom, ready time): both values, the better arm, whether the difference is significant at
// alpha (default 0.05) and by which test:
//   KV pool predicted / logged (the logged value shows the plan's beside it), concurrency at max_model_len,
//     available KV per PP stage (boot log), memory used per GPU, peak memory per rank, tightest headroom,
//     ready time: single measurements -> no test (significant = null), better arm by direction ("-" for the
//     informative per-stage and per-GPU rows, where more memory used can mean a larger pool);
//   step time, single-stream and per-concurrency throughput: Mann-Whitney U (two-sided, normal
//     approximation) on the samples, plus a seeded bootstrap 95% CI of the median difference B - A
//     in the note; a single sample per arm -> no test; step time from /metrics histograms (no samples):
//     the histograms' means, Mann-Whitney on the bucketed observations (ties within a bucket);
//   degeneration: Fisher exact two-sided on degenerate/completed; normal-answer length: Mann-Whitney;
//   needle and probes (quality, Responses API, tool round trips): Fisher exact two-sided on
//     failures/total.
// A metric missing in either arm gives a row that says which arm lacks it (the verdict is then
// partial). No row is ever dropped silently.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "probes/verify_result.h"

namespace ppdeploy::probes {

struct VerdictRow {
  std::string metric;               ///< e.g. "degeneration rate"
  std::string a, b;                 ///< values as displayed ("21/100 (21.0%)", "missing")
  std::string better;               ///< "A", "B", "tie" or "-" (not comparable)
  std::optional<bool> significant;  ///< null when no test applies
  std::string test;                 ///< e.g. "Fisher exact, two-sided"; "" when none
  std::optional<double> p;
  std::string note;  ///< CI, ratio, or what is missing
};

struct Verdict {
  std::string label_a, label_b;
  double alpha = 0.05;
  std::vector<VerdictRow> rows;
  bool partial = false;  ///< some metric was missing in an arm
};

/// Compares arm A with arm B (see the file comment).
Verdict Compare(const VerifyResult& a, const VerifyResult& b, double alpha = 0.05);

/// {"schema": "ppdeploy.verdict/1", "a", "b", "alpha", "partial", "rows": [{metric, a, b, better,
///  significant, test, p, note}]}
nlohmann::json ToJson(const Verdict& verdict);

/// Whether the new arm B is worse than the control A (`ppdeploy rebalance verdict`, exit 2 when worse):
///  - degenerate answers, failures of a check (needle, quality, Responses API, tool round trips) or failed
///    requests (HTTP errors, disconnects, timeouts of any verify step) on B where A had none, or at a rate
///    significantly higher than A's (Fisher two-sided, alpha); with no degeneration section on A, any degenerate
///    answer on B (docs/seed.md §12: degen exits 2 on any degeneration). Fewer such events on B never make it
///    worse (issue 23 item 8: 2/40 degenerate against the control's 16/40 is better, not worse);
///  - a smaller measured KV pool than A's (the pool is what a new split is for);
///  - a speed row (step time, single-stream or concurrent throughput) significantly worse (Mann-Whitney,
///    alpha) by more than `speed_tolerance` (relative, default 5%) of A's median.
/// Rows missing in an arm judge nothing (the verdict says it is partial).
struct NewArmJudgement {
  bool worse = false;
  std::vector<std::string> reasons;  ///< why B is worse, one line each
  std::vector<std::string> better;   ///< the rows where B is significantly better, one line each
};
NewArmJudgement JudgeNewArm(const VerifyResult& a, const VerifyResult& b, const Verdict& verdict,
                            double speed_tolerance = 0.05);

/// The result line's sentence, the one wording of the markdown and HTML verdicts: "B (x) is worse than A (y):"
/// (the reasons follow) or "B (x) is not worse than A (y)."; the rows where B is significantly better follow it
/// under "B is significantly better on:" (kBetterHeading).
std::string ResultSentence(const Verdict& verdict, const NewArmJudgement& judgement);
inline constexpr const char* kBetterHeading = "B is significantly better on:";

}  // namespace ppdeploy::probes
