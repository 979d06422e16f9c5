// Process control of `ppdeploy start|wait|stop|status|logs`: spawning the server without a shell,
// the run directory's state file, liveness, stopping a process group, log tails. Linux/POSIX.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "launch/identity.h"
#include "launch/render.h"

namespace ppdeploy::launch {

/// What `start` records in <run_dir>/state.json (schema "ppdeploy.run-state/3"; /2 files, without pgid and
/// boot_id, are read, and refused for signalling).
struct RunState {
  int pid = 0;                         ///< the spawned process; also its process group and session id
  std::int64_t proc_start_ticks = -1;  ///< /proc/<pid>/stat starttime (guards against pid reuse), -1 unknown
  int pgid = 0;                        ///< the process group ppdeploy created (== pid), 0 unknown
  std::string boot_id;                 ///< the boot it was started in (launch/identity.h), "" unknown
  std::string run_token;               ///< PPDEPLOY_RUN_TOKEN given to the server (launch/identity.h), "" unknown
  std::vector<std::string> argv;
  std::vector<EnvVar> env;  ///< variables added to the inherited environment
  std::int64_t start_time_unix_ms = 0;
  std::string log_path;
  std::string host;  ///< as passed to --host
  int port = 0;
  std::string served_model_name;
  std::int64_t stopped_time_unix_ms = 0;  ///< set by `stop`; 0 = not stopped by ppdeploy
  std::int64_t ready_time_unix_ms = 0;    ///< set by `wait` when the server answered; 0 = not seen ready
  /// The last `wait`: {"outcome": "ready"|"died"|"timeout"|"interrupted", "waited_s", "last", "at_unix_ms"}
  /// (null before any wait). An interrupted or timed-out wait leaves what it saw here.
  nlohmann::json wait;
  /// The deployment request of this launch: every setting with its value and origin
  /// (SettingsToJson); `wait`, `verify` and `calibrate` resolve it again instead of rebuilding it.
  nlohmann::json request;
  /// What the resolver decided for it, for people and scripts (vLLM row, speculation, split,
  /// predicted pool); informative only.
  nlohmann::json resolved;
  /// A multi-node launch: every node's processes (launch/multinode.h MultiNodeState as JSON); null
  /// for one node. Then pid, log_path and host are the head's `vllm serve` (host = the head node).
  nlohmann::json multi_node;
  /// The recorded identity of `pid` (launch/identity.h).
  ProcessIdentity Identity() const { return {pid, proc_start_ticks, pgid, boot_id, run_token}; }
  /// Records `id` as the process of this run.
  void SetIdentity(const ProcessIdentity& id);
};

std::string StatePath(const std::string& run_dir);  ///< <run_dir>/state.json
std::string LogPath(const std::string& run_dir);    ///< <run_dir>/vllm.log

/// Reads the state file; nullopt when there is none. Throws Error for a malformed one (a pid outside 1..INT_MAX
/// among them).
std::optional<RunState> ReadRunState(const std::string& run_dir);
/// Creates the run directory (and parents). Throws Error naming it.
void EnsureRunDir(const std::string& run_dir);
/// Writes the state file atomically (creates run_dir).
void WriteRunState(const std::string& run_dir, const RunState& state);

/// Milliseconds since the Unix epoch (wall clock).
std::int64_t NowUnixMs();

/// /proc/<pid>/stat starttime, or -1 when unavailable.
std::int64_t ProcessStartTicks(int pid);

/// True when `pid` exists, is not a zombie, and (when start_ticks >= 0) started at start_ticks.
bool ProcessAlive(int pid, std::int64_t start_ticks = -1);

/// Spawns argv[0] (PATH lookup) with posix_spawn, no shell: new session (so its own process
/// group), stdin /dev/null, stdout and stderr appended to `log_path` (created, truncated), the
/// current environment plus `env` (overriding). Returns the pid. Throws Error naming the
/// executable when it cannot be started.
int SpawnDetached(const std::vector<std::string>& argv, const std::vector<EnvVar>& env, const std::string& log_path,
                  const std::string& run_token = "");

/// Reaps `pid` when it is our child and has exited (no-op otherwise, and for pid <= 0). Returns true if reaped.
bool ReapIfChild(int pid);

struct StopOutcome {
  bool was_running = false;
  bool needed_sigkill = false;
  double waited_s = 0;
  /// Not "": the identity check refused a signal (launch/identity.h CheckSignalTarget's sentence). Before
  /// SIGTERM nothing was signalled; after it, the SIGKILL was not sent.
  std::string refused;
};

/// SIGTERM to the process group of `id`, waits up to grace_ms for every member to exit, then SIGKILL, waits up
/// to 5 s more; each signal only after CheckSignalTarget verified the identity (else `refused`). Idempotent: a
/// process that is gone is a no-op. Reaps children.
StopOutcome StopProcessGroup(const ProcessIdentity& id, int grace_ms);

/// True while the recorded process (same start time) or any member of its group lives.
bool ProcessOrGroupAlive(const ProcessIdentity& id);

/// The last `lines` lines of a file ("" when it cannot be read). lines <= 0 = whole file.
std::string TailFile(const std::string& path, int lines);

/// What a short-lived command printed (RunCaptured).
struct CommandOutput {
  bool started = false;    ///< the executable was found and spawned
  int exit_code = -1;      ///< exit status, 128 + signal when killed, -1 when not started
  bool timed_out = false;  ///< killed (its process group) after the timeout
  std::string out, err;    ///< at most 1 MiB each
  std::string error;       ///< why it did not start
  /// One line for messages: "exit 255: ssh: connect to host ..." (stderr's last line).
  std::string Summary() const;
};

/// Runs argv (PATH lookup, no shell) in its own process group with stdin /dev/null, capturing
/// stdout and stderr, killing the group after `timeout_ms`. Never throws. One implementation for
/// remote shells (RunOnNode) and local helpers (nvidia-smi facts).
CommandOutput RunCaptured(const std::vector<std::string>& argv, int timeout_ms);

}  // namespace ppdeploy::launch
