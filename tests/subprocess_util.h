// Test helper: run the built ppdeploy binary as a child process with stdout/stderr captured to files.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace ppdeploy::testing {

inline std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// A child process whose stdout/stderr go to files.
class Child {
 public:
  Child(const std::vector<std::string>& args, const std::string& out_path, const std::string& err_path)
      : out_path_(out_path), err_path_(err_path) {
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    if (posix_spawn(&pid_, argv[0], &fa, nullptr, argv.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&fa);
  }
  ~Child() {
    if (pid_ > 0 && !exited_) {
      kill(pid_, SIGKILL);
      int st = 0;
      waitpid(pid_, &st, 0);
    }
  }
  pid_t pid() const { return pid_; }
  std::string Out() const { return ReadAll(out_path_); }
  std::string Err() const { return ReadAll(err_path_); }

  /// Waits until stdout contains `needle` (or the timeout); returns stdout.
  std::string WaitForOutput(const std::string& needle, double timeout_s) {
    auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (std::chrono::steady_clock::now() < end) {
      std::string o = Out();
      if (o.find(needle) != std::string::npos) return o;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return Out();
  }
  /// Waits for exit; returns the exit code (128+signal when killed), or -1 on timeout.
  int Wait(double timeout_s) {
    auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (std::chrono::steady_clock::now() < end) {
      int st = 0;
      pid_t r = waitpid(pid_, &st, WNOHANG);
      if (r == pid_) {
        exited_ = true;
        return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return -1;
  }
  void Signal(int sig) { kill(pid_, sig); }

 private:
  std::string out_path_, err_path_;
  pid_t pid_ = -1;
  bool exited_ = false;
};

/// The URL from the sim's ready line "ppdeploy sim: listening on http://127.0.0.1:PORT" ("" when absent).
inline std::string SimUrl(const std::string& out) {
  const std::string key = "listening on ";
  auto p = out.find(key);
  if (p == std::string::npos) return "";
  auto e = out.find('\n', p);
  return out.substr(p + key.size(), e == std::string::npos ? std::string::npos : e - p - key.size());
}

}  // namespace ppdeploy::testing
