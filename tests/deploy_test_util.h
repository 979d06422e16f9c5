// Resolved deployments for tests: the embedded defaults (vLLM's, then the seed's default
// deployment) plus given settings, never the process environment or a profile file in the cwd.
#pragma once

#include <map>
#include <string>

#include "deploy/resolve.h"
#include "io/deployment_inputs.h"
#include "model/presets.h"

namespace ppdeploy::testing {

/// Settings inputs: embedded defaults, no profile file, no environment, `flags` on top.
inline SettingInputs TestSettingInputs(const std::map<std::string, std::string>& flags = {},
                                       const std::map<std::string, std::string>& env = {}) {
  SettingInputs in;
  in.vllm_defaults_text = VllmDefaultsText();
  in.vllm_defaults_source = "vllm-defaults";
  in.defaults_text = DefaultDeploymentText();
  in.defaults_source = "default deployment";
  for (const auto& [k, v] : flags) in.flags[k] = FlagValue{v, FlagName(k)};
  in.getenv = [env](std::string_view name) -> std::optional<std::string> {
    auto it = env.find(std::string(name));
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
  in.same_model = SameModel;
  return in;
}

/// The resolved deployment of the defaults plus `flags` (setting keys, e.g. {"tp_size", "8"}).
inline ResolvedDeployment ResolvedWith(const std::map<std::string, std::string>& flags = {}) {
  return ResolveDeploymentFrom(TestSettingInputs(flags));
}

/// The planner's deployment of the defaults plus `flags`.
inline Deployment DeploymentWith(const std::map<std::string, std::string>& flags = {}) {
  return ResolvedWith(flags).planner;
}

}  // namespace ppdeploy::testing
