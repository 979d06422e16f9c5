// Resolves `--model`: a preset name from data/models/, a path to a config.json, or a checkpoint
// directory (config.json + safetensors: weights from the headers). Reads files; errors name them.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "memory/overheads.h"
#include "memory/weights.h"
#include "model/config.h"
#include "model/safetensors.h"

namespace ppdeploy {

struct ResolvedModel {
  std::string name;          ///< preset name or the path given
  ModelConfig config;
  WeightTable weights;
  nlohmann::json measured;   ///< preset's measured figures (null otherwise)
  std::string checkpoint_dir;  ///< set when the model is a checkpoint directory
  std::vector<TensorInfo> tensors;  ///< the checkpoint's tensors (headers only), when it has shards
};

/// Throws Error naming the file/field, or "unknown model X (not a preset, file or directory;
/// presets: ...)".
ResolvedModel ResolveModel(const std::string& spec);

/// Loads a calibration JSON from a path, or from the embedded data/ when `path` names one
/// (e.g. "calibration/seed-glm53-a100-tp4pp2.json").
Calibration LoadCalibration(const std::string& path);

}  // namespace ppdeploy
