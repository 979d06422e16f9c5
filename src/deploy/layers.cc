#include "deploy/layers.h"

#include <fmt/format.h>

namespace ppdeploy {

bool IsVllmSetting(const SettingSpec& spec) {
  return !spec.serve.flag.empty() || !spec.vllm_env.empty() || spec.key == "model_path";
}

std::string LowestLayerOrigin(const SettingSpec& spec, std::string_view row) {
  if (!IsVllmSetting(spec)) return "ppdeploy default";
  return row.empty() ? "vLLM default" : fmt::format("vLLM {} default", row);
}

bool DefaultDeploymentApplies(const std::string& model, SettingSource source, const std::string& defaults_model,
                              const std::function<bool(const std::string&, const std::string&)>& same_model) {
  if (source == SettingSource::kDefault) return true;
  if (defaults_model.empty()) return false;  // its model-specific values belong to no model asked for
  return same_model ? same_model(model, defaults_model) : model == defaults_model;
}

}  // namespace ppdeploy
