// Issue 8: fix B without a vLLM patch makes forced layers 'F' in `index_topk_pattern`, so vLLM
// builds (and loads) an indexer on them. That is only safe when the checkpoint really holds
// indexer weights for those layers, shaped like the model's own self-computing layers' (a
// missing tensor would load uninitialised parameters and answer silently wrong).
#pragma once

#include <string>
#include <vector>

#include "model/config.h"
#include "model/safetensors.h"

namespace ppdeploy {

/// Checks every forced layer for the indexer tensors (`model.layers.N.self_attn.indexer.*`) that
/// the model's self-computing layers have, with the same dtype and shape. Returns one message per
/// problem, naming the layer and tensor; empty when all are present.
std::vector<std::string> CheckForcedIndexerTensors(const ModelConfig& model, const std::vector<TensorInfo>& tensors,
                                                   const std::vector<int>& forced_layers);

}  // namespace ppdeploy
