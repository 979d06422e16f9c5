// File-system adapter: the only place the planner's inputs are read from disk.
#pragma once

#include <cstdint>
#include <string>

namespace ppdeploy {

/// Reads a whole file. Throws Error "<path>: cannot read: <reason>" (the path escaped) when it
/// cannot, or when more than `max_bytes` would be read: checked from the size of a regular file
/// before reading, and for every kind of file while reading (/dev/zero, a FIFO, /dev/stdin and
/// /proc files stop at the limit instead of growing without bound).
std::string ReadFileText(const std::string& path, std::int64_t max_bytes = 256LL << 20);

/// Writes a whole file atomically (write to path.tmp, then rename). Throws Error on failure.
void WriteFileText(const std::string& path, const std::string& content);

/// True when `path` exists and is a directory / a regular file.
bool IsDirectory(const std::string& path);
bool IsRegularFile(const std::string& path);

}  // namespace ppdeploy
