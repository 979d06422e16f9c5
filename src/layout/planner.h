// The planner: per-GPU memory and the KV pool of one layout (TP x PP, layer split), exact to
// vLLM's block arithmetic, and the list of layouts for a number of GPUs (seed digest §2-§6;
// vllm-rules.md §1). Pure: no I/O.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/provenance.h"
#include "layout/index_share.h"
#include "layout/partition.h"
#include "memory/kv.h"
#include "memory/overheads.h"
#include "memory/pool.h"
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
  /// FORCE_V2_RUNNER as resolved: "" (auto: the launcher pins VLLM_USE_V2_MODEL_RUNNER=1 at PP > 1
  /// where the version reads it), "0" or "1". Decides which runner profiles memory (UsesV2ModelRunner).
  std::string force_v2_runner;
  std::optional<Calibration> calibration;
  std::vector<std::string> notes;  ///< provenance notes from resolving the inputs

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

/// One layout to plan. An empty partition means vLLM's default split.
struct LayoutSpec {
  int tensor_parallel_size = 1;
  int pipeline_parallel_size = 1;
  int data_parallel_size = 1;
  std::vector<int> layer_partition;
  bool describe = true;  ///< false: no memory-term texts (the split optimiser's candidates)
};

/// One figure with its provenance and its range: lo <= bytes <= hi. A measured or given figure
/// has lo == bytes == hi (no range is shown).
struct Figure {
  std::int64_t bytes = 0;
  Provenance provenance = Provenance::kEstimated;
  std::int64_t lo = 0, hi = 0;
  static Figure Of(const Interval& i, Provenance p) { return Figure{i.value, p, i.lo, i.hi}; }
  static Figure Exact(std::int64_t b, Provenance p) { return Figure{b, p, b, b}; }
  bool has_range() const { return lo != bytes || hi != bytes; }
  Interval interval() const { return Interval{bytes, lo, hi}; }
};

/// One PP stage (every TP rank of it is identical).
struct RankPlan {
  int pp_rank = 0;
  LayerRange layers;
  int attention_layers = 0;  ///< backbone layers + MTP layers on this rank
  int mtp_layers = 0;
  int indexer_caches = 0;            ///< layers owning a DSA indexer k-cache (incl. forced, MTP)
  std::vector<int> forced_layers;    ///< fix B forced layers on this rank
  std::int64_t bytes_per_token = 0;  ///< sum of this rank's KV specs per token
  std::int64_t page_bytes = 0;  ///< bytes of one pool block on this rank (block_size x bytes_per_token for one group)
  std::int64_t kv_needed_bytes = 0;  ///< one max_model_len request on this rank (vLLM's start-up check)

  std::int64_t requested_bytes = 0;  ///< ceil(total x gpu_memory_utilization)
  Figure weights;
  Figure non_torch;
  Figure activation;                       ///< transient peak of the profile run
  Figure cuda_graph_estimate;              ///< subtracted when the version does
  Figure cuda_graph_actual;                ///< outside the budget
  Figure cuda_context;                     ///< outside the budget
  Figure available_kv;                     ///< the budget left for KV
  std::int64_t num_blocks = 0;             ///< floor(available / page) on this rank
  std::int64_t kv_allocated_bytes = 0;     ///< pool x page: tensors shrink to the pool
  std::int64_t kv_unusable_bytes = 0;      ///< available - allocated: idle on this rank
  std::int64_t nvidia_smi_used_bytes = 0;  ///< estimate: everything resident after start
  std::int64_t headroom_bytes = 0;         ///< nvidia-smi total - used
  bool binding = false;                    ///< sets the pool
  std::vector<MemoryTerm> memory_terms;    ///< every cause of non-weight memory on this stage
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

/// Weights of one PP stage on one GPU (embedding first, head + MTP last, indexers where vLLM
/// builds them incl. `forced` layers), plus the DSA top-k buffer allocated at model init, plus
/// the vocab-sized matrices the MTP drafter loads itself when PP > 1 (v1/spec_decode/eagle.py
/// load_model shares embed_tokens only when get_pp_group().world_size == 1; version row field
/// mtp_own_vocab_weights_with_pp).
std::int64_t StageWeightsBytes(const Deployment& d, int tp, int dp, const std::vector<int>& partition, int pp_rank,
                               const std::vector<int>& forced);
/// The same for `m` = EffectiveModel(d) computed once by the caller (the planner's inner loops).
std::int64_t StageWeightsBytes(const Deployment& d, const ModelConfig& m, int tp, int dp,
                               const std::vector<int>& partition, int pp_rank, const std::vector<int>& forced);

/// The vocab-sized matrices (embed_tokens, shared_head.head) the MTP drafter loads itself on
/// the last stage when PP > 1 (0 at PP 1, where it shares the target's).
std::int64_t MtpDrafterVocabBytes(const Deployment& d, const ShardParams& sp, int pp);

/// Per-rank KV bytes per token (backbone + MTP on the last rank + indexer caches).
std::int64_t StageKvBytesPerToken(const Deployment& d, const EffectiveKv& kv, int tp, const std::vector<int>& partition,
                                  int pp_rank, const std::vector<int>& forced);

/// The cache-owning layers of one PP stage with their vLLM KV specs at `block_size` (attention
/// kinds, DSA indexer caches, MTP layers on the last stage, mamba / linear state at
/// `mamba_page_padded`); layers that share another layer's KV own none.
std::vector<KvLayer> StageKvLayers(const Deployment& d, const EffectiveKv& kv, int tp, int block_size,
                                   const std::vector<int>& partition, int pp_rank, const std::vector<int>& forced);
/// The same for `m` = EffectiveModel(d) computed once by the caller.
std::vector<KvLayer> StageKvLayers(const Deployment& d, const ModelConfig& m, const EffectiveKv& kv, int tp,
                                   int block_size, const std::vector<int>& partition, int pp_rank,
                                   const std::vector<int>& forced);

/// vLLM's default split for this version (get_pp_indices: the remainder on the last stage before
/// #13839, else one extra layer each on the stages before the last).
std::vector<int> DefaultSplit(const VllmProfile& vllm, int num_hidden_layers, int pp_size);

/// Whether --decode-context-parallel-size `dcp` can start, and why not: the version row (the
/// flag, DSA on FLASHINFER_MLA_SPARSE), the backend's decode LSE (FLASHMLA_SPARSE has none), the
/// model (sliding-window / mamba layers: SlidingWindowSpec asserts DCP 1) and GQA's head rule
/// (tp > num_key_value_heads and dcp <= tp / num_key_value_heads). Empty string = supported.
std::string DcpRefusal(const Deployment& d, const ModelConfig& model, const EffectiveKv& kv, int tp, int dcp);

/// Whether the V2 model runner profiles this layout: FORCE_V2_RUNNER "1", or auto with PP > 1
/// on a version that reads VLLM_USE_V2_MODEL_RUNNER (the launcher pins it, deploy/resolve.h
/// DecideV2Runner); else the architecture's default V1 runner (vllm/config/vllm.py
/// DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES holds none of the MLA / DSA MoE classes, vllm-rules.md §1.11).
bool UsesV2ModelRunner(const Deployment& d, int pipeline_parallel_size);

/// The memory constants a deployment plans with: fitted to its calibration (a real boot of the
/// same model, GPU and image; FitConstants), else data/memory/constants.json's set for the GPU
/// and version. `notes` (optional) receives what was fitted.
MemoryConstants ConstantsFor(const Deployment& d, std::vector<std::string>* notes = nullptr);

/// Non-KV, non-weight memory of one stage, by cause, from the constants (src/memory/overheads.h).
struct StageOverhead {
  Figure non_torch, activation, cuda_graph_estimate, cuda_graph_actual, cuda_context;
  std::vector<MemoryTerm> terms;
  Interval budget;  ///< what the KV budget loses: non-torch + activation + the subtracted CG estimate
  std::int64_t budget_bytes() const { return budget.value; }
};
/// `dense_layers`: stage layers with a dense MLP (the rest are MoE).
StageOverhead StageOverheads(const Deployment& d, const MemoryConstants& k, int tp, int pp, int dp, int pp_rank,
                             int local_layers, int dense_layers, bool describe = true);
/// The same for `m` = EffectiveModel(d) and the stage's own GPU (stage_gpus), computed once by the caller.
StageOverhead StageOverheads(const Deployment& d, const ModelConfig& m, const GpuSpec& gpu, const MemoryConstants& k,
                             int tp, int pp, int dp, int pp_rank, int local_layers, int dense_layers,
                             bool describe = true);
/// The budget bytes of StageOverheads alone, for `m` = EffectiveModel(d) computed once by the
/// caller and without the terms' texts (the split optimiser evaluates thousands of stages).
std::int64_t StageBudgetBytes(const Deployment& d, const ModelConfig& m, const MemoryConstants& k, int tp, int pp,
                              int dp, int pp_rank, int local_layers, int dense_layers);

/// The relative half-width of a stage's weight figure: headers read (checkpoint) or estimated
/// from config.json, tighter when a calibration measured the weights of its own layout.
double WeightsUncertainty(const Deployment& d);

/// ceil(total x gpu_memory_utilization) (vllm/v1/worker/utils.py request_memory).
std::int64_t RequestedBytes(const Deployment& d);

/// The forced layers the plan counts for `partition` under d.index_fix and the profile.
std::vector<int> ForcedLayersFor(const Deployment& d, const std::vector<int>& partition);

/// The model as the plan sees it (index_topk_freq=1 under IndexFix::kAllFull).
ModelConfig EffectiveModel(const Deployment& d);

/// Whether fix B is in effect for `d`.
bool FixApplied(const Deployment& d);

}  // namespace ppdeploy
