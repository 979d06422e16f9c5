// The launch front-end of the one deployment request (cmd, defaultcheck, start): the flags of
// cli/setting_flags.h (one --<setting> flag per row of the settings table, `--tp-size 2`,
// --profile, --defaults) and `-- ARGS...` passed to `vllm serve` as given. Also the printing
// shared by the launch subcommands.
#pragma once

#include <CLI/CLI.hpp>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "cli/setting_flags.h"
#include "launch/prepare.h"
#include "launch/process.h"

namespace ppdeploy::cli {

/// The settings' flags and the `-- ARGS` pass-through.
struct LaunchOptions {
  SettingFlags settings;
  std::vector<std::string> extra_args;  ///< after `--`: passed to `vllm serve`
};

/// Adds the settings' flags (cli/setting_flags.h) and the `-- ARGS` pass-through to `sub`.
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
