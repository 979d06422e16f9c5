// The two computations whose speed the tests used to bound with a wall clock (issue 24: timing goes to
// bench/): Fisher's exact test on 20,000 trials per arm (20,001 tables: linear in the support since issue 15)
// and the verdict of two arms of 20,000 step times and degeneration trials (bootstrap and Fisher).
// Run: build-rel/stats_bench
#include <benchmark/benchmark.h>

#include "probes/verdict.h"
#include "stats/binomial.h"

namespace {

void BM_FisherTwentyThousand(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(ppdeploy::stats::FisherExact(10000, 20000, 10000, 20000));
}
BENCHMARK(BM_FisherTwentyThousand)->Unit(benchmark::kMillisecond);

void BM_VerdictTwentyThousand(benchmark::State& state) {
  ppdeploy::probes::VerifyResult a, b;
  a.label = "A";
  b.label = "B";
  for (int i = 0; i < 20000; ++i) {
    a.step_ms.push_back(34.0 + 0.001 * (i % 997));
    b.step_ms.push_back(34.2 + 0.001 * (i % 991));
  }
  a.degeneration = ppdeploy::probes::DegenerationSection{20000, 10000, {}, std::nullopt};
  b.degeneration = ppdeploy::probes::DegenerationSection{20000, 9800, {}, std::nullopt};
  for (auto _ : state) benchmark::DoNotOptimize(ppdeploy::probes::Compare(a, b));
}
BENCHMARK(BM_VerdictTwentyThousand)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
