// Planner speed (issue 2: the default plan in under 50 ms; issue 3: the split optimiser for
// PP 2..16 over 128 layers in under 10 ms). Run: build/plan_bench
#include <benchmark/benchmark.h>

#include "cli/deployment_options.h"
#include "layout/optimizer.h"
#include "layout/plan_report.h"
#include "model/presets.h"

namespace ppdeploy {
namespace {

// The whole default plan as `ppdeploy plan` builds it: deployment, every layout, the optimiser.
void BM_DefaultPlan(benchmark::State& state) {
  for (auto _ : state) {
    std::vector<LayoutSpec> layouts;
    Deployment d = cli::DeploymentOptions{}.Build(&layouts);
    PlanReport r = BuildPlanReport(d, layouts, true);
    r.optimizations.push_back(OptimizeSplit(d, 4, 2));
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_DefaultPlan)->Unit(benchmark::kMillisecond);

// A 128-layer DSA model (the seed's dimensions with 128 layers), split optimiser at PP = 2..16.
Deployment Model128() {
  cli::DeploymentOptions o;
  o.no_calibration = true;
  o.max_model_len = 131072;
  o.gpu = "h200";
  o.gpus = 16;
  Deployment d = o.Build();
  nlohmann::json cfg = FindModelPreset("glm-5.3-w4a16")->config;
  cfg["num_hidden_layers"] = 128;
  d.model = ParseModelConfig(cfg, "glm-128-layers");
  d.weights = EstimateWeights(d.model);
  return d;
}

void BM_OptimizeSplit128Layers(benchmark::State& state) {
  Deployment d = Model128();
  const int pp = static_cast<int>(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(OptimizeSplit(d, 1, pp));
}
BENCHMARK(BM_OptimizeSplit128Layers)->DenseRange(2, 16, 2)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace ppdeploy

BENCHMARK_MAIN();
