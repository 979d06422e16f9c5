// Which server a URL-based command (bench, degen, needle, probe, verify) talks to: --url when given, else the
// server ppdeploy started (the run state of --run-dir, PPDEPLOY_RUN_DIR or .ppdeploy/run).
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "launch/process.h"

namespace ppdeploy::cli {

struct ServerTarget {
  std::string url;                        ///< base URL, e.g. "http://127.0.0.1:8000"
  std::string run_dir;                    ///< the run directory looked at
  std::optional<launch::RunState> state;  ///< set when `url` is the server ppdeploy started there
  bool local = false;                     ///< the server runs on this host (loopback or ppdeploy started it)
};

/// Adds --url (default: the started server) and --run-dir to `sub`.
void AddTargetOptions(CLI::App* sub, std::string& url, std::string& run_dir);

/// The target: --url, else the run state's server (`http://<host>:<port>`, 0.0.0.0 -> 127.0.0.1). With --url,
/// `state` is still set when the URL names the server of the run state (same port on a loopback address).
/// Throws Error when neither --url nor a run state is there, naming the run directory looked at.
ServerTarget ResolveTarget(const std::string& url_flag, const std::string& run_dir_flag);

}  // namespace ppdeploy::cli
