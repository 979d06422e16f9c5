#include "launch/multinode.h"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <thread>

#include "core/error.h"
#include "core/json_fields.h"
#include "launch/remote.h"

namespace ppdeploy::launch {
namespace {

void SleepMs(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

/// A host name as a path component: [A-Za-z0-9._-] kept, anything else '_', no leading dot.
std::string PathSafe(const std::string& host) {
  std::string out;
  for (char c : host)
    out += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-') ? c : '_';
  if (out.empty() || out.front() == '.') out.insert(out.begin(), '_');
  return out;
}

/// The first 4 KiB of a file ("" when unreadable): where a node reports its pid.
std::string HeadOfFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string text(4096, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(std::max<std::streamsize>(0, in.gcount())));
  return text;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    std::string line = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) out.push_back(line);
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

/// A path inside the container -> the host path through the `-v HOST:CONTAINER[:opts]` that maps it.
std::optional<std::string> HostPathOf(const std::string& container_path, const std::vector<std::string>& volumes) {
  for (const auto& v : volumes) {
    auto first = v.find(':');
    if (first == std::string::npos) continue;
    std::string host = v.substr(0, first), inside = v.substr(first + 1);
    if (auto second = inside.find(':'); second != std::string::npos) inside = inside.substr(0, second);
    while (inside.size() > 1 && inside.back() == '/') inside.pop_back();
    if (container_path == inside) return host;
    if (container_path.rfind(inside + "/", 0) == 0) return host + container_path.substr(inside.size());
  }
  return std::nullopt;
}

std::string Tail(const std::string& path) { return TailFile(path, 20); }

/// `ray status` as the head node runs it (inside the head container for docker).
std::vector<std::string> RayStatusArgv(const MultiNodeState& m) {
  std::vector<std::string> a;
  if (m.runtime == "docker") a = {m.docker_bin, "exec", m.container_name};
  a.insert(a.end(), {m.ray_bin, "status", "--address", fmt::format("{}:{}", m.head, m.ray_port)});
  return a;
}

}  // namespace

nlohmann::json MultiNodeStateToJson(const MultiNodeState& s) {
  nlohmann::json j;
  j["executor"] = s.executor;
  j["runtime"] = s.runtime;
  j["remote_shell"] = s.remote_shell;
  j["ray_bin"] = s.ray_bin;
  j["docker_bin"] = s.docker_bin;
  j["container_name"] = s.container_name;
  j["head"] = s.head;
  j["ray_port"] = s.ray_port;
  j["steps"] = nlohmann::json::array();
  for (const auto& p : s.steps) {
    nlohmann::json env = nlohmann::json::array();
    for (const auto& e : p.env) env.push_back({e.name, e.value});
    j["steps"].push_back({{"node", p.node},
                          {"role", p.role},
                          {"node_rank", p.node_rank},
                          {"argv", p.argv},
                          {"env", env},
                          {"local_argv", p.local_argv},
                          {"pid", p.pid},
                          {"proc_start_ticks", p.proc_start_ticks},
                          {"pgid", p.pgid},
                          {"boot_id", p.boot_id},
                          {"run_token", p.run_token},
                          {"log_path", p.log_path},
                          {"start_time_unix_ms", p.start_time_unix_ms},
                          {"stopped_time_unix_ms", p.stopped_time_unix_ms},
                          {"stop_unconfirmed", p.stop_unconfirmed}});
  }
  return j;
}

MultiNodeState MultiNodeStateFromJson(const nlohmann::json& j, const std::string& source) {
  JsonContext ctx{source, "multi_node"};
  RequireObject(j, ctx);
  auto strings = [&](const nlohmann::json& o, const char* key, const JsonContext& c) {
    std::vector<std::string> out;
    if (!o.contains(key) || !o[key].is_array()) Fail("{}: expected a list of strings", c.Where(key));
    for (const auto& a : o[key]) {
      if (!a.is_string()) Fail("{}: expected a list of strings", c.Where(key));
      out.push_back(a.get<std::string>());
    }
    return out;
  };
  MultiNodeState s;
  s.executor = ReqString(j, "executor", ctx);
  s.runtime = ReqString(j, "runtime", ctx);
  s.remote_shell = strings(j, "remote_shell", ctx);
  s.ray_bin = ReqString(j, "ray_bin", ctx);
  s.docker_bin = ReqString(j, "docker_bin", ctx);
  s.container_name = ReqString(j, "container_name", ctx);
  s.head = ReqString(j, "head", ctx);
  s.ray_port = static_cast<int>(ReqInt(j, "ray_port", ctx, 0));
  if (!j.contains("steps") || !j["steps"].is_array()) Fail("{}: expected a list of steps", ctx.Where("steps"));
  int i = 0;
  for (const auto& e : j["steps"]) {
    JsonContext c = ctx.Child(fmt::format("steps[{}]", i++));
    RequireObject(e, c);
    NodeProcess p;
    p.node = ReqString(e, "node", c);
    p.role = ReqString(e, "role", c);
    p.node_rank = static_cast<int>(ReqInt(e, "node_rank", c, 0));
    p.argv = strings(e, "argv", c);
    if (!e.contains("env") || !e["env"].is_array()) Fail("{}: expected [name, value] pairs", c.Where("env"));
    for (const auto& kv : e["env"]) {
      if (!kv.is_array() || kv.size() != 2 || !kv[0].is_string() || !kv[1].is_string())
        Fail("{}: expected [name, value] pairs", c.Where("env"));
      p.env.push_back({kv[0].get<std::string>(), kv[1].get<std::string>()});
    }
    p.local_argv = strings(e, "local_argv", c);
    p.pid = ReadPidField(e, "pid", c, 0);
    p.proc_start_ticks = OptInt(e, "proc_start_ticks", c, -1).value_or(-1);
    p.pgid = OptPidField(e, "pgid", c, 0).value_or(0);
    p.boot_id = OptString(e, "boot_id", c).value_or("");
    p.run_token = OptString(e, "run_token", c).value_or("");
    p.log_path = ReqString(e, "log_path", c);
    p.start_time_unix_ms = OptInt(e, "start_time_unix_ms", c, 0).value_or(0);
    p.stopped_time_unix_ms = OptInt(e, "stopped_time_unix_ms", c, 0).value_or(0);
    p.stop_unconfirmed = OptBool(e, "stop_unconfirmed", c).value_or(false);
    s.steps.push_back(std::move(p));
  }
  return s;
}

std::optional<MultiNodeState> MultiNodeOf(const RunState& state, const std::string& source) {
  if (!state.multi_node.is_object()) return std::nullopt;
  return MultiNodeStateFromJson(state.multi_node, source);
}

MultiNodeState PlanNodeProcesses(const PreparedLaunch& p, const std::string& run_dir) {
  const DeploymentRequest& q = p.deployment.request;
  if (q.nodes.empty()) Fail("nodes ({}): multi-node start needs host names in NODES", q.Setting("nodes").origin);
  MultiNodeState m;
  m.executor = p.rendered.executor;
  m.runtime = q.runtime;
  m.remote_shell = q.remote_shell;
  m.ray_bin = q.ray_bin;
  m.docker_bin = q.docker_bin;
  m.container_name = q.container_name;
  m.head = q.nodes.front();
  m.ray_port = q.ray_port;
  for (const auto& step : p.rendered.steps) {
    NodeProcess n;
    n.node = step.node;
    n.role = step.role;
    n.node_rank = static_cast<int>(std::find(q.nodes.begin(), q.nodes.end(), step.node) - q.nodes.begin());
    n.argv = step.argv;
    n.env = step.env;
    n.local_argv = RemoteShellArgv(q.remote_shell, step.node, WithRemotePid(NodeCommand(step, q.runtime == "bare")));
    n.log_path = fmt::format("{}/nodes/{}-{}/{}.log", run_dir, n.node_rank, PathSafe(step.node), step.role);
    m.steps.push_back(std::move(n));
  }
  return m;
}

bool StepAlive(const NodeProcess& step) {
  if (step.pid <= 0) return false;
  ReapIfChild(step.pid);
  return ProcessAlive(step.pid, step.proc_start_ticks);
}

std::optional<size_t> FirstDeadStep(const MultiNodeState& s) {
  for (size_t i = 0; i < s.steps.size(); ++i) {
    const auto& step = s.steps[i];
    if (step.pid > 0 && step.stopped_time_unix_ms == 0 && !step.stop_unconfirmed && !StepAlive(step)) return i;
  }
  return std::nullopt;
}

std::string StepState(const NodeProcess& step) {
  if (step.pid <= 0) return "not started";
  if (StepAlive(step)) return "running";
  if (step.stop_unconfirmed) return "stop unknown";
  return step.stopped_time_unix_ms ? "stopped" : "exited";
}

std::vector<NodeProbe> ProbeNodes(const ResolvedDeployment& d, int timeout_ms) {
  const DeploymentRequest& q = d.request;
  std::vector<NodeProbe> out;
  for (const auto& host : q.nodes) {
    NodeProbe p;
    p.node = host;
    auto smi = RunOnNode(q.remote_shell, host,
                         {"nvidia-smi", std::string(kNvidiaSmiQuery), "--format=csv,noheader,nounits"}, timeout_ms);
    // ssh exits 255 when it cannot reach the node (or the remote shell could not start at all).
    if (!smi.started || smi.timed_out || smi.exit_code == 255) {
      p.error = smi.timed_out ? fmt::format("no answer within {} s", timeout_ms / 1000) : smi.Summary();
      out.push_back(std::move(p));
      continue;
    }
    p.reachable = true;
    if (smi.exit_code != 0) {
      p.gpus_error = smi.exit_code == 127 ? "not found on the node (exit 127)" : smi.Summary();
    } else {
      try {
        p.gpus = ParseNvidiaSmiGpus(smi.out, fmt::format("node {}: nvidia-smi", host));
      } catch (const Error& e) {
        p.gpus_error = e.what();
      }
    }
    auto ifs = RunOnNode(q.remote_shell, host, {"ls", "-1", "/sys/class/net"}, timeout_ms);
    if (ifs.started && ifs.exit_code == 0) {
      p.interfaces_probed = true;
      p.interfaces = Lines(ifs.out);
    }
    std::string model_path = q.model_path;
    if (q.runtime == "docker") {
      NodeIdentity image{fmt::format("image id of {}", q.image), "", ""};
      auto r = RunOnNode(q.remote_shell, host, {q.docker_bin, "image", "inspect", "--format", "{{.Id}}", q.image},
                         timeout_ms);
      if (r.started && r.exit_code == 0 && !Lines(r.out).empty())
        image.value = Lines(r.out).front();
      else
        image.error = "image not present (" + r.Summary() + ")";
      p.identities.push_back(std::move(image));
      auto mapped = HostPathOf(model_path, q.volumes);
      model_path = mapped ? *mapped : "";
    }
    if (!model_path.empty() && model_path.front() == '/') {
      NodeIdentity config{fmt::format("sha256 of {}/config.json", q.model_path), "", ""};
      auto r = RunOnNode(q.remote_shell, host, {"sha256sum", "--", model_path + "/config.json"}, timeout_ms);
      auto lines = Lines(r.out);
      if (r.started && r.exit_code == 0 && !lines.empty())
        config.value = lines.front().substr(0, lines.front().find(' '));
      else
        config.error = "not readable on the node (" + r.Summary() + ")";
      p.identities.push_back(std::move(config));
    }
    out.push_back(std::move(p));
  }
  return out;
}

bool StartNodes(const PreparedLaunch& p, const std::string& run_dir, RunState& state, const NodeStartOptions& o,
                std::ostream& out, std::ostream& err) {
  MultiNodeState m = PlanNodeProcesses(p, run_dir);
  const DeploymentRequest& q = p.deployment.request;
  auto save = [&] {
    state.multi_node = MultiNodeStateToJson(m);
    if (state.pid > 0) WriteRunState(run_dir, state);
  };
  auto give_up = [&] {
    fmt::print(err, "ppdeploy: stopping what was started\n");
    NodeStopReport stopped = StopNodes(m, 5000, o.remote_timeout_ms);
    for (const auto& l : stopped.lines) fmt::print(err, "  {}\n", l);
    for (const auto& l : stopped.problems) fmt::print(err, "ppdeploy: warning: {}\n", l);
    save();
    return false;
  };
  auto died = [&](const NodeProcess& s, std::string_view when) {
    fmt::print(err, "ppdeploy: node {} ({}) exited {}; last lines of {}:\n{}", s.node, s.role, when, s.log_path,
               Tail(s.log_path));
  };
  // Every started step still alive; else says which node died.
  auto all_alive = [&](std::string_view when) {
    for (const auto& s : m.steps)
      if (s.pid > 0 && !StepAlive(s)) {
        died(s, when);
        return false;
      }
    return true;
  };
  // Ctrl-C: says so; give_up() then stops (and names) every started step.
  auto interrupted = [&](std::string_view when) {
    const bool raised = o.cancel != nullptr && o.cancel->load();
    if (raised) fmt::print(err, "ppdeploy: interrupted {}\n", when);
    return raised;
  };
  auto start = [&](NodeProcess& s) {
    std::error_code ec;
    std::filesystem::create_directories(std::filesystem::path(s.log_path).parent_path(), ec);
    if (ec) Fail("{}: cannot create the node's log directory: {}", s.log_path, ec.message());
    s.start_time_unix_ms = NowUnixMs();
    const std::string token = NewRunToken();
    const ProcessIdentity id = IdentityOfSpawned(SpawnDetached(s.local_argv, {}, s.log_path, token), token);
    s.pid = id.pid;
    s.proc_start_ticks = id.start_ticks;
    s.pgid = id.pgid;
    s.boot_id = id.boot_id;
    s.run_token = id.run_token;
    if (state.pid == 0 || s.role == "serve") {  // the head's API server once it runs
      state.SetIdentity(id);
      state.log_path = s.log_path;
      state.start_time_unix_ms = s.start_time_unix_ms;
    }
    save();
    fmt::print(out, "started {} on {}: local pid {}, log {}\n", s.role, s.node, s.pid, s.log_path);
    out.flush();
    for (int waited = 0; waited < o.settle_ms; waited += 100) {
      if (interrupted(fmt::format("while {} on {} was starting", s.role, s.node))) return false;
      SleepMs(100);
      if (!StepAlive(s)) {
        died(s, "at once");
        return false;
      }
    }
    return true;
  };
  // Polls `ray status` on the head until it lists `nodes` nodes and `gpus` GPUs.
  auto wait_for_ray = [&](int nodes, double gpus) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(o.ray_timeout_ms);
    std::string last = "no answer yet";
    while (true) {
      if (!all_alive("while Ray was starting") || interrupted("while Ray was starting")) return false;
      auto r = RunOnNode(m.remote_shell, m.head, RayStatusArgv(m), o.remote_timeout_ms);
      if (r.started && r.exit_code == 0) {
        RayStatus st = ParseRayStatus(r.out);
        if (st.parsed) {
          last = fmt::format("{} GPUs ({} in use) on {} node{}", st.gpus_total, st.gpus_used, st.active_nodes,
                             st.active_nodes == 1 ? "" : "s");
          if (st.active_nodes >= nodes && st.gpus_total >= gpus) {
            fmt::print(out, "ray status on {}: {}{}\n", m.head, last,
                       gpus > 0 ? fmt::format(": every node's GPUs ({} needed)", gpus) : ": the head answers");
            return true;
          }
        } else {
          last = "no Resources block with a GPU line in its output";
        }
      } else {
        last = r.Summary();
      }
      if (std::chrono::steady_clock::now() >= deadline) {
        fmt::print(err, "ppdeploy: ray status on {} did not show {} GPUs on {} nodes within {} s (last: {})\n", m.head,
                   gpus, nodes, o.ray_timeout_ms / 1000, last);
        return false;
      }
      for (int t = 0; t < o.ray_interval_ms && !(o.cancel && o.cancel->load()); t += 100) SleepMs(100);
    }
  };

  try {
    if (m.executor == "ray") {
      const int nodes = static_cast<int>(q.nodes.size());
      for (auto& s : m.steps) {
        if (s.role == "ray-head") {
          if (!start(s) || !wait_for_ray(1, 0)) return give_up();
        } else if (s.role == "ray-worker") {
          if (!start(s)) return give_up();
        }
      }
      if (!wait_for_ray(nodes, static_cast<double>(nodes) * q.GpusUsedPerNode())) return give_up();
      for (auto& s : m.steps)
        if (s.role == "serve" && !start(s)) return give_up();
    } else {
      for (auto& s : m.steps)  // headless workers first, then the head (the rendered order)
        if (!start(s)) return give_up();
    }
  } catch (const Error& e) {
    fmt::print(err, "ppdeploy: {}\n", e.what());
    return give_up();
  }
  return all_alive("during start-up") || give_up();
}

namespace {

/// How the node itself is asked to end a step: the command, its forceful form, and how it reads in the report.
struct NodeStop {
  std::vector<std::string> term, force;
  std::string how;
  std::string problem;  ///< when the node cannot be asked (it never reported its pid)
};
NodeStop NodeStopOf(const MultiNodeState& s, const NodeProcess& p, int grace_ms) {
  NodeStop n;
  const std::string grace_s = std::to_string((grace_ms + 999) / 1000);
  if (s.runtime == "docker") {
    if (!(s.executor == "ray" && p.role == "serve")) {  // `docker exec` on the head ends with its container
      n.term = {s.docker_bin, "stop", "-t", grace_s, s.container_name};
      n.force = {s.docker_bin, "kill", s.container_name};
      n.how = "docker stop";
    } else if (s.executor == "ray") {
      n.how = "with the head container";
    }
  } else if (p.role == "ray-head" || p.role == "ray-worker") {
    n.term = {s.ray_bin, "stop"};
    n.force = {s.ray_bin, "stop", "--force"};
    n.how = "ray stop";
  } else if (int remote_pid = RemotePidFromLog(HeadOfFile(p.log_path)); remote_pid > 1) {
    n.term = {"kill", "-TERM", std::to_string(remote_pid)};
    n.force = {"kill", "-KILL", std::to_string(remote_pid)};
    n.how = fmt::format("SIGTERM to pid {} on the node", remote_pid);
  } else {
    n.problem = fmt::format(
        "{} on {}: the node never reported its pid ({}); ended the local remote shell only, the command may still "
        "run there",
        p.role, p.node, p.log_path);
  }
  return n;
}

/// Whether a command over the remote shell reached the node (ssh exits 255 for its own errors: `man ssh`).
bool ReachedNode(const CommandOutput& r) { return r.started && !r.timed_out && r.exit_code != 255; }

/// A step whose earlier stop could not reach its node: ask the node again (its local process is gone).
void RetryUnconfirmedStop(const MultiNodeState& s, NodeProcess& p, int grace_ms, int remote_timeout_ms,
                          NodeStopReport& report) {
  const NodeStop n = NodeStopOf(s, p, grace_ms);
  if (n.term.empty()) {
    p.stop_unconfirmed = false;  // nothing to ask the node: the local process is gone
    p.stopped_time_unix_ms = NowUnixMs();
    report.lines.push_back(fmt::format("{} on {}: not running (local remote shell gone)", p.role, p.node));
    return;
  }
  const CommandOutput asked = RunOnNode(s.remote_shell, p.node, n.term, grace_ms + remote_timeout_ms);
  if (!ReachedNode(asked)) {
    report.problems.push_back(
        fmt::format("{} on {}: the node still does not answer its stop ({}: {}); recorded as not stopped (unknown): "
                    "run `ppdeploy stop` again once it is reachable",
                    p.role, p.node, ShellJoin(n.term), asked.Summary()));
    report.lines.push_back(fmt::format("not stopped {} on {} (unknown: the node is unreachable)", p.role, p.node));
    return;
  }
  p.stop_unconfirmed = false;
  p.stopped_time_unix_ms = NowUnixMs();
  report.lines.push_back(
      fmt::format("stopped {} on {} ({}; the earlier stop had not reached the node)", p.role, p.node, n.how));
}

}  // namespace

NodeStopReport StopNodes(MultiNodeState& s, int grace_ms, int remote_timeout_ms) {
  NodeStopReport report;
  // The head first (its API server, then its Ray), then the workers in NODES order.
  std::vector<size_t> order(s.steps.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const auto& x = s.steps[a];
    const auto& y = s.steps[b];
    auto key = [](const NodeProcess& p) { return std::make_pair(p.node_rank, p.role == "serve" ? 0 : 1); };
    return key(x) < key(y);
  });
  auto wait_exit = [](const NodeProcess& p, int ms) {
    for (int waited = 0; waited < ms && StepAlive(p); waited += 100) SleepMs(100);
    return !StepAlive(p);
  };
  for (size_t i : order) {
    NodeProcess& p = s.steps[i];
    if (p.pid <= 0) continue;
    const bool alive = StepAlive(p);
    if (!alive && p.stop_unconfirmed) {
      RetryUnconfirmedStop(s, p, grace_ms, remote_timeout_ms, report);
      continue;
    }
    if (!alive) {
      const StopOutcome left = StopProcessGroup(p.Identity(), 0);  // what it left in its local process group
      report.lines.push_back(fmt::format("{} on {}: not running ({}){}", p.role, p.node,
                                         p.stopped_time_unix_ms ? "stopped earlier" : "exited earlier",
                                         left.refused.empty() ? "" : "; " + left.refused));
      continue;
    }
    report.any_running = true;
    NodeStop n = NodeStopOf(s, p, grace_ms);
    if (!n.problem.empty()) report.problems.push_back(n.problem);
    bool exited = false, reached = n.term.empty();
    if (!n.term.empty()) {
      auto asked = RunOnNode(s.remote_shell, p.node, n.term, grace_ms + remote_timeout_ms);
      reached = ReachedNode(asked);
      exited = wait_exit(p, grace_ms);
      if (!exited) {
        auto forced = RunOnNode(s.remote_shell, p.node, n.force, remote_timeout_ms);
        reached = reached || ReachedNode(forced);
        n.how += ", then forcefully";
        exited = wait_exit(p, 5000);
        if (!exited)
          report.problems.push_back(fmt::format(
              "{} on {}: still running after {} ({}: {}; {}: {}); ended the local remote shell, the command may "
              "still run on the node",
              p.role, p.node, n.how, ShellJoin(n.term), asked.Summary(), ShellJoin(n.force), forced.Summary()));
      }
    }
    // The remote shell and anything left in its local process group.
    StopOutcome local = StopProcessGroup(p.Identity(), exited ? 0 : 2000);
    if (!local.refused.empty()) report.problems.push_back(fmt::format("{} on {}: {}", p.role, p.node, local.refused));
    if (!reached) {
      // The node never answered: its command may run on; the next `stop` asks again (issue 23 item 8).
      p.stop_unconfirmed = true;
      report.problems.push_back(fmt::format(
          "{} on {}: the node did not answer its stop; recorded as not stopped (unknown): run `ppdeploy stop` again "
          "once it is reachable",
          p.role, p.node));
      report.lines.push_back(fmt::format("not stopped {} on {} (unknown: the node is unreachable; local pid {} ended)",
                                         p.role, p.node, p.pid));
      continue;
    }
    p.stopped_time_unix_ms = NowUnixMs();
    report.lines.push_back(fmt::format("stopped {} on {} (local pid {}{}{})", p.role, p.node, p.pid,
                                       n.how.empty() ? "" : ", " + n.how,
                                       local.was_running && !exited ? "; local remote shell ended" : ""));
  }
  return report;
}

}  // namespace ppdeploy::launch
