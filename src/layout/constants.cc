// The memory constants a deployment plans with (layout/planner.h ConstantsFor): the set of
// data/memory/constants.json for its GPU and version, or that set fitted to its calibration's own
// boot (memory/overheads.h FitConstants), planned at the calibration's layout.
#include <vector>

#include "core/error.h"
#include "core/units.h"
#include "layout/planner.h"

namespace ppdeploy {

Deployment CalibrationBootDeployment(const Deployment& d, const Calibration& c) {
  Deployment cd = d;
  cd.calibration.reset();
  cd.num_speculative_tokens = c.num_speculative_tokens;
  cd.max_model_len = c.max_model_len;
  cd.gpu_memory_utilization = c.gpu_memory_utilization;
  cd.gpu.total_gib = c.total_gib;
  if (c.max_num_seqs) cd.max_num_seqs = *c.max_num_seqs;
  if (c.max_num_batched_tokens) cd.max_num_batched_tokens = *c.max_num_batched_tokens;
  if (!c.kv_cache_dtype.empty()) {
    try {
      cd.kv_cache_dtype = ParseKvCacheDtype(c.kv_cache_dtype);
    } catch (const Error&) {
      // an unknown dtype string in an older file: keep the deployment's
    }
  }
  return cd;
}

namespace {

// The total GiB each calibration rank booted with: a deployment with a GPU type per PP stage (stage_gpus) and
// the calibration's PP size is the calibration's own boot (as `calibrate --stage-gpus` reads it), so a rank on
// another GPU type than the calibration's `gpu` requested that GPU's total x utilisation (gpu_worker.py
// determine_available_memory: requested_memory = total x gpu_memory_utilization, per worker). total_gib is the
// figure of the calibration's own GPU (the logged one when logged).
double RankTotalGib(const Deployment& d, const Calibration& c, int pp_rank) {
  const int cpp = c.pipeline_parallel_size;
  if (static_cast<int>(d.stage_gpus.size()) != cpp || pp_rank < 0 || pp_rank >= cpp) return c.total_gib;
  const GpuSpec& g = d.stage_gpus[static_cast<size_t>(pp_rank)];
  return g.name == c.gpu ? c.total_gib : g.total_gib;
}

}  // namespace

MemoryConstants ConstantsFor(const Deployment& d, std::vector<std::string>* notes) {
  MemoryConstants defaults = DefaultMemoryConstants(d.gpu, d.vllm);
  if (!d.calibration) return defaults;
  const Calibration& c = *d.calibration;
  const Deployment cd = CalibrationBootDeployment(d, c);
  const int cpp = c.pipeline_parallel_size, ctp = c.tensor_parallel_size;
  std::vector<int> cpart =
      c.layer_partition.empty() ? DefaultSplit(d.vllm, d.model.num_hidden_layers, cpp) : c.layer_partition;
  const ModelConfig m = EffectiveModel(cd);
  std::vector<int> cforced = ForcedLayersFor(cd, cpart);
  std::vector<CalibrationStage> stages;
  for (const auto& r : c.ranks) {
    const StagePlacement s = PlaceStage(ctp, 1, cpart, r.pp_rank, cforced);
    CalibrationStage st;
    st.inputs =
        StageInputsFor(cd, m, ctp, cpp, 1, r.pp_rank, s.local_layers(), DenseMlpLayers(m, s.layer_start, s.layer_end));
    st.weights_bytes = StageWeightsBytes(cd, m, s);
    st.requested_bytes = RequestedBytes(GiBToBytes(RankTotalGib(d, c, r.pp_rank)), c.gpu_memory_utilization);
    stages.push_back(st);
  }
  return FitConstants(c, stages, m, cd.gpu, cd.vllm, defaults, notes);
}

}  // namespace ppdeploy
