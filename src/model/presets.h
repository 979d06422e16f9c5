// Model presets shipped in data/models/*.json (schema ppdeploy.model-preset/1): a config.json
// body plus where it comes from and, for the seed's model, measured sizes to check against.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/config.h"

namespace ppdeploy {

struct ModelPreset {
  std::string name;
  std::vector<std::string> aliases;
  std::string description;
  std::string source;
  nlohmann::json config;            ///< the config.json body
  nlohmann::json measured;          ///< optional measured figures (checkpoint_gib, ...), null if none
  ModelConfig Parse() const;        ///< ParseModelConfig(config, "preset NAME")
};

/// All presets, sorted by name.
const std::vector<ModelPreset>& ModelPresets();
/// By name or alias (case-insensitive; hub ids keep the hub's case, deepseek-ai/DeepSeek-R1); nullptr if none.
const ModelPreset* FindModelPreset(const std::string& name);
/// Whether two model settings name the same model: the same text, or names or aliases of the same preset.
bool SameModel(const std::string& a, const std::string& b);
/// "deepseek-v3, glm-5.3-w4a16, ..." for messages.
std::string PresetNames();

}  // namespace ppdeploy
