// Resolves `--model`: a preset name from data/models/, a path to a config.json, a checkpoint
// directory (config.json + safetensors: weights from the headers), or a GGUF checkpoint (a *.gguf
// file, or a directory with one *.gguf and no safetensors: weights from its tensor infos; the config
// from a config.json beside it, else from the GGUF metadata). Reads files; errors name them.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "memory/overheads.h"
#include "memory/weights.h"
#include "model/config.h"
#include "model/safetensors.h"

namespace ppdeploy {

struct ResolvedModel {
  std::string name;  ///< preset name or the path given
  ModelConfig config;
  WeightTable weights;
  nlohmann::json measured;          ///< preset's measured figures (null otherwise)
  std::string checkpoint_dir;       ///< set when the model is a checkpoint directory
  std::vector<TensorInfo> tensors;  ///< the checkpoint's tensors (headers only), when it has shards
};

/// Throws Error naming the file/field, or "unknown model X (not a preset, file or directory;
/// presets: ...)". `hf_overrides` (a JSON object, or null) is merged into the config.json body
/// before it is read, as vLLM applies --hf-overrides to the Hugging Face config.
ResolvedModel ResolveModel(const std::string& spec, const nlohmann::json& hf_overrides = nullptr);

/// Loads a calibration JSON from a path, or from the embedded data/ when `path` names one
/// (e.g. "calibration/seed-glm53-a100-tp4pp2.json").
Calibration LoadCalibration(const std::string& path);

}  // namespace ppdeploy
