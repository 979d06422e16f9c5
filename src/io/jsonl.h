// Append-only JSON Lines writer: one compact JSON object per line, flushed after every line, so a
// run that dies (server crash, SIGINT) leaves a file of complete records.
#pragma once

#include <fstream>
#include <mutex>
#include <string>

#include <nlohmann/json.hpp>

namespace ppdeploy {

class JsonlWriter {
 public:
  /// Opens (truncates) `path`. Throws Error "<path>: cannot open for writing: <reason>".
  explicit JsonlWriter(const std::string& path);
  /// Writes one line and flushes; thread-safe. Throws Error when the write fails.
  void Write(const nlohmann::json& record);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::ofstream out_;
  std::mutex mutex_;
};

}  // namespace ppdeploy
