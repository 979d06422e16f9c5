#include "io/jsonl.h"

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace ppdeploy {

JsonlWriter::JsonlWriter(const std::string& path) : path_(path), out_(path, std::ios::out | std::ios::trunc) {
  if (!out_) Fail("{}: cannot open for writing: {}", path, std::strerror(errno));
}

void JsonlWriter::Write(const nlohmann::json& record) {
  std::lock_guard<std::mutex> lock(mutex_);
  out_ << record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
  out_.flush();
  if (!out_) Fail("{}: write failed", path_);
}

}  // namespace ppdeploy
