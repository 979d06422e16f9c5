// One writer per run directory: an advisory lock (flock(2), exclusive) on <run_dir>/ppdeploy.lock, held by
// `start`, `stop`, `rebalance` and a multi-node `start` from their "already running" check through the write of
// the state (docs/safety.md). Like PostgreSQL's postmaster.pid, the file names its holder (pid and command) for
// the message of the one that has to give up; unlike a pid file the lock ends with its holder's process, so a
// crashed ppdeploy leaves no stale lock. The descriptor is close-on-exec: a spawned server never inherits it.
#pragma once

#include <string>
#include <string_view>

namespace ppdeploy::launch {

/// <run_dir>/ppdeploy.lock
std::string RunLockPath(const std::string& run_dir);

/// How long a second ppdeploy waits for the lock before it gives up.
inline constexpr int kRunLockWaitMs = 2000;

class RunLock {
 public:
  /// Creates run_dir (and parents) and takes the lock for `command` ("start", "stop", ...), waiting up to
  /// wait_ms while another process holds it. Throws Error "<run_dir> is in use: pid 4242 (ppdeploy start) holds
  /// <run_dir>/ppdeploy.lock; try again when it is done" when it is still held then, or when the lock file cannot
  /// be opened (a non-regular file there, a symlink, no permission).
  static RunLock Acquire(const std::string& run_dir, std::string_view command, int wait_ms = kRunLockWaitMs);

  RunLock(RunLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  RunLock& operator=(RunLock&&) = delete;
  RunLock(const RunLock&) = delete;
  ~RunLock();  ///< releases the lock (closing the descriptor)

 private:
  explicit RunLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace ppdeploy::launch
