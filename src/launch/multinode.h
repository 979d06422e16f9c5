// A multi-node launch: probing the nodes, starting the engine's processes on them in order through
// the remote shell (launch/remote.h), and watching, listing and stopping them (`start`, `wait`,
// `status`, `logs --node`, `stop`).
//
// Every step of the rendered launch (launch/render.h) becomes one local process: the remote shell,
// spawned without a shell in its own session, whose stdout and stderr go to the step's log under
// <run-dir>/nodes/. The remote shell lives as long as the command on the node (Ray steps run with
// --block), so its liveness is the node's. Stopping asks the node itself first (`kill` of the pid
// the node reported, `ray stop`, `docker stop`), then ends the local process.
#pragma once

#include <atomic>
#include <cstdint>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "launch/node_gates.h"
#include "launch/prepare.h"
#include "launch/process.h"
#include "launch/render.h"

namespace ppdeploy::launch {

/// One step's process on one node: the state of one node's command, reused for every step.
struct NodeProcess {
  std::string node;                     ///< the host, as NODES names it
  std::string role;                     ///< "ray-head", "ray-worker", "serve" (the head's API server), "serve-headless"
  int node_rank = 0;                    ///< index in NODES (0 = the head)
  std::vector<std::string> argv;        ///< what runs on the node, as rendered
  std::vector<EnvVar> env;              ///< its environment there
  std::vector<std::string> local_argv;  ///< what ppdeploy spawned here: the remote shell and the quoted command
  int pid = 0;                          ///< the local remote-shell process (own session); 0 = not started
  std::int64_t proc_start_ticks = -1;   ///< /proc starttime of pid
  int pgid = 0;                         ///< the process group ppdeploy created for it (== pid), 0 unknown
  std::string boot_id;                  ///< the boot it was started in, "" unknown
  std::string run_token;                ///< PPDEPLOY_RUN_TOKEN given to it (launch/identity.h), "" unknown
  std::string log_path;                 ///< its stdout and stderr (<run-dir>/nodes/<rank>-<host>/<role>.log)
  std::int64_t start_time_unix_ms = 0;
  std::int64_t stopped_time_unix_ms = 0;  ///< set by `stop`; 0 = not stopped by ppdeploy
  /// `stop` could not reach the node (the remote shell failed, ssh's exit 255, or timed out): whether the command
  /// still runs there is unknown, so the step is not recorded as stopped and the next `stop` asks the node again.
  bool stop_unconfirmed = false;
  /// The recorded identity of the local process (launch/identity.h).
  ProcessIdentity Identity() const { return {pid, proc_start_ticks, pgid, boot_id, run_token}; }
};

/// What RunState::multi_node holds.
struct MultiNodeState {
  std::string executor;  ///< "ray" or "native"
  std::string runtime;   ///< "bare" or "docker"
  std::vector<std::string> remote_shell;
  std::string ray_bin, docker_bin, container_name;
  std::string head;  ///< NODES[0]
  int ray_port = 0;
  std::vector<NodeProcess> steps;  ///< in start order
};

nlohmann::json MultiNodeStateToJson(const MultiNodeState& s);
/// Throws Error naming `source` and the field for a malformed object.
MultiNodeState MultiNodeStateFromJson(const nlohmann::json& j, const std::string& source);

/// The multi-node part of a run state, nullopt for a single-node run.
std::optional<MultiNodeState> MultiNodeOf(const RunState& state, const std::string& source);

/// The steps of a rendered multi-node launch, not started yet (local_argv and log paths filled).
MultiNodeState PlanNodeProcesses(const PreparedLaunch& p, const std::string& run_dir);

/// Whether the step's local process lives (reaping it when it is our child).
bool StepAlive(const NodeProcess& step);

/// The first started step whose process exited without `stop` (nullopt: all alive or stopped).
std::optional<size_t> FirstDeadStep(const MultiNodeState& s);

/// "running", "exited" (without `stop`), "stopped", "stop unknown" (stop_unconfirmed) or "not started".
std::string StepState(const NodeProcess& step);

/// Asks every node over the remote shell: nvidia-smi (GPU ids, names, memory), its interfaces
/// (/sys/class/net), and the model: the sha256 of <model_path>/config.json (bare; docker: through
/// the volume that maps it) when model_path is absolute, or the image id (docker). In NODES order.
std::vector<NodeProbe> ProbeNodes(const ResolvedDeployment& d, int timeout_ms);

/// Limits of the start sequence.
struct NodeStartOptions {
  int settle_ms = 1000;           ///< how long a step must live after its start
  int ray_timeout_ms = 300000;    ///< until `ray status` shows every node's GPUs
  int ray_interval_ms = 1000;     ///< between two `ray status`
  int remote_timeout_ms = 60000;  ///< one `ray status` or probe
  /// Polled between the start's waits (Ctrl-C): when it is set, what was started is stopped, by name.
  const std::atomic<bool>* cancel = nullptr;
};

/// Starts the steps in order: Ray head, Ray workers, then (once `ray status` on the head shows
/// every node's GPUs) `vllm serve` on the head; or the native mode's headless workers, then the
/// head. Writes `state` (common fields filled by the caller) to the run directory after every
/// start, so `stop` finds whatever was started. On failure (a step that exits, Ray that never sees
/// the GPUs, `options.cancel` set by Ctrl-C) it says which node, stops what it started, naming each step,
/// and returns false.
bool StartNodes(const PreparedLaunch& p, const std::string& run_dir, RunState& state, const NodeStartOptions& options,
                std::ostream& out, std::ostream& err);

/// What StopNodes did.
struct NodeStopReport {
  std::vector<std::string> lines;     ///< one per step: "stopped 127.0.0.1 serve (pid 12, SIGTERM on the node)"
  std::vector<std::string> problems;  ///< a node that could not be asked to stop (the local process is ended anyway)
  bool any_running = false;           ///< something was still running when stop began
};

/// Stops the head first (its `vllm serve`, then its Ray), then every worker: the node's own stop
/// (kill of the reported pid / `ray stop` / `docker stop`), `grace_ms` to exit, then the forceful
/// one, then the local process group (only after its identity is verified, launch/identity.h; a refusal is a
/// problem). Idempotent: exited or stopped steps are left alone. Marks the steps stopped in `s`.
NodeStopReport StopNodes(MultiNodeState& s, int grace_ms, int remote_timeout_ms);

}  // namespace ppdeploy::launch
