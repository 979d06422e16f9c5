// Progress of a long step on stderr. On a terminal: one line rewritten in place ("degen: 12/40 done, 1
// degenerate, 0:31 elapsed, ETA 1m 03s"). Otherwise a heartbeat line every PPDEPLOY_HEARTBEAT_S seconds
// (default 30) while the step runs, so the log of an unattended run shows it is alive and how far it got.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

#include "cli/command.h"

namespace ppdeploy::cli {

/// Seconds between heartbeat lines: PPDEPLOY_HEARTBEAT_S (a number > 0), else 30.
double HeartbeatSeconds();

class Progress {
 public:
  /// `total` 0 = unknown (no ETA). Starts the heartbeat thread when stderr is not a terminal.
  Progress(CommandIo& io, std::string label, std::int64_t total);
  /// Ends the line (terminal) and stops the heartbeat.
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  /// `done` units finished; `detail` is shown after the count ("1 degenerate", "/health 503").
  void Update(std::int64_t done, const std::string& detail = "");
  /// The current line, e.g. "degen: 12/40 done, 1 degenerate, 31s elapsed, ETA 1m 03s".
  std::string Line() const;

 private:
  std::string LineLocked() const;
  void Heartbeat();
  CommandIo& io_;
  std::string label_;
  std::int64_t total_;
  std::int64_t done_ = 0;
  std::string detail_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool tty_ = false;
  std::thread heartbeat_;
};

}  // namespace ppdeploy::cli
