// The decisions of `ppdeploy start`, `stop` and `wait` as functions, so that the commands and `ppdeploy
// rebalance` share one copy of each. They print nothing: each returns a result that its caller renders.
//
//   StartServer: refuses what `start` refuses, in this order: a gate, a multi-node layout, a live server in the
//     run directory, a busy port; then spawns the rendered command (no shell) and records the run state (the
//     request with every setting's origin, and the resolver's summary with the predicted pool).
//   StopServer: SIGTERM to the recorded process group, SIGKILL after the grace; idempotent.
//   WaitForServer: polls /health then /v1/models until both answer 200, the process dies, the timeout passes
//     or the stop flag is raised; records the outcome (and the ready time) in the run state.
//   ComparePoolAndCalibrate: once ready, the boot log's pool against the plan of the recorded request, and a
//     calibration from the log written next to it.
// Multi-node launches are cli/multinode_cli.h's (start and stop dispatch there; wait takes its dead-node check).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "launch/prepare.h"
#include "launch/process.h"

namespace ppdeploy::launch {

enum class StartOutcome {
  kStarted,         ///< spawned and still alive after a moment
  kDryRun,          ///< everything passed; nothing started (as asked)
  kRefused,         ///< a gate refused the launch
  kMultiNode,       ///< the layout spans several nodes: `start` runs one node
  kAlreadyRunning,  ///< the run directory's recorded server is alive
  kPortInUse,       ///< something else holds the port
  kDiedAtOnce,      ///< spawned, but exited within the first moment
};
/// "started", "dry-run", "refused", "multi-node", "already-running", "port-in-use", "died".
std::string_view ToString(StartOutcome outcome);

struct StartResult {
  StartOutcome outcome = StartOutcome::kRefused;
  /// kStarted / kDiedAtOnce: the state recorded; kAlreadyRunning: the live server's state.
  RunState state;
  std::string run_dir;
  /// kPortInUse: who holds the port; kDiedAtOnce: the log's last lines; kDryRun: a busy-port warning or "".
  std::string detail;
  bool Started() const { return outcome == StartOutcome::kStarted; }
};

/// What the resolver decided for a launch, as stored in the run state's "resolved" (vLLM row, model, GPU,
/// layout, split, speculation, max_model_len, block size, predicted_kv_tokens, predicted_num_gpu_blocks).
nlohmann::json ResolvedSummary(const PreparedLaunch& prepared);

/// `ppdeploy start` (see the file comment). Throws Error when the process cannot be spawned (its executable).
StartResult StartServer(const PreparedLaunch& prepared, const std::string& run_dir, bool dry_run);

struct StopResult {
  std::string state_path;
  int pid = 0;  ///< 0: nothing was started in the run directory
  StopOutcome outcome;
};
/// `ppdeploy stop`. Throws Error when the process group survives SIGKILL.
StopResult StopServer(const std::string& run_dir, double grace_s);

struct WaitOptions {
  double timeout_s = 1800;  ///< the seed's ready time was 540-670 s
  double interval_s = 2;
  int tail = 40;                            ///< log lines kept when the server died or timed out
  const std::atomic<bool>* stop = nullptr;  ///< Ctrl-C: return kInterrupted at the next check (<= 0.2 s)
  /// Called after every poll with the seconds waited and what the last poll saw ("/health answered 503").
  std::function<void(double waited_s, const std::string& last)> on_poll;
  /// Multi-node: called before every poll; a report (which node's step exited, with its log) ends the wait as
  /// kDied with the report in WaitResult::died_report. Unset for one node.
  std::function<std::optional<std::string>(const RunState&)> dead_nodes;
};

enum class WaitOutcome { kReady, kDied, kTimedOut, kInterrupted };
/// "ready", "died", "timeout", "interrupted".
std::string_view ToString(WaitOutcome outcome);

struct WaitResult {
  WaitOutcome outcome = WaitOutcome::kTimedOut;
  RunState state;  ///< as recorded after the wait (with its "wait" record)
  std::string url;
  double since_start_s = 0;  ///< start of the server -> ready (or now)
  double waited_s = 0;
  std::vector<std::string> models;  ///< ids listed by /v1/models (ready)
  bool served_name_listed = true;   ///< the recorded served model name is among them
  std::string last;                 ///< what the last poll saw
  std::string log_tail;             ///< kDied / kTimedOut: the log's last lines
  std::string died_report;          ///< kDied of a multi-node run: WaitOptions::dead_nodes' report
};
/// `ppdeploy wait`. Throws Error when nothing was started in `run_dir`.
WaitResult WaitForServer(const std::string& run_dir, const WaitOptions& options);

/// The boot log's pool against the planner's prediction for the recorded request.
struct PoolCheck {
  bool compared = false;
  std::string skipped;  ///< why not compared ("" when compared)
  std::int64_t logged_tokens = 0, predicted_tokens = 0;
  std::int64_t predicted_low_tokens = 0, predicted_high_tokens = 0;  ///< the plan's printed range
  int block_size = 0;
  double diff_blocks = 0;  ///< |predicted - logged| / block_size
  /// Within one block, or inside the plan's range: a difference the plan itself allows, not drift.
  bool inside_range() const {
    return diff_blocks <= 1.0 || (logged_tokens >= predicted_low_tokens && logged_tokens <= predicted_high_tokens);
  }
  bool calibrated_plan = false;
  std::string spec_method;
  int num_spec_tokens = 0;
  std::string calibration_path;  ///< written ("" when the calibration was skipped)
  std::string calibration_skipped;
};
/// What `wait` does once ready (never throws: problems end up in `skipped`).
PoolCheck ComparePoolAndCalibrate(const RunState& state, const std::string& run_dir);

}  // namespace ppdeploy::launch
