#include "launch/run_lock.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "core/error.h"
#include "launch/process.h"

namespace ppdeploy::launch {
namespace {

// The lock file's descriptor: created if missing, never through a symlink, a regular file only.
int OpenLockFile(const std::string& path) {
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
  if (fd < 0) Fail("{}: cannot open the run directory's lock: {}", path, std::strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    Fail("{}: the run directory's lock is not a regular file; nothing was done", path);
  }
  return fd;
}

// What the holder wrote: "<pid> <command>", "" when nothing (yet).
std::string Holder(int fd) {
  char buf[128] = {};
  const ssize_t got = pread(fd, buf, sizeof buf - 1, 0);
  std::string text(buf, got > 0 ? static_cast<size_t>(got) : 0);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

void WriteHolder(int fd, std::string_view command) {
  const std::string text = fmt::format("{} {}\n", getpid(), command);
  if (ftruncate(fd, 0) != 0 || pwrite(fd, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size())) {
    // The lock is held all the same; only the holder's name for others' messages is lost.
  }
}

std::string BusyMessage(const std::string& run_dir, const std::string& path, const std::string& holder) {
  if (holder.empty())
    return fmt::format("{} is in use: another ppdeploy holds {}; try again when it is done", run_dir, path);
  const auto space = holder.find(' ');
  const std::string pid = holder.substr(0, space);
  const std::string command = space == std::string::npos ? "?" : holder.substr(space + 1);
  if (pid == std::to_string(getpid()))
    return fmt::format("{} is already locked by this ppdeploy ({}): two roles share one directory", run_dir, command);
  return fmt::format("{} is in use: pid {} (ppdeploy {}) holds {}; try again when it is done", run_dir, pid, command,
                     path);
}

}  // namespace

std::string RunLockPath(const std::string& run_dir) { return run_dir + "/ppdeploy.lock"; }

RunLock RunLock::Acquire(const std::string& run_dir, std::string_view command, int wait_ms) {
  EnsureRunDir(run_dir);
  const std::string path = RunLockPath(run_dir);
  const int fd = OpenLockFile(path);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
  while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    if ((err != EWOULDBLOCK && err != EINTR) || std::chrono::steady_clock::now() >= deadline) {
      const std::string message = err == EWOULDBLOCK ? BusyMessage(run_dir, path, Holder(fd))
                                                     : fmt::format("{}: cannot lock: {}", path, std::strerror(err));
      close(fd);
      Fail("{}", message);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  WriteHolder(fd, command);
  return RunLock(fd);
}

RunLock::~RunLock() {
  if (fd_ >= 0) close(fd_);  // closing the last descriptor of the open file releases the flock
}

}  // namespace ppdeploy::launch
