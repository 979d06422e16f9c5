// Runs the built ppdeploy binary (PPDEPLOY_BINARY) through /bin/sh and captures its output.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace ppdeploy::testing {

struct CliResult {
  int exit_code = -1;
  std::string output;  ///< stdout (and stderr when merged)
};

/// Runs `ppdeploy <args>`; `args` is shell text. stderr is merged into output unless
/// `merge_stderr` is false (then it goes to /dev/null).
inline CliResult RunPpdeploy(const std::string& args, bool merge_stderr = true) {
  std::string cmd = std::string(PPDEPLOY_BINARY) + " " + args + (merge_stderr ? " 2>&1" : " 2>/dev/null");
  CliResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.output.append(buf.data(), n);
  int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

}  // namespace ppdeploy::testing
