#include "cli/server_render.h"

#include <fmt/format.h>
#include <fmt/ostream.h>
#include <fmt/ranges.h>

#include "cli/interrupt.h"
#include "cli/launch_options.h"
#include "cli/multinode_cli.h"
#include "cli/progress.h"
#include "core/units.h"
#include "launch/http_get.h"

namespace ppdeploy::cli {

ExitCode RenderStart(const launch::StartResult& r, const launch::PreparedLaunch& prepared, CommandIo& io,
                     const std::string& run_dir_flag) {
  using launch::StartOutcome;
  switch (r.outcome) {
    case StartOutcome::kRefused:
      fmt::print(io.err, "ppdeploy: start refused by the gates (see `ppdeploy cmd`)\n");
      return ExitCode::kError;
    case StartOutcome::kMultiNode:
      fmt::print(io.err,
                 "ppdeploy: the layout spans {} nodes; rebalance boots one-node layouts (`ppdeploy start` "
                 "launches multi-node ones)\n",
                 prepared.rendered.steps.size());
      return ExitCode::kError;
    case StartOutcome::kAlreadyRunning:
      fmt::print(io.err, "ppdeploy: already running: pid {}, port {}, log {} (run dir {}); `ppdeploy stop` first\n",
                 r.state.pid, r.state.port, r.state.log_path, r.run_dir);
      return ExitCode::kError;
    case StartOutcome::kPortInUse:
      fmt::print(io.err, "ppdeploy: port {} is in use: {}; stop that server or choose another PORT\n",
                 prepared.deployment.request.port, r.detail);
      return ExitCode::kError;
    case StartOutcome::kDryRun:
      if (!r.detail.empty())
        fmt::print(io.err, "ppdeploy: warning: port {} is in use: {}\n", prepared.deployment.request.port, r.detail);
      fmt::print(io.out, "dry run: nothing started\n");
      return ExitCode::kOk;
    case StartOutcome::kDiedAtOnce:
      fmt::print(io.err, "ppdeploy: the server exited at once; last lines of {}:\n{}", r.state.log_path, r.detail);
      return ExitCode::kError;
    case StartOutcome::kStarted:
      fmt::print(io.out, "started: pid {}, port {}, log {}, state {}\nnext: ppdeploy wait{}\n", r.state.pid,
                 r.state.port, r.state.log_path, launch::StatePath(r.run_dir),
                 run_dir_flag.empty() ? "" : " --run-dir " + launch::ShellQuote(run_dir_flag));
      return ExitCode::kOk;
  }
  return ExitCode::kError;
}

void RenderStop(const launch::StopResult& r, CommandIo& io) {
  if (r.pid == 0)
    fmt::print(io.out, "not running (no {})\n", r.state_path);
  else if (!r.outcome.was_running)
    fmt::print(io.out, "not running (pid {} has exited)\n", r.pid);
  else
    fmt::print(io.out, "stopped: pid {} after {}{}\n", r.pid, FormatDuration(r.outcome.waited_s),
               r.outcome.needed_sigkill ? " (SIGKILL after the grace period)" : " (SIGTERM)");
}

namespace {

/// The logged pool against the plan: a note when the plan's own range holds it, drift only outside.
void RenderPoolComparison(const launch::PoolCheck& pool, CommandIo& io) {
  const double diff_pct = 100.0 * (static_cast<double>(pool.predicted_tokens) /
                                       static_cast<double>(std::max<std::int64_t>(1, pool.logged_tokens)) -
                                   1.0);
  const bool ranged = pool.predicted_low_tokens < pool.predicted_high_tokens;
  const std::string lo_hi =
      fmt::format("{}-{}", WithThousands(pool.predicted_low_tokens), WithThousands(pool.predicted_high_tokens));
  const std::string range = ranged ? ", range " + lo_hi : "";
  fmt::print(io.out, "KV pool: logged {} tokens, predicted {} ({:+.2f}%{}; {}, speculation {}{}){}\n",
             WithThousands(pool.logged_tokens), WithThousands(pool.predicted_tokens), diff_pct, range,
             pool.calibrated_plan ? "calibrated" : "estimated", pool.spec_method,
             pool.num_spec_tokens > 0 ? fmt::format(" k={}", pool.num_spec_tokens) : "",
             pool.diff_blocks > 1.0 ? "" : " - within one block");
  if (pool.diff_blocks <= 1.0) return;
  const std::int64_t diff_tokens = pool.logged_tokens - pool.predicted_tokens;
  if (pool.inside_range())
    fmt::print(io.err,
               "ppdeploy: note: the logged pool differs from the plan by {:+} tokens ({:.0f} blocks of {}), inside "
               "the plan's range: no drift; the calibration below replaces the plan's estimates\n",
               diff_tokens, pool.diff_blocks, pool.block_size);
  else
    fmt::print(io.err,
               "ppdeploy: warning: drift: the logged pool differs from the plan by {:+} tokens ({:.0f} blocks of {}), "
               "outside the plan's range{}; the calibration below replaces the plan's estimates\n",
               diff_tokens, pool.diff_blocks, pool.block_size,
               ranged ? " " + lo_hi : " (a point: every figure measured)");
}

}  // namespace

ExitCode RenderWait(const launch::WaitResult& r, const launch::PoolCheck* pool, CommandIo& io) {
  using launch::WaitOutcome;
  switch (r.outcome) {
    case WaitOutcome::kInterrupted:
      fmt::print(io.err, "ppdeploy: wait interrupted after {} (last: {}); the server keeps booting (pid {})\n",
                 FormatDuration(r.waited_s), r.last, r.state.pid);
      return ExitCode::kInterrupted;
    case WaitOutcome::kDied:
      if (!r.died_report.empty()) {  // multi-node: which node's step exited, with its log
        io.err << r.died_report;
        return ExitCode::kError;
      }
      fmt::print(io.err, "ppdeploy: the server process {} died after {}; last lines of {}:\n{}", r.state.pid,
                 FormatDuration(r.since_start_s), r.state.log_path, r.log_tail);
      return ExitCode::kError;
    case WaitOutcome::kTimedOut:
      fmt::print(io.err, "ppdeploy: not ready after {} (last: {}); last lines of {}:\n{}", FormatDuration(r.waited_s),
                 r.last, r.state.log_path, r.log_tail);
      return ExitCode::kError;
    case WaitOutcome::kReady:
      break;
  }
  fmt::print(io.out, "ready: {} since start ({} waited); models: {}\n", FormatDuration(r.since_start_s),
             FormatDuration(r.waited_s),
             r.models.empty() ? "(none listed)" : fmt::format("{}", fmt::join(r.models, ", ")));
  if (!r.served_name_listed)
    fmt::print(io.err, "ppdeploy: warning: /v1/models does not list the served model name '{}'\n",
               r.state.served_model_name);
  if (pool == nullptr) return ExitCode::kOk;
  if (!pool->compared) {
    fmt::print(io.err, "ppdeploy: note: {}\n", pool->skipped);
    return ExitCode::kOk;
  }
  RenderPoolComparison(*pool, io);
  if (!pool->calibration_path.empty())
    fmt::print(io.out, "calibration written to {} (ppdeploy plan --calibration {})\n", pool->calibration_path,
               pool->calibration_path);
  else
    fmt::print(io.err, "ppdeploy: note: boot-log calibration skipped: {}\n", pool->calibration_skipped);
  return ExitCode::kOk;
}

ExitCode WaitAndReport(const std::string& run_dir, launch::WaitOptions options, CommandIo& io) {
  InterruptGuard interrupt;
  options.stop = InterruptGuard::Flag();
  auto state = launch::ReadRunState(run_dir);
  if (!state) Fail("nothing was started: no {} (run `ppdeploy start`)", launch::StatePath(run_dir));
  const std::string base = launch::LocalBaseUrl(state->host, state->port);
  fmt::print(io.out, "waiting for {}/health and {}/v1/models (pid {}, timeout {}s)\n", base, base, state->pid,
             options.timeout_s);
  io.out.flush();
  launch::WaitResult r;
  {
    Progress progress(io, "wait", 0);
    options.on_poll = [&progress](double, const std::string& last) { progress.Update(0, last); };
    const int tail = options.tail;
    options.dead_nodes = [run_dir, tail](const launch::RunState& s) { return DeadNodesReport(s, run_dir, tail); };
    r = launch::WaitForServer(run_dir, options);
  }
  if (r.outcome != launch::WaitOutcome::kReady) return RenderWait(r, nullptr, io);
  const launch::PoolCheck pool = launch::ComparePoolAndCalibrate(r.state, run_dir);
  return RenderWait(r, &pool, io);
}

}  // namespace ppdeploy::cli
