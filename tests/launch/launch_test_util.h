// Helpers of the launcher tests: run the built ppdeploy binary with a clean environment, temp
// directories and free loopback ports.
#pragma once

#include <fcntl.h>
#include <netinet/in.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace ppdeploy::launch::testing {

struct RunResult {
  int rc = -1;
  std::string out;
  std::string err;
};

inline std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// A fresh directory under the system temp dir, removed by the destructor.
class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = (std::filesystem::temp_directory_path() /
             ("ppdeploy-launch-test-" + std::to_string(getpid()) + "-" + std::to_string(rd())))
                .string();
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

/// Starts `ppdeploy args...` in `cwd` with only PATH and HOME from the test's environment plus
/// `env`, stdin from /dev/null, stdout and stderr to the two files. The child's pid, -1 when
/// posix_spawn failed.
inline pid_t SpawnPpdeploy(const std::vector<std::string>& args, const std::map<std::string, std::string>& env,
                           const std::string& cwd, const std::string& out_path, const std::string& err_path) {
  std::vector<std::string> argv{PPDEPLOY_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  std::map<std::string, std::string> full;
  if (const char* p = std::getenv("PATH")) full["PATH"] = p;
  if (const char* h = std::getenv("HOME")) full["HOME"] = h;
  for (const auto& [k, v] : env) full[k] = v;
  std::vector<std::string> env_strings;
  for (const auto& [k, v] : full) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp, argp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  for (auto& s : argv) argp.push_back(s.data());
  argp.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addchdir_np(&fa, cwd.c_str());
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = -1;
  if (posix_spawn(&pid, argv[0].c_str(), &fa, nullptr, argp.data(), envp.data()) != 0) pid = -1;
  posix_spawn_file_actions_destroy(&fa);
  return pid;
}

/// Runs `ppdeploy args...` in `cwd` (SpawnPpdeploy) and waits for it.
inline RunResult RunPpdeploy(const std::vector<std::string>& args, const std::map<std::string, std::string>& env,
                             const std::string& cwd) {
  const std::string out_path = cwd + "/.stdout", err_path = cwd + "/.stderr";
  RunResult r;
  const pid_t pid = SpawnPpdeploy(args, env, cwd, out_path, err_path);
  if (pid < 0) return r;
  int status = 0;
  waitpid(pid, &status, 0);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = ReadAll(out_path);
  r.err = ReadAll(err_path);
  return r;
}

/// A loopback TCP port that was free a moment ago.
inline int FreeLoopbackPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  int port = ntohs(addr.sin_port);
  close(fd);
  return port;
}

}  // namespace ppdeploy::launch::testing
