// ppdeploy start: runs the gates, then spawns the rendered command without a shell (posix_spawn),
// stdout/stderr to <run-dir>/vllm.log, and records <run-dir>/state.json (seed deploy.sh `start`).
#include <chrono>
#include <thread>

#include <fmt/format.h>
#include <fmt/ostream.h>

#include "cli/command.h"
#include "cli/launch_options.h"
#include "core/error.h"

namespace ppdeploy::cli {
namespace {

struct StartOptions {
  LaunchOptions launch;
  std::string run_dir;
  bool dry_run = false;
};

RunFunction AddStartCommand(CLI::App& app) {
  auto* sub = app.add_subcommand("start", "Run the gates, then start the vLLM server in the background");
  auto opts = std::make_shared<StartOptions>();
  AddLaunchOptions(sub, opts->launch);
  AddRunDirOption(sub, opts->run_dir);
  sub->add_flag("--dry-run", opts->dry_run, "run the gates and print the command; start nothing");
  sub->footer(
      "Exit codes: 0 started (or dry run passed); 1 a gate refused, a server is already running, or it died at once.\n"
      "Multi-node layouts are not started: `ppdeploy cmd` prints the per-node commands.\n"
      "Examples:\n"
      "  ppdeploy start && ppdeploy wait\n"
      "  PP_LAYER_PARTITION=39,39 ppdeploy start --dry-run\n"
      "  ppdeploy start --runtime bare --vllm-bin /opt/vllm/bin/vllm --run-dir /var/run/ppdeploy\n"
      "  ALLOW_UNVERIFIED_PP=1 TP_SIZE=2 PP_SIZE=4 PP_LAYER_PARTITION=20,20,20,18 MAX_MODEL_LEN=1048576 \\\n"
      "    DISABLE_CUSTOM_ALL_REDUCE=1 ppdeploy start   # research only, warns");
  return [opts](CommandIo& io) {
    auto prepared = PrepareFromCli(opts->launch);
    const std::string run_dir = EffectiveRunDir(opts->run_dir);
    PrintGates(io.out, prepared.gates);
    for (const auto& g : prepared.gates.results) {
      if (g.status == launch::GateStatus::kPass) continue;
      for (const auto& m : g.messages) fmt::print(io.err, "ppdeploy: {}: {}: {}\n", g.gate, launch::GateStatusName(g.status), m);
    }
    if (prepared.gates.Refused()) {
      fmt::print(io.err, "ppdeploy: start refused by the gates (see `ppdeploy cmd`)\n");
      return 1;
    }
    PrintCommand(io.out, prepared);
    if (prepared.rendered.multi_node) {
      fmt::print(io.err, "ppdeploy: TP x PP = {} spans {} nodes; `start` runs one node: run the steps above on their "
                         "nodes\n",
                 prepared.profile.tp_size * prepared.profile.pp_size, prepared.rendered.steps.size());
      return opts->dry_run ? 0 : 1;
    }
    if (auto state = launch::ReadRunState(run_dir); state && launch::ProcessAlive(state->pid, state->proc_start_ticks)) {
      fmt::print(io.err, "ppdeploy: already running: pid {}, port {}, log {} (run dir {}); `ppdeploy stop` first\n",
                 state->pid, state->port, state->log_path, run_dir);
      return 1;
    }
    if (opts->dry_run) {
      fmt::print(io.out, "dry run: nothing started\n");
      return 0;
    }
    const auto& step = prepared.rendered.steps.front();
    launch::RunState state;
    state.argv = step.argv;
    state.env = step.env;
    state.log_path = launch::LogPath(run_dir);
    state.host = prepared.profile.host;
    state.port = prepared.profile.port;
    state.served_model_name = prepared.profile.served_model_name;
    const auto& pf = prepared.profile;
    state.planner = {{"model", pf.model},
                     {"gpu", pf.gpu},
                     {"vllm", pf.vllm_version},
                     {"tensor_parallel_size", pf.tp_size},
                     {"pipeline_parallel_size", pf.pp_size},
                     {"layer_partition", pf.pp_size > 1 ? pf.pp_layer_partition : std::string()},
                     {"max_model_len", pf.max_model_len},
                     {"gpu_memory_utilization", pf.gpu_memory_utilization},
                     {"kv_cache_dtype", pf.kv_cache_dtype},
                     {"num_speculative_tokens", pf.spec_method == "mtp" ? pf.num_spec_tokens : 0}};
    launch::EnsureRunDir(run_dir);  // before the log is opened
    state.start_time_unix_ms = launch::NowUnixMs();
    // Docker steps carry their variables as -e; bare steps get them in the process environment.
    state.pid = launch::SpawnDetached(step.argv, prepared.profile.runtime == "bare" ? step.env
                                                                                     : std::vector<launch::EnvVar>{},
                                      state.log_path);
    state.proc_start_ticks = launch::ProcessStartTicks(state.pid);
    launch::WriteRunState(run_dir, state);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    if (launch::ReapIfChild(state.pid) || !launch::ProcessAlive(state.pid, state.proc_start_ticks)) {
      fmt::print(io.err, "ppdeploy: the server exited at once; last lines of {}:\n{}", state.log_path,
                 launch::TailFile(state.log_path, 40));
      return 1;
    }
    fmt::print(io.out, "started: pid {}, port {}, log {}, state {}\nnext: ppdeploy wait{}\n", state.pid, state.port,
               state.log_path, launch::StatePath(run_dir),
               opts->run_dir.empty() ? "" : " --run-dir " + launch::ShellQuote(opts->run_dir));
    return 0;
  };
}

}  // namespace

PPDEPLOY_COMMAND(42, AddStartCommand);

}  // namespace ppdeploy::cli
