// The three layers of defaults and their origins (issue 23): vLLM's own defaults for the version row
// (what plain `vllm serve MODEL` does), the embedded default deployment (the seed, or --defaults),
// then profile / env / flags. The default deployment's model-specific choices (speculation, the V2
// runner pin, KV dtype, utilisation, served name, layout and split, calibration) apply only to its
// own model; DefaultDeploymentApplies is the one place that decides it (ResolveSettings reads it).
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "deploy/settings.h"

namespace ppdeploy {

/// Whether `spec` is one of vLLM's own settings (it renders to a `vllm serve` flag or argument, or
/// injects a vLLM environment variable): its lowest layer is vLLM's default. The others (GPU type,
/// runtime, image, Ray's port, the planner's inputs) start from ppdeploy's base.
bool IsVllmSetting(const SettingSpec& spec);

/// The origin of a value from the lowest layer: "vLLM 0.19 default" for vLLM's settings (`row` = the
/// version row; "" before it is known: "vLLM default"), "ppdeploy default" for the others.
std::string LowestLayerOrigin(const SettingSpec& spec, std::string_view row);

/// The origin of a value from the default deployment.
inline constexpr std::string_view kDefaultDeploymentOrigin = "default deployment";

/// Whether the default deployment's model-specific choices apply to a request whose model setting
/// resolved to `model` (from `source`): it came from the default deployment, or names the default
/// deployment's model `defaults_model` by `same_model` (preset aliases, paths) or equal text ("" =
/// the default deployment names no model: they apply only to its own model setting).
bool DefaultDeploymentApplies(const std::string& model, SettingSource source, const std::string& defaults_model,
                              const std::function<bool(const std::string&, const std::string&)>& same_model);

}  // namespace ppdeploy
