// File-system adapter: the only place the planner's inputs are read from disk.
#pragma once

#include <cstdint>
#include <string>

namespace ppdeploy {

/// Reads a whole file. Throws Error "<path>: cannot read: <reason>" when it cannot, or when the
/// file is larger than `max_bytes`.
std::string ReadFileText(const std::string& path, std::int64_t max_bytes = 256LL << 20);

/// Writes a whole file atomically (write to path.tmp, then rename). Throws Error on failure.
void WriteFileText(const std::string& path, const std::string& content);

/// True when `path` exists and is a directory / a regular file.
bool IsDirectory(const std::string& path);
bool IsRegularFile(const std::string& path);

}  // namespace ppdeploy
