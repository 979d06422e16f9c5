#include "io/jsonl.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>

#include "core/error.h"
#include "core/escape.h"
#include "io/output_file.h"

namespace ppdeploy {

JsonlWriter::JsonlWriter(const std::string& path) : path_(path) {
  if (IsStdoutPath(path)) return;
  CheckOutputTarget(path);
  // No O_TRUNC yet: the descriptor is checked first, so a target swapped for a FIFO or a device after
  // the check above is still refused untouched (O_NONBLOCK: opening a FIFO never waits for a reader).
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NONBLOCK, 0666);
  if (fd_ < 0) Fail("{}: cannot open for writing: {}", EscapeForMessage(path), std::strerror(errno));
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd_);
    fd_ = -1;
    CheckOutputTarget(path);  // names the kind
    Fail("{}: refused: not a regular file; it was not touched", EscapeForMessage(path));
  }
  if (::ftruncate(fd_, 0) != 0 || ::fcntl(fd_, F_SETFL, 0) != 0) {
    const int err = errno;
    ::close(fd_);
    fd_ = -1;
    Fail("{}: cannot open for writing: {}", EscapeForMessage(path), std::strerror(err));
  }
}

JsonlWriter::~JsonlWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void JsonlWriter::Failed(std::string_view step) {
  const int err = errno;
  // Cut a torn last line: the file then holds whole records only.
  const bool cut = fd_ < 0 || ::ftruncate(fd_, bytes_) == 0;
  failure_ = fmt::format("{}: cannot write: {}{} after {} records; the file keeps {} complete records{}",
                         EscapeForMessage(path_), step, std::strerror(err), records_, records_,
                         cut ? "" : " and a torn last line");
  Fail("{}", failure_);
}

void JsonlWriter::Write(const nlohmann::json& record) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!failure_.empty()) Fail("{}", failure_);
  if (closed_) Fail("{}: cannot write: the file was already closed", EscapeForMessage(path_));
  const std::string line = record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  if (fd_ < 0) {
    std::cout << line;
    std::cout.flush();
    if (!std::cout) Failed("");
  } else if (WriteAllToFd(fd_, line) != line.size()) {
    Failed("");
  }
  ++records_;
  bytes_ += static_cast<std::int64_t>(line.size());
}

void JsonlWriter::Close() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!failure_.empty()) Fail("{}", failure_);
  if (closed_) return;
  closed_ = true;
  if (fd_ < 0) return;
  if (::fsync(fd_) != 0) Failed("fsync: ");
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) Failed("close: ");
}

}  // namespace ppdeploy
