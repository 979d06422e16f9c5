// What vLLM spends on a GPU before the KV cache, besides weights: non-torch memory, the peak
// activation of the profile run, and the CUDA-graph estimate (memory-overheads.md §3-§5, §7),
// plus the calibration profile that replaces these estimates with a real boot's figures.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/provenance.h"
#include "model/config.h"
#include "model/gpu.h"
#include "vllm/profile.h"

namespace ppdeploy {

/// Inputs of the estimate for one GPU.
struct OverheadInputs {
  int tensor_parallel_size = 1;
  int pipeline_parallel_size = 1;
  bool first_stage = true;
  bool last_stage = true;
  int local_layers = 0;           ///< backbone layers on this stage
  bool mtp_on = false;            ///< MTP speculation (drafter on the last stage)
  std::int64_t max_model_len = 0;
  int max_num_seqs = 256;
  int max_num_batched_tokens = 2048;
  bool enforce_eager = false;
  int expert_shards = 1;
};

/// Non-KV memory of one GPU, bytes.
struct Overheads {
  std::int64_t non_torch_bytes = 0;            ///< incl. persistent workspaces (DSA indexer, MoE)
  std::int64_t activation_bytes = 0;           ///< transient peak of the profile run
  std::int64_t cuda_graph_estimate_bytes = 0;  ///< vLLM's estimate, subtracted since v0.21
  std::int64_t cuda_graph_actual_bytes = 0;    ///< the pool after KV allocation (outside the budget)
  std::int64_t cuda_context_bytes = 0;         ///< before the memory snapshot (outside the budget)
  Provenance provenance = Provenance::kEstimated;
  std::string note;
};

/// The estimator of memory-overheads.md §7 (labelled [fit]/[rule]/[guess] there).
Overheads EstimateOverheads(const ModelConfig& model, const GpuSpec& gpu, const VllmProfile& vllm,
                            const OverheadInputs& in);

/// The DSA indexer's persistent WorkspaceManager block, 40 x max_model_len rows of
/// index bytes + 1 MiB (memory-overheads.md §3; vLLM get_max_prefill_buffer_size). 0 for non-DSA.
std::int64_t DsaWorkspaceBytes(const ModelConfig& model, std::int64_t max_model_len);

/// vLLM's default max_num_batched_tokens / max_num_seqs for the OpenAI server on this GPU
/// (EngineArgs.get_batch_defaults, memory-overheads.md §4).
std::pair<int, int> DefaultBatchLimits(const GpuSpec& gpu, const VllmProfile& vllm);

/// One PP stage of a real boot, as logged (GiB as printed, two decimals).
struct CalibrationRank {
  int pp_rank = 0;
  double available_kv_gib = 0;                       ///< "Available KV cache memory"
  std::optional<double> model_loading_gib;           ///< "Model loading took"
  std::optional<double> weights_plus_non_torch_gib;  ///< consumed memory (weights + non-torch)
  std::optional<double> peak_activation_gib;         ///< incl. the CUDA-graph estimate (N era)
  std::optional<double> cuda_graph_gib;              ///< actual graph pool
  std::optional<double> nvidia_smi_mib;              ///< nvidia-smi used after start
};

/// A calibration profile: one real boot, written by `ppdeploy calibrate` (schema
/// ppdeploy.calibration/1) or shipped in data/calibration/.
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
  std::vector<CalibrationRank> ranks;
};

/// Parses a calibration JSON document; errors name `source` and the field.
Calibration ParseCalibration(const nlohmann::json& j, const std::string& source);
nlohmann::json CalibrationToJson(const Calibration& c);

}  // namespace ppdeploy
