// Append-only JSON Lines writer: one compact JSON object per line, each line written with its own
// write() as it comes, so a run that dies (server crash, SIGINT) leaves a file of complete records.
// The target follows the rules of io/output_file.h: a directory, FIFO, device or socket is refused
// before it is opened ("-" / "/dev/stdout" write to std::cout). A failed write (a full disk, a file
// size limit) truncates the file back to its last complete line and throws an Error that says how
// many records the file keeps; every later Write throws the same.
#pragma once

#include <cstdint>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

namespace ppdeploy {

class JsonlWriter {
 public:
  /// Opens (truncates) `path`. Throws Error "<path>: refused: it is a FIFO; ..." for a target that is
  /// not a regular file, or "<path>: cannot open for writing: <reason>".
  explicit JsonlWriter(const std::string& path);
  ~JsonlWriter();
  JsonlWriter(const JsonlWriter&) = delete;
  JsonlWriter& operator=(const JsonlWriter&) = delete;
  /// Writes one line; thread-safe. Throws Error "<path>: cannot write: <reason> after N records;
  /// the file keeps N complete records".
  void Write(const nlohmann::json& record);
  /// fsync and close, checked (the destructor closes unchecked). Throws Error as Write does.
  void Close();
  const std::string& path() const { return path_; }
  /// Records written whole so far.
  std::int64_t records() const { return records_; }
  /// True once a write failed (every later Write throws).
  bool failed() const { return !failure_.empty(); }

 private:
  [[noreturn]] void Failed(std::string_view step);
  std::string path_;
  int fd_ = -1;  ///< -1 for stdout
  bool closed_ = false;  ///< Close() ran: a later Write is an error, never a line on stdout
  std::int64_t records_ = 0;
  std::int64_t bytes_ = 0;  ///< end of the last complete record
  std::string failure_;
  std::mutex mutex_;
};

}  // namespace ppdeploy
