#include "io/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "core/error.h"
#include "core/escape.h"
#include "io/output_file.h"

namespace ppdeploy {

std::string ReadFileText(const std::string& path, std::int64_t max_bytes) {
  const std::string shown = EscapeForMessage(path);
  // One open file, examined and read through the same descriptor: the limit holds for what is
  // read, whatever the path is (a regular file, /dev/zero, a FIFO, /dev/stdin, a /proc file whose
  // stat size is 0), and a file replaced between a stat and an open cannot slip past it.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) Fail("{}: cannot read: {}", shown, std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) Fail("{}: cannot read: {}", shown, std::strerror(errno));
  if (S_ISDIR(st.st_mode)) Fail("{}: cannot read: is a directory", shown);
  const bool regular = S_ISREG(st.st_mode);
  if (!regular) max_bytes = std::min(max_bytes, kNonRegularReadLimitBytes);
  if (regular && st.st_size > max_bytes)
    Fail("{}: cannot read: file is {} bytes, more than the limit of {}", shown, static_cast<std::int64_t>(st.st_size),
         max_bytes);
  std::string out;
  if (regular) out.reserve(static_cast<std::size_t>(st.st_size));
  std::vector<char> buf(std::size_t{1} << 16);
  while (true) {
    ssize_t r = ::read(fd, buf.data(), buf.size());
    if (r < 0) {
      if (errno == EINTR) continue;
      Fail("{}: cannot read: {}", shown, std::strerror(errno));
    }
    if (r == 0) break;
    if (static_cast<std::int64_t>(out.size()) + r > max_bytes)
      Fail("{}: cannot read: more than the limit of {} bytes{}", shown, max_bytes,
           regular ? " (the file grew while it was read)" : " (not a regular file; read up to the limit)");
    out.append(buf.data(), static_cast<std::size_t>(r));
  }
  return out;
}

void WriteFileText(const std::string& path, const std::string& content) { WriteOutputFile(path, content); }

bool IsDirectory(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_directory(path, ec);
}

bool IsRegularFile(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec);
}

}  // namespace ppdeploy
