// Helpers shared by tests.
#pragma once

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

}  // namespace ppdeploy::testing
