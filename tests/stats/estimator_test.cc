// The constant-memory estimator: exact (numpy.percentile linear) while small, then a sketch within its
// documented bound: the estimate lies in [x_lo (1 - a), x_hi (1 + a)] where x_lo, x_hi are the order
// statistics numpy interpolates between, a = 0.005.
#include "stats/estimator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "stats/bench_stats.h"

namespace ppdeploy::stats {
namespace {

TEST(QuantileEstimator, ExactWhileSmallMatchesNumpy) {
  QuantileEstimator e(100);
  for (double v : {4.0, 1.0, 3.0, 2.0}) e.Add(v);
  EXPECT_TRUE(e.exact());
  EXPECT_EQ(e.Method(), "exact");
  EXPECT_DOUBLE_EQ(e.Quantile(50), 2.5);  // np.percentile([1,2,3,4], 50)
  EXPECT_NEAR(e.Quantile(90), 3.7, 1e-12);
  EXPECT_DOUBLE_EQ(e.Quantile(0), 1);
  EXPECT_DOUBLE_EQ(e.Quantile(100), 4);
  EXPECT_DOUBLE_EQ(e.mean(), 2.5);
  EXPECT_NEAR(e.stddev(), 1.118033988749895, 1e-12);
  EXPECT_DOUBLE_EQ(e.ShareAtOrBelow(2), 0.5);
  e.Add(-3);  // a negative latency is a clock artefact: counted as 0
  EXPECT_DOUBLE_EQ(e.min(), 0);
  EXPECT_DOUBLE_EQ(QuantileEstimator().Quantile(50), 0);
}

// The bound, checked on 200,000 log-normal latencies (median ~100 ms, long tail), with zeros mixed in
// (chunks read in the same wake-up have a 0 ms gap).
TEST(QuantileEstimator, SketchStaysWithinItsRelativeErrorBound) {
  std::mt19937_64 rng(42);
  std::lognormal_distribution<double> dist(std::log(100.0), 1.0);
  QuantileEstimator e;  // exact up to 10,000 values
  std::vector<double> all;
  for (int i = 0; i < 200000; ++i) {
    double v = i % 50 == 0 ? 0.0 : dist(rng);
    e.Add(v);
    all.push_back(v);
  }
  EXPECT_FALSE(e.exact());
  EXPECT_EQ(e.Method(), "sketch(relative_accuracy=0.005)");
  std::sort(all.begin(), all.end());
  const double a = e.relative_accuracy();
  for (double q : {0.0, 1.0, 2.5, 10.0, 25.0, 50.0, 75.0, 90.0, 95.0, 99.0, 99.9, 100.0}) {
    double rank = q / 100 * static_cast<double>(all.size() - 1);
    double lo = all[static_cast<std::size_t>(std::floor(rank))];
    double hi = all[std::min(all.size() - 1, static_cast<std::size_t>(std::floor(rank)) + 1)];
    double est = e.Quantile(q);
    EXPECT_GE(est, lo * (1 - a) - 1e-12) << "q=" << q;
    EXPECT_LE(est, hi * (1 + a) + 1e-12) << "q=" << q;
  }
  // Moments stay exact.
  double sum = 0;
  for (double v : all) sum += v;
  EXPECT_NEAR(e.mean(), sum / static_cast<double>(all.size()), 1e-9 * e.mean());
  EXPECT_DOUBLE_EQ(e.max(), all.back());
  EXPECT_EQ(e.count(), 200000);
}

TEST(QuantileEstimator, MergeOfSketchesEqualsOneSketch) {
  std::mt19937_64 rng(7);
  std::exponential_distribution<double> dist(1.0 / 20);
  QuantileEstimator a(50), b(50), whole(50);
  for (int i = 0; i < 5000; ++i) {
    double v = dist(rng);
    (i % 2 ? a : b).Add(v);
    whole.Add(v);
  }
  a.Merge(b);
  EXPECT_EQ(a.count(), 5000);
  for (double q : {5.0, 50.0, 99.0}) EXPECT_DOUBLE_EQ(a.Quantile(q), whole.Quantile(q)) << q;
  EXPECT_NEAR(a.mean(), whole.mean(), 1e-9);
  EXPECT_NEAR(a.stddev(), whole.stddev(), 1e-9);
}

TEST(QuantileEstimator, DistributionSummaryNamesItsMethod) {
  QuantileEstimator e(3);
  for (double v : {1.0, 2.0, 3.0, 4.0}) e.Add(v);
  Distribution d = DistributionOf(e);
  EXPECT_EQ(d.count, 4);
  EXPECT_EQ(d.method, "sketch(relative_accuracy=0.005)");
  EXPECT_NEAR(d.median, 2.5, 2.5 * 0.005 + 1e-12);
}

}  // namespace
}  // namespace ppdeploy::stats
