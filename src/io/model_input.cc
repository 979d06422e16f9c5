#include "io/model_input.h"

#include <filesystem>

#include "core/embedded_data.h"
#include "core/error.h"
#include "core/escape.h"
#include "core/json_fields.h"
#include "io/checkpoint.h"
#include "io/files.h"
#include "model/presets.h"

namespace ppdeploy {

namespace {

// The config.json body with --hf-overrides applied (RFC 7386 merge: nested objects merge, null
// removes a key), and the source name for messages.
ModelConfig ParseWithOverrides(nlohmann::json config, std::string source, const nlohmann::json& hf_overrides) {
  if (hf_overrides.is_object() && !hf_overrides.empty()) {
    config.merge_patch(hf_overrides);
    source += " with hf_overrides " + hf_overrides.dump();
  }
  return ParseModelConfig(config, source);
}

}  // namespace

ResolvedModel ResolveModel(const std::string& spec, const nlohmann::json& hf_overrides) {
  ResolvedModel r;
  r.name = spec;
  if (const ModelPreset* p = FindModelPreset(spec); p && !IsRegularFile(spec) && !IsDirectory(spec)) {
    r.name = p->name;
    r.config = ParseWithOverrides(p->config, "preset " + p->name, hf_overrides);
    r.weights = EstimateWeights(r.config);
    r.measured = p->measured;
    return r;
  }
  std::string config_path = spec;
  if (IsDirectory(spec)) {
    config_path = (std::filesystem::path(spec) / "config.json").string();
    if (!IsRegularFile(config_path)) Fail("{}: checkpoint directory has no config.json", spec);
    r.checkpoint_dir = spec;
  } else if (!IsRegularFile(spec)) {
    Fail("unknown model {}: not a preset, a config.json file or a checkpoint directory (presets: {})",
         QuoteForMessage(spec), PresetNames());
  }
  r.config =
      ParseWithOverrides(ParseJsonText(ReadFileText(config_path, 16 << 20), config_path), config_path, hf_overrides);
  r.weights = EstimateWeights(r.config);
  if (!r.checkpoint_dir.empty()) {
    std::error_code ec;
    bool has_shards = false;
    for (const auto& e : std::filesystem::directory_iterator(r.checkpoint_dir, ec))
      has_shards |= e.path().extension() == ".safetensors";
    if (has_shards) {
      CheckpointHeaders h = ReadCheckpointDirectory(r.checkpoint_dir);
      std::vector<std::pair<std::string, std::int64_t>> sizes;
      sizes.reserve(h.tensors.size());
      for (const auto& t : h.tensors) sizes.emplace_back(t.name, t.bytes);
      r.weights = WeightsFromTensors(
          r.config, sizes,
          fmt::format("checkpoint headers ({} safetensors files in {})", h.files.size(), r.checkpoint_dir));
      r.tensors = std::move(h.tensors);
    }
  }
  return r;
}

Calibration LoadCalibration(const std::string& path) {
  if (!IsRegularFile(path)) {
    if (auto text = FindEmbedded(path)) return ParseCalibration(ParseJsonText(*text, "data/" + path), "data/" + path);
  }
  return ParseCalibration(ParseJsonText(ReadFileText(path, 16 << 20), path), path);
}

}  // namespace ppdeploy
