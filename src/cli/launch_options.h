// The launch front-end of the one deployment request (cmd, defaultcheck, start): one
// --<setting> flag per setting (`--tp-size 2`), --profile, --defaults, and `-- ARGS...` passed to
// `vllm serve` as given. Also the printing shared by the launch subcommands.
#pragma once

#include <CLI/CLI.hpp>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "launch/prepare.h"
#include "launch/process.h"

namespace ppdeploy::cli {

/// Profile options: one --<setting> flag per setting, plus --profile and --defaults.
struct LaunchOptions {
  std::string profile_path;   ///< --profile FILE (env PPDEPLOY_PROFILE); default ./ppdeploy.toml if present
  std::string defaults_path;  ///< --defaults FILE replaces the built-in data/deployments/default.toml
  std::map<std::string, std::string> values;    ///< setting key -> flag value
  std::map<std::string, CLI::Option*> options;  ///< setting key -> its CLI11 option
  std::vector<std::string> extra_args;          ///< after `--`: passed to `vllm serve`
};

/// Adds --profile, --defaults, one flag per setting and the `-- ARGS` pass-through to `sub`.
void AddLaunchOptions(CLI::App* sub, LaunchOptions& opts);

/// Resolves the deployment from the flags, the environment, the profile file and the defaults.
ResolvedDeployment ResolveFromLaunchOptions(const LaunchOptions& opts);

/// Resolves, plans, gates and renders.
launch::PreparedLaunch PrepareFromCli(const LaunchOptions& opts);

/// --run-dir (env PPDEPLOY_RUN_DIR, default .ppdeploy/run).
void AddRunDirOption(CLI::App* sub, std::string& run_dir);
/// The effective run directory.
std::string EffectiveRunDir(const std::string& flag_value);

/// "Settings" table: key, value, origin.
void PrintSettings(std::ostream& out, const ResolvedSettings& settings);
/// Every step as a multi-line shell command, with a header naming the node.
void PrintCommand(std::ostream& out, const launch::PreparedLaunch& prepared);
/// "[pass] gate: message" lines, and the resolver's notes.
void PrintGates(std::ostream& out, const launch::PreparedLaunch& prepared);

/// "3m 12s" style duration.
std::string FormatDuration(double seconds);

}  // namespace ppdeploy::cli
