#include "cli/launch_options.h"

#include <fmt/format.h>
#include <fmt/ostream.h>
#include <fmt/ranges.h>

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/deployment_inputs.h"

namespace ppdeploy::cli {

void AddLaunchOptions(CLI::App* sub, LaunchOptions& opts) {
  opts.settings.Add(sub);
  sub->add_option("vllm_args", opts.extra_args, "after `--`: further `vllm serve` arguments, passed as given")
      ->group("Settings");
  sub->positionals_at_end();
}

ResolvedDeployment ResolveFromLaunchOptions(const LaunchOptions& opts) {
  std::map<std::string, FlagValue> flags = opts.settings.Flags();
  if (!opts.extra_args.empty()) flags["extra_vllm_args"] = FlagValue{nlohmann::json(opts.extra_args).dump(), "-- ARGS"};
  return ResolveDeploymentFrom(ProcessSettingInputs(opts.settings.profile_path, opts.settings.defaults_path, flags));
}

launch::PreparedLaunch PrepareFromCli(const LaunchOptions& opts) {
  return launch::PrepareLaunch(ResolveFromLaunchOptions(opts));
}

void AddRunDirOption(CLI::App* sub, std::string& run_dir) {
  sub->add_option("--run-dir", run_dir, "state and log directory (env PPDEPLOY_RUN_DIR, default .ppdeploy/run)");
}

std::string EffectiveRunDir(const std::string& flag_value) {
  if (!flag_value.empty()) return flag_value;
  if (const char* env = std::getenv("PPDEPLOY_RUN_DIR"); env && *env) return env;
  return ".ppdeploy/run";
}

void PrintSettings(std::ostream& out, const ResolvedSettings& settings) {
  fmt::print(out, "Settings (precedence: flag > env > profile > default deployment > vLLM default):\n");
  size_t width = 0;
  for (const auto& s : settings) width = std::max(width, s.key.size());
  for (const auto& s : settings) {
    std::string value = s.value.empty() ? "\"\"" : launch::ShellQuote(s.value);
    fmt::print(out, "  {:<{}}  {:<34} {}\n", s.key, width, value, s.origin);
  }
}

void PrintCommand(std::ostream& out, const launch::PreparedLaunch& p) {
  const auto& r = p.rendered;
  const auto& q = p.deployment.request;
  const bool bare = q.runtime == "bare";
  if (r.multi_node) {
    fmt::print(out, "\nCommands (vLLM {}, runtime {}, {} executor, {} steps; run each on its node):\n",
               p.deployment.planner.vllm.name, q.runtime, r.executor, r.steps.size());
  } else {
    fmt::print(out, "\nCommand (vLLM {}, runtime {}, one node):\n", p.deployment.planner.vllm.name, q.runtime);
  }
  for (const auto& n : r.notices) fmt::print(out, "# notice: {}\n", n);
  if (r.multi_node)
    fmt::print(out,
               "# every step runs on its node through the remote shell (no local shell): {} followed by one word, the "
               "step{} shell-quoted (see `cmd --format json` local_argv)\n",
               launch::ShellJoin(q.remote_shell), bare ? " with its variables through env(1)" : "");
  for (size_t i = 0; i < r.steps.size(); ++i) {
    const auto& step = r.steps[i];
    if (r.multi_node) fmt::print(out, "# step {} on {} ({})\n", i + 1, step.node, step.role);
    fmt::print(out, "{}\n", launch::PreviewStep(step, bare, true));
  }
}

void PrintGates(std::ostream& out, const launch::PreparedLaunch& p) {
  const auto& report = p.gates;
  if (!p.deployment.notes.empty()) {
    fmt::print(out, "\nNotes:\n");
    for (const auto& n : p.deployment.notes) fmt::print(out, "  {}\n", n);
  }
  fmt::print(out, "\nGates:\n");
  for (const auto& g : report.results) {
    for (size_t i = 0; i < g.messages.size(); ++i) {
      if (i == 0)
        fmt::print(out, "  [{}] {}: {}\n", launch::GateStatusName(g.status), g.name, g.messages[i]);
      else
        fmt::print(out, "         {}\n", g.messages[i]);
    }
  }
  int failed = 0;
  for (const auto& g : report.results) failed += g.Failed() ? 1 : 0;
  if (failed)
    fmt::print(out, "Result: launch REFUSED ({} gate{} failed)\n", failed, failed == 1 ? "" : "s");
  else
    fmt::print(out, "Result: launch allowed\n");
}

std::string FormatDuration(double seconds) {
  auto s = static_cast<long long>(seconds);
  if (s < 60) return fmt::format("{:.1f}s", seconds);
  if (s < 3600) return fmt::format("{}m {:02}s", s / 60, s % 60);
  return fmt::format("{}h {:02}m {:02}s", s / 3600, (s / 60) % 60, s % 60);
}

}  // namespace ppdeploy::cli
