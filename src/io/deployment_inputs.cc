#include "io/deployment_inputs.h"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>

#include "core/embedded_data.h"
#include "core/error.h"
#include "io/files.h"
#include "io/model_input.h"
#include "model/presets.h"

namespace ppdeploy {
namespace {

std::string Embedded(std::string_view path) {
  auto text = FindEmbedded(path);
  if (!text) Fail("data/{} is not embedded in this binary", path);
  return std::string(*text);
}

bool UserSet(const SettingValue& v) {
  return v.source == SettingSource::kFile || v.source == SettingSource::kEnv || v.source == SettingSource::kFlag ||
         v.source == SettingSource::kState;
}

bool IsCheckpointDir(const std::string& path) {
  return !path.empty() && IsDirectory(path) && IsRegularFile((std::filesystem::path(path) / "config.json").string());
}

}  // namespace

std::string VllmDefaultsText() { return VllmDefaultsToml(); }
std::string DefaultDeploymentText() { return Embedded("deployments/default.toml"); }

SettingInputs ProcessSettingInputs(const std::string& profile_path, const std::string& defaults_path,
                                   const std::map<std::string, FlagValue>& flags) {
  SettingInputs in;
  in.vllm_defaults_text = VllmDefaultsText();
  in.vllm_defaults_source = "built-in vLLM defaults (deploy/settings_table.cc)";
  if (!defaults_path.empty()) {
    in.defaults_text = ReadFileText(defaults_path, 1 << 20);
    in.defaults_source = defaults_path;
  } else {
    in.defaults_text = DefaultDeploymentText();
    in.defaults_source = "built-in data/deployments/default.toml";
  }
  std::string profile = profile_path;
  bool explicit_profile = !profile.empty();
  if (profile.empty()) {
    if (const char* env = std::getenv("PPDEPLOY_PROFILE"); env && *env) {
      profile = env;
      explicit_profile = true;
    }
  }
  if (profile.empty()) profile = "ppdeploy.toml";
  if (explicit_profile || IsRegularFile(profile)) {
    in.file_text = ReadFileText(profile, 1 << 20);
    in.file_source = profile;
  }
  in.getenv = [](std::string_view name) -> std::optional<std::string> {
    const char* v = std::getenv(std::string(name).c_str());
    if (!v) return std::nullopt;
    return std::string(v);
  };
  in.flags = flags;
  in.same_model = SameModel;
  return in;
}

DeploymentInputs LoadDeploymentInputs(const DeploymentRequest& r) {
  DeploymentInputs in;
  nlohmann::json overrides = nullptr;
  if (!r.hf_overrides.empty()) overrides = nlohmann::json::parse(r.hf_overrides, nullptr, false);
  // The model the planner reads: the model setting, unless only MODEL_PATH names a local
  // checkpoint (then what is served is what is planned).
  std::string spec = r.model;
  const SettingValue& model = r.Setting("model");
  const SettingValue& path = r.Setting("model_path");
  if (!UserSet(model) && UserSet(path) && IsCheckpointDir(r.model_path) && !SameModel(r.model_path, r.model)) {
    spec = r.model_path;
    in.notes.push_back(fmt::format("model: the checkpoint at model_path {} ({}), not the {} {}", r.model_path,
                                   path.origin, model.origin, r.model));
  }
  ResolvedModel m = ResolveModel(spec, overrides);
  in.model_name = m.name;
  in.model = std::move(m.config);
  in.weights = std::move(m.weights);
  in.measured = std::move(m.measured);
  in.checkpoint_dir = m.checkpoint_dir;
  in.tensors = std::move(m.tensors);
  if (!overrides.is_null()) in.notes.push_back("hf_overrides applied to the model config: " + overrides.dump());
  // The served checkpoint's headers, for the index_topk_pattern check (issue 8).
  if (in.checkpoint_dir.empty() && IsCheckpointDir(r.model_path)) {
    try {
      ResolvedModel served = ResolveModel(r.model_path, overrides);
      in.checkpoint_dir = served.checkpoint_dir;
      in.tensors = std::move(served.tensors);
    } catch (const Error& e) {
      in.notes.push_back(fmt::format("model_path {}: checkpoint headers not read: {}", r.model_path, e.what()));
    }
  }
  if (!r.calibration.empty()) in.calibration = LoadCalibration(r.calibration);
  return in;
}

ResolvedDeployment ResolveDeploymentFrom(const SettingInputs& inputs) {
  DeploymentRequest request = BuildRequest(ResolveSettings(inputs));
  return ResolveDeployment(request, LoadDeploymentInputs(request));
}

ResolvedDeployment ResolveStoredDeployment(const nlohmann::json& stored_settings, const std::string& source) {
  SettingInputs vllm_only;
  vllm_only.vllm_defaults_text = VllmDefaultsText();
  vllm_only.vllm_defaults_source = "built-in vLLM defaults (deploy/settings_table.cc)";
  vllm_only.defaults_source = "(none)";
  const ResolvedSettings vllm_defaults = ResolveSettings(vllm_only);
  DeploymentRequest request = BuildRequest(SettingsFromJson(stored_settings, source, &vllm_defaults));
  return ResolveDeployment(request, LoadDeploymentInputs(request));
}

}  // namespace ppdeploy
