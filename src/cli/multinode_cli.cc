#include "cli/multinode_cli.h"

#include <fmt/format.h>
#include <fmt/ostream.h>
#include <fmt/ranges.h>

#include "cli/interrupt.h"
#include "cli/launch_options.h"
#include "core/error.h"
#include "launch/http_get.h"
#include "launch/multinode.h"
#include "launch/remote.h"
#include "launch/run_lock.h"

namespace ppdeploy::cli {
namespace {

constexpr int kProbeTimeoutMs = 60000;
constexpr int kRemoteTimeoutMs = 60000;

launch::MultiNodeState NodesOf(const launch::RunState& state, const std::string& run_dir) {
  auto m = launch::MultiNodeOf(state, launch::StatePath(run_dir));
  if (!m) Fail("{}: not a multi-node run", launch::StatePath(run_dir));
  return *m;
}

}  // namespace

namespace {

// "already running: ..." when the run directory's recorded processes live ("" when not).
std::string AlreadyRunning(const std::string& run_dir) {
  auto state = launch::ReadRunState(run_dir);
  if (!state) return "";
  if (auto m = launch::MultiNodeOf(*state, launch::StatePath(run_dir))) {
    for (const auto& s : m->steps)
      if (launch::StepAlive(s))
        return fmt::format("already running: {} on {} (local pid {}, run dir {}); `ppdeploy stop` first", s.role,
                           s.node, s.pid, run_dir);
  } else if (launch::ProcessAlive(state->pid, state->proc_start_ticks)) {
    return fmt::format("already running: pid {}, port {} (run dir {}); `ppdeploy stop` first", state->pid, state->port,
                       run_dir);
  }
  return "";
}

// The settings' gates, then (only for a launch they allow) every node's probe and the gates again. Prints them.
void ProbeAndGate(launch::PreparedLaunch& prepared, CommandIo& io) {
  if (!prepared.gates.Refused()) {
    const auto& q = prepared.deployment.request;
    fmt::print(io.out, "probing {} nodes over the remote shell ({}): nvidia-smi, interfaces, model{}\n", q.nodes.size(),
               launch::ShellJoin(q.remote_shell), q.runtime == "docker" ? ", image" : "");
    io.out.flush();
    auto probes = launch::ProbeNodes(prepared.deployment, kProbeTimeoutMs);
    prepared = launch::PrepareLaunch(std::move(prepared.deployment), &probes);
  }
  PrintGates(io.out, prepared);
  for (const auto& g : prepared.gates.results) {
    if (g.status == launch::GateStatus::kPass) continue;
    for (const auto& m : g.messages)
      fmt::print(io.err, "ppdeploy: {}: {}: {}\n", g.name, launch::GateStatusName(g.status), m);
  }
}

// The run state's common fields for the head's `vllm serve`.
launch::RunState HeadState(const launch::PreparedLaunch& prepared,
                           nlohmann::json (*summary)(const launch::PreparedLaunch&)) {
  const auto& q = prepared.deployment.request;
  const auto& steps = prepared.rendered.steps;
  const auto& serve =
      steps.back().role == "serve"
          ? steps.back()
          : *std::find_if(steps.begin(), steps.end(), [](const launch::RenderedStep& s) { return s.role == "serve"; });
  launch::RunState state;
  state.argv = serve.argv;
  state.env = serve.env;
  state.host = q.nodes.front();
  state.port = q.port;
  state.served_model_name = q.served_model_name;
  state.request = SettingsToJson(q.settings);
  state.resolved = summary(prepared);
  state.resolved["executor"] = prepared.rendered.executor;
  state.resolved["nodes"] = q.nodes;
  return state;
}

}  // namespace

ExitCode RunStartMultiNode(launch::PreparedLaunch prepared, const std::string& run_dir_flag, bool dry_run,
                           nlohmann::json (*summary)(const launch::PreparedLaunch&), CommandIo& io) {
  const std::string run_dir = EffectiveRunDir(run_dir_flag);
  if (prepared.deployment.request.nodes.empty()) {
    PrintGates(io.out, prepared);
    PrintCommand(io.out, prepared);
    fmt::print(io.err,
               "ppdeploy: nodes ({}): NODES={} gives a count, not host names; `start` needs NODES=head,worker,...\n",
               prepared.deployment.request.Setting("nodes").origin, prepared.deployment.request.num_nodes);
    return dry_run ? ExitCode::kOk : ExitCode::kError;
  }
  // From the "already running" check through the last state write: one start at a time (a dry run writes nothing).
  std::optional<launch::RunLock> lock;
  if (!dry_run) lock.emplace(launch::RunLock::Acquire(run_dir, "start"));
  if (const std::string running = AlreadyRunning(run_dir); !running.empty()) {
    fmt::print(io.err, "ppdeploy: {}\n", running);
    return ExitCode::kError;
  }
  ProbeAndGate(prepared, io);
  if (prepared.gates.Refused()) {
    fmt::print(io.err, "ppdeploy: start refused by the gates (see `ppdeploy cmd`)\n");
    return ExitCode::kError;
  }
  PrintCommand(io.out, prepared);
  if (dry_run) {
    fmt::print(io.out, "dry run: nothing started\n");
    return ExitCode::kOk;
  }
  const auto& q = prepared.deployment.request;
  launch::RunState state = HeadState(prepared, summary);
  // Ctrl-C while the nodes start: StartNodes stops what it started, naming each step (issue 23 item 8: Ray was
  // left running without a word).
  InterruptGuard interrupt;
  launch::NodeStartOptions options;
  options.cancel = InterruptGuard::Flag();
  if (!launch::StartNodes(prepared, run_dir, state, options, io.out, io.err)) {
    const std::string stop_cmd =
        "ppdeploy stop" + (run_dir_flag.empty() ? "" : " --run-dir " + launch::ShellQuote(run_dir_flag));
    if (InterruptGuard::Raised()) {
      fmt::print(io.err, "ppdeploy: multi-node start interrupted (state {}); if a node still runs: {}\n",
                 launch::StatePath(run_dir), stop_cmd);
      return ExitCode::kInterrupted;
    }
    fmt::print(io.err, "ppdeploy: multi-node start failed (state {})\n", launch::StatePath(run_dir));
    return ExitCode::kError;
  }
  fmt::print(io.out,
             "started: {} processes on {} nodes ({} executor); the API will answer on {}; logs {}/nodes, state {}\n"
             "next: ppdeploy wait{}\n",
             prepared.rendered.steps.size(), q.nodes.size(), prepared.rendered.executor,
             launch::LocalBaseUrl(state.host, state.port), run_dir, launch::StatePath(run_dir),
             run_dir_flag.empty() ? "" : " --run-dir " + launch::ShellQuote(run_dir_flag));
  return ExitCode::kOk;
}

std::optional<std::string> DeadNodesReport(const launch::RunState& state, const std::string& run_dir, int tail) {
  auto m = launch::MultiNodeOf(state, launch::StatePath(run_dir));
  if (!m) return std::nullopt;
  std::string report;
  for (const auto& s : m->steps) {
    if (s.pid <= 0 || s.stopped_time_unix_ms != 0 || launch::StepAlive(s)) continue;
    report +=
        fmt::format("ppdeploy: node {} ({}) exited after {} (local pid {}); last lines of {}:\n{}", s.node, s.role,
                    FormatDuration(static_cast<double>(launch::NowUnixMs() - s.start_time_unix_ms) / 1000.0), s.pid,
                    s.log_path, launch::TailFile(s.log_path, tail));
  }
  if (report.empty()) return std::nullopt;
  return report;
}

void PrintNodeStatus(std::ostream& out, const launch::RunState& state, const std::string& run_dir) {
  auto m = launch::MultiNodeOf(state, launch::StatePath(run_dir));
  if (!m) return;
  fmt::print(out, "nodes ({} executor, {}):\n", m->executor, m->runtime);
  for (const auto& s : m->steps) {
    std::string st = launch::StepState(s);
    fmt::print(out, "  {:<16} {:<15} {:<12} local pid {:<7} log {}{}\n", s.node, s.role, st, s.pid, s.log_path,
               st == "exited"
                   ? fmt::format("  <- node {} died: ppdeploy logs --node {}", s.node, launch::ShellQuote(s.node))
                   : "");
  }
}

void AddNodeStatus(nlohmann::ordered_json& j, const launch::RunState& state, const std::string& run_dir) {
  auto m = launch::MultiNodeOf(state, launch::StatePath(run_dir));
  if (!m) return;
  j["executor"] = m->executor;
  j["nodes"] = nlohmann::ordered_json::array();
  for (const auto& s : m->steps)
    j["nodes"].push_back({{"node", s.node},
                          {"role", s.role},
                          {"state", launch::StepState(s)},
                          {"pid", s.pid},
                          {"log_path", s.log_path},
                          {"argv", s.argv}});
}

void SelectNodeLog(launch::RunState& state, const std::string& node, const std::string& run_dir, int tail,
                   std::ostream& out) {
  auto m = launch::MultiNodeOf(state, launch::StatePath(run_dir));
  if (!m) Fail("--node {}: {} is a single-node run", node, launch::StatePath(run_dir));
  std::vector<const launch::NodeProcess*> steps;
  std::vector<std::string> names;
  for (const auto& s : m->steps) {
    if (s.node == node) steps.push_back(&s);
    if (std::find(names.begin(), names.end(), s.node) == names.end()) names.push_back(s.node);
  }
  if (steps.empty()) Fail("--node {}: not a node of this run (nodes: {})", node, fmt::join(names, ", "));
  for (size_t i = 0; i + 1 < steps.size(); ++i)
    fmt::print(out, "==> {} ({} on {}) <==\n{}\n", steps[i]->log_path, steps[i]->role, node,
               launch::TailFile(steps[i]->log_path, tail));
  const auto& last = *steps.back();
  if (steps.size() > 1) fmt::print(out, "==> {} ({} on {}) <==\n", last.log_path, last.role, node);
  state.log_path = last.log_path;
  state.SetIdentity(last.Identity());
}

std::optional<ExitCode> StopMultiNodeRun(const std::string& run_dir, double grace_s, CommandIo& io) {
  if (auto first = launch::ReadRunState(run_dir); !first || !first->multi_node.is_object()) return std::nullopt;
  const launch::RunLock lock = launch::RunLock::Acquire(run_dir, "stop");
  auto state = launch::ReadRunState(run_dir);  // again, under the lock
  if (!state || !state->multi_node.is_object()) return std::nullopt;
  launch::MultiNodeState m = NodesOf(*state, run_dir);
  launch::NodeStopReport report = launch::StopNodes(m, static_cast<int>(grace_s * 1000), kRemoteTimeoutMs);
  state->multi_node = launch::MultiNodeStateToJson(m);
  if (report.any_running) state->stopped_time_unix_ms = launch::NowUnixMs();
  launch::WriteRunState(run_dir, *state);
  if (!report.any_running)
    fmt::print(io.out, "not running (no node's process lives; {})\n", launch::StatePath(run_dir));
  for (const auto& l : report.lines) fmt::print(io.out, "{}\n", l);
  for (const auto& p : report.problems) fmt::print(io.err, "ppdeploy: warning: {}\n", p);
  return report.problems.empty() ? ExitCode::kOk : ExitCode::kError;
}

}  // namespace ppdeploy::cli
