#include "stats/binomial.h"

#include <cmath>

#include <boost/math/distributions/hypergeometric.hpp>
#include <gtest/gtest.h>

#include "core/error.h"

namespace ppdeploy::stats {
namespace {

// Independent check: C(n, k) as a long double product (no lgamma, no Boost).
long double Choose(int n, int k) {
  long double r = 1;
  for (int i = 1; i <= k; ++i) r = r * static_cast<long double>(n - k + i) / static_cast<long double>(i);
  return r;
}

// P(X >= a) for the table [[a, b], [c, d]] by direct summation of C(col1, x) C(N - col1, row1 - x) / C(N, row1).
long double UpperTail(int a, int b, int c, int d) {
  const int row1 = a + b, col1 = a + c, n = a + b + c + d;
  long double p = 0;
  for (int x = a; x <= std::min(row1, col1); ++x) p += Choose(col1, x) * Choose(n - col1, row1 - x) / Choose(n, row1);
  return p;
}

TEST(FisherTest, IssueFigure21Of100Vs0Of120) {
  // Issue 6 / docs/seed.md §7: PP2 21/100 degenerate vs PP1 0/120 -> one-sided p = 1.80e-08.
  // Independent: with no events in arm B, all 21 events fall in arm A's 100 of 220 trials:
  // p = prod_{i=0}^{20} (100 - i) / (220 - i).
  long double product = 1;
  for (int i = 0; i < 21; ++i) product *= static_cast<long double>(100 - i) / static_cast<long double>(220 - i);
  const FisherResult f = FisherExact(21, 100, 0, 120);
  EXPECT_NEAR(f.greater, static_cast<double>(product), 1e-12 * static_cast<double>(product));
  EXPECT_NEAR(f.greater, static_cast<double>(UpperTail(21, 79, 0, 120)), 1e-20);
  EXPECT_EQ(fmt::format("{:.2e}", f.greater), "1.80e-08");
  // The lower tail contains every table: ~1.
  EXPECT_NEAR(f.less, 1.0, 1e-12);
}

TEST(FisherTest, Seed19Of100Vs0Of120) {
  // docs/seed.md §7: PP2 without speculation 19/100 vs PP1 0/120. Python exact fractions: 1.1174e-07.
  long double product = 1;
  for (int i = 0; i < 19; ++i) product *= static_cast<long double>(100 - i) / static_cast<long double>(220 - i);
  const FisherResult f = FisherExact(19, 100, 0, 120);
  EXPECT_NEAR(f.greater, static_cast<double>(product), 1e-12 * static_cast<double>(product));
  EXPECT_EQ(fmt::format("{:.3e}", f.greater), "1.117e-07");
}

TEST(FisherTest, AnchorsTable9137) {
  // docs/sources.md §6: [[9, 1], [3, 7]] one-sided p = 0.00988 (Boost.Math check by the researcher).
  const FisherResult f = FisherExact(Table2x2{9, 1, 3, 7});
  EXPECT_NEAR(f.greater, static_cast<double>(UpperTail(9, 1, 3, 7)), 1e-15);
  EXPECT_NEAR(f.greater, 0.00988, 5e-6);
  // Two-sided (R fisher.test convention), Python exact fractions: 0.019766611097880447.
  EXPECT_NEAR(f.two_sided, 0.019766611097880447, 1e-12);
}

TEST(FisherTest, VerdictCase21Vs0Of100TwoSided) {
  // Python exact fractions: two-sided p for 21/100 vs 0/100 = 2.9526e-07.
  EXPECT_NEAR(FisherExact(21, 100, 0, 100).two_sided, 2.9526107357401764e-07, 1e-15);
}

TEST(FisherTest, EqualArmsAreNotSignificantAndBadInputThrows) {
  const FisherResult f = FisherExact(0, 40, 0, 40);
  EXPECT_DOUBLE_EQ(f.greater, 1.0);
  EXPECT_DOUBLE_EQ(f.two_sided, 1.0);
  EXPECT_THROW(FisherExact(5, 4, 0, 10), Error);
  EXPECT_THROW(FisherExact(Table2x2{-1, 2, 3, 4}), Error);
}

TEST(ClopperPearsonTest, KnownValues) {
  // 0/40: closed form upper = 1 - 0.025^(1/40) = 0.0881 (why the seed says 0/40 only bounds the rate).
  const Interval z = ClopperPearson(0, 40);
  EXPECT_DOUBLE_EQ(z.lower, 0.0);
  EXPECT_NEAR(z.upper, 1.0 - std::pow(0.025, 1.0 / 40.0), 1e-12);
  // 21/100 and 20/100: Python bisection on exact binomial tails (see the report).
  const Interval a = ClopperPearson(21, 100);
  EXPECT_NEAR(a.lower, 0.1349436957053291, 1e-9);
  EXPECT_NEAR(a.upper, 0.3029153793505407, 1e-9);
  const Interval b = ClopperPearson(20, 100);
  EXPECT_NEAR(b.lower, 0.12665555210195584, 1e-9);
  EXPECT_NEAR(b.upper, 0.291842689088628, 1e-9);
  // 0/200 (seed's full acceptance): upper = 1 - 0.025^(1/200) = 1.83%.
  EXPECT_NEAR(ClopperPearson(0, 200).upper, 1.0 - std::pow(0.025, 1.0 / 200.0), 1e-12);
  const Interval all = ClopperPearson(10, 10);
  EXPECT_DOUBLE_EQ(all.upper, 1.0);
  EXPECT_NEAR(all.lower, std::pow(0.025, 1.0 / 10.0), 1e-12);  // closed form at x = n
  EXPECT_THROW(ClopperPearson(11, 10), Error);
}

TEST(WilsonTest, KnownValues) {
  // Closed-form Wilson score interval (z = 1.959963985), computed in Python.
  const Interval w = Wilson(20, 100);
  EXPECT_NEAR(w.lower, 0.13336693333103253, 1e-9);
  EXPECT_NEAR(w.upper, 0.28882916559315885, 1e-9);
  const Interval z = Wilson(0, 40);
  EXPECT_NEAR(z.lower, 0.0, 1e-12);
  EXPECT_NEAR(z.upper, 0.08762160119728665, 1e-9);
}

}  // namespace
}  // namespace ppdeploy::stats

namespace ppdeploy::stats {
namespace {

// Exact p-values from rational arithmetic (python3, math.comb and fractions.Fraction: every table
// probability C(K, x) C(N - K, n - x) / C(N, n) summed exactly, the two-sided sum over the tables
// with p <= p_obs * (1 + 1e-7), then float()).
struct ExactCase {
  std::int64_t a, na, c, nb;
  double two, less, greater;
};
constexpr ExactCase kExact[] = {
    {10000, 20000, 9800, 20000, 0.046578622722542817, 0.97779039773262355, 0.023289311361271409},
    {300, 20000, 280, 20000, 0.42680336787752421, 0.81012056250752151, 0.2134016839387621},
    {21, 100, 0, 120, 1.8011713132182983e-08, 1.0, 1.8011713132182983e-08},
    {9, 10, 3, 10, 0.019766611097880447, 0.99964277208859253, 0.0098833055489402234},
    {0, 5, 5, 5, 0.0079365079365079361, 0.003968253968253968, 1.0},
    {7, 40, 12, 40, 0.29330580018155122, 0.14665290009077561, 0.9432073679364168},
};

TEST(FisherTest, MatchesExactRationalArithmetic) {
  for (const auto& e : kExact) {
    const FisherResult r = FisherExact(e.a, e.na, e.c, e.nb);
    EXPECT_NEAR(r.two_sided, e.two, 1e-12 * e.two) << e.a << "/" << e.na << " vs " << e.c << "/" << e.nb;
    EXPECT_NEAR(r.less, e.less, 1e-12 * e.less) << e.a << "/" << e.na;
    EXPECT_NEAR(r.greater, e.greater, 1e-12 * e.greater) << e.a << "/" << e.na;
  }
}

// The previous implementation, kept as the reference: Boost.Math's pmf evaluated for every table.
FisherResult PerTermBoostFisher(const Table2x2& t) {
  const std::int64_t n_total = t.a + t.b + t.c + t.d, col1 = t.a + t.c, row1 = t.a + t.b;
  const std::int64_t lo = std::max<std::int64_t>(0, row1 + col1 - n_total), hi = std::min(row1, col1);
  boost::math::hypergeometric_distribution<double> dist(static_cast<unsigned>(col1), static_cast<unsigned>(row1),
                                                        static_cast<unsigned>(n_total));
  const double p_obs = boost::math::pdf(dist, static_cast<unsigned>(t.a));
  FisherResult r{0, 0, 0};
  for (std::int64_t x = hi; x >= lo; --x) {
    const double p = boost::math::pdf(dist, static_cast<unsigned>(x));
    if (x >= t.a) r.greater += p;
    if (p <= p_obs * (1.0 + 1e-7)) r.two_sided += p;
  }
  for (std::int64_t x = lo; x <= t.a; ++x) r.less += boost::math::pdf(dist, static_cast<unsigned>(x));
  return {std::min(1.0, r.greater), std::min(1.0, r.less), std::min(1.0, r.two_sided)};
}

TEST(FisherTest, RatioRecurrenceAgreesWithThePerTermPmf) {
  // Tables from tiny to a few hundred trials, balanced and lopsided, events at both ends.
  for (std::int64_t na : {1, 7, 40, 100, 333})
    for (std::int64_t nb : {1, 9, 120, 250})
      for (std::int64_t a : {std::int64_t{0}, na / 3, na / 2, na})
        for (std::int64_t c : {std::int64_t{0}, nb / 4, nb}) {
          const Table2x2 t{a, na - a, c, nb - c};
          const FisherResult got = FisherExact(t), want = PerTermBoostFisher(t);
          EXPECT_NEAR(got.greater, want.greater, 1e-11 * want.greater + 1e-300)
              << a << "/" << na << " " << c << "/" << nb;
          EXPECT_NEAR(got.less, want.less, 1e-11 * want.less + 1e-300) << a << "/" << na << " " << c << "/" << nb;
          EXPECT_NEAR(got.two_sided, want.two_sided, 1e-11 * want.two_sided + 1e-300)
              << a << "/" << na << " " << c << "/" << nb;
        }
}

TEST(FisherTest, TwentyThousandTrialsPerArmIsLinear) {
  // 20,000 trials per arm with half of them events: 20,001 tables in the support. The per-term
  // pmf took about 0.7 ms per table at -O2 (O(N) prime factorisation each), i.e. ~30 s here and
  // minutes in a Debug or sanitizer build; the recurrence needs one pmf call. Its time is not asserted
  // (a loaded machine can exceed any bound): bench/stats_bench.cc measures it.
  const FisherResult r = FisherExact(10000, 20000, 10000, 20000);
  EXPECT_NEAR(r.two_sided, 1.0, 1e-12);  // the observed table is the mode: every table is as likely or less
}

}  // namespace
}  // namespace ppdeploy::stats
