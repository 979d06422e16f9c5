// The deployment as the memory model and the planner read it: everything about a deployment except
// the layout (model, weights, GPUs, the vLLM version row, the memory settings, speculation, the
// calibration), and the facts derived from it alone (the model as planned, the V2 model runner,
// the batch limits, the requested memory). The resolver (deploy/resolve.h) builds it. Pure: no I/O.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "memory/kv.h"
#include "memory/overheads.h"
#include "memory/weights.h"
#include "model/config.h"
#include "model/gpu.h"
#include "vllm/profile.h"

namespace ppdeploy {

/// Which fix for the DSA index-share PP defect the plan assumes (issue 8).
enum class IndexFix {
  kProfile,  ///< whatever the vLLM profile provides (builtin / pattern / none)
  kNone,     ///< no fix: forced layers stay unsafe and own no indexer cache
  kPattern,  ///< `index_topk_pattern` override: forced layers become full ('F')
  kAllFull,  ///< the seed's diagnostic index_topk_freq=1: every layer computes its own index
};

/// Everything about a deployment except the layout.
struct Deployment {
  std::string model_name;  ///< preset name or path, for display
  ModelConfig model;
  WeightTable weights;
  GpuSpec gpu;
  int gpus_per_node = 8;
  int nodes = 1;
  VllmProfile vllm;
  double gpu_memory_utilization = 0.9;
  KvCacheDtype kv_cache_dtype = KvCacheDtype::kAuto;
  int num_speculative_tokens = 0;  ///< MTP draft tokens k; 0 = no MTP speculation
  std::int64_t max_model_len = 0;  ///< 0 = the model's max_position_embeddings
  int block_size = 0;              ///< 0 = vLLM's default for the backend
  std::optional<std::int64_t> num_gpu_blocks_override;
  std::optional<std::int64_t> kv_cache_memory_bytes;
  int max_num_seqs = 0;            ///< 0 = vLLM's default for the GPU
  int max_num_batched_tokens = 0;  ///< 0 = vLLM's default for the GPU
  bool enforce_eager = false;
  bool enable_expert_parallel = false;
  int decode_context_parallel_size = 1;  ///< --decode-context-parallel-size (divides TP)
  Engine engine = Engine::kV1;           ///< the engine this release runs (V0 or V1)
  bool mla_kv = true;               ///< MLA latent cache; false = the pre-MLA MHA layout (< 0.7.1, VLLM_MLA_DISABLE=1)
  std::vector<GpuSpec> stage_gpus;  ///< per PP stage (mixed GPU types); empty = `gpu` everywhere
  IndexFix index_fix = IndexFix::kProfile;
  /// FORCE_V2_RUNNER as resolved: "" (vLLM's: nothing pinned), "auto" (VLLM_USE_V2_MODEL_RUNNER=1 at PP > 1
  /// where the version reads it), "0" or "1". Decides which runner profiles memory (UsesV2ModelRunner).
  std::string force_v2_runner;
  std::optional<Calibration> calibration;

  int total_gpus() const { return gpus_per_node * nodes; }
  /// The GPU of PP stage `pp_rank` (stage_gpus when given, else `gpu`).
  const GpuSpec& StageGpu(int pp_rank) const {
    return stage_gpus.empty() ? gpu : stage_gpus[std::min<size_t>(static_cast<size_t>(pp_rank), stage_gpus.size() - 1)];
  }
  bool mtp_on() const { return num_speculative_tokens > 0 && model.num_nextn_predict_layers > 0; }
  std::int64_t effective_max_model_len() const {
    return max_model_len > 0 ? max_model_len : model.max_position_embeddings;
  }
};

/// The model as the plan sees it: the pre-MLA MHA layout where the deployment has no MLA cache,
/// index_topk_freq=1 under IndexFix::kAllFull.
ModelConfig EffectiveModel(const Deployment& d);

/// Whether the V2 model runner runs a layout with `pipeline_parallel_size` stages: FORCE_V2_RUNNER
/// "1", or "auto" with PP > 1 (the launcher pins VLLM_USE_V2_MODEL_RUNNER=1 there,
/// deploy/resolve.h DecideV2Runner), on a version that reads VLLM_USE_V2_MODEL_RUNNER; else the
/// architecture's default V1 runner (vllm/config/vllm.py DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES holds
/// none of the MLA / DSA MoE classes, docs/vllm-rules.md §1.11). The one rule: the planner's memory, the
/// resolver's pin and the speculation decision all read it.
bool UsesV2ModelRunner(std::string_view force_v2_runner, int pipeline_parallel_size, const VllmProfile& vllm);
/// The same for `d`'s FORCE_V2_RUNNER and version.
bool UsesV2ModelRunner(const Deployment& d, int pipeline_parallel_size);

/// --max-num-batched-tokens as vLLM runs it: the deployment's, else the default for the GPU and
/// version (V0 without chunked prefill: max(max_model_len, 2048), chunked above 32K tokens: 2048).
int MaxNumBatchedTokens(const Deployment& d);
/// --max-num-seqs as vLLM runs it: the deployment's, else the default for the GPU and version.
int MaxNumSeqs(const Deployment& d);

/// ceil(total x gpu_memory_utilization) (vllm/v1/worker/utils.py request_memory).
std::int64_t RequestedBytes(std::int64_t total_bytes, double gpu_memory_utilization);
/// The same for d.gpu.
std::int64_t RequestedBytes(const Deployment& d);

/// The relative half-width of a stage's weight figure: headers read (checkpoint) or estimated
/// from config.json, tighter when a calibration measured the weights of its own layout.
double WeightsUncertainty(const Deployment& d);

}  // namespace ppdeploy
