#include "launch/remote.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <thread>

#include "core/error.h"

extern char** environ;

namespace ppdeploy::launch {

std::vector<std::string> RemoteShellArgv(const std::vector<std::string>& prefix, const std::string& host,
                                         const std::vector<std::string>& remote_argv) {
  std::vector<std::string> out;
  for (std::string word : prefix) {
    for (size_t pos = word.find("{host}"); pos != std::string::npos; pos = word.find("{host}", pos + host.size()))
      word.replace(pos, 6, host);
    out.push_back(std::move(word));
  }
  out.push_back(ShellJoin(remote_argv));
  return out;
}

std::vector<std::string> NodeCommand(const RenderedStep& step, bool bare) {
  if (!bare || step.env.empty()) return step.argv;
  if (!step.argv.empty() && step.argv[0].find('=') != std::string::npos)
    Fail("{} on {}: the executable '{}' contains '=': env(1) would read it as a variable", step.role, step.node,
         step.argv[0]);
  std::vector<std::string> out{"env"};
  for (const auto& e : step.env) out.push_back(e.name + "=" + e.value);
  out.insert(out.end(), step.argv.begin(), step.argv.end());
  return out;
}

std::vector<std::string> WithRemotePid(const std::vector<std::string>& argv) {
  std::vector<std::string> out{"sh", "-c", fmt::format("echo \"{}$$\"; exec \"$@\"", kRemotePidMarker),
                               "ppdeploy-remote"};
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

int RemotePidFromLog(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    std::string_view line = text.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
    if (line.substr(0, kRemotePidMarker.size()) == kRemotePidMarker) {
      line.remove_prefix(kRemotePidMarker.size());
      while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
      int pid = 0;
      auto [ptr, ec] = std::from_chars(line.data(), line.data() + line.size(), pid);
      if (ec == std::errc() && ptr == line.data() + line.size() && pid > 0) return pid;
    }
    if (end == std::string_view::npos) break;
    pos = end + 1;
  }
  return 0;
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
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGCHLD}) sigaddset(&defaults, s);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
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
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
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
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
  return r;
}

CommandOutput RunOnNode(const std::vector<std::string>& prefix, const std::string& host,
                        const std::vector<std::string>& remote_argv, int timeout_ms) {
  return RunCaptured(RemoteShellArgv(prefix, host, remote_argv), timeout_ms);
}

}  // namespace ppdeploy::launch
