#include "io/model_input.h"

#include <algorithm>
#include <filesystem>
#include <map>

#include "calibration/schema.h"
#include "core/embedded_data.h"
#include "core/error.h"
#include "core/escape.h"
#include "core/json_fields.h"
#include "io/checkpoint.h"
#include "io/files.h"
#include "model/gguf.h"
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

bool HasSafetensors(const std::string& dir) {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    if (e.path().extension() == ".safetensors") return true;
  return false;
}

// (Hugging Face name, bytes) of every GGUF tensor, for WeightsFromTensors.
std::vector<std::pair<std::string, std::int64_t>> GgufWeightSizes(const GgufHeader& h) {
  std::vector<std::pair<std::string, std::int64_t>> sizes;
  sizes.reserve(h.tensors.size());
  for (const auto& t : h.tensors) sizes.emplace_back(GgufTensorNameToHf(t.name), t.bytes);
  return sizes;
}

// "GGUF header (m.gguf: 21 tensors, Q4_K x 12, Q6_K x 5, F32 x 4)".
std::string GgufSource(const GgufHeader& h, const std::string& path) {
  std::map<std::string, int> types;
  for (const auto& t : h.tensors) ++types[t.type_name];
  std::vector<std::pair<std::string, int>> by_count(types.begin(), types.end());
  std::stable_sort(by_count.begin(), by_count.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string s = fmt::format("GGUF header ({}: {} tensors", path, h.tensors.size());
  for (const auto& [name, n] : by_count) s += fmt::format(", {} x {}", name, n);
  return s + ")";
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
  std::string gguf_path;
  if (IsDirectory(spec)) {
    config_path = (std::filesystem::path(spec) / "config.json").string();
    if (!HasSafetensors(spec)) gguf_path = FindGgufFile(spec);
    if (!IsRegularFile(config_path)) {
      if (gguf_path.empty()) Fail("{}: checkpoint directory has no config.json", spec);
      config_path.clear();  // the config comes from the GGUF metadata
    }
    r.checkpoint_dir = spec;
  } else if (IsRegularFile(spec) && std::filesystem::path(spec).extension() == ".gguf") {
    gguf_path = spec;
    std::filesystem::path dir = std::filesystem::path(spec).parent_path();
    config_path = ((dir.empty() ? std::filesystem::path(".") : dir) / "config.json").string();
    if (!IsRegularFile(config_path)) config_path.clear();  // the config comes from the GGUF metadata
  } else if (!IsRegularFile(spec)) {
    Fail("unknown model {}: not a preset, a config.json file or a checkpoint directory (presets: {})",
         QuoteForMessage(spec), PresetNames());
  }
  if (!gguf_path.empty()) {
    // vLLM given a .gguf file: the config.json beside it when there is one, else the config transformers
    // builds from the GGUF metadata.
    GgufHeader h = ReadGgufFileHeader(gguf_path);
    std::int64_t splits = 0;
    if (const GgufValue* v = h.Find("split.count"); v && v->AsInt(&splits) && splits > 1)
      Fail(
          "{}: metadata \"split.count\": {}: one part of a split GGUF; vLLM loads a single file (merge the parts "
          "with llama-gguf-split --merge)",
          gguf_path, splits);
    if (config_path.empty())
      r.config = ParseWithOverrides(GgufConfigJson(h, gguf_path), "GGUF metadata of " + gguf_path, hf_overrides);
    else
      r.config = ParseWithOverrides(ParseJsonText(ReadFileText(config_path, 16 << 20), config_path), config_path,
                                    hf_overrides);
    r.weights = WeightsFromTensors(r.config, GgufWeightSizes(h), GgufSource(h, gguf_path));
    for (auto& w : GgufBlockWarnings(h, r.config.num_hidden_layers + r.config.MtpLayers(), gguf_path))
      r.config.warnings.push_back(w);
    return r;
  }
  r.config =
      ParseWithOverrides(ParseJsonText(ReadFileText(config_path, 16 << 20), config_path), config_path, hf_overrides);
  r.weights = EstimateWeights(r.config);
  if (!r.checkpoint_dir.empty()) {
    if (HasSafetensors(r.checkpoint_dir)) {
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
