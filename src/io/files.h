// File-system adapter: the only place the planner's inputs are read from disk.
#pragma once

#include <cstdint>
#include <string>

namespace ppdeploy {

/// The most ReadFileText reads from a file that is not a regular file (a FIFO, /dev/stdin, a
/// device, a /proc file), whatever `max_bytes` allows: such a file has no size to check first, and
/// /dev/zero must be refused after a few MiB, not after gigabytes (issue 24).
inline constexpr std::int64_t kNonRegularReadLimitBytes = 8LL << 20;

/// The most a vLLM boot log read for its facts may hold when it is a regular file (calibrate --log,
/// the run directory's server log). A FIFO or /dev/stdin log stops at kNonRegularReadLimitBytes.
inline constexpr std::int64_t kBootLogReadLimitBytes = 4LL << 30;

/// Reads a whole file. Throws Error "<path>: cannot read: <reason>" (the path escaped) when it
/// cannot, or when more than the limit would be read: `max_bytes` for a regular file, checked from
/// its size before reading and again while reading; min(max_bytes, kNonRegularReadLimitBytes) for
/// any other kind of file, counted while reading (/dev/zero, a FIFO, /dev/stdin and /proc files stop
/// at the limit instead of growing without bound).
std::string ReadFileText(const std::string& path, std::int64_t max_bytes = 256LL << 20);

/// Writes a whole file with WriteOutputFile (io/output_file.h: regular files only, a temporary file
/// beside the target, fsync, atomic rename, every step checked). Throws Error on failure.
void WriteFileText(const std::string& path, const std::string& content);

/// True when `path` exists and is a directory / a regular file.
bool IsDirectory(const std::string& path);
bool IsRegularFile(const std::string& path);

}  // namespace ppdeploy
