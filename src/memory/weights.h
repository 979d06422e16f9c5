// Model weights per GPU, from checkpoint headers or estimated from config.json +
// quantization_config, sharded the way vLLM's layers shard them:
// column/row-parallel projections and expert MLPs divided by TP (experts by the EP size when
// expert parallelism is on), replicated q_a/kv_a/indexer/norms/router, vocab-parallel embedding
// and lm_head (vocab padded to a multiple of 64); embedding on the first PP stage, final norm +
// lm_head (+ MTP layers when MTP speculation is on) on the last (docs/vllm-rules.md §1.5, §1.10-1.11;
// vllm/model_executor/models/deepseek_v2.py, deepseek_mtp.py, layers/linear.py).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "model/config.h"

namespace ppdeploy {

/// How a tensor is divided over the GPUs of one pipeline stage.
enum class Shard {
  kReplicated,      ///< every TP rank holds all of it (ReplicatedLinear, norms, router)
  kTensorParallel,  ///< divided by TP (Column/RowParallelLinear)
  kExperts,         ///< routed experts: divided by TP, or by the EP size with expert parallelism
  kVocab,           ///< VocabParallelEmbedding / ParallelLMHead: padded vocab rows divided by TP
  kKvHeads,         ///< GQA k/v projections: max(1, kv_heads / TP) heads per rank
};

struct WeightItem {
  std::string component;   ///< e.g. "attention", "routed_experts", "indexer"
  std::int64_t bytes = 0;  ///< whole-model bytes of this item (all shards)
  Shard shard = Shard::kReplicated;
};

/// Weights of one placement unit (a decoder layer, the embedding, the head).
struct SlotWeights {
  std::vector<WeightItem> items;     ///< excluding the DSA indexer
  std::int64_t indexer_bytes = 0;    ///< DSA indexer (replicated); counted only where vLLM builds one
  bool has_indexer_tensors = false;  ///< the checkpoint holds indexer tensors for this layer
  std::int64_t total_bytes() const;  ///< items + indexer
};

/// Weights of the whole model, by placement unit.
struct WeightTable {
  std::vector<SlotWeights> layers;          ///< backbone layers 0..num_hidden_layers-1
  std::vector<SlotWeights> mtp;             ///< MTP layers (ids num_hidden_layers + k)
  SlotWeights embedding;                    ///< first PP stage
  SlotWeights final_norm;                   ///< last PP stage
  SlotWeights lm_head;                      ///< last PP stage (allocated even when tied, if PP > 1)
  SlotWeights other;                        ///< unrecognised tensors (first stage; reported)
  std::int64_t indexer_bytes_estimate = 0;  ///< for layers vLLM builds an indexer on without tensors
  std::int64_t total_bytes = 0;             ///< every tensor, as the checkpoint stores it
  bool from_checkpoint = false;             ///< true: checkpoint headers; false: estimated from config.json
  std::string source;                       ///< human description of where the figures come from
};

/// Estimates the weight table from config.json + quantization_config. Linear layers take
/// out x in x bits/8 bytes plus their scales (fp8 block-wise: fp32 per block; int W4/W8: 16-bit
/// scale per group, packed zero points for GPTQ/AWQ, int32 g_idx for GPTQ); norms, the router,
/// embedding and lm_head stay in the model dtype; the MTP eh_proj is an unquantized nn.Linear.
WeightTable EstimateWeights(const ModelConfig& model);

/// Builds the table from checkpoint tensors (name, bytes) by name: `model.layers.N.` (N >=
/// num_hidden_layers = MTP), `model.embed_tokens.`, `model.norm.`, `lm_head.`. MTP copies of
/// embed_tokens and shared_head.head are skipped (vLLM shares the target's).
WeightTable WeightsFromTensors(const ModelConfig& model,
                               const std::vector<std::pair<std::string, std::int64_t>>& tensors,
                               const std::string& source);

/// vLLM's --dtype and --quantization applied to the model and its weight table
/// (vllm/config/model.py _get_and_verify_dtype; model_executor/layers/quantization/__init__.py
/// QUANTIZATION_METHODS):
/// - dtype "auto" keeps the config's torch_dtype (float32 configs are served in bfloat16);
///   "half"/"float16", "bfloat16", "float"/"float32" recast every unquantized tensor (float32
///   doubles a bf16 model: llm-d v0.19 Llama-3.1-8B 14.99 -> 29.98 GiB) and the activations.
/// - quantization "fp8" on an unquantized checkpoint is vLLM's online fp8 (Fp8LinearMethod /
///   Fp8MoEMethod with dynamic per-tensor scales): every Linear and expert weight in 1 byte plus a
///   float32 scale; embedding, lm_head, norms and the router stay in the model dtype (llm-d v0.19
///   Llama-3.1-8B 14.99 -> 8.49 GiB). "experts_int8" quantizes only the routed experts (int8,
///   per-channel scales); "bitsandbytes" is 4-bit NF4 with a float32 absmax per 64 weights.
/// - a method that names the checkpoint's own quantization_config (awq, awq_marlin, gptq,
///   gptq_marlin, compressed-tensors, fp8, modelopt, mxfp4, gguf, ...) changes nothing; one that
///   needs a quantization_config the model does not have is an Error naming it.
/// `notes` receives what was applied.
void ApplyServingPrecision(ModelConfig& model, WeightTable& weights, const std::string& dtype,
                           const std::string& quantization, std::vector<std::string>* notes);

/// Sharding of one GPU.
struct ShardParams {
  int tensor_parallel_size = 1;
  int expert_shards = 1;  ///< TP, or TP x DP with --enable-expert-parallel
  int num_kv_heads = 1;
  int vocab_size = 0;
};

/// Bytes of `slot` on one GPU; `with_indexer` adds the indexer (an estimate when the checkpoint
/// has no indexer tensors for this layer).
std::int64_t PerGpuBytes(const SlotWeights& slot, const ShardParams& p, bool with_indexer,
                         std::int64_t indexer_estimate);

}  // namespace ppdeploy
