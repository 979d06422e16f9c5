#include "stats/samples.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.h"

namespace ppdeploy::stats {
namespace {

TEST(PercentileTest, LinearInterpolationLikeNumpy) {
  const std::vector<double> v{4, 1, 3, 2};
  EXPECT_DOUBLE_EQ(Median(v), 2.5);          // numpy.median([1,2,3,4])
  EXPECT_DOUBLE_EQ(Percentile(v, 90), 3.7);  // numpy.percentile(.., 90)
  EXPECT_DOUBLE_EQ(Percentile(v, 0), 1.0);
  EXPECT_DOUBLE_EQ(Percentile(v, 100), 4.0);
  EXPECT_TRUE(std::isnan(Median(std::vector<double>{})));
  EXPECT_THROW(Percentile(v, 101), Error);
}

TEST(MannWhitneyTest, SeparatedSamples) {
  // scipy.stats.mannwhitneyu([1,2,3], [4,5,6], method="asymptotic") -> U = 0, p = 0.0809
  // (hand formula in Python: z = (4.5 - 0.5) / sqrt(5.25) = 1.7457, p = 0.0808556).
  const auto r = MannWhitney(std::vector<double>{1, 2, 3}, std::vector<double>{4, 5, 6});
  EXPECT_DOUBLE_EQ(r.u_a, 0.0);
  EXPECT_NEAR(r.z, -1.7457431218879391, 1e-12);
  EXPECT_NEAR(r.p_two_sided, 0.0808555983700523, 1e-12);
}

TEST(MannWhitneyTest, TiesUseCorrectedVariance) {
  // Tie-corrected variance; reference from the same formula evaluated in Python: U = 8.5, p = 0.2667.
  const auto r = MannWhitney(std::vector<double>{1, 2, 2, 3, 7}, std::vector<double>{2, 3, 4, 5, 5, 6});
  EXPECT_DOUBLE_EQ(r.u_a, 8.5);
  EXPECT_NEAR(r.p_two_sided, 0.26669936890104307, 1e-12);
  const auto same = MannWhitney(std::vector<double>{5, 5}, std::vector<double>{5, 5, 5});
  EXPECT_DOUBLE_EQ(same.p_two_sided, 1.0);
}

TEST(BootstrapTest, SeededAndCoversTheShift) {
  std::vector<double> a, b;
  for (int i = 0; i < 40; ++i) {
    a.push_back(70.0 + (i % 7));
    b.push_back(85.0 + (i % 5));
  }
  const auto r1 = BootstrapMedianDiff(a, b, 42);
  const auto r2 = BootstrapMedianDiff(a, b, 42);
  EXPECT_EQ(r1.lower, r2.lower);  // deterministic for a seed
  EXPECT_EQ(r1.upper, r2.upper);
  EXPECT_DOUBLE_EQ(r1.estimate, 87.0 - 73.0);  // medians 87 and 73 by counting
  EXPECT_LE(r1.lower, r1.estimate);
  EXPECT_GE(r1.upper, r1.estimate);
  EXPECT_GT(r1.lower, 0.0);  // a clear shift excludes 0
  EXPECT_THROW(BootstrapMedianDiff(std::vector<double>{}, b, 1), Error);
}

}  // namespace
}  // namespace ppdeploy::stats

namespace ppdeploy::stats {
namespace {

// The previous implementation, kept as the reference: sort every resample and take its median.
BootstrapInterval SortingBootstrap(const std::vector<double>& a, const std::vector<double>& b, std::uint64_t seed,
                                   int resamples, double alpha = 0.05) {
  auto pct = [](const std::vector<double>& s, double q) {
    const double pos = q / 100.0 * static_cast<double>(s.size() - 1);
    const auto lo = static_cast<std::size_t>(std::floor(pos));
    const std::size_t hi = std::min(lo + 1, s.size() - 1);
    return s[lo] + (s[hi] - s[lo]) * (pos - static_cast<double>(lo));
  };
  BootstrapInterval r;
  r.resamples = resamples;
  r.estimate = Median(b) - Median(a);
  std::mt19937_64 rng(seed);
  std::vector<double> diffs(static_cast<std::size_t>(resamples)), ra(a.size()), rb(b.size());
  std::uniform_int_distribution<std::size_t> pick_a(0, a.size() - 1), pick_b(0, b.size() - 1);
  for (int i = 0; i < resamples; ++i) {
    for (auto& v : ra) v = a[pick_a(rng)];
    for (auto& v : rb) v = b[pick_b(rng)];
    std::sort(ra.begin(), ra.end());
    std::sort(rb.begin(), rb.end());
    diffs[static_cast<std::size_t>(i)] = pct(rb, 50.0) - pct(ra, 50.0);
  }
  std::sort(diffs.begin(), diffs.end());
  r.lower = pct(diffs, 100.0 * alpha / 2.0);
  r.upper = pct(diffs, 100.0 * (1.0 - alpha / 2.0));
  return r;
}

std::vector<double> Noisy(std::size_t n, double centre, std::uint64_t seed, double step) {
  std::mt19937_64 g(seed);
  std::normal_distribution<double> d(centre, 3.0);
  std::vector<double> v(n);
  for (auto& x : v) x = std::round(d(g) / step) * step;  // rounding makes ties, as logged latencies have
  return v;
}

TEST(BootstrapTest, CountingDrawsGivesExactlyTheSortedResampleMedians) {
  // Same generator, same draws: the interval must be bit-identical to sorting each resample.
  const std::vector<std::pair<std::size_t, std::size_t>> sizes = {{1, 1}, {1, 2}, {2, 3}, {7, 8}, {40, 41}, {501, 500}};
  for (auto [na, nb] : sizes)
    for (double step : {0.001, 1.0}) {
      const auto a = Noisy(na, 70.0, na * 31 + 1, step), b = Noisy(nb, 72.0, nb * 17 + 2, step);
      const auto got = BootstrapMedianDiff(a, b, 20261129, 300);
      const auto want = SortingBootstrap(a, b, 20261129, 300);
      EXPECT_EQ(got.lower, want.lower) << na << " " << nb << " " << step;
      EXPECT_EQ(got.upper, want.upper) << na << " " << nb << " " << step;
      EXPECT_EQ(got.estimate, want.estimate);
    }
  // At the size, 20,000 samples per arm (fewer resamples keep the reference quick).
  const auto a = Noisy(20000, 34.0, 1, 0.01), b = Noisy(20000, 34.5, 2, 0.01);
  const auto got = BootstrapMedianDiff(a, b, 7, 100), want = SortingBootstrap(a, b, 7, 100);
  EXPECT_EQ(got.lower, want.lower);
  EXPECT_EQ(got.upper, want.upper);
}

}  // namespace
}  // namespace ppdeploy::stats
