// Descriptive statistics and two-sample comparisons on per-request samples (latencies, tok/s,
// output lengths): median and percentiles, the Mann-Whitney U test (normal approximation with
// tie and continuity correction) and a seeded bootstrap interval for a difference of medians.
//
// Source of the choice: docs/sources.md §6 (A/B with a Mann-Whitney test on per-request
// metrics plus a bootstrap CI). Pure functions, deterministic for a given seed.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace ppdeploy::stats {

/// Percentile q in [0, 100] with linear interpolation between closest ranks (NumPy's default,
/// "type 7"). Empty input -> NaN. Throws Error when q is outside [0, 100].
double Percentile(std::span<const double> values, double q);

/// Median (= Percentile(values, 50)); empty input -> NaN.
double Median(std::span<const double> values);

/// Mann-Whitney U test of samples a and b.
struct MannWhitneyResult {
  double u_a = 0.0;        ///< U statistic of sample a (number of pairs a > b, ties count 1/2)
  double z = 0.0;          ///< normal approximation, continuity-corrected; sign > 0 when a tends larger
  double p_two_sided = 1;  ///< 2 * (1 - Phi(|z|)), 1 when a sample is empty or every value ties
  std::int64_t n_a = 0, n_b = 0;
};
/// Ranks the pooled samples (average ranks for ties), U_a = R_a - n_a (n_a + 1) / 2,
/// var = n_a n_b / 12 * ((N + 1) - sum(t^3 - t) / (N (N - 1))). Matches scipy.stats.mannwhitneyu
/// (method="asymptotic", use_continuity=True). Reliable for n_a, n_b >= ~8.
MannWhitneyResult MannWhitney(std::span<const double> a, std::span<const double> b);

/// The same test on binned data: `counts_a[i]` and `counts_b[i]` observations fall in bucket i (buckets in
/// increasing order, e.g. a Prometheus histogram's), every observation of a bucket tied with the others.
/// Equals MannWhitney on samples that repeat a value per bucket counts[i] times; O(buckets). Counts must be
/// non-negative integers (as doubles) and the two spans the same length (Error otherwise).
MannWhitneyResult MannWhitneyGrouped(std::span<const double> counts_a, std::span<const double> counts_b);

/// Percentile bootstrap interval for median(b) - median(a).
struct BootstrapInterval {
  double estimate = 0.0;  ///< median(b) - median(a) on the data
  double lower = 0.0;
  double upper = 0.0;
  int resamples = 0;
};
/// Resamples each arm with replacement `resamples` times from std::mt19937_64(seed) and takes the
/// alpha/2 and 1 - alpha/2 percentiles of the differences. Throws Error on an empty sample,
/// resamples < 100 or alpha outside (0, 1).
BootstrapInterval BootstrapMedianDiff(std::span<const double> a, std::span<const double> b, std::uint64_t seed,
                                      int resamples = 2000, double alpha = 0.05);

}  // namespace ppdeploy::stats
