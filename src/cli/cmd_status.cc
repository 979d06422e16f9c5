// ppdeploy status: running/stopped, pid, uptime, port and /health of the started server.
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/launch_options.h"
#include "cli/multinode_cli.h"
#include "core/error.h"
#include "launch/http_get.h"

namespace ppdeploy::cli {
namespace {

struct StatusOptions {
  std::string run_dir;
  std::string format = "text";
};

/// What `status` found, computed once and rendered as text or JSON.
struct StatusResult {
  std::string run_dir;
  std::optional<launch::RunState> state;  ///< nullopt: nothing was started here
  bool running = false;
  std::string url, health = "n/a";
  double uptime_s = 0;
};

StatusResult RunStatus(const StatusOptions& o) {
  StatusResult r;
  r.run_dir = EffectiveRunDir(o.run_dir);
  r.state = launch::ReadRunState(r.run_dir);
  if (!r.state) return r;
  launch::ReapIfChild(r.state->pid);
  r.running = launch::ProcessAlive(r.state->pid, r.state->proc_start_ticks);
  r.url = launch::LocalBaseUrl(r.state->host, r.state->port);
  if (r.running) {
    auto h = launch::HttpGet(r.url + "/health", 2000);
    r.health =
        h.connected ? (h.status == 200 ? "ok" : fmt::format("HTTP {}", h.status)) : "no answer (" + h.error + ")";
    r.uptime_s = static_cast<double>(launch::NowUnixMs() - r.state->start_time_unix_ms) / 1000.0;
  }
  return r;
}

nlohmann::ordered_json ToJson(const StatusResult& r) {
  nlohmann::ordered_json j;
  j["schema"] = "ppdeploy.status/1";
  j["run_dir"] = r.run_dir;
  j["state"] = r.running ? "running" : "stopped";
  if (!r.state) return j;
  j["pid"] = r.state->pid;
  j["port"] = r.state->port;
  j["url"] = r.url;
  j["uptime_s"] = r.uptime_s;
  j["health"] = r.health;
  j["log_path"] = r.state->log_path;
  j["argv"] = r.state->argv;
  return j;
}

void RenderText(const StatusResult& r, std::ostream& out) {
  if (!r.state) {
    fmt::print(out, "stopped (nothing started in {})\n", r.run_dir);
    return;
  }
  if (r.running)
    fmt::print(out, "running: pid {}, uptime {}, port {}, health {}\n", r.state->pid, FormatDuration(r.uptime_s),
               r.state->port, r.health);
  else
    fmt::print(out, "stopped: pid {} is not running{}\n", r.state->pid,
               r.state->stopped_time_unix_ms ? " (stopped by ppdeploy stop)" : " (exited; see `ppdeploy logs`)");
  fmt::print(out, "url {}\nlog {}\n", r.url, r.state->log_path);
}

}  // namespace

RunFunction DeclareStatus(CLI::App* sub) {
  auto opts = std::make_shared<StatusOptions>();
  AddRunDirOption(sub, opts->run_dir);
  sub->add_option("--format", opts->format, "text | json")->check(CLI::IsMember({"text", "json"}));
  return [opts](CommandIo& io) {
    StatusResult r = RunStatus(*opts);
    if (opts->format == "json") {
      auto j = ToJson(r);
      if (r.state) AddNodeStatus(j, *r.state, r.run_dir);
      io.out << j.dump(2) << "\n";
    } else {
      RenderText(r, io.out);
      if (r.state) PrintNodeStatus(io.out, *r.state, r.run_dir);
    }
    return ExitCode::kOk;
  };
}

}  // namespace ppdeploy::cli
