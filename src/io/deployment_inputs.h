// The adapter side of the one deployment model: the settings' inputs as this process sees them
// (embedded defaults, the profile file, the environment), and what a request needs read from
// disk (model config or checkpoint headers, calibration). Every subcommand resolves its
// deployment through ResolveDeploymentFrom().
#pragma once

#include <map>
#include <string>

#include "deploy/resolve.h"

namespace ppdeploy {

/// vLLM's own defaults (VllmDefaultsToml(): the settings table's vllm_default column) and the
/// embedded data/deployments/default.toml.
std::string VllmDefaultsText();
std::string DefaultDeploymentText();

/// Settings inputs: the embedded defaults (or `defaults_path` instead of default.toml), the
/// profile file (`profile_path`, else $PPDEPLOY_PROFILE, else ./ppdeploy.toml when it exists),
/// the process environment, and `flags`.
SettingInputs ProcessSettingInputs(const std::string& profile_path, const std::string& defaults_path,
                                   const std::map<std::string, FlagValue>& flags);

/// Reads what `request` names: the model (preset, config.json or checkpoint directory, with
/// hf_overrides merged into the config), the checkpoint headers of a local model_path, and the
/// calibration file. Errors name the file and field.
DeploymentInputs LoadDeploymentInputs(const DeploymentRequest& request);

/// BuildRequest(ResolveSettings(inputs)), LoadDeploymentInputs, ResolveDeployment.
ResolvedDeployment ResolveDeploymentFrom(const SettingInputs& inputs);

/// The request as stored in a run state (SettingsFromJson), resolved again.
ResolvedDeployment ResolveStoredDeployment(const nlohmann::json& stored_settings, const std::string& source);

}  // namespace ppdeploy
