#include "cli/launch_options.h"

#include <cstdlib>

#include <fmt/format.h>
#include <fmt/ostream.h>

#include "core/error.h"
#include "io/files.h"

namespace ppdeploy::cli {

void AddLaunchOptions(CLI::App* sub, LaunchOptions& opts) {
  sub->add_option("--profile", opts.profile_path,
                  "deployment profile (TOML, same keys as the settings; env PPDEPLOY_PROFILE; default ./ppdeploy.toml "
                  "when it exists)")
      ->group("Profile");
  sub->add_option("--defaults", opts.defaults_path, "replace the built-in defaults (data/launch/defaults.toml)")
      ->group("Profile");
  const auto defaults = launch::ParseSettingsToml(launch::BuiltinDefaultsText(), "built-in defaults");
  for (const auto& spec : launch::SettingSpecs()) {
    std::string key(spec.key);
    auto d = defaults.find(key);
    std::string shown = d == defaults.end() ? "?" : (d->second.empty() ? "\"\"" : d->second);
    std::string help = fmt::format("{} (env {}{}; default {})", spec.help, spec.env,
                                   spec.alt_env.empty() ? "" : fmt::format(" or {}", spec.alt_env), shown);
    opts.options[key] = sub->add_option(launch::FlagName(key), opts.values[key], help)->group("Settings");
  }
}

launch::SettingInputs MakeSettingInputs(const LaunchOptions& opts) {
  launch::SettingInputs in;
  if (!opts.defaults_path.empty()) {
    in.defaults_text = ReadFileText(opts.defaults_path);
    in.defaults_source = opts.defaults_path;
  } else {
    in.defaults_text = launch::BuiltinDefaultsText();
    in.defaults_source = "built-in data/launch/defaults.toml";
  }
  std::string profile = opts.profile_path;
  bool explicit_profile = !profile.empty();
  if (profile.empty()) {
    if (const char* env = std::getenv("PPDEPLOY_PROFILE"); env && *env) {
      profile = env;
      explicit_profile = true;
    }
  }
  if (profile.empty()) profile = "ppdeploy.toml";
  if (explicit_profile || IsRegularFile(profile)) {
    in.file_text = ReadFileText(profile);
    in.file_source = profile;
  }
  in.getenv = [](std::string_view name) -> std::optional<std::string> {
    const char* v = std::getenv(std::string(name).c_str());
    if (!v) return std::nullopt;
    return std::string(v);
  };
  for (const auto& [key, opt] : opts.options)
    if (opt->count() > 0) in.flags[key] = opts.values.at(key);
  return in;
}

launch::PreparedLaunch PrepareFromCli(const LaunchOptions& opts) {
  auto facts = launch::MakeDefaultPlannerFacts();  // TODO(planner): the planner's implementation
  return launch::PrepareLaunch(MakeSettingInputs(opts), *facts);
}

void AddRunDirOption(CLI::App* sub, std::string& run_dir) {
  sub->add_option("--run-dir", run_dir, "state and log directory (env PPDEPLOY_RUN_DIR, default .ppdeploy/run)");
}

std::string EffectiveRunDir(const std::string& flag_value) {
  if (!flag_value.empty()) return flag_value;
  if (const char* env = std::getenv("PPDEPLOY_RUN_DIR"); env && *env) return env;
  return ".ppdeploy/run";
}

void PrintSettings(std::ostream& out, const launch::ResolvedSettings& settings) {
  fmt::print(out, "Settings (precedence: flag > env > file > default):\n");
  size_t width = 0;
  for (const auto& s : settings) width = std::max(width, s.key.size());
  for (const auto& s : settings) {
    std::string value = s.value.empty() ? "\"\"" : launch::ShellQuote(s.value);
    fmt::print(out, "  {:<{}}  {:<34} {}\n", s.key, width, value, s.origin);
  }
}

void PrintCommand(std::ostream& out, const launch::PreparedLaunch& p) {
  const auto& r = p.rendered;
  const bool bare = p.profile.runtime == "bare";
  if (r.multi_node) {
    fmt::print(out, "\nCommands (vLLM {}, runtime {}, {} executor, {} steps; run each on its node):\n",
               p.caps.name, p.profile.runtime, r.executor, r.steps.size());
  } else {
    fmt::print(out, "\nCommand (vLLM {}, runtime {}, one node):\n", p.caps.name, p.profile.runtime);
  }
  for (const auto& n : r.notices) fmt::print(out, "# notice: {}\n", n);
  for (size_t i = 0; i < r.steps.size(); ++i) {
    const auto& step = r.steps[i];
    if (r.multi_node) fmt::print(out, "# step {} on {} ({})\n", i + 1, step.node, step.role);
    fmt::print(out, "{}\n", launch::PreviewStep(step, bare, true));
  }
}

void PrintGates(std::ostream& out, const launch::GateReport& report) {
  fmt::print(out, "\nGates:\n");
  for (const auto& g : report.results) {
    for (size_t i = 0; i < g.messages.size(); ++i) {
      if (i == 0) fmt::print(out, "  [{}] {}: {}\n", launch::GateStatusName(g.status), g.gate, g.messages[i]);
      else fmt::print(out, "         {}\n", g.messages[i]);
    }
  }
  int failed = 0;
  for (const auto& g : report.results) failed += g.Failed() ? 1 : 0;
  if (failed) fmt::print(out, "Result: launch REFUSED ({} gate{} failed)\n", failed, failed == 1 ? "" : "s");
  else fmt::print(out, "Result: launch allowed\n");
}

std::string FormatDuration(double seconds) {
  auto s = static_cast<long long>(seconds);
  if (s < 60) return fmt::format("{:.1f}s", seconds);
  if (s < 3600) return fmt::format("{}m {:02}s", s / 60, s % 60);
  return fmt::format("{}h {:02}m {:02}s", s / 3600, (s / 60) % 60, s % 60);
}

}  // namespace ppdeploy::cli
