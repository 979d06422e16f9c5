// The one file writer of ppdeploy: every output (--out, --out-jsonl, reports, calibrations, the run
// state, the sim's state file) goes through WriteOutputFile or JsonlWriter (io/jsonl.h), and stdout
// through CheckedFdBuffer. The rules, after SQLite's and git's (write a temporary file beside the
// target, fsync, rename; check every write; never replace what they did not create):
//   - only regular files are written: a target that exists and is a directory, FIFO, character or
//     block device or socket (or a symbolic link to one, or a dangling link) is refused before it is
//     opened, unless the name means stdout ("-" or "/dev/stdout");
//   - a whole file is written to a temporary file in the target's directory, fsync'ed, closed and
//     renamed over the target: a reader sees the old file or the new one, never half of one, and a
//     failed write leaves the old file as it was;
//   - every write, fsync, close and rename is checked; an error names the path and the errno text.
// docs/safety.md "Writes and reads" states these rules and the tests that hold them.
#pragma once

#include <cstdint>
#include <mutex>
#include <streambuf>
#include <string>
#include <string_view>
#include <vector>

namespace ppdeploy {

/// True for the names that mean standard output: "-" and "/dev/stdout".
bool IsStdoutPath(std::string_view path);

/// Refuses, without opening it, an output target that exists and is not a regular file. A missing
/// target, a regular file, a symbolic link to a regular file and the stdout names pass. Throws Error
/// "<path>: refused: it is a FIFO; ppdeploy writes only regular files (or - for stdout); it was not
/// touched". Call it before a command's work so that a bad --out costs nothing.
void CheckOutputTarget(const std::string& path);

/// Refuses an output target that is the same file (device and inode, links followed) as one of the
/// command's inputs: `calibrate --log x --out x` would replace the log it read. Throws Error
/// "<path>: refused: it is the <what> this command reads (<input>); it was not touched".
void CheckOutputIsNotInput(const std::string& path, const std::string& input, std::string_view what);

/// Writes `content` as the whole of `path` (the rules above). A symbolic link to a regular file is
/// written through: the file it names is replaced, the link stays. The new file keeps the mode of
/// the file it replaces (else 0666 less the umask). "-" / "/dev/stdout" write to std::cout.
/// Throws Error "<path>: cannot write: <errno text> after B of N bytes; <path> was left unchanged".
void WriteOutputFile(const std::string& path, std::string_view content);

/// Writes all of `data` to `fd`, retrying on EINTR and short writes. Returns the bytes written:
/// data.size(), or fewer when a write failed (errno then holds the reason).
std::size_t WriteAllToFd(int fd, std::string_view data);

/// A std::streambuf that writes to a file descriptor and remembers its first error, so that a
/// command's stdout can be checked at the end (`plan --format json > /dev/full` must exit 1).
/// After an error further output is dropped (the stream's badbit is set). Unbuffered as a
/// streambuf (every insertion is one locked call, with its own buffer), so threads that print
/// whole lines interleave them as they would through stdio.
class CheckedFdBuffer : public std::streambuf {
 public:
  explicit CheckedFdBuffer(int fd, std::size_t buffer_bytes = 1 << 16);
  ~CheckedFdBuffer() override;
  CheckedFdBuffer(const CheckedFdBuffer&) = delete;
  CheckedFdBuffer& operator=(const CheckedFdBuffer&) = delete;
  /// The errno of the first failed write (0 = none).
  int error() const { return error_; }
  /// Bytes the descriptor accepted.
  std::int64_t bytes_written() const { return written_; }

 protected:
  int_type overflow(int_type ch) override;
  int sync() override;
  std::streamsize xsputn(const char* s, std::streamsize n) override;

 private:
  bool FlushBuffer();  ///< with mutex_ held
  std::mutex mutex_;
  int fd_;
  std::size_t limit_;
  std::vector<char> buffer_;
  int error_ = 0;
  std::int64_t written_ = 0;
};

}  // namespace ppdeploy
