// Arrival schedules (vLLM get_request's gamma gaps): Poisson gaps have mean 1/rate and CV 1; gamma with
// shape b has CV 1/sqrt(b); constant gaps are exactly 1/rate; ramps follow vLLM's _get_current_request_rate.
// Sampled values are checked with tolerances several standard errors wide at a fixed seed.
#include "stats/arrivals.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/error.h"
#include "test_util.h"

namespace ppdeploy::stats {
namespace {

struct GapStats {
  double rate = 0, cv = 0;
};

GapStats Measure(ArrivalSchedule& s, int n) {
  std::vector<double> t;
  for (int i = 0; i < n; ++i) t.push_back(s.NextMs());
  double mean = 0;
  for (int i = 1; i < n; ++i) mean += t[i] - t[i - 1];
  mean /= n - 1;
  double var = 0;
  for (int i = 1; i < n; ++i) var += (t[i] - t[i - 1] - mean) * (t[i] - t[i - 1] - mean);
  var /= n - 1;
  return {static_cast<double>(n - 1) / ((t.back() - t.front()) / 1000.0), std::sqrt(var) / mean};
}

// Issue 17 acceptance, on the schedule itself: 2,000 Poisson arrivals at 20 req/s have a rate within 5% of
// 20 and a CV within 10% of 1 (std. errors: 2.2% and ~3%).
TEST(Arrivals, PoissonAt20PerSecond) {
  for (std::uint64_t seed : {0ULL, 1ULL, 17ULL}) {
    ArrivalOptions o;
    o.rate = 20;
    o.seed = seed;
    ArrivalSchedule s(o);
    GapStats g = Measure(s, 2000);
    EXPECT_NEAR(g.rate, 20, 1.0) << "seed " << seed;
    EXPECT_NEAR(g.cv, 1, 0.1) << "seed " << seed;
  }
}

TEST(Arrivals, GammaBurstinessSetsTheCoefficientOfVariation) {
  for (double b : {0.25, 4.0}) {
    ArrivalOptions o;
    o.rate = 10;
    o.kind = ArrivalKind::kGamma;
    o.burstiness = b;
    o.seed = 3;
    ArrivalSchedule s(o);
    GapStats g = Measure(s, 20000);
    EXPECT_NEAR(g.rate, 10, 0.5) << b;
    EXPECT_NEAR(g.cv, 1 / std::sqrt(b), 0.1 / std::sqrt(b)) << b;
  }
}

TEST(Arrivals, ConstantAndInfinite) {
  ArrivalOptions o;
  o.rate = 4;
  o.kind = ArrivalKind::kConstant;
  ArrivalSchedule s(o);
  EXPECT_DOUBLE_EQ(s.NextMs(), 250);  // the first request after one gap
  EXPECT_DOUBLE_EQ(s.NextMs(), 500);
  ArrivalOptions inf;
  inf.rate = INFINITY;
  ArrivalSchedule all(inf);
  EXPECT_DOUBLE_EQ(all.NextMs(), 0);
  EXPECT_DOUBLE_EQ(all.NextMs(), 0);
}

TEST(Arrivals, RampsByRequestIndexLikeVllm) {
  // linear 1 -> 10 over 10 requests: request i at rate 1 + 9 i / 9 = 1 + i.
  ArrivalOptions o;
  o.kind = ArrivalKind::kConstant;
  o.ramp = RampKind::kLinear;
  o.ramp_start_rps = 1;
  o.ramp_end_rps = 10;
  o.total_requests = 10;
  ArrivalSchedule s(o);
  double t = 0;
  for (int i = 0; i < 10; ++i) {
    EXPECT_DOUBLE_EQ(s.CurrentRate(), 1 + i);
    t += 1000.0 / (1 + i);
    EXPECT_NEAR(s.NextMs(), t, 1e-9);
  }
  // exponential 1 -> 16 over 5 requests: 1, 2, 4, 8, 16.
  o.ramp = RampKind::kExponential;
  o.ramp_end_rps = 16;
  o.total_requests = 5;
  ArrivalSchedule e(o);
  for (double want : {1.0, 2.0, 4.0, 8.0, 16.0}) {
    EXPECT_NEAR(e.CurrentRate(), want, 1e-9);
    e.NextMs();
  }
}

TEST(Arrivals, BadOptionsNameTheFlag) {
  ArrivalOptions o;
  o.rate = 0;
  EXPECT_EQ(testing::ErrorOf([&] { ArrivalSchedule s(o); }), "--request-rate: expected a rate > 0 (or inf), got 0");
  o.rate = 1;
  o.kind = ArrivalKind::kGamma;
  o.burstiness = -1;
  EXPECT_EQ(testing::ErrorOf([&] { ArrivalSchedule s(o); }), "--burstiness: expected a finite number > 0, got -1");
  ArrivalOptions r;
  r.ramp = RampKind::kLinear;
  r.ramp_start_rps = 1;
  r.ramp_end_rps = 2;
  EXPECT_EQ(testing::ErrorOf([&] { ArrivalSchedule s(r); }),
            "--ramp-up: needs --requests or --duration-s to know how long the ramp lasts");
  EXPECT_EQ(testing::ErrorOf([] { ParseArrivalKind("uniform"); }),
            "--arrival: expected poisson, gamma or constant, got \"uniform\"");
}

}  // namespace
}  // namespace ppdeploy::stats
