// ppdeploy wait: polls GET /health, then GET /v1/models of the started server until both answer
// 200; reports the ready time. Exit 1 on timeout or when the process died (with the log tail).
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli/command.h"
#include "cli/launch_options.h"
#include "cli/multinode_cli.h"
#include "core/error.h"
#include "io/deployment_inputs.h"
#include "io/files.h"
#include "launch/http_get.h"
#include "memory/pool.h"
#include "vllm/calibrate.h"

namespace ppdeploy::cli {
namespace {

struct WaitOptions {
  std::string run_dir;
  double timeout_s = 1800;  // the seed's ready time was 540-670 s
  double interval_s = 2;
  int tail = 40;
};

/// Once the server is ready: parse its own boot log, compare the logged pool with the planner's
/// prediction for the deployment `start` recorded (the same request, resolved again: the pool
/// `plan` and `cmd` show), and write a calibration from the log next to it for later plans
/// (`plan --calibration`). Never fails `wait`.
void OnServerReady(const launch::RunState& state, CommandIo& io, const std::string& run_dir) {
  if (!state.request.is_array()) {
    fmt::print(io.err, "ppdeploy: note: {} records no deployment request; no pool to compare\n",
               launch::StatePath(run_dir));
    return;
  }
  try {
    BootLog log = ParseBootLog(ReadFileText(state.log_path, 4LL << 30), LogParseOptions{state.log_path, 0});
    if (log.kv_tokens.empty()) {
      fmt::print(io.err, "ppdeploy: note: {} has no \"GPU KV cache size\" line; no pool to compare\n", state.log_path);
      return;
    }
    ResolvedDeployment d = ResolveStoredDeployment(state.request, launch::StatePath(run_dir));
    LayoutPlan predicted = PlanLayout(d.planner, d.layout);
    std::int64_t logged = *std::min_element(log.kv_tokens.begin(), log.kv_tokens.end());
    double diff_blocks = std::abs(static_cast<double>(predicted.pool.kv_tokens - logged)) / predicted.block_size;
    fmt::print(io.out, "KV pool: logged {} tokens, predicted {} ({:+.2f}%; {}, speculation {}{}){}\n",
               WithThousands(logged), WithThousands(predicted.pool.kv_tokens),
               100.0 * (static_cast<double>(predicted.pool.kv_tokens) / std::max<std::int64_t>(1, logged) - 1.0),
               d.planner.calibration ? "calibrated" : "estimated", d.spec_method,
               d.num_spec_tokens > 0 ? fmt::format(" k={}", d.num_spec_tokens) : "",
               diff_blocks > 1.0 ? "" : " - within one block");
    if (diff_blocks > 1.0)
      fmt::print(io.err,
                 "ppdeploy: warning: the logged pool differs from the plan by {:.0f} blocks of {} tokens; "
                 "the calibration below replaces the plan's estimates\n",
                 diff_blocks, predicted.block_size);
    Deployment raw = d.planner;
    raw.calibration.reset();
    LogCalibration cal = CalibrateFromLog(log, raw, d.layout);
    std::string path = run_dir + "/calibration.json";
    WriteFileText(path, CalibrationToJson(cal.calibration).dump(2) + "\n");
    fmt::print(io.out, "calibration written to {} (ppdeploy plan --calibration {})\n", path, path);
  } catch (const Error& e) {
    fmt::print(io.err, "ppdeploy: note: boot-log calibration skipped: {}\n", e.what());
  }
}

std::vector<std::string> ModelIds(const std::string& body) {
  std::vector<std::string> ids;
  auto j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("data") || !j["data"].is_array()) return ids;
  for (const auto& m : j["data"])
    if (m.is_object() && m.contains("id") && m["id"].is_string()) ids.push_back(m["id"].get<std::string>());
  return ids;
}

ExitCode RunWait(const WaitOptions& o, CommandIo& io) {
  const std::string run_dir = EffectiveRunDir(o.run_dir);
  auto state = launch::ReadRunState(run_dir);
  if (!state) Fail("nothing was started: no {} (run `ppdeploy start`)", launch::StatePath(run_dir));
  const std::string base = launch::LocalBaseUrl(state->host, state->port);
  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  std::string last = "no answer yet";
  fmt::print(io.out, "waiting for {}/health and {}/v1/models (pid {}, timeout {}s)\n", base, base, state->pid,
             o.timeout_s);
  while (true) {
    if (auto dead = DeadNodesReport(*state, run_dir, o.tail)) {  // multi-node: a node's process exited
      io.err << *dead;
      return ExitCode::kError;
    }
    launch::ReapIfChild(state->pid);
    if (!launch::ProcessAlive(state->pid, state->proc_start_ticks)) {
      fmt::print(io.err, "ppdeploy: the server process {} died after {}; last lines of {}:\n{}", state->pid,
                 FormatDuration(static_cast<double>(launch::NowUnixMs() - state->start_time_unix_ms) / 1000.0),
                 state->log_path, launch::TailFile(state->log_path, o.tail));
      return ExitCode::kError;
    }
    long per_request_ms = static_cast<long>(std::max(1000.0, std::min(10000.0, o.interval_s * 1000.0)));
    auto health = launch::HttpGet(base + "/health", per_request_ms);
    if (health.connected && health.status == 200) {
      auto models = launch::HttpGet(base + "/v1/models", per_request_ms);
      if (models.connected && models.status == 200) {
        double since_start = static_cast<double>(launch::NowUnixMs() - state->start_time_unix_ms) / 1000.0;
        auto ids = ModelIds(models.body);
        fmt::print(io.out, "ready: {} since start ({} waited); models: {}\n", FormatDuration(since_start),
                   FormatDuration(elapsed()), ids.empty() ? "(none listed)" : fmt::format("{}", fmt::join(ids, ", ")));
        if (!state->served_model_name.empty() &&
            std::find(ids.begin(), ids.end(), state->served_model_name) == ids.end())
          fmt::print(io.err, "ppdeploy: warning: /v1/models does not list the served model name '{}'\n",
                     state->served_model_name);
        OnServerReady(*state, io, run_dir);
        return ExitCode::kOk;
      }
      last = models.connected ? fmt::format("/v1/models answered {}", models.status) : models.error;
    } else {
      last = health.connected ? fmt::format("/health answered {}", health.status) : health.error;
    }
    if (elapsed() >= o.timeout_s) {
      fmt::print(io.err, "ppdeploy: not ready after {} (last: {}); last lines of {}:\n{}", FormatDuration(elapsed()),
                 last, state->log_path, launch::TailFile(state->log_path, o.tail));
      return ExitCode::kError;
    }
    double sleep_s = std::min(o.interval_s, std::max(0.0, o.timeout_s - elapsed()));
    std::this_thread::sleep_for(std::chrono::duration<double>(sleep_s));
  }
}

}  // namespace

RunFunction DeclareWait(CLI::App* sub) {
  auto opts = std::make_shared<WaitOptions>();
  AddRunDirOption(sub, opts->run_dir);
  sub->add_option("--timeout", opts->timeout_s, "give up after this many seconds (default 1800)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--interval", opts->interval_s, "seconds between polls (default 2)")->check(CLI::PositiveNumber);
  sub->add_option("--tail", opts->tail, "log lines shown when the server died or timed out (default 40)");
  return [opts](CommandIo& io) { return RunWait(*opts, io); };
}

}  // namespace ppdeploy::cli
