// ppdeploy stop: SIGTERM to the server's process group, SIGKILL after a grace period; idempotent.
#include <fmt/format.h>
#include <fmt/ostream.h>

#include "cli/command.h"
#include "cli/launch_options.h"
#include "core/error.h"

namespace ppdeploy::cli {
namespace {

struct StopOptions {
  std::string run_dir;
  double grace_s = 30;
};

}  // namespace

RunFunction DeclareStop(CLI::App* sub) {
  auto opts = std::make_shared<StopOptions>();
  AddRunDirOption(sub, opts->run_dir);
  sub->add_option("--grace", opts->grace_s, "seconds between SIGTERM and SIGKILL (default 30)")
      ->check(CLI::NonNegativeNumber);
  return [opts](CommandIo& io) -> ExitCode {
    const std::string run_dir = EffectiveRunDir(opts->run_dir);
    auto state = launch::ReadRunState(run_dir);
    if (!state) {
      fmt::print(io.out, "not running (no {})\n", launch::StatePath(run_dir));
      return ExitCode::kOk;
    }
    auto outcome =
        launch::StopProcessGroup(state->pid, state->proc_start_ticks, static_cast<int>(opts->grace_s * 1000));
    if (!outcome.was_running) {
      fmt::print(io.out, "not running (pid {} has exited)\n", state->pid);
      return ExitCode::kOk;
    }
    if (launch::ProcessAlive(state->pid, state->proc_start_ticks) || launch::ProcessGroupAlive(state->pid))
      Fail("pid {} (process group {}) is still alive after SIGKILL", state->pid, state->pid);
    state->stopped_time_unix_ms = launch::NowUnixMs();
    launch::WriteRunState(run_dir, *state);
    fmt::print(io.out, "stopped: pid {} after {}{}\n", state->pid, FormatDuration(outcome.waited_s),
               outcome.needed_sigkill ? " (SIGKILL after the grace period)" : " (SIGTERM)");
    return ExitCode::kOk;
  };
}

}  // namespace ppdeploy::cli
