// Test helper: `ppdeploy args...` as a background child with a clean environment (PATH, HOME + env) in a
// directory, so that a test can signal it (Ctrl-C = SIGINT, a fault = SIGKILL) while it runs.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "launch/launch_test_util.h"

namespace ppdeploy::testing {

class AsyncPpdeploy {
 public:
  AsyncPpdeploy(const std::vector<std::string>& args, const std::map<std::string, std::string>& env,
                const std::string& cwd, const std::string& name)
      : out_path_(cwd + "/." + name + ".stdout"), err_path_(cwd + "/." + name + ".stderr") {
    pid_ = launch::testing::SpawnPpdeploy(args, env, cwd, out_path_, err_path_);
  }
  ~AsyncPpdeploy() {
    if (pid_ > 0 && !exited_) {
      kill(pid_, SIGKILL);
      int st = 0;
      waitpid(pid_, &st, 0);
    }
  }
  AsyncPpdeploy(const AsyncPpdeploy&) = delete;
  AsyncPpdeploy& operator=(const AsyncPpdeploy&) = delete;

  bool started() const { return pid_ > 0; }
  void Signal(int sig) { kill(pid_, sig); }
  std::string Out() const { return launch::testing::ReadAll(out_path_); }
  std::string Err() const { return launch::testing::ReadAll(err_path_); }

  /// Polls `ready` every 20 ms while the child runs; true when it held before the timeout.
  bool WaitUntil(const std::function<bool()>& ready, double timeout_s) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (std::chrono::steady_clock::now() < end) {
      if (ready()) return true;
      if (Exited()) return ready();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }
  /// Waits for the exit; the exit code (128 + signal when killed), -1 after the timeout.
  int Wait(double timeout_s) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
    while (std::chrono::steady_clock::now() < end) {
      if (Exited()) return rc_;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return -1;
  }

 private:
  bool Exited() {
    if (exited_) return true;
    int st = 0;
    if (waitpid(pid_, &st, WNOHANG) != pid_) return false;
    exited_ = true;
    rc_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    return true;
  }
  std::string out_path_, err_path_;
  pid_t pid_ = -1;
  bool exited_ = false;
  int rc_ = -1;
};

}  // namespace ppdeploy::testing
