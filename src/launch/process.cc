#include "launch/process.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "core/error.h"
#include "core/json_fields.h"
#include "io/files.h"
#include "io/output_file.h"

extern char** environ;

namespace ppdeploy::launch {
namespace {

// A child starts with no blocked signals and the default action for the ones ppdeploy handles
// (Ctrl-C, SIGPIPE, ...), whatever this process set up; the caller adds
// POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF to its flags.
void ResetSignalsInChild(posix_spawnattr_t* attr) {
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGCHLD}) sigaddset(&defaults, s);
  posix_spawnattr_setsigmask(attr, &none);
  posix_spawnattr_setsigdefault(attr, &defaults);
}

// SIGKILL to the group of a child this process spawned (SETPGROUP) and has not reaped yet: until it is
// reaped its pid, and so its group id, cannot be reused.
void KillChildGroup(pid_t pid) {
  if (pid <= 1) return;
  kill(-pid, SIGKILL);
  kill(pid, SIGKILL);
}

void SleepMs(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

}  // namespace

std::string StatePath(const std::string& run_dir) { return run_dir + "/state.json"; }
std::string LogPath(const std::string& run_dir) { return run_dir + "/vllm.log"; }

std::optional<RunState> ReadRunState(const std::string& run_dir) {
  const std::string path = StatePath(run_dir);
  if (!IsRegularFile(path)) return std::nullopt;
  auto doc = ParseJsonText(ReadFileText(path), path);
  JsonContext ctx{path, ""};
  RequireObject(doc, ctx);
  RunState s;
  s.pid = ReadPidField(doc, "pid", ctx, 1);
  s.proc_start_ticks = OptInt(doc, "proc_start_ticks", ctx, -1).value_or(-1);
  s.pgid = OptPidField(doc, "pgid", ctx, 0).value_or(0);
  s.boot_id = OptString(doc, "boot_id", ctx).value_or("");
  s.run_token = OptString(doc, "run_token", ctx).value_or("");
  if (doc.contains("argv") && doc["argv"].is_array())
    for (const auto& a : doc["argv"]) s.argv.push_back(a.get<std::string>());
  if (doc.contains("env") && doc["env"].is_object())
    for (auto it = doc["env"].begin(); it != doc["env"].end(); ++it)
      s.env.push_back({it.key(), it->get<std::string>()});
  s.start_time_unix_ms = ReqInt(doc, "start_time_unix_ms", ctx, 0);
  s.log_path = ReqString(doc, "log_path", ctx);
  s.host = OptString(doc, "host", ctx).value_or("127.0.0.1");
  s.port = static_cast<int>(ReqInt(doc, "port", ctx, 1));
  s.served_model_name = OptString(doc, "served_model_name", ctx).value_or("");
  s.stopped_time_unix_ms = OptInt(doc, "stopped_time_unix_ms", ctx, 0).value_or(0);
  s.ready_time_unix_ms = OptInt(doc, "ready_time_unix_ms", ctx, 0).value_or(0);
  if (doc.contains("wait") && doc["wait"].is_object()) s.wait = doc["wait"];
  if (doc.contains("request") && doc["request"].is_array()) s.request = doc["request"];
  if (doc.contains("resolved") && doc["resolved"].is_object()) s.resolved = doc["resolved"];
  if (doc.contains("multi_node") && doc["multi_node"].is_object()) s.multi_node = doc["multi_node"];
  return s;
}

void EnsureRunDir(const std::string& run_dir) {
  std::error_code ec;
  std::filesystem::create_directories(run_dir, ec);
  if (ec) Fail("{}: cannot create the run directory: {}", run_dir, ec.message());
}

void WriteRunState(const std::string& run_dir, const RunState& s) {
  EnsureRunDir(run_dir);
  nlohmann::ordered_json doc;
  doc["schema"] = "ppdeploy.run-state/3";
  doc["pid"] = s.pid;
  doc["proc_start_ticks"] = s.proc_start_ticks;
  doc["pgid"] = s.pgid;
  doc["boot_id"] = s.boot_id;
  doc["run_token"] = s.run_token;
  doc["argv"] = s.argv;
  doc["env"] = nlohmann::ordered_json::object();
  for (const auto& e : s.env) doc["env"][e.name] = e.value;
  doc["start_time_unix_ms"] = s.start_time_unix_ms;
  doc["log_path"] = s.log_path;
  doc["host"] = s.host;
  doc["port"] = s.port;
  doc["served_model_name"] = s.served_model_name;
  doc["stopped_time_unix_ms"] = s.stopped_time_unix_ms;
  doc["ready_time_unix_ms"] = s.ready_time_unix_ms;
  if (s.wait.is_object()) doc["wait"] = nlohmann::ordered_json::parse(s.wait.dump());
  if (s.request.is_array()) doc["request"] = nlohmann::ordered_json::parse(s.request.dump());
  if (s.resolved.is_object()) doc["resolved"] = nlohmann::ordered_json::parse(s.resolved.dump());
  if (s.multi_node.is_object()) doc["multi_node"] = nlohmann::ordered_json::parse(s.multi_node.dump());
  WriteFileText(StatePath(run_dir), doc.dump(2) + "\n");
}

std::int64_t NowUnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void RunState::SetIdentity(const ProcessIdentity& id) {
  pid = id.pid;
  proc_start_ticks = id.start_ticks;
  pgid = id.pgid;
  boot_id = id.boot_id;
  run_token = id.run_token;
}

std::int64_t ProcessStartTicks(int pid) {
  auto st = ReadProcStat(pid);
  return st ? st->start_ticks : -1;
}

bool ProcessAlive(int pid, std::int64_t start_ticks) {
  if (pid <= 0) return false;
  const auto st = ReadProcStat(pid);
  if (!st) return kill(pid, 0) == 0 || errno == EPERM;  // no /proc entry: signal 0 tells (sends nothing)
  if (!st->Live()) return false;
  return start_ticks < 0 || st->start_ticks == start_ticks;  // a different start time: the pid was reused
}

bool ProcessOrGroupAlive(const ProcessIdentity& id) {
  return ProcessAlive(id.pid, id.start_ticks) || ProcessGroupAlive(id.pgid > 0 ? id.pgid : id.pid);
}

int SpawnDetached(const std::vector<std::string>& argv, const std::vector<EnvVar>& env, const std::string& log_path,
                  const std::string& run_token) {
  if (argv.empty()) Fail("nothing to start: empty argv");
  CheckOutputTarget(log_path);  // the server's log is a regular file (io/output_file.h)
  std::map<std::string, std::string> merged;
  std::vector<std::string> order;
  for (char** e = environ; e && *e; ++e) {
    std::string kv(*e);
    auto eq = kv.find('=');
    if (eq == std::string::npos) continue;
    std::string k = kv.substr(0, eq);
    if (!merged.count(k)) order.push_back(k);
    merged[k] = kv.substr(eq + 1);
  }
  std::vector<EnvVar> all = env;
  if (!run_token.empty()) all.push_back({kRunTokenEnv, run_token});  // inherited by every process the server starts
  for (const auto& e : all) {
    if (!merged.count(e.name)) order.push_back(e.name);
    merged[e.name] = e.value;
  }
  std::vector<std::string> env_strings;
  for (const auto& k : order) env_strings.push_back(k + "=" + merged[k]);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = argv;
  std::vector<char*> argp;
  for (auto& s : args) argp.push_back(s.data());
  argp.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  ResetSignalsInChild(&attr);
  short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
#ifdef POSIX_SPAWN_SETSID
  flags |= POSIX_SPAWN_SETSID;
#else
  flags |= POSIX_SPAWN_SETPGROUP;
  posix_spawnattr_setpgroup(&attr, 0);
#endif
  posix_spawnattr_setflags(&attr, flags);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, args[0].c_str(), &actions, &attr, argp.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) Fail("cannot start '{}': {}", argv[0], std::strerror(rc));
  return pid;
}

bool ReapIfChild(int pid) {
  if (pid <= 0) return false;  // waitpid(0) or waitpid(-1) would reap any child
  int status = 0;
  return waitpid(pid, &status, WNOHANG) == pid;
}

StopOutcome StopProcessGroup(const ProcessIdentity& id, int grace_ms) {
  StopOutcome out;
  ReapIfChild(id.pid);
  const SignalTarget term = SignalVerified(id, SIGTERM);
  if (!term.ours) {
    out.refused = term.refused;
    return out;
  }
  out.was_running = true;
  const auto start = std::chrono::steady_clock::now();
  auto all_dead = [&] {
    ReapIfChild(id.pid);
    return !ProcessOrGroupAlive(id);
  };
  const int step_ms = 50;
  for (int waited = 0; waited < grace_ms && !all_dead(); waited += step_ms) SleepMs(step_ms);
  if (!all_dead()) {
    out.needed_sigkill = true;
    const SignalTarget kill_check = SignalVerified(id, SIGKILL);
    if (!kill_check.ours && !kill_check.gone) out.refused = kill_check.refused;
    for (int waited = 0; waited < 5000 && kill_check.ours && !all_dead(); waited += step_ms) SleepMs(step_ms);
  }
  out.waited_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

std::string CommandOutput::Summary() const {
  if (!started) return error;
  std::string last = err;
  while (!last.empty() && (last.back() == '\n' || last.back() == '\r')) last.pop_back();
  if (auto nl = last.rfind('\n'); nl != std::string::npos) last = last.substr(nl + 1);
  std::string what = timed_out ? "timed out" : fmt::format("exit {}", exit_code);
  return last.empty() ? what : what + ": " + last;
}

CommandOutput RunCaptured(const std::vector<std::string>& argv, int timeout_ms) {
  CommandOutput r;
  if (argv.empty()) {
    r.error = "empty argv";
    return r;
  }
  int out_pipe[2], err_pipe[2];
  if (pipe(out_pipe) != 0) {
    r.error = std::string("pipe: ") + std::strerror(errno);
    return r;
  }
  if (pipe(err_pipe) != 0) {
    r.error = std::string("pipe: ") + std::strerror(errno);
    close(out_pipe[0]);
    close(out_pipe[1]);
    return r;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) posix_spawn_file_actions_addclose(&actions, fd);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setpgroup(&attr, 0);
  ResetSignalsInChild(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  std::vector<std::string> args = argv;
  std::vector<char*> argp;
  for (auto& s : args) argp.push_back(s.data());
  argp.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, args[0].c_str(), &actions, &attr, argp.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (rc != 0) {
    r.error = fmt::format("cannot start '{}': {}", argv[0], std::strerror(rc));
    close(out_pipe[0]);
    close(err_pipe[0]);
    return r;
  }
  r.started = true;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  constexpr size_t kLimit = 1 << 20;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&r.out, &r.err};
  int open_fds = 2;
  while (open_fds > 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      r.timed_out = true;
      KillChildGroup(pid);
      break;
    }
    int n = poll(fds, 2, static_cast<int>(std::min<long long>(left.count(), 1000)));
    if (n < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[65536];
      ssize_t got = read(fds[i].fd, buf, sizeof buf);
      if (got > 0) {
        if (sinks[i]->size() < kLimit) sinks[i]->append(buf, static_cast<size_t>(got));
      } else if (got == 0 || errno != EINTR) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (auto& f : fds)
    if (f.fd >= 0) close(f.fd);
  // The pipes are closed: the command has exited (or left its output to a child); reap it, killing
  // its group if it lingers past the deadline.
  int status = 0;
  while (true) {
    pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) {
      status = 0;
      break;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      r.timed_out = true;
      KillChildGroup(pid);
      waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
  return r;
}

std::string TailFile(const std::string& path, int lines) {
  if (!IsRegularFile(path)) return "";  // a FIFO or device has no end to seek to
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  // Read at most the last 4 MiB: enough for any tail we print.
  const std::streamoff window = std::min<std::streamoff>(size, 4 << 20);
  in.seekg(size - window);
  std::string text(static_cast<size_t>(window), '\0');
  in.read(text.data(), window);
  if (lines <= 0) return text;
  size_t pos = text.size();
  if (pos > 0 && text[pos - 1] == '\n') --pos;
  int count = 0;
  while (pos > 0) {
    size_t nl = text.rfind('\n', pos - 1);
    if (nl == std::string::npos) {
      pos = 0;
      break;
    }
    if (++count == lines) {
      pos = nl + 1;
      break;
    }
    pos = nl;
  }
  return text.substr(pos);
}

}  // namespace ppdeploy::launch
