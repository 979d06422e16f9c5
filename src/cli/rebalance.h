// `ppdeploy rebalance`: the seed's `v030_pp_rebalance.sh preflight | control | boot SPLIT | verify | verdict`
// (docs/seed.md §12) as one resumable flow with one run directory per arm.
//
//   preflight [SPLIT]  the split's gates (PrepareLaunch on the control's recorded request with the split) and its
//                      index-share preflight, without touching the service; SPLIT defaults to the optimiser's
//   control            measures the running control arm (verify) into <ab>/control/
//   boot SPLIT         gates, stops the serving arm, starts SPLIT in <ab>/<arm>/ and waits (start/stop/wait's code)
//   verify [SPLIT]     measures the new arm (verify) into <ab>/<arm>/
//   verdict [SPLIT]    the A/B table control vs new arm: exit 0 not worse, 2 worse (probes::JudgeNewArm)
//   restore            stops the new arm, restarts the control arm from its recorded request, waits
//   run SPLIT          preflight, control, boot, verify, verdict in order
//
// <ab> (default .ppdeploy/ab) holds state.json (each step's status, exit code and times; which arm serves),
// and per arm <ab>/<arm>/: request.json (the resolved request: every setting with value and origin, and the
// resolver's summary), vllm.log (boot log), state.json (run state), verify.json (the verify result); the new arm's
// directory is its run directory. A finished step is not repeated (--force repeats it); a step cut by a fault or
// Ctrl-C runs again, and verify continues its result file (finished checks are kept). Exit codes: 0 the new arm is
// not worse, 2 it is worse or a check found a problem (an unsafe split), 1 an error, 130 interrupted.
#pragma once

#include <string>

#include "cli/command.h"
#include "cli/verify_run.h"
#include "launch/server.h"

namespace ppdeploy::cli {

struct RebalanceOptions {
  std::string step;     ///< preflight, control, boot, verify, verdict, restore, run
  std::string split;    ///< "41,37" (VLLM_PP_LAYER_PARTITION syntax)
  std::string run_dir;  ///< the control arm's run directory (--run-dir, PPDEPLOY_RUN_DIR, .ppdeploy/run)
  std::string ab_dir = ".ppdeploy/ab";
  bool force = false;
  launch::WaitOptions wait;
  double grace_s = 30;
  double alpha = 0.05;
  double speed_tolerance = 0.05;
  std::string format = "md";  ///< the verdict's rendering on stdout: md, json or html
  VerifyOptions verify;       ///< the checks of both arms (url, out and label are set per arm)
};

/// Runs `options.step`; prints as it goes; returns the exit code (see the file comment). Throws Error for bad
/// input (a malformed split, no control arm recorded, a state file of another control arm).
ExitCode RunRebalance(const RebalanceOptions& options, CommandIo& io);

/// The directory name of an arm: "41,37" -> "41-37".
std::string ArmName(const std::string& split);

}  // namespace ppdeploy::cli
