#include "cli/progress.h"

#include <fmt/format.h>

#include <cstdlib>
#include <ostream>
#include <vector>

#include "cli/launch_options.h"

namespace ppdeploy::cli {

double HeartbeatSeconds() {
  if (const char* env = std::getenv("PPDEPLOY_HEARTBEAT_S"); env != nullptr && *env != '\0') {
    char* end = nullptr;
    const double v = std::strtod(env, &end);
    if (end != nullptr && *end == '\0' && v > 0) return v;
  }
  return 30;
}

Progress::Progress(CommandIo& io, std::string label, std::int64_t total)
    : io_(io), label_(std::move(label)), total_(total), tty_(io.err_is_tty) {
  if (!tty_) heartbeat_ = std::thread([this] { Heartbeat(); });
}

Progress::~Progress() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (heartbeat_.joinable()) heartbeat_.join();
  if (tty_) io_.err << "\n" << std::flush;
}

void Progress::Update(std::int64_t done, const std::string& detail) {
  std::lock_guard lock(mu_);
  done_ = done;
  detail_ = detail;
  if (tty_) io_.err << "\r\x1b[2K" << LineLocked() << std::flush;
}

std::string Progress::Line() const {
  std::lock_guard lock(mu_);
  return LineLocked();
}

std::string Progress::LineLocked() const {
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::vector<std::string> parts;
  if (total_ > 0)
    parts.push_back(fmt::format("{}/{} done", done_, total_));
  else if (done_ > 0)
    parts.push_back(fmt::format("{} done", done_));
  if (!detail_.empty()) parts.push_back(detail_);
  parts.push_back(FormatDuration(elapsed) + " elapsed");
  std::string s = label_ + ": ";
  for (std::size_t i = 0; i < parts.size(); ++i) s += (i ? ", " : "") + parts[i];
  if (total_ > 0 && done_ > 0 && done_ < total_)
    s += ", ETA " + FormatDuration(elapsed / static_cast<double>(done_) * static_cast<double>(total_ - done_));
  return s;
}

void Progress::Heartbeat() {
  const auto every = std::chrono::duration<double>(HeartbeatSeconds());
  std::unique_lock lock(mu_);
  while (!cv_.wait_for(lock, every, [this] { return stop_; })) io_.err << LineLocked() << "\n" << std::flush;
}

}  // namespace ppdeploy::cli
