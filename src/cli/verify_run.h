// `ppdeploy verify` as a function that `ppdeploy rebalance` calls for each arm: one pass of every check against
// a running server, written as a ppdeploy.verify/1 result (src/probes/verify_result.h) after every step.
//
// Steps, in order: server (the model, /version, and the server facts: boot log, /metrics, nvidia-smi, run state;
// probes/server_facts.h), smoke (one short chat), needle, degeneration, bench (single stream and concurrency N,
// with the step-time histogram of /metrics over it), probes. "verify.steps" holds each step's status (ok,
// problem, error, skipped, interrupted) and "verify.missing" the steps without a complete result. With
// `resume`, a step whose status in the existing file is ok, problem or skipped is kept, not run again.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "cli/command.h"
#include "probes/verify_result.h"

namespace ppdeploy::cli {

struct VerifyOptions {
  std::string url, run_dir, model, out, label, plan_json;
  std::vector<std::string> skip;
  // needle
  std::string lengths = "4K,16K", depths = "50";
  // degeneration (docs/seed.md §7 defaults except the trial count)
  int trials = 0;  ///< 0 = env AGENT_PROBE_TRIALS, else 40 (as `ppdeploy degen`)
  std::int64_t degen_max_tokens = 3000;
  int degen_concurrency = 8;
  std::int64_t degen_seed = -1;
  // bench
  int bench_requests = 8;
  std::int64_t bench_output_len = 64;
  int bench_concurrency = 4;
  // probes
  std::int64_t probe_max_tokens = 1024;
  bool no_arg_check = false;
  bool resume = false;
};

/// The steps, in order.
const std::vector<std::string>& VerifySteps();

/// Declares the options of the checks themselves (--skip, --needle-*, --trials, --degen-*, --bench-*,
/// --probe-max-tokens, --no-arg-check, --model): shared by `verify` and `rebalance`.
void AddVerifyCheckOptions(CLI::App* sub, VerifyOptions& options);

struct VerifyOutcome {
  ExitCode code = ExitCode::kOk;  ///< 2 a check found a problem; 1 an error; 130 interrupted; else 0
  bool interrupted = false;
  probes::VerifyResult result;  ///< as written to `out`
};

/// Runs the checks against o.url (resolved by the caller: cli/target.h; `run_dir` names the run state of the
/// server when ppdeploy started it, "" otherwise). Progress goes to io.err; nothing else is printed. Throws
/// Error for bad options (lengths, depths, --plan-json, --resume of another arm's file).
VerifyOutcome RunVerify(const VerifyOptions& options, CommandIo& io);

/// The step table: "<step> <status> <note>" per step.
std::string VerifyStepTable(const probes::VerifyResult& result);

}  // namespace ppdeploy::cli
