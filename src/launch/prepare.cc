#include "launch/prepare.h"

#include "core/embedded_data.h"
#include "core/error.h"

namespace ppdeploy::launch {

PreparedLaunch PrepareLaunch(const SettingInputs& inputs, PlannerFacts& facts) {
  PreparedLaunch out;
  out.settings = ResolveSettings(inputs);
  out.profile = BuildProfile(out.settings);
  out.caps = LoadCapabilities(out.profile.vllm_version);
  out.gates = RunGates(out.profile, facts, out.caps);
  out.rendered = RenderLaunch(out.gates, out.caps);
  return out;
}

std::string BuiltinDefaultsText() {
  auto text = FindEmbedded("launch/defaults.toml");
  if (!text) Fail("data/launch/defaults.toml is not embedded in this binary");
  return std::string(*text);
}

}  // namespace ppdeploy::launch
