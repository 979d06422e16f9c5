#include "cli/setting_flags.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "core/error.h"
#include "io/deployment_inputs.h"

namespace ppdeploy::cli {
namespace {

/// "... (env TP_SIZE; default 4; also --tp)": the row's help, where the value comes from, the
/// default `cmd` starts from (the default deployment's, else vLLM's) and the older spellings.
std::string HelpLine(const SettingSpec& spec, const std::map<std::string, std::string>& defaults) {
  auto d = defaults.find(std::string(spec.key));
  std::string shown(d != defaults.end() ? d->second : spec.vllm_default);
  if (shown.empty()) shown = "\"\"";
  std::string aliases;
  for (const auto& a : FlagAliases(spec)) aliases += (aliases.empty() ? "; also " : ", ") + a;
  return fmt::format("{} (env {}{}; default {}{})", SettingHelp(spec), spec.env,
                     spec.alt_env.empty() ? "" : fmt::format(" or {}", spec.alt_env), shown, aliases);
}

}  // namespace

void SettingFlags::Add(CLI::App* sub, const std::set<std::string>& except) {
  sub->add_option("--profile,--deployment", profile_path,
                  "deployment profile (TOML, same keys as the settings; env PPDEPLOY_PROFILE; default ./ppdeploy.toml "
                  "when it exists)")
      ->group("Profile");
  sub->add_option("--defaults", defaults_path,
                  "replace the built-in default deployment (data/deployments/default.toml)")
      ->group("Profile");
  const auto defaults = ParseSettingsToml(DefaultDeploymentText(), "default deployment");
  for (const auto& spec : SettingSpecs()) {
    std::string key(spec.key);
    if (except.count(key)) continue;
    std::vector<std::string> names{FlagName(key)};
    for (auto& a : FlagAliases(spec)) names.push_back(std::move(a));
    for (size_t i = 0; i < names.size(); ++i) {
      Spelling& s = spellings_[names[i]];
      s.key = key;
      const std::string help = i == 0 ? HelpLine(spec, defaults) : fmt::format("same as {}", names[0]);
      // A boolean is a flag: --enable-expert-parallel, or --enable-expert-parallel=0.
      s.option = spec.type == SettingType::kBool ? sub->add_flag(names[i], s.value, help)
                                                 : sub->add_option(names[i], s.value, help);
      s.option->group(i == 0 ? "Settings" : "");  // an alias is hidden; the setting's help names it
    }
  }
  mtp_option_ = sub->add_option("--num-speculative-tokens,--mtp", num_speculative_tokens_,
                                "shorthand: spec_method mtp with K speculative tokens (0: spec_method none)")
                    ->check(CLI::NonNegativeNumber)
                    ->group("Settings");
  sub->add_flag("--no-calibration", no_calibration_, "shorthand: calibration \"\" (estimates, not a calibration)")
      ->group("Settings");
}

bool SettingFlags::GivenOnCommandLine(std::string_view key) const {
  return std::any_of(spellings_.begin(), spellings_.end(),
                     [&](const auto& e) { return e.second.key == key && e.second.option->count() > 0; });
}

bool SettingFlags::Given(std::string_view key) const {
  return GivenOnCommandLine(key) || set_.count(std::string(key)) > 0;
}

void SettingFlags::Set(const std::string& key, std::string value, std::string flag) {
  set_[key] = FlagValue{std::move(value), std::move(flag)};
}

std::map<std::string, FlagValue> SettingFlags::Flags() const {
  std::map<std::string, FlagValue> f;
  for (const auto& [name, s] : spellings_) {
    if (s.option->count() == 0) continue;
    if (auto it = f.find(s.key); it != f.end())
      Fail("{} and {} are two spellings of the setting {}: give one", it->second.flag, name, s.key);
    f[s.key] = FlagValue{s.value, name};
  }
  for (const auto& [key, v] : set_) f[key] = v;
  ApplyShorthands(f);
  return f;
}

void SettingFlags::ApplyShorthands(std::map<std::string, FlagValue>& f) const {
  // --partition (plan's spelling): the split gives the stage count.
  if (auto it = f.find("pp_layer_partition");
      it != f.end() && it->second.flag == "--partition" && !it->second.value.empty() && !GivenOnCommandLine("pp_size"))
    f["pp_size"] = {std::to_string(std::count(it->second.value.begin(), it->second.value.end(), ',') + 1),
                    "--partition"};
  if (mtp_option_ && mtp_option_->count() > 0) {
    if (!GivenOnCommandLine("spec_method"))
      f["spec_method"] = {num_speculative_tokens_ == 0 ? "none" : "mtp", "--num-speculative-tokens"};
    if (num_speculative_tokens_ > 0 && !GivenOnCommandLine("num_spec_tokens"))
      f["num_spec_tokens"] = {std::to_string(num_speculative_tokens_), "--num-speculative-tokens"};
  }
  if (no_calibration_) f["calibration"] = {"", "--no-calibration"};
}

}  // namespace ppdeploy::cli
