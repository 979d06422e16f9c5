// Exact tests and intervals for pass/fail counts: Fisher's exact test on a 2x2 table, the
// Clopper-Pearson ("exact") and Wilson score intervals for a binomial proportion.
//
// Used by the degeneration probe (docs/seed.md §7: 21/100 degenerate on PP2 vs 0/120 on PP1, "Fisher exact
// one-sided p") and by the A/B verdict (docs/sources.md §6: Fisher exact for pass/fail probe counts).
// Pure functions; errors (negative counts, x > n, alpha outside (0,1)) throw ppdeploy::Error.
#pragma once

#include <cstdint>

namespace ppdeploy::stats {

/// A 2x2 contingency table [[a, b], [c, d]]: row 1 = arm A (a events, b non-events), row 2 = arm B.
struct Table2x2 {
  std::int64_t a = 0, b = 0, c = 0, d = 0;
};

/// Fisher's exact test p-values. `greater` = P(X >= a) under the hypergeometric null with the
/// margins fixed (H1: arm A's event rate is higher than arm B's); `less` = P(X <= a); `two_sided`
/// sums the probabilities of all tables no more likely than the observed one (R's fisher.test
/// convention, relative tolerance 1e-7). Computed from Boost.Math's hypergeometric pmf.
/// Example (docs/seed.md §7 / issue 6): [[21, 79], [0, 120]] -> greater = 1.80e-08;
/// docs/sources.md §6: [[9, 1], [3, 7]] -> greater = 0.00988.
struct FisherResult {
  double greater = 1.0;
  double less = 1.0;
  double two_sided = 1.0;
};
FisherResult FisherExact(const Table2x2& table);

/// Convenience: events_a of n_a vs events_b of n_b.
FisherResult FisherExact(std::int64_t events_a, std::int64_t n_a, std::int64_t events_b, std::int64_t n_b);

/// A two-sided confidence interval for a proportion, as fractions in [0, 1].
struct Interval {
  double lower = 0.0;
  double upper = 1.0;
};

/// Clopper-Pearson exact interval for x successes in n trials at confidence 1 - alpha (default 95%):
/// lower = Beta^-1(alpha/2; x, n - x + 1) (0 when x = 0), upper = Beta^-1(1 - alpha/2; x + 1, n - x)
/// (1 when x = n). n = 0 gives [0, 1]. Example: 0/40 -> [0, 0.0881] ("0/40 only bounds the rate
/// below 8.8%", which is why the seed raises AGENT_PROBE_TRIALS to 200).
Interval ClopperPearson(std::int64_t x, std::int64_t n, double alpha = 0.05);

/// Wilson score interval (no continuity correction) at confidence 1 - alpha.
Interval Wilson(std::int64_t x, std::int64_t n, double alpha = 0.05);

}  // namespace ppdeploy::stats
