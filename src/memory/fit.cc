// The fit of the memory constants to one real boot (memory/overheads.h FitConstants): each constant from
// the column of the boot log that shows it, the rest of each stage's available memory as a per-role residual.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "core/units.h"
#include "memory/overheads.h"

namespace ppdeploy {
namespace {

constexpr double kRounding = 0.005;  // two printed decimals

FittedConstant Fitted(double value, double plus_minus, std::string source) {
  return FittedConstant{value, plus_minus, std::move(source)};
}

// The boot, its stages and the constants being fitted.
struct Fit {
  const Calibration& c;
  const std::vector<CalibrationStage>& stages;
  const ModelConfig& model;
  const GpuSpec& gpu;
  const VllmProfile& vllm;
  std::vector<std::string>* notes;
  MemoryConstants k;
  size_t n = 0;  ///< stages with a calibration rank
  bool distributed = false, n_era = false;

  StageMemory Estimate(size_t i) const { return EstimateStageMemory(model, gpu, vllm, stages[i].inputs, k); }
  void Note(std::string s) const {
    if (notes) notes->push_back(std::move(s));
  }
  // What stage i's available memory would be with the constants so far.
  std::int64_t AvailableBytes(size_t i) const {
    return stages[i].requested_bytes - stages[i].weights_bytes - Estimate(i).budget().value;
  }
};

// 1. The CUDA context (outside the budget) from the logged context.
void FitContext(Fit& f) {
  if (!f.c.cuda_context_gib) return;
  FittedConstant& ctx = f.distributed ? f.k.cuda_context_distributed_gib : f.k.cuda_context_gib;
  ctx = Fitted(*f.c.cuda_context_gib, kRounding + 0.05, "calibration: logged CUDA context");
  f.Note(fmt::format("CUDA context {:.2f} GiB from the calibration", *f.c.cuda_context_gib));
}

// 2. The communication / runtime constant from the non-torch column (N era: consumed - weights).
void FitNonTorch(Fit& f) {
  double sum = 0;
  int count = 0;
  for (size_t i = 0; i < f.n; ++i) {
    const CalibrationRank& r = f.c.ranks[i];
    std::optional<double> logged;
    if (r.non_torch_gib) logged = *r.non_torch_gib;
    if (!logged && f.n_era && r.weights_plus_non_torch_gib)
      logged = *r.weights_plus_non_torch_gib -
               (r.model_loading_gib ? *r.model_loading_gib : ToGiB(f.stages[i].weights_bytes));
    if (!logged) continue;
    sum += *logged - ToGiB(f.Estimate(i).non_torch.value);
    ++count;
  }
  if (count == 0) return;
  const double delta = sum / count;
  FittedConstant& target = f.c.tensor_parallel_size > 1 ? f.k.tp_comm_gib
                           : f.distributed              ? f.k.runtime_distributed_gib
                                                        : f.k.runtime_gib;
  target = Fitted(target.value + delta, kRounding + 0.05, "calibration: the logged non-torch column");
  f.Note(fmt::format("{} {:+.3f} GiB -> {:.3f} GiB from the non-torch column of {} rank(s)",
                     f.c.tensor_parallel_size > 1 ? "TP communication" : "CUDA runtime", delta, target.value, count));
}

// 3. The CUDA-graph scale from the logged pools.
void FitGraphScale(Fit& f) {
  double ratio_sum = 0;
  int count = 0;
  for (size_t i = 0; i < f.n; ++i) {
    if (!f.c.ranks[i].cuda_graph_gib) continue;
    const std::int64_t modelled = f.Estimate(i).cuda_graph_actual.value;
    if (modelled <= 0) continue;
    ratio_sum += GiBToBytes(*f.c.ranks[i].cuda_graph_gib) / static_cast<double>(modelled);
    ++count;
  }
  if (count == 0) return;
  const double ratio = ratio_sum / count;
  FittedConstant& scale = f.k.cuda_graph_scale;
  scale = Fitted(scale.value * ratio, 0.1 * scale.value * ratio, "calibration: the logged CUDA-graph pools");
  f.Note(fmt::format("CUDA-graph scale x{:.3f} -> {:.3f} from {} logged pool(s)", ratio, scale.value, count));
}

// 4. The profile workspace factor from the activation column (N era: it includes the CG estimate), else from
// the available memory alone (the least constrained term).
void FitWorkspace(Fit& f) {
  double sum = 0;
  int count = 0;
  for (size_t i = 0; i < f.n; ++i) {
    if (!f.c.ranks[i].peak_activation_gib) continue;
    StageMemory s = f.Estimate(i);
    double modelled = ToGiB(s.activation.value + (f.n_era ? s.cuda_graph_estimate.value : 0));
    sum += (*f.c.ranks[i].peak_activation_gib - modelled) * f.stages[i].inputs.tensor_parallel_size;
    ++count;
  }
  FittedConstant& ws = f.k.profile_workspace_tp_gib;
  const int tp = f.c.tensor_parallel_size;
  if (count > 0) {
    const double delta = sum / count;
    ws = Fitted(ws.value + delta, (kRounding + 0.05) * tp + 0.1 * std::abs(ws.value + delta),
                "calibration: the logged activation column");
    f.Note(fmt::format("profile workspace {:+.3f} GiB x TP -> {:.3f} GiB / TP from the activation column of {} rank(s)",
                       delta, ws.value, count));
    return;
  }
  for (size_t i = 0; i < f.n; ++i) {
    sum += (ToGiB(f.AvailableBytes(i)) - f.c.ranks[i].available_kv_gib) * f.stages[i].inputs.tensor_parallel_size;
    ++count;
  }
  if (count == 0) return;
  const double delta = sum / count;
  ws = Fitted(ws.value + delta, (kRounding + 0.1) * tp + 0.1 * std::abs(ws.value + delta),
              "calibration: the logged available KV memory");
  f.Note(
      fmt::format("profile workspace {:+.3f} GiB x TP from the available KV memory of {} rank(s) (no "
                  "activation figure logged)",
                  delta, count));
}

// 5. What is left per rank, by role (so the boot itself is reproduced exactly): the mean residual of the ranks
// of each role (first, middle, last, single stage).
void FitResiduals(Fit& f) {
  MemoryConstants& k = f.k;
  k.residual_first = k.residual_middle = k.residual_last = k.residual_single = 0;
  std::int64_t sums[4] = {0, 0, 0, 0};
  int counts[4] = {0, 0, 0, 0};
  for (size_t i = 0; i < f.n; ++i) {
    const std::int64_t avail = f.AvailableBytes(i);
    const StageInputs& in = f.stages[i].inputs;
    const int role = in.pipeline_parallel_size == 1 ? 3 : in.first() ? 0 : in.last() ? 2 : 1;
    sums[role] += avail - GiBToBytes(f.c.ranks[i].available_kv_gib);
    ++counts[role];
  }
  auto mean = [&](int role) { return counts[role] ? sums[role] / counts[role] : 0; };
  if (f.c.pipeline_parallel_size > 1) {
    k.residual_first = mean(0);
    k.residual_last = mean(2);
    k.residual_middle = counts[1] ? mean(1) : (k.residual_first + k.residual_last) / 2;
    k.residual_single = (k.residual_first + k.residual_last) / 2;
  } else {
    k.residual_first = k.residual_middle = k.residual_last = k.residual_single = mean(3);
  }
}

}  // namespace

MemoryConstants FitConstants(const Calibration& c, const std::vector<CalibrationStage>& stages,
                             const ModelConfig& model, const GpuSpec& gpu, const VllmProfile& vllm,
                             const MemoryConstants& defaults, std::vector<std::string>* notes) {
  Fit f{c, stages, model, gpu, vllm, notes, defaults};
  f.k.calibrated = true;
  f.k.name = "calibrated from " + c.source;
  f.k.source = c.source;
  f.n = std::min(stages.size(), c.ranks.size());
  f.distributed = c.tensor_parallel_size * c.pipeline_parallel_size > 1;
  f.n_era = vllm.accounting == MemoryAccounting::kNConsumed;
  FitContext(f);
  FitNonTorch(f);
  FitGraphScale(f);
  FitWorkspace(f);
  FitResiduals(f);
  return f.k;
}

}  // namespace ppdeploy
