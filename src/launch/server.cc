#include "launch/server.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

#include "calibration/check.h"
#include "calibration/schema.h"
#include "core/error.h"
#include "io/deployment_inputs.h"
#include "io/files.h"
#include "launch/http_get.h"
#include "launch/ports.h"
#include "launch/run_lock.h"
#include "vllm/log_parser.h"

namespace ppdeploy::launch {
namespace {

std::vector<std::string> ModelIds(const std::string& body) {
  std::vector<std::string> ids;
  auto j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("data") || !j["data"].is_array()) return ids;
  for (const auto& m : j["data"])
    if (m.is_object() && m.contains("id") && m["id"].is_string()) ids.push_back(m["id"].get<std::string>());
  return ids;
}

double SecondsSince(std::int64_t unix_ms) { return static_cast<double>(NowUnixMs() - unix_ms) / 1000.0; }

}  // namespace

std::string_view ToString(StartOutcome o) {
  switch (o) {
    case StartOutcome::kStarted:
      return "started";
    case StartOutcome::kDryRun:
      return "dry-run";
    case StartOutcome::kRefused:
      return "refused";
    case StartOutcome::kMultiNode:
      return "multi-node";
    case StartOutcome::kAlreadyRunning:
      return "already-running";
    case StartOutcome::kPortInUse:
      return "port-in-use";
    case StartOutcome::kDiedAtOnce:
      return "died";
  }
  return "?";
}

std::string_view ToString(WaitOutcome o) {
  switch (o) {
    case WaitOutcome::kReady:
      return "ready";
    case WaitOutcome::kDied:
      return "died";
    case WaitOutcome::kTimedOut:
      return "timeout";
    case WaitOutcome::kInterrupted:
      return "interrupted";
  }
  return "?";
}

nlohmann::json ResolvedSummary(const PreparedLaunch& p) {
  const auto& d = p.deployment;
  return {{"vllm", d.planner.vllm.name},
          {"model", d.planner.model_name},
          {"gpu", d.planner.gpu.name},
          {"tensor_parallel_size", d.layout.tensor_parallel_size},
          {"pipeline_parallel_size", d.layout.pipeline_parallel_size},
          {"data_parallel_size", d.layout.data_parallel_size},
          {"layer_partition", p.plan.partition},
          {"spec_method", d.spec_method},
          {"num_speculative_tokens", d.num_spec_tokens},
          {"max_model_len", p.plan.max_model_len},
          {"block_size", p.plan.block_size},
          {"predicted_kv_tokens", p.plan.pool.kv_tokens},
          {"predicted_num_gpu_blocks", p.plan.pool.num_gpu_blocks}};
}

namespace {

// Spawns the rendered command and records the run state (the caller holds the run directory's lock).
void SpawnAndRecord(const PreparedLaunch& prepared, const std::string& run_dir, StartResult& r) {
  const auto& q = prepared.deployment.request;
  const auto& step = prepared.rendered.steps.front();
  RunState& state = r.state;
  state.argv = step.argv;
  state.env = step.env;
  state.log_path = LogPath(run_dir);
  state.host = q.host;
  state.port = q.port;
  state.served_model_name = q.served_model_name;
  state.request = SettingsToJson(q.settings);
  state.resolved = ResolvedSummary(prepared);
  state.start_time_unix_ms = NowUnixMs();
  // Docker steps carry their variables as -e; bare steps get them in the process environment.
  const std::string token = NewRunToken();
  const int pid =
      SpawnDetached(step.argv, q.runtime == "bare" ? step.env : std::vector<EnvVar>{}, state.log_path, token);
  state.SetIdentity(IdentityOfSpawned(pid, token));
  WriteRunState(run_dir, state);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  if (ReapIfChild(state.pid) || !ProcessAlive(state.pid, state.proc_start_ticks)) {
    r.outcome = StartOutcome::kDiedAtOnce;
    r.detail = TailFile(state.log_path, 40);
    return;
  }
  r.outcome = StartOutcome::kStarted;
}

}  // namespace

StartResult StartServer(const PreparedLaunch& prepared, const std::string& run_dir, bool dry_run) {
  StartResult r;
  r.run_dir = run_dir;
  if (prepared.gates.Refused()) {
    r.outcome = StartOutcome::kRefused;
    return r;
  }
  if (prepared.rendered.multi_node) {
    r.outcome = StartOutcome::kMultiNode;
    return r;
  }
  // From the "already running" check through the state write: one start at a time (a dry run writes nothing).
  std::optional<RunLock> lock;
  if (!dry_run) lock.emplace(RunLock::Acquire(run_dir, "start"));
  if (auto state = ReadRunState(run_dir); state && ProcessAlive(state->pid, state->proc_start_ticks)) {
    r.outcome = StartOutcome::kAlreadyRunning;
    r.state = *state;
    return r;
  }
  const auto& q = prepared.deployment.request;
  r.detail = PortHolder(q.host, q.port);
  if (dry_run || !r.detail.empty()) {
    r.outcome = dry_run ? StartOutcome::kDryRun : StartOutcome::kPortInUse;
    return r;
  }
  SpawnAndRecord(prepared, run_dir, r);  // the run directory exists: the lock created it
  return r;
}

StopResult StopServer(const std::string& run_dir, double grace_s) {
  StopResult r;
  r.state_path = StatePath(run_dir);
  if (!ReadRunState(run_dir)) return r;  // nothing started here: no lock, no directory created
  const RunLock lock = RunLock::Acquire(run_dir, "stop");
  auto state = ReadRunState(run_dir);  // again, under the lock
  if (!state) return r;
  r.pid = state->pid;
  r.outcome = StopProcessGroup(state->Identity(), static_cast<int>(grace_s * 1000));
  if (!r.outcome.refused.empty()) Fail("{}", r.outcome.refused);
  if (!r.outcome.was_running) return r;
  if (ProcessOrGroupAlive(state->Identity()))
    Fail("pid {} (process group {}) is still alive after SIGKILL", state->pid, state->pgid);
  state->stopped_time_unix_ms = NowUnixMs();
  WriteRunState(run_dir, *state);
  return r;
}

WaitResult WaitForServer(const std::string& run_dir, const WaitOptions& o) {
  auto state = ReadRunState(run_dir);
  if (!state) Fail("nothing was started: no {} (run `ppdeploy start`)", StatePath(run_dir));
  WaitResult r;
  r.url = LocalBaseUrl(state->host, state->port);
  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  r.last = "no answer yet";
  auto finish = [&](WaitOutcome outcome) {
    r.outcome = outcome;
    r.waited_s = elapsed();
    r.since_start_s = SecondsSince(state->start_time_unix_ms);
    // Record what this wait saw, under the run directory's lock; re-read the state so that a `stop` is not
    // undone. While another ppdeploy holds the lock (a `stop` in its grace period), the record is skipped.
    std::optional<RunLock> lock;
    try {
      lock.emplace(RunLock::Acquire(run_dir, "wait"));
    } catch (const Error&) {
      r.state = *state;
      return r;
    }
    RunState now = ReadRunState(run_dir).value_or(*state);
    if (now.pid == state->pid) {
      if (outcome == WaitOutcome::kReady) now.ready_time_unix_ms = NowUnixMs();
      now.wait = {{"outcome", ToString(outcome)},
                  {"waited_s", std::round(r.waited_s * 10) / 10},
                  {"since_start_s", std::round(r.since_start_s * 10) / 10},
                  {"last", r.last},
                  {"at_unix_ms", NowUnixMs()}};
      WriteRunState(run_dir, now);
      r.state = now;
    } else {
      r.state = *state;
    }
    return r;
  };
  auto interrupted = [&] { return o.stop != nullptr && o.stop->load(); };
  while (true) {
    if (interrupted()) return finish(WaitOutcome::kInterrupted);
    if (o.dead_nodes) {
      if (auto dead = o.dead_nodes(*state)) {
        r.died_report = *dead;
        r.last = "a node's process exited";
        return finish(WaitOutcome::kDied);
      }
    }
    ReapIfChild(state->pid);
    if (!ProcessAlive(state->pid, state->proc_start_ticks)) {
      r.log_tail = TailFile(state->log_path, o.tail);
      r.last = "the process exited";
      return finish(WaitOutcome::kDied);
    }
    const long per_request_ms = static_cast<long>(std::max(1000.0, std::min(10000.0, o.interval_s * 1000.0)));
    auto health = HttpGet(r.url + "/health", per_request_ms);
    if (health.connected && health.status == 200) {
      auto models = HttpGet(r.url + "/v1/models", per_request_ms);
      if (models.connected && models.status == 200) {
        r.models = ModelIds(models.body);
        r.served_name_listed = state->served_model_name.empty() ||
                               std::find(r.models.begin(), r.models.end(), state->served_model_name) != r.models.end();
        r.last = "/health and /v1/models answered 200";
        return finish(WaitOutcome::kReady);
      }
      r.last = models.connected ? fmt::format("/v1/models answered {}", models.status) : models.error;
    } else {
      r.last = health.connected ? fmt::format("/health answered {}", health.status) : health.error;
    }
    if (o.on_poll) o.on_poll(elapsed(), r.last);
    if (elapsed() >= o.timeout_s) {
      r.log_tail = TailFile(state->log_path, o.tail);
      return finish(WaitOutcome::kTimedOut);
    }
    // Sleep the interval in short slices, so that Ctrl-C is seen at once.
    const double sleep_s = std::min(o.interval_s, std::max(0.0, o.timeout_s - elapsed()));
    const auto until =
        std::chrono::steady_clock::now() +
        std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(sleep_s));
    while (!interrupted()) {
      const auto left = until - std::chrono::steady_clock::now();
      if (left <= std::chrono::steady_clock::duration::zero()) break;
      std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(std::chrono::milliseconds(200), left));
    }
  }
}

PoolCheck ComparePoolAndCalibrate(const RunState& state, const std::string& run_dir) {
  PoolCheck c;
  if (!state.request.is_array()) {
    c.skipped = fmt::format("{} records no deployment request; no pool to compare", StatePath(run_dir));
    return c;
  }
  try {
    BootLog log =
        ParseBootLog(ReadFileText(state.log_path, kBootLogReadLimitBytes), LogParseOptions{state.log_path, 0});
    if (log.kv_tokens.empty()) {
      c.skipped = fmt::format("{} has no \"GPU KV cache size\" line; no pool to compare", state.log_path);
      return c;
    }
    ResolvedDeployment d = ResolveStoredDeployment(state.request, StatePath(run_dir));
    LayoutPlan predicted = PlanLayout(d.planner, d.layout);
    c.compared = true;
    c.logged_tokens = *std::min_element(log.kv_tokens.begin(), log.kv_tokens.end());
    c.predicted_tokens = predicted.pool.kv_tokens;
    c.predicted_low_tokens = std::min(predicted.pool_lo.kv_tokens, c.predicted_tokens);
    c.predicted_high_tokens = std::max(predicted.pool_hi.kv_tokens, c.predicted_tokens);
    c.block_size = predicted.block_size;
    c.diff_blocks =
        std::abs(static_cast<double>(c.predicted_tokens - c.logged_tokens)) / std::max(1, predicted.block_size);
    c.calibrated_plan = d.planner.calibration.has_value();
    c.spec_method = d.spec_method;
    c.num_spec_tokens = d.num_spec_tokens;
    try {
      Deployment raw = d.planner;
      raw.calibration.reset();
      LogCalibration cal = CalibrateFromLog(log, raw, d.layout);
      const std::string path = run_dir + "/calibration.json";
      WriteFileText(path, CalibrationToJson(cal.calibration).dump(2) + "\n");
      c.calibration_path = path;
    } catch (const Error& e) {
      c.calibration_skipped = e.what();
    }
  } catch (const Error& e) {
    c.compared = false;
    c.skipped = std::string("boot-log calibration skipped: ") + e.what();
  }
  return c;
}

}  // namespace ppdeploy::launch
