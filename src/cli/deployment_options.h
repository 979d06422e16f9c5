// The planning front-end of the one deployment request: the flags `plan`, `preflight` and
// `calibrate` take. They are the launcher's flags (cli/setting_flags.h: one per row of the
// settings table, the same layers vLLM defaults < default deployment < profile file <
// environment < flags, the same resolver), so `plan` and `cmd` describe one deployment; plan's
// own are --gpus N (a total, where `cmd --gpus` lists GPU ids) and --fix.
#pragma once

#include <CLI/CLI.hpp>
#include <map>
#include <string>

#include "cli/setting_flags.h"
#include "deploy/resolve.h"

namespace ppdeploy::cli {

struct DeploymentOptions {
  SettingFlags settings;
  int gpus = 0;                 ///< --gpus N: N GPUs in total, over --nodes or nodes of --gpus-per-node
  std::string fix = "profile";  ///< --fix: the index-share fix to assume

  /// Declares the flags on `cmd`.
  void Add(CLI::App* cmd);
  /// The flags given, as settings (key -> value and the flag as typed).
  std::map<std::string, FlagValue> Flags() const;
  /// Resolves the deployment (settings, files, resolver); applies the --fix what-if.
  ResolvedDeployment Resolve() const;
};

}  // namespace ppdeploy::cli
