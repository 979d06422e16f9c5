// ppdeploy rebalance STEP [SPLIT]: the seed's rebalancing A/B as one resumable flow (src/cli/rebalance.h).
#include <memory>

#include "cli/command.h"
#include "cli/launch_options.h"
#include "cli/rebalance.h"
#include "cli/verify_run.h"

namespace ppdeploy::cli {

RunFunction DeclareRebalance(CLI::App* sub) {
  auto o = std::make_shared<RebalanceOptions>();
  sub->add_option("step", o->step, "preflight, control, boot, verify, verdict, restore or run")
      ->required()
      ->check(CLI::IsMember({"preflight", "control", "boot", "verify", "verdict", "restore", "run"}));
  sub->add_option("split", o->split,
                  "The new arm's layer split, e.g. 41,37 (boot, run; preflight: default the optimiser's best; verify "
                  "and verdict: default the split booted last)");
  AddRunDirOption(sub, o->run_dir);
  sub->add_option("--ab-dir", o->ab_dir, "The A/B's directory: state.json and one directory per arm")
      ->capture_default_str();
  sub->add_flag("--force", o->force, "Repeat steps that already finished (and measure again from scratch)");
  sub->add_option("--timeout", o->wait.timeout_s, "Seconds to wait for a booted arm to be ready (default 1800)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--interval", o->wait.interval_s, "Seconds between readiness polls (default 2)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--grace", o->grace_s, "Seconds between SIGTERM and SIGKILL when an arm is stopped (default 30)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--alpha", o->alpha, "Significance level of the verdict")
      ->capture_default_str()
      ->check(CLI::Range(1e-9, 0.5));
  sub->add_option("--speed-tolerance", o->speed_tolerance,
                  "A significantly slower new arm counts as worse only beyond this relative loss")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  sub->add_option("--format", o->format, "The verdict on stdout: md, json or html (all three are written)")
      ->capture_default_str()
      ->check(CLI::IsMember({"md", "json", "html"}));
  AddVerifyCheckOptions(sub, o->verify);
  return [o](CommandIo& io) { return RunRebalance(*o, io); };
}

}  // namespace ppdeploy::cli
