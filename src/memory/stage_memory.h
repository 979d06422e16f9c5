// The memory of one PP stage (every TP rank of it is identical): its weights, its KV-cache specs,
// the non-KV memory by cause (memory/overheads.h), the budget left for the KV cache and the page
// the pool divides it by. The layout places the stage (layout/planner.h PlanLayout: its layers,
// the fix-B forced layers, the projected KV groups); this computes what it spends, once per stage,
// and hands the pool its typed input (StageMemoryPlan::pool_input). docs/seed.md §2-§6; docs/vllm-rules.md
// §1. Pure: no I/O.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/interval.h"
#include "core/provenance.h"
#include "memory/deployment.h"
#include "memory/kv.h"
#include "memory/overheads.h"
#include "memory/pool.h"
#include "memory/weights.h"

namespace ppdeploy {

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

/// One PP stage as the layout placed it: the layout's sizes, the stage's rank, its backbone
/// layers [layer_start, layer_end) and the fix-B forced layers the plan counts (any stage's:
/// only those in the range matter).
struct StagePlacement {
  int tensor_parallel_size = 1;
  int pipeline_parallel_size = 1;
  int data_parallel_size = 1;
  int pp_rank = 0;
  int layer_start = 0, layer_end = 0;
  std::vector<int> forced;
  bool first() const { return pp_rank == 0; }
  bool last() const { return pp_rank == pipeline_parallel_size - 1; }
  int local_layers() const { return layer_end - layer_start; }
  bool Forced(int layer) const;
};

/// Weights of one PP stage on one GPU (embedding first, head + MTP last, indexers where vLLM
/// builds them incl. forced layers), plus the DSA top-k buffer allocated at model init, plus the
/// vocab-sized matrices the MTP drafter loads itself when PP > 1 (v1/spec_decode/eagle.py
/// load_model shares embed_tokens only when get_pp_group().world_size == 1; version row field
/// mtp_own_vocab_weights_with_pp). `m` = EffectiveModel(d), computed once by the caller.
std::int64_t StageWeightsBytes(const Deployment& d, const ModelConfig& m, const StagePlacement& stage);

/// The vocab-sized matrices (embed_tokens, shared_head.head) the MTP drafter loads itself on
/// the last stage when PP > 1 (0 at PP 1, where it shares the target's).
std::int64_t MtpDrafterVocabBytes(const Deployment& d, const ShardParams& sp, int pp);

/// The cache-owning layers of one PP stage with their vLLM KV specs at `block_size` (attention
/// kinds, DSA indexer caches, MTP layers on the last stage, mamba / linear state padded to the
/// attention page); layers that share another layer's KV own none. `m` = EffectiveModel(d).
std::vector<KvLayer> StageKvLayers(const Deployment& d, const ModelConfig& m, const EffectiveKv& kv, int block_size,
                                   const StagePlacement& stage);

/// Backbone layers in [start, end) with a dense MLP (the rest are MoE).
int DenseMlpLayers(const ModelConfig& m, int start, int end);

/// What the overhead estimate (memory/overheads.h EstimateStageMemory) reads for one stage.
StageInputs StageInputsFor(const Deployment& d, const ModelConfig& m, int tp, int pp, int dp, int pp_rank,
                           int local_layers, int dense_layers);

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

/// What one stage spends and what it leaves for the KV cache (the budget of
/// vllm/v1/worker/gpu_worker.py determine_available_memory).
struct StageMemoryPlan {
  std::int64_t bytes_per_token = 0;  ///< sum of this rank's KV specs per token
  std::int64_t page_bytes = 0;  ///< bytes of one pool block on this rank (block_size x bytes_per_token for one group)
  std::int64_t kv_needed_bytes = 0;  ///< one max_model_len request on this rank (vLLM's start-up check)

  std::int64_t requested_bytes = 0;  ///< ceil(total x gpu_memory_utilization)
  Figure weights;
  Figure non_torch;
  Figure activation;                     ///< transient peak of the profile run
  Figure cuda_graph_estimate;            ///< subtracted when the version does
  Figure cuda_graph_actual;              ///< outside the budget
  Figure cuda_context;                   ///< outside the budget
  Figure available_kv;                   ///< the budget left for KV
  std::vector<MemoryTerm> memory_terms;  ///< every cause of non-weight memory on this stage

  /// What the pool divides: the available KV memory (with its range) by this rank's page.
  StageKv pool_input() const { return StageKv{available_kv.interval(), bytes_per_token, page_bytes}; }
};

/// The memory of one stage: weights (with WeightsUncertainty), the overheads with `k` (the
/// constants of the stage's GPU), available = requested - weights - overhead budget (or the
/// given --kv-cache-memory-bytes), and the worker's KV view `worker` (memory/kv.h
/// ProjectKvGroupsToWorker). A stage on another GPU type (stage_gpus) runs with that GPU's total
/// and batch defaults. `describe` = false: no memory-term texts.
StageMemoryPlan PlanStageMemory(const Deployment& d, const ModelConfig& m, const StagePlacement& stage,
                                const WorkerKv& worker, const MemoryConstants& k, bool describe);

}  // namespace ppdeploy
