// Options and printing shared by the launch subcommands (cmd, defaultcheck, start, wait, stop,
// status, logs). Not a subcommand itself.
#pragma once

#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "launch/prepare.h"
#include "launch/process.h"

namespace ppdeploy::cli {

/// Profile options: one --<setting> flag per launch setting, plus --profile and --defaults.
struct LaunchOptions {
  std::string profile_path;   ///< --profile FILE (env PPDEPLOY_PROFILE); default ./ppdeploy.toml if present
  std::string defaults_path;  ///< --defaults FILE replaces the built-in data/launch/defaults.toml
  std::map<std::string, std::string> values;         ///< setting key -> flag value
  std::map<std::string, CLI::Option*> options;       ///< setting key -> its CLI11 option
};

/// Adds --profile, --defaults and one flag per setting to `sub`.
void AddLaunchOptions(CLI::App* sub, LaunchOptions& opts);

/// Reads the profile file, the defaults and the process environment into SettingInputs.
launch::SettingInputs MakeSettingInputs(const LaunchOptions& opts);

/// Resolves, gates and renders with the default planner facts (TODO(planner): the stub for now).
launch::PreparedLaunch PrepareFromCli(const LaunchOptions& opts);

/// --run-dir (env PPDEPLOY_RUN_DIR, default .ppdeploy/run).
void AddRunDirOption(CLI::App* sub, std::string& run_dir);
/// The effective run directory.
std::string EffectiveRunDir(const std::string& flag_value);

/// "Settings" table: key, value, origin.
void PrintSettings(std::ostream& out, const launch::ResolvedSettings& settings);
/// Every step as a multi-line shell command, with a header naming the node.
void PrintCommand(std::ostream& out, const launch::PreparedLaunch& prepared);
/// "[pass] gate: message" lines.
void PrintGates(std::ostream& out, const launch::GateReport& report);

/// "3m 12s" style duration.
std::string FormatDuration(double seconds);

}  // namespace ppdeploy::cli
