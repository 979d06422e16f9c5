// ppdeploy start: runs the gates, then spawns the rendered command without a shell (posix_spawn),
// stdout/stderr to <run-dir>/vllm.log, and records <run-dir>/state.json with the resolved
// deployment request (seed deploy.sh `start`).
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <chrono>
#include <thread>

#include "cli/command.h"
#include "cli/launch_options.h"
#include "cli/multinode_cli.h"
#include "core/error.h"

namespace ppdeploy::cli {
namespace {

struct StartOptions {
  LaunchOptions launch;
  std::string run_dir;
  bool dry_run = false;
};

/// What the resolver decided, stored beside the request for people and scripts.
nlohmann::json ResolvedSummary(const launch::PreparedLaunch& p) {
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

ExitCode RunStart(const StartOptions& o, CommandIo& io) {
  launch::PreparedLaunch prepared = PrepareFromCli(o.launch);
  if (prepared.rendered.multi_node)
    return RunStartMultiNode(std::move(prepared), o.run_dir, o.dry_run, ResolvedSummary, io);
  const std::string run_dir = EffectiveRunDir(o.run_dir);
  PrintGates(io.out, prepared);
  for (const auto& g : prepared.gates.results) {
    if (g.status == launch::GateStatus::kPass) continue;
    for (const auto& m : g.messages)
      fmt::print(io.err, "ppdeploy: {}: {}: {}\n", g.name, launch::GateStatusName(g.status), m);
  }
  if (prepared.gates.Refused()) {
    fmt::print(io.err, "ppdeploy: start refused by the gates (see `ppdeploy cmd`)\n");
    return ExitCode::kError;
  }
  PrintCommand(io.out, prepared);
  if (auto state = launch::ReadRunState(run_dir); state && launch::ProcessAlive(state->pid, state->proc_start_ticks)) {
    fmt::print(io.err, "ppdeploy: already running: pid {}, port {}, log {} (run dir {}); `ppdeploy stop` first\n",
               state->pid, state->port, state->log_path, run_dir);
    return ExitCode::kError;
  }
  if (o.dry_run) {
    fmt::print(io.out, "dry run: nothing started\n");
    return ExitCode::kOk;
  }
  const auto& step = prepared.rendered.steps.front();
  const auto& q = prepared.deployment.request;
  launch::RunState state;
  state.argv = step.argv;
  state.env = step.env;
  state.log_path = launch::LogPath(run_dir);
  state.host = q.host;
  state.port = q.port;
  state.served_model_name = q.served_model_name;
  state.request = SettingsToJson(q.settings);
  state.resolved = ResolvedSummary(prepared);
  launch::EnsureRunDir(run_dir);  // before the log is opened
  state.start_time_unix_ms = launch::NowUnixMs();
  // Docker steps carry their variables as -e; bare steps get them in the process environment.
  state.pid =
      launch::SpawnDetached(step.argv, q.runtime == "bare" ? step.env : std::vector<launch::EnvVar>{}, state.log_path);
  state.proc_start_ticks = launch::ProcessStartTicks(state.pid);
  launch::WriteRunState(run_dir, state);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  if (launch::ReapIfChild(state.pid) || !launch::ProcessAlive(state.pid, state.proc_start_ticks)) {
    fmt::print(io.err, "ppdeploy: the server exited at once; last lines of {}:\n{}", state.log_path,
               launch::TailFile(state.log_path, 40));
    return ExitCode::kError;
  }
  fmt::print(io.out, "started: pid {}, port {}, log {}, state {}\nnext: ppdeploy wait{}\n", state.pid, state.port,
             state.log_path, launch::StatePath(run_dir),
             o.run_dir.empty() ? "" : " --run-dir " + launch::ShellQuote(o.run_dir));
  return ExitCode::kOk;
}

}  // namespace

RunFunction DeclareStart(CLI::App* sub) {
  auto opts = std::make_shared<StartOptions>();
  AddLaunchOptions(sub, opts->launch);
  AddRunDirOption(sub, opts->run_dir);
  sub->add_flag("--dry-run", opts->dry_run, "run the gates and print the command; start nothing");
  return [opts](CommandIo& io) { return RunStart(*opts, io); };
}

}  // namespace ppdeploy::cli
