// Error type of the ppdeploy library.
//
// Library code never prints and never exits: it throws ppdeploy::Error with a one-line
// message that names the file, the field and the bad value. Only main() catches it, prints
// "ppdeploy: error: <message>" and returns ExitCode::kError.
#pragma once

#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace ppdeploy {

/// Process exit codes, as documented in README.md. An issue that names another code rules.
enum class ExitCode : int {
  kOk = 0,           ///< success
  kError = 1,        ///< bad input, runtime error or a launch refused by a gate
  kCheckFailed = 2,  ///< a check ran and found a problem (drift, degeneration, unsafe split, missed needle)
  kInterrupted = 130 ///< SIGINT
};

/// The one exception type of the library. `what()` is a complete one-line message.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

/// Throws Error with a fmt-formatted message.
template <typename... Args>
[[noreturn]] void Fail(fmt::format_string<Args...> format, Args&&... args) {
  throw Error(fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace ppdeploy
