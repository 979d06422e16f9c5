// ppdeploy status: running/stopped, pid, uptime, port and /health of the started server.
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/launch_options.h"
#include "core/error.h"
#include "launch/http_get.h"

namespace ppdeploy::cli {
namespace {

struct StatusOptions {
  std::string run_dir;
  std::string format = "text";
};

}  // namespace

RunFunction DeclareStatus(CLI::App* sub) {
  auto opts = std::make_shared<StatusOptions>();
  AddRunDirOption(sub, opts->run_dir);
  sub->add_option("--format", opts->format, "text | json")->check(CLI::IsMember({"text", "json"}));
  return [opts](CommandIo& io) -> ExitCode {
    const std::string run_dir = EffectiveRunDir(opts->run_dir);
    auto state = launch::ReadRunState(run_dir);
    nlohmann::ordered_json j;
    j["schema"] = "ppdeploy.status/1";
    j["run_dir"] = run_dir;
    if (!state) {
      j["state"] = "stopped";
      if (opts->format == "json")
        io.out << j.dump(2) << "\n";
      else
        fmt::print(io.out, "stopped (nothing started in {})\n", run_dir);
      return ExitCode::kOk;
    }
    launch::ReapIfChild(state->pid);
    const bool running = launch::ProcessAlive(state->pid, state->proc_start_ticks);
    const std::string base = launch::LocalBaseUrl(state->host, state->port);
    std::string health = "n/a";
    if (running) {
      auto h = launch::HttpGet(base + "/health", 2000);
      health =
          h.connected ? (h.status == 200 ? "ok" : fmt::format("HTTP {}", h.status)) : "no answer (" + h.error + ")";
    }
    const double uptime_s = static_cast<double>(launch::NowUnixMs() - state->start_time_unix_ms) / 1000.0;
    j["state"] = running ? "running" : "stopped";
    j["pid"] = state->pid;
    j["port"] = state->port;
    j["url"] = base;
    j["uptime_s"] = running ? uptime_s : 0.0;
    j["health"] = health;
    j["log_path"] = state->log_path;
    j["argv"] = state->argv;
    if (opts->format == "json") {
      io.out << j.dump(2) << "\n";
      return ExitCode::kOk;
    }
    if (running) {
      fmt::print(io.out, "running: pid {}, uptime {}, port {}, health {}\n", state->pid, FormatDuration(uptime_s),
                 state->port, health);
    } else {
      fmt::print(io.out, "stopped: pid {} is not running{}\n", state->pid,
                 state->stopped_time_unix_ms ? " (stopped by ppdeploy stop)" : " (exited; see `ppdeploy logs`)");
    }
    fmt::print(io.out, "url {}\nlog {}\n", base, state->log_path);
    return ExitCode::kOk;
  };
}

}  // namespace ppdeploy::cli
