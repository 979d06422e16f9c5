// Helpers shared by tests.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <functional>
#include <string>

#include "core/error.h"

namespace ppdeploy::testing {

/// The message of the ppdeploy::Error `f` throws, or "(no error)".
inline std::string ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

/// A path `name` in this process's temporary directory `<tmp>/<prefix>-<pid>` (created).
inline std::string TempPath(const std::string& prefix, const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / (prefix + "-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

}  // namespace ppdeploy::testing
