// Planner speed (issue 2: the default plan in under 50 ms; issue 3: the split optimiser for
// PP 2..16 over 128 layers in under 10 ms). Run: build/plan_bench
#include <benchmark/benchmark.h>

#include "deploy/plan.h"
#include "io/deployment_inputs.h"
#include "layout/optimizer.h"
#include "layout/plan_report.h"
#include "model/presets.h"

namespace ppdeploy {
namespace {

// The embedded defaults plus `settings`; no environment, no profile file.
SettingInputs BenchInputs(const std::map<std::string, std::string>& settings) {
  SettingInputs in;
  in.vllm_defaults_text = VllmDefaultsText();
  in.defaults_text = DefaultDeploymentText();
  for (const auto& [k, v] : settings) in.flags[k] = FlagValue{v, FlagName(k)};
  return in;
}

// The whole default plan as `ppdeploy plan` builds it: deployment, every layout, the optimiser.
void BM_DefaultPlan(benchmark::State& state) {
  for (auto _ : state) {
    PlanReport r = PlanDeployment(ResolveDeploymentFrom(BenchInputs({})), PlanChoices{});
    benchmark::DoNotOptimize(r);
  }
}
BENCHMARK(BM_DefaultPlan)->Unit(benchmark::kMillisecond);

// A 128-layer DSA model (the seed's dimensions with 128 layers), split optimiser at PP = 2..16.
Deployment Model128() {
  Deployment d =
      ResolveDeploymentFrom(
          BenchInputs(
              {{"calibration", ""}, {"max_model_len", "131072"}, {"gpu", "h200"}, {"gpus", "all"}, {"nodes", "2"}}))
          .planner;
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
