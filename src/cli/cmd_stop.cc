// ppdeploy stop: SIGTERM to the server's process group, SIGKILL after a grace period; idempotent
// (launch::StopServer).
#include "cli/command.h"
#include "cli/launch_options.h"
#include "cli/multinode_cli.h"
#include "cli/server_render.h"
#include "core/error.h"
#include "launch/server.h"

namespace ppdeploy::cli {
namespace {

struct StopOptions {
  std::string run_dir;
  double grace_s = 30;
};

}  // namespace

constexpr double kMaxGraceS = 86400;  // one day

RunFunction DeclareStop(CLI::App* sub) {
  auto opts = std::make_shared<StopOptions>();
  AddRunDirOption(sub, opts->run_dir);
  sub->add_option("--grace", opts->grace_s, "seconds between SIGTERM and SIGKILL (default 30)")
      ->check(CLI::NonNegativeNumber);
  return [opts](CommandIo& io) {
    // A grace past a day (or NaN) would overflow the millisecond count and send SIGKILL at once.
    if (!(opts->grace_s >= 0 && opts->grace_s <= kMaxGraceS))
      Fail("--grace: expected seconds from 0 to {}, got {}", kMaxGraceS, opts->grace_s);
    if (auto multi = StopMultiNodeRun(EffectiveRunDir(opts->run_dir), opts->grace_s, io)) return *multi;
    RenderStop(launch::StopServer(EffectiveRunDir(opts->run_dir), opts->grace_s), io);
    return ExitCode::kOk;
  };
}

}  // namespace ppdeploy::cli
