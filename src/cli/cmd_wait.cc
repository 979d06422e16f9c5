// ppdeploy wait: polls GET /health, then GET /v1/models of the started server until both answer
// 200; reports the ready time, compares the boot log's pool with the plan of the recorded request
// and writes a calibration (launch::WaitForServer, launch::ComparePoolAndCalibrate). Exit 1 on
// timeout or when the process died (with the log tail), 130 on Ctrl-C (the state records what the
// wait saw).
#include "cli/command.h"
#include "cli/launch_options.h"
#include "cli/server_render.h"
#include "core/error.h"
#include "launch/server.h"

namespace ppdeploy::cli {
namespace {

struct WaitCommandOptions {
  std::string run_dir;
  launch::WaitOptions wait;
};

}  // namespace

RunFunction DeclareWait(CLI::App* sub) {
  auto opts = std::make_shared<WaitCommandOptions>();
  AddRunDirOption(sub, opts->run_dir);
  sub->add_option("--timeout", opts->wait.timeout_s, "give up after this many seconds (default 1800)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--interval", opts->wait.interval_s, "seconds between polls (default 2)")->check(CLI::PositiveNumber);
  sub->add_option("--tail", opts->wait.tail, "log lines shown when the server died or timed out (default 40)");
  return [opts](CommandIo& io) { return WaitAndReport(EffectiveRunDir(opts->run_dir), opts->wait, io); };
}

}  // namespace ppdeploy::cli
