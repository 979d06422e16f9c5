// What vLLM spends on one GPU before the KV cache, besides weights, as functions of their
// causes (docs/memory-overheads.md §1-§5 is the starting point; each term names the vLLM code that
// allocates it), the constants that depend only on the GPU, driver and image
// (data/memory/constants.json, the only numbers `calibrate` fits), and the calibration profile
// (one real boot) those constants are fitted from. Pure: no I/O.
//
// The budget (vllm/v1/worker/gpu_worker.py Worker.determine_available_memory, all versions):
//   available_kv = requested - weights - non_torch - activation - cuda_graph_estimate (if subtracted)
// What vLLM *books* under non-torch and activation depends on the profiler of the version
// (VllmProfile::accounting, vllm/utils/mem_utils.py memory_profiling):
//   v1_profiled (2025-06-10 .. 2026-07-19): non_torch = growth of (cuda used - torch reserved)
//     since the init snapshot; activation = torch peak increase = persistent torch buffers made in
//     the profile run (WorkspaceManager, PP receive buffers) + the transient peak.
//   n_consumed (since 2026-07-20, #49208): non_torch = consumed (free-memory drop) - weights, so
//     the persistent torch buffers move there; activation = transient_peak_headroom.
//   v1_absolute (v0.8-v0.9.0): as v1_profiled, and the CUDA context is non-torch too.
// Only the sum is stable across versions; the columns are what a boot log prints.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/interval.h"
#include "core/provenance.h"
#include "model/config.h"
#include "model/gpu.h"
#include "vllm/profile.h"

namespace ppdeploy {

/// One constant of the memory model: a value, the half-width of its honest range, and where it
/// comes from (a fit, a measurement, a guess).
struct FittedConstant {
  double value = 0;
  double plus_minus = 0;
  std::string source;
};

/// The GPU / driver / image constants (data/memory/constants.json "sets", or fitted from a boot
/// by FitConstants). Everything else is computed from the model, the layout and the version row.
struct MemoryConstants {
  std::string name;    ///< the set's name, or "calibrated from <source>"
  std::string source;  ///< where the set comes from
  bool calibrated = false;
  FittedConstant cuda_context_gib;              ///< CUDA context + torch init, world size 1 (before the snapshot)
  FittedConstant cuda_context_distributed_gib;  ///< the same with NCCL communicators (world size > 1)
  FittedConstant runtime_gib;              ///< lazily loaded kernels + cuBLAS workspaces at the first forward, world 1
  FittedConstant runtime_distributed_gib;  ///< the same when NCCL init already loaded part of it (world > 1)
  FittedConstant tp_comm_gib;  ///< NCCL / NVLS / all-reduce buffers allocated at the first TP collective, TP 2
  FittedConstant tp_comm_per_doubling_gib;  ///< their growth per doubling of TP beyond 2
  FittedConstant profile_workspace_gib;     ///< image-specific profile-run transient, per GPU
  FittedConstant
      profile_workspace_tp_gib;     ///< image-specific profile-run transient, divided by TP ("workspace factor")
  FittedConstant cuda_graph_scale;  ///< factor on the CUDA-graph pool model
  // Model-level constants (data/memory/constants.json "model"; the same for every set).
  FittedConstant sampler_bytes_per_logit;
  FittedConstant forward_fixed_gib;
  FittedConstant cuda_graph_base_gib;
  FittedConstant cuda_graph_per_layer_gib;
  FittedConstant cuda_graph_moe_layer_factor;
  // Per-rank residuals a calibration could not attribute (bytes; applied by stage role:
  // first-only, middle, last, single stage), so a calibration reproduces its own boot exactly.
  std::int64_t residual_first = 0, residual_middle = 0, residual_last = 0, residual_single = 0;
};

/// The constants set of data/memory/constants.json for `gpu` and `vllm` (first set whose
/// "match" holds). Errors name the file and field.
MemoryConstants DefaultMemoryConstants(const GpuSpec& gpu, const VllmProfile& vllm);
/// Parses a constants document (the embedded one or a test's).
std::vector<std::pair<nlohmann::json, MemoryConstants>> ParseMemoryConstants(const nlohmann::json& j,
                                                                             const std::string& source);

/// Where a term is booked.
enum class MemoryColumn {
  kNonTorch,           ///< the version's "non-torch" column (or consumed - weights)
  kActivation,         ///< the version's activation / torch-peak column
  kCudaGraphEstimate,  ///< subtracted as the CUDA-graph estimate
  kOutsideBudget,      ///< resident but not charged to the KV budget (context, graph pool, ...)
};

/// One cause of memory on one GPU.
struct MemoryTerm {
  std::string name;    ///< e.g. "sparse-MLA prefill workspace"
  std::string source;  ///< vLLM file / function and version rows
  std::string detail;  ///< the formula with this stage's numbers
  Interval bytes;
  MemoryColumn column = MemoryColumn::kNonTorch;
};

/// What one PP stage (every TP rank of it) runs, for the estimate.
struct StageInputs {
  int tensor_parallel_size = 1;
  int pipeline_parallel_size = 1;
  int pp_rank = 0;
  int local_layers = 0;      ///< backbone layers on the stage
  int dense_mlp_layers = 0;  ///< of them, layers with a dense MLP (the rest are MoE)
  bool mtp_on = false;       ///< MTP drafter on the last stage
  int num_speculative_tokens = 0;
  int mtp_layers = 0;
  std::int64_t max_model_len = 0;
  int max_num_seqs = 256;
  int max_num_batched_tokens = 2048;
  bool enforce_eager = false;
  int expert_shards = 1;           ///< TP, or TP x DP with --enable-expert-parallel
  bool v2_model_runner = false;    ///< VLLM_USE_V2_MODEL_RUNNER=1 (pinned by the launcher at PP > 1)
  int activation_dtype_bytes = 2;  ///< the model dtype vLLM computes in (--dtype)
  bool describe = true;            ///< false: figures only, no term texts (the split optimiser's inner loop)
  bool first() const { return pp_rank == 0; }
  bool last() const { return pp_rank == pipeline_parallel_size - 1; }
  int world_size() const { return tensor_parallel_size * pipeline_parallel_size; }
};

/// The non-weight memory of one stage, by cause, and booked into the version's columns.
struct StageMemory {
  std::vector<MemoryTerm> terms;
  Interval non_torch;            ///< the version's non-torch column
  Interval activation;           ///< the version's activation column (N era: without the CG estimate)
  Interval cuda_graph_estimate;  ///< subtracted from the budget (0 where the version does not)
  Interval cuda_graph_actual;    ///< the pool captured after the KV allocation
  Interval cuda_context;         ///< before the init snapshot
  /// What the KV budget loses: non-torch + activation + CG estimate.
  Interval budget() const;
};

/// The estimate for one stage (docs/memory-overheads.md §3-§5 structure; constants from `k`).
StageMemory EstimateStageMemory(const ModelConfig& model, const GpuSpec& gpu, const VllmProfile& vllm,
                                const StageInputs& in, const MemoryConstants& k);

/// vLLM's default max_num_batched_tokens / max_num_seqs for the OpenAI server on this GPU
/// (EngineArgs.get_batch_defaults, docs/memory-overheads.md §4).
std::pair<int, int> DefaultBatchLimits(const GpuSpec& gpu, const VllmProfile& vllm);

/// CUDA-graph capture sizes of a version for max_num_seqs, speculative k and
/// max_num_batched_tokens (vllm/config/compilation.py / vllm.py _set_cudagraph_sizes):
/// [1, 2, 4] + 8..248 step 8 + 256..max step 16 (step 8 throughout before v0.11), max =
/// min(max_num_seqs x (1 + k) x 2, 512, max_num_batched_tokens).
std::vector<int> CudaGraphCaptureSizes(const VllmProfile& vllm, int max_num_seqs, int num_speculative_tokens,
                                       int max_num_batched_tokens);

/// One PP stage of a real boot, as logged (GiB as printed, two decimals).
struct CalibrationRank {
  int pp_rank = 0;
  double available_kv_gib = 0;                       ///< "Available KV cache memory"
  std::optional<double> model_loading_gib;           ///< "Model loading took"
  std::optional<double> weights_plus_non_torch_gib;  ///< consumed memory (weights + non-torch), N era
  std::optional<double> peak_activation_gib;  ///< N era: incl. the CUDA-graph estimate; else the torch peak increase
  std::optional<double> cuda_graph_gib;       ///< actual graph pool
  std::optional<double> nvidia_smi_mib;       ///< nvidia-smi used after start
  std::optional<double> non_torch_gib;        ///< v1_profiled era: "non-torch forward increase"
};

/// A calibration profile: one real boot, written by `ppdeploy calibrate` (schema
/// ppdeploy.calibration/1, calibration/schema.h) or shipped in data/calibration/.
struct Calibration {
  std::string source;  ///< where the figures come from
  std::string model, gpu, vllm;
  int tensor_parallel_size = 1;
  int pipeline_parallel_size = 1;
  std::vector<int> layer_partition;
  double gpu_memory_utilization = 0.9;
  std::int64_t max_model_len = 0;
  std::string kv_cache_dtype;
  int num_speculative_tokens = 0;
  double total_gib = 0;
  std::optional<double> cuda_context_gib;
  std::optional<std::int64_t> logged_kv_tokens;
  std::optional<int> max_num_seqs;            ///< as the boot ran (else vLLM's default)
  std::optional<int> max_num_batched_tokens;  ///< as the boot ran (else vLLM's default)
  std::vector<CalibrationRank> ranks;
};

/// What FitConstants needs for each rank of the calibration's own layout: the modelled terms
/// with the default constants, and our weight estimate.
struct CalibrationStage {
  StageInputs inputs;
  std::int64_t weights_bytes = 0;    ///< our estimate at the calibration's layout
  std::int64_t requested_bytes = 0;  ///< ceil(total x util) of the boot
};

/// Fits the GPU / image constants of `defaults` to a boot (`c`, one entry of `stages` per
/// c.ranks, same order), keeping the structure: the CUDA context from the logged context, the
/// communication constant from the non-torch (or consumed) column, the graph scale from the
/// logged pools, the profile workspace factor from the activation column, and what is left of
/// each rank's available memory as a per-role residual. Ranges shrink to the print rounding
/// plus a transfer allowance. `notes` says what was fitted from what.
MemoryConstants FitConstants(const Calibration& c, const std::vector<CalibrationStage>& stages,
                             const ModelConfig& model, const GpuSpec& gpu, const VllmProfile& vllm,
                             const MemoryConstants& defaults, std::vector<std::string>* notes);

/// The residual of `k` that applies to a stage of this role.
std::int64_t RoleResidual(const MemoryConstants& k, const StageInputs& in);

}  // namespace ppdeploy
