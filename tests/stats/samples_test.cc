#include "stats/samples.h"

#include <cmath>
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
