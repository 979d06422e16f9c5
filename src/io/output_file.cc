#include "io/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>

#include "core/error.h"
#include "core/escape.h"

namespace ppdeploy {
namespace {

std::string_view KindName(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

[[noreturn]] void Refuse(const std::string& path, std::string_view kind) {
  Fail("{}: refused: it is {}; ppdeploy writes only regular files (or - for stdout); it was not touched",
       EscapeForMessage(path), kind);
}

/// The regular file a write to `path` replaces (`path`, or the file a symbolic link at `path` names),
/// with its mode when it exists. Refuses every other kind of target.
struct Target {
  std::string path;
  std::optional<mode_t> mode;
};

Target ResolveTarget(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return {path, std::nullopt};
    Fail("{}: cannot write: {}", EscapeForMessage(path), std::strerror(errno));
  }
  if (S_ISREG(st.st_mode)) return {path, st.st_mode};
  if (!S_ISLNK(st.st_mode)) Refuse(path, KindName(st.st_mode));
  struct stat target {};
  if (::stat(path.c_str(), &target) != 0) Refuse(path, "a symbolic link to a missing file");
  if (!S_ISREG(target.st_mode)) Refuse(path, fmt::format("a symbolic link to {}", KindName(target.st_mode)));
  char* real = ::realpath(path.c_str(), nullptr);
  if (real == nullptr) Fail("{}: cannot write: {}", EscapeForMessage(path), std::strerror(errno));
  std::string resolved(real);
  std::free(real);
  return {resolved, target.st_mode};
}

std::string_view Untouched(const Target& t) { return t.mode ? "the file was left as it was" : "no file was created"; }

struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

/// Creates a new temporary file beside `target` (O_EXCL: never an existing file or link).
std::string CreateTemp(const std::string& target, Fd& fd) {
  static std::atomic<unsigned> counter{0};
  std::filesystem::path p(target);
  const std::string dir = p.has_parent_path() ? p.parent_path().string() : std::string(".");
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::string tmp = fmt::format("{}/.{}.{}.{}.tmp", dir, p.filename().string(), ::getpid(), counter++);
    fd.fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666);
    if (fd.fd >= 0) return tmp;
    if (errno != EEXIST)
      Fail("{}: cannot write: cannot create a temporary file in {}: {}", EscapeForMessage(target),
           EscapeForMessage(dir), std::strerror(errno));
  }
  Fail("{}: cannot write: no free temporary file name in {}", EscapeForMessage(target), EscapeForMessage(dir));
}

/// Writes, syncs and closes the temporary file; on an error removes it and throws.
void FillTemp(const Target& t, const std::string& tmp, Fd& fd, std::string_view content) {
  auto fail = [&](std::string_view step, std::size_t done) {
    const int err = errno;
    ::unlink(tmp.c_str());
    Fail("{}: cannot write: {}{} after {} of {} bytes; {}", EscapeForMessage(t.path), step, std::strerror(err), done,
         content.size(), Untouched(t));
  };
  if (t.mode && ::fchmod(fd.fd, *t.mode & 07777) != 0) fail("chmod: ", 0);
  const std::size_t done = WriteAllToFd(fd.fd, content);
  if (done != content.size()) fail("", done);
  if (::fsync(fd.fd) != 0) fail("fsync: ", done);
  const int closing = fd.fd;
  fd.fd = -1;
  if (::close(closing) != 0) fail("close: ", done);
}

/// fsync of the directory after the rename, so the new name survives a crash (best effort: some
/// file systems refuse fsync on a directory).
void SyncDirectory(const std::string& target) {
  std::filesystem::path p(target);
  const std::string dir = p.has_parent_path() ? p.parent_path().string() : std::string(".");
  Fd d{::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  if (d.fd >= 0) (void)::fsync(d.fd);
}

void WriteStdout(std::string_view content) {
  std::cout.write(content.data(), static_cast<std::streamsize>(content.size()));
  std::cout.flush();
  if (!std::cout) Fail("stdout: cannot write");
}

}  // namespace

bool IsStdoutPath(std::string_view path) { return path == "-" || path == "/dev/stdout"; }

void CheckOutputTarget(const std::string& path) {
  if (!IsStdoutPath(path)) (void)ResolveTarget(path);
}

void CheckOutputIsNotInput(const std::string& path, const std::string& input, std::string_view what) {
  if (path.empty() || input.empty() || IsStdoutPath(path)) return;
  struct stat out_st {};
  struct stat in_st {};
  if (stat(path.c_str(), &out_st) != 0 || stat(input.c_str(), &in_st) != 0) return;  // a new file: not an input
  if (out_st.st_dev == in_st.st_dev && out_st.st_ino == in_st.st_ino)
    Fail("{}: refused: it is the {} this command reads ({}); it was not touched", QuoteForMessage(path), what,
         QuoteForMessage(input));
}

void WriteOutputFile(const std::string& path, std::string_view content) {
  if (IsStdoutPath(path)) return WriteStdout(content);
  const Target t = ResolveTarget(path);
  Fd fd;
  const std::string tmp = CreateTemp(t.path, fd);
  FillTemp(t, tmp, fd, content);
  if (::rename(tmp.c_str(), t.path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    Fail("{}: cannot write: rename: {}; {}", EscapeForMessage(t.path), std::strerror(err), Untouched(t));
  }
  SyncDirectory(t.path);
}

std::size_t WriteAllToFd(int fd, std::string_view data) {
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t r = ::write(fd, data.data() + done, data.size() - done);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      if (r == 0) errno = EIO;
      return done;
    }
    done += static_cast<std::size_t>(r);
  }
  return done;
}

CheckedFdBuffer::CheckedFdBuffer(int fd, std::size_t buffer_bytes) : fd_(fd), limit_(buffer_bytes) {
  buffer_.reserve(buffer_bytes);
}

CheckedFdBuffer::~CheckedFdBuffer() { FlushBuffer(); }

bool CheckedFdBuffer::FlushBuffer() {
  if (buffer_.empty() || error_ != 0) {
    buffer_.clear();  // output after an error is dropped
    return error_ == 0;
  }
  const std::size_t done = WriteAllToFd(fd_, std::string_view(buffer_.data(), buffer_.size()));
  written_ += static_cast<std::int64_t>(done);
  if (done != buffer_.size()) error_ = errno;
  buffer_.clear();
  return error_ == 0;
}

CheckedFdBuffer::int_type CheckedFdBuffer::overflow(int_type ch) {
  if (traits_type::eq_int_type(ch, traits_type::eof())) return traits_type::not_eof(ch);
  const char c = traits_type::to_char_type(ch);
  return xsputn(&c, 1) == 1 ? ch : traits_type::eof();
}

int CheckedFdBuffer::sync() {
  std::lock_guard<std::mutex> lock(mutex_);
  return FlushBuffer() ? 0 : -1;
}

std::streamsize CheckedFdBuffer::xsputn(const char* s, std::streamsize n) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (error_ != 0) return 0;
  buffer_.insert(buffer_.end(), s, s + n);
  if (buffer_.size() >= limit_ && !FlushBuffer()) return 0;
  return n;
}

}  // namespace ppdeploy
