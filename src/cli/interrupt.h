// Ctrl-C for the long commands (bench, degen, needle, probe, verify, wait, rebalance).
//
// While an InterruptGuard lives, the first SIGINT only raises a flag: the command stops starting new work,
// cancels what is in flight (the HTTP backends and clients watch the flag), writes every finished
// measurement and returns ExitCode::kInterrupted (130). A second SIGINT ends the process at once with 130.
// Guards nest (rebalance runs verify and wait in-process): only the outermost installs the handler.
#pragma once

#include <atomic>

namespace ppdeploy::cli {

class InterruptGuard {
 public:
  /// Installs the SIGINT handler (outermost guard only) and clears the flag.
  InterruptGuard();
  /// Restores the previous handler (outermost guard only).
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

  /// Whether SIGINT arrived since the outermost guard was installed.
  static bool Raised();
  /// The flag itself, for code that polls it (HTTP cancellation, RunConcurrent's stop).
  static const std::atomic<bool>* Flag();
};

}  // namespace ppdeploy::cli
