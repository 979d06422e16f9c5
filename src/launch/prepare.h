// Glue of the launch commands, pure: settings -> profile -> capabilities -> gates -> rendering.
#pragma once

#include <optional>
#include <string>

#include "launch/capabilities.h"
#include "launch/gates.h"
#include "launch/planner_facts.h"
#include "launch/profile.h"
#include "launch/render.h"

namespace ppdeploy::launch {

struct PreparedLaunch {
  ResolvedSettings settings;
  LaunchProfile profile;
  VllmCapabilities caps;
  GateReport gates;
  RenderedLaunch rendered;  ///< rendered even when a gate fails (the preview still shows it)
};

/// Resolves the settings, builds the profile, loads the embedded capability profile, runs the
/// gates against `facts` and renders the command. Throws Error for bad settings or an unknown
/// vLLM version profile.
PreparedLaunch PrepareLaunch(const SettingInputs& inputs, PlannerFacts& facts);

/// The embedded data/launch/defaults.toml.
std::string BuiltinDefaultsText();

}  // namespace ppdeploy::launch
