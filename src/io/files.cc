#include "io/files.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace ppdeploy {

std::string ReadFileText(const std::string& path, std::int64_t max_bytes) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) Fail("{}: cannot read: is a directory", path);
  std::ifstream in(path, std::ios::binary);
  if (!in) Fail("{}: cannot read: {}", path, std::strerror(errno));
  auto size = std::filesystem::file_size(path, ec);
  if (!ec && static_cast<std::int64_t>(size) > max_bytes)
    Fail("{}: cannot read: file is {} bytes, more than the limit of {}", path, size, max_bytes);
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) Fail("{}: cannot read: I/O error", path);
  return ss.str();
}

void WriteFileText(const std::string& path, const std::string& content) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) Fail("{}: cannot write: {}", tmp, std::strerror(errno));
    out << content;
    out.flush();
    if (!out) Fail("{}: cannot write: I/O error", tmp);
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) Fail("{}: cannot write: {}", path, ec.message());
}

bool IsDirectory(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_directory(path, ec);
}

bool IsRegularFile(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec);
}

}  // namespace ppdeploy
