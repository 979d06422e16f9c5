// ppdeploy stop: SIGTERM to the server's process group, SIGKILL after a grace period; idempotent.
#include <fmt/format.h>
#include <fmt/ostream.h>

#include "cli/command.h"
#include "cli/launch_options.h"
#include "cli/multinode_cli.h"
#include "core/error.h"

namespace ppdeploy::cli {
namespace {

struct StopOptions {
  std::string run_dir;
  double grace_s = 30;
};

/// What `stop` did.
struct StopResult {
  std::string state_path;
  int pid = 0;  ///< 0: nothing was started
  launch::StopOutcome outcome;
};

StopResult RunStop(const StopOptions& o) {
  const std::string run_dir = EffectiveRunDir(o.run_dir);
  StopResult r;
  r.state_path = launch::StatePath(run_dir);
  auto state = launch::ReadRunState(run_dir);
  if (!state) return r;
  r.pid = state->pid;
  r.outcome = launch::StopProcessGroup(state->pid, state->proc_start_ticks, static_cast<int>(o.grace_s * 1000));
  if (!r.outcome.was_running) return r;
  if (launch::ProcessAlive(state->pid, state->proc_start_ticks) || launch::ProcessGroupAlive(state->pid))
    Fail("pid {} (process group {}) is still alive after SIGKILL", state->pid, state->pid);
  state->stopped_time_unix_ms = launch::NowUnixMs();
  launch::WriteRunState(run_dir, *state);
  return r;
}

}  // namespace

RunFunction DeclareStop(CLI::App* sub) {
  auto opts = std::make_shared<StopOptions>();
  AddRunDirOption(sub, opts->run_dir);
  sub->add_option("--grace", opts->grace_s, "seconds between SIGTERM and SIGKILL (default 30)")
      ->check(CLI::NonNegativeNumber);
  return [opts](CommandIo& io) {
    if (auto multi = StopMultiNodeRun(EffectiveRunDir(opts->run_dir), opts->grace_s, io)) return *multi;
    StopResult r = RunStop(*opts);
    if (r.pid == 0)
      fmt::print(io.out, "not running (no {})\n", r.state_path);
    else if (!r.outcome.was_running)
      fmt::print(io.out, "not running (pid {} has exited)\n", r.pid);
    else
      fmt::print(io.out, "stopped: pid {} after {}{}\n", r.pid, FormatDuration(r.outcome.waited_s),
                 r.outcome.needed_sigkill ? " (SIGKILL after the grace period)" : " (SIGTERM)");
    return ExitCode::kOk;
  };
}

}  // namespace ppdeploy::cli
