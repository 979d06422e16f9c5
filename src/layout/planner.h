// The planner: per-GPU memory and the KV pool of one layout (TP x PP, layer split), exact to
// vLLM's block arithmetic, and the list of layouts for a number of GPUs (docs/seed.md §2-§6;
// docs/vllm-rules.md §1). PlanLayout runs in phases: resolve the stages (split, block size, index
// share, KV-cache groups), each stage's memory (memory/stage_memory.h, once per stage), the pool
// (memory/pool.h), the limits (problems and warnings), the report. Pure: no I/O.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/provenance.h"
#include "layout/index_share.h"
#include "layout/partition.h"
#include "memory/deployment.h"
#include "memory/kv.h"
#include "memory/overheads.h"
#include "memory/pool.h"
#include "memory/stage_memory.h"
#include "memory/weights.h"
#include "model/config.h"
#include "model/gpu.h"
#include "vllm/profile.h"

namespace ppdeploy {

/// One layout to plan. An empty partition means vLLM's default split.
struct LayoutSpec {
  int tensor_parallel_size = 1;
  int pipeline_parallel_size = 1;
  int data_parallel_size = 1;
  std::vector<int> layer_partition;
  bool describe = true;  ///< false: no memory-term texts (the split optimiser's candidates)
};

/// One PP stage (every TP rank of it is identical): where the layout put it, what it spends
/// (memory/stage_memory.h) and what the pool gives it.
struct RankPlan : StageMemoryPlan {
  int pp_rank = 0;
  LayerRange layers;
  int attention_layers = 0;  ///< backbone layers + MTP layers on this rank
  int mtp_layers = 0;
  int indexer_caches = 0;                  ///< layers owning a DSA indexer k-cache (incl. forced, MTP)
  std::vector<int> forced_layers;          ///< fix B forced layers on this rank
  std::int64_t num_blocks = 0;             ///< floor(available / page) on this rank
  std::int64_t kv_allocated_bytes = 0;     ///< pool x page: tensors shrink to the pool
  std::int64_t kv_unusable_bytes = 0;      ///< available - allocated: idle on this rank
  std::int64_t nvidia_smi_used_bytes = 0;  ///< estimate: everything resident after start
  std::int64_t headroom_bytes = 0;         ///< nvidia-smi total - used
  bool binding = false;                    ///< sets the pool
};

/// Why a layout cannot run as asked: a kind the gates and `wait` act on, the figures, and a
/// message for people. Consumers decide by `kind`, never by the text.
struct PlanProblem {
  enum class Kind {
    kWeightsOverBudget,    ///< a stage's weights exceed the memory budget (or the GPU)
    kNoKvMemory,           ///< nothing left for the KV cache on a stage
    kMaxModelLenTooLarge,  ///< one request of max_model_len does not fit the pool
    kPpSpeculation,        ///< the version rejects PP with speculative decoding
    kGpuCount,             ///< the layout needs more GPUs than the deployment has
    kDcpUnsupported,       ///< --decode-context-parallel-size that this version / backend / model refuses
  };
  Kind kind = Kind::kNoKvMemory;
  std::string message;
  int pp_rank = -1;       ///< the stage concerned, -1 = the whole layout
  std::int64_t need = 0;  ///< bytes (memory kinds), tokens (max_model_len) or GPUs (gpu count)
  std::int64_t have = 0;  ///< the same unit
};

/// "weights-over-budget", "no-kv-memory", "max-model-len-too-large", "pp-speculation", "gpu-count",
/// "dcp-unsupported".
std::string_view ProblemKindName(PlanProblem::Kind kind);

/// Which start-up check vLLM applies to max_model_len in the deployment's version row
/// (vllm/v1/core/kv_cache_utils.py get_kv_cache_configs; V0 LLMEngine._verify_args).
enum class LimitCheck {
  kV0Pool,      ///< V0: max_model_len <= num_gpu_blocks x block_size
  kPerWorker,   ///< V1: each worker's one-request need against its own available KV memory
  kMinMemory,   ///< v0.8: each worker's need against the minimum available memory over the workers
  kWholeModel,  ///< 0.14-0.15: the whole model's need against the minimum worker's memory (#29431 .. #33698)
};

/// "v0-pool", "per-worker", "min-memory", "whole-model".
std::string_view LimitCheckName(LimitCheck check);

/// The largest max_model_len of one layout, decided once (layout/planner.cc ComputeLimit) and
/// printed by every surface: plan, cmd / start's memory gate, the PP > 2 gate's alternatives,
/// calibrate. The decision is taken at the point estimate of every stage's available memory
/// (what the plan predicts vLLM sees); the low end of the range is reported beside it and the
/// memory gate warns when max_model_len lies above it.
struct MaxModelLenLimit {
  LimitCheck check = LimitCheck::kPerWorker;
  bool hybrid = false;               ///< several KV-cache groups: the per-request block need of every group
  std::int64_t largest = 0;          ///< at the point estimate: the decision
  std::int64_t largest_lo = 0;       ///< at the low end of every stage's range
  std::int64_t largest_hi = 0;       ///< at the high end
  int binding_rank = 0;              ///< the PP rank whose check sets `largest`
  std::int64_t available_bytes = 0;  ///< the memory that check compares with (point estimate)
  std::int64_t needed_bytes = 0;     ///< one max_model_len request as that check counts it
  bool fits = true;                  ///< max_model_len <= largest
  bool fits_low_end = true;          ///< max_model_len <= largest_lo
};

/// One layout's result.
struct LayoutPlan {
  LayoutSpec spec;
  bool partition_given = false;
  std::vector<int> partition;  ///< the split used
  std::vector<RankPlan> ranks;
  int block_size = 0;
  EffectiveKv kv;
  KvCacheGroups kv_groups;            ///< vLLM's KV-cache groups for this layout (memory/kv.h)
  std::vector<std::string> kv_notes;  ///< how the groups and block size were decided
  PoolResult pool;
  /// The pool at the low and high ends of every rank's available memory (the range printed with
  /// the pool; the memory gate uses pool_lo). Equal to `pool` when every figure is measured.
  PoolResult pool_lo, pool_hi;
  std::string constants;     ///< the memory constants used (set name or calibration)
  std::string capacity_log;  ///< the line(s) this vLLM version would log
  std::int64_t max_model_len = 0;
  MaxModelLenLimit limit;             ///< the largest max_model_len and the check that sets it
  bool feasible = true;               ///< starts and serves max_model_len
  std::vector<PlanProblem> problems;  ///< why not (weights over budget, no KV, max_model_len too big, ...)
  /// The first problem of `kind`, or nullptr.
  const PlanProblem* Problem(PlanProblem::Kind kind) const;
  std::vector<std::string> warnings;  ///< unsafe split, notes
  IndexShareReport index_share;
  bool index_share_safe = true;
  std::int64_t aggregate_kv_tokens = 0;  ///< kv_tokens x data_parallel_size
  double compute_balance = 0;            ///< max / min stage layer-equivalents (MTP counted k times)
  bool pp_gated = false;                 ///< PP > 2 on a DSA model with index sharing (the seed's gate refuses it)
};

/// Plans one layout. Throws Error for impossible inputs (TP not dividing heads, a partition that
/// vLLM would reject, a block size not a multiple of the kernel's); memory shortfalls are
/// reported in LayoutPlan::problems instead.
LayoutPlan PlanLayout(const Deployment& d, const LayoutSpec& spec);

/// Layouts for d.total_gpus(): every TP dividing the attention heads x PP <= layers with
/// TP x PP dividing the GPU count (DP = the rest), vLLM's default split.
std::vector<LayoutSpec> EnumerateLayouts(const Deployment& d);

/// Weights of one PP stage on one GPU (memory/stage_memory.h) for the stage `pp_rank` of
/// `partition` with fix-B `forced` layers.
std::int64_t StageWeightsBytes(const Deployment& d, int tp, int dp, const std::vector<int>& partition, int pp_rank,
                               const std::vector<int>& forced);
/// The same for `m` = EffectiveModel(d) computed once by the caller (the planner's inner loops).
std::int64_t StageWeightsBytes(const Deployment& d, const ModelConfig& m, int tp, int dp,
                               const std::vector<int>& partition, int pp_rank, const std::vector<int>& forced);

/// Per-rank KV bytes per token (backbone + MTP on the last rank + indexer caches).
std::int64_t StageKvBytesPerToken(const Deployment& d, const EffectiveKv& kv, int tp, const std::vector<int>& partition,
                                  int pp_rank, const std::vector<int>& forced);

/// The cache-owning layers of stage `pp_rank` of `partition` (memory/stage_memory.h StageKvLayers).
std::vector<KvLayer> StageKvLayers(const Deployment& d, const EffectiveKv& kv, int tp, int block_size,
                                   const std::vector<int>& partition, int pp_rank, const std::vector<int>& forced);

/// Stage `pp_rank` of `partition` under layout `tp` x PP (x `dp`) with fix-B `forced` layers.
StagePlacement PlaceStage(int tp, int dp, const std::vector<int>& partition, int pp_rank,
                          const std::vector<int>& forced);

/// vLLM's default split for this version (get_pp_indices: the remainder on the last stage before
/// #13839, else one extra layer each on the stages before the last).
std::vector<int> DefaultSplit(const VllmProfile& vllm, int num_hidden_layers, int pp_size);

/// Whether --decode-context-parallel-size `dcp` can start, and why not: the version row (the
/// flag, DSA on FLASHINFER_MLA_SPARSE), the backend's decode LSE (FLASHMLA_SPARSE has none), the
/// model (sliding-window / mamba layers: SlidingWindowSpec asserts DCP 1) and GQA's head rule
/// (tp > num_key_value_heads and dcp <= tp / num_key_value_heads). Empty string = supported.
std::string DcpRefusal(const Deployment& d, const ModelConfig& model, const EffectiveKv& kv, int tp, int dcp);

/// The memory constants a deployment plans with: fitted to its calibration (a real boot of the
/// same model, GPU and image; FitConstants), else data/memory/constants.json's set for the GPU
/// and version. `notes` (optional) receives what was fitted.
MemoryConstants ConstantsFor(const Deployment& d, std::vector<std::string>* notes = nullptr);

/// The calibration's own boot as the planner models it: `d` with the launch facts calibration `c`
/// records (max_model_len, gpu_memory_utilization, the GPU's total, MTP tokens, the batch limits,
/// the KV dtype) and without a calibration. The one place the fit (ConstantsFor) and the check
/// (calibration/check.h) derive it.
Deployment CalibrationBootDeployment(const Deployment& d, const Calibration& c);

/// The block size vLLM picks when --block-size is not given, before the hybrid mamba growth: 16 on the
/// V0 engine and the rows whose backends all used 16, else the attention backend's (memory/kv.h
/// DefaultBlockSize). One decision for the planner and the split optimiser.
int DefaultPlanBlockSize(const Deployment& d, const ModelConfig& m, const EffectiveKv& kv);

/// The forced layers the plan counts for `partition` under d.index_fix and the profile.
std::vector<int> ForcedLayersFor(const Deployment& d, const std::vector<int>& partition);

/// Whether fix B is in effect for `d`.
bool FixApplied(const Deployment& d);

}  // namespace ppdeploy
