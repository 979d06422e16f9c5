#include "cli/rebalance.h"

#include <fmt/format.h>
#include <fmt/ostream.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/interrupt.h"
#include "cli/launch_options.h"
#include "cli/preflight_check.h"
#include "cli/progress.h"
#include "cli/server_render.h"
#include "core/error.h"
#include "core/json_fields.h"
#include "io/deployment_inputs.h"
#include "io/files.h"
#include "launch/http_get.h"
#include "launch/run_lock.h"
#include "layout/optimizer.h"
#include "memory/pool.h"
#include "probes/verdict.h"
#include "report/probe_report.h"
#include "report/verify_html.h"

namespace ppdeploy::cli {
namespace {

constexpr const char* kSchema = "ppdeploy.rebalance/1";
constexpr const char* kControl = "control";

std::string SplitText(const nlohmann::json& partition) {
  std::vector<int> p;
  if (partition.is_array())
    for (const auto& n : partition)
      if (n.is_number_integer()) p.push_back(n.get<int>());
  return p.empty() ? "vLLM's default split" : FormatPartition(p);
}

/// Whether the server of `run_dir` is alive and answers /health with 200.
struct Liveness {
  std::optional<launch::RunState> state;
  bool alive = false;
  bool healthy = false;
  std::string url;
};
Liveness Probe(const std::string& run_dir) {
  Liveness l;
  l.state = launch::ReadRunState(run_dir);
  if (!l.state) return l;
  launch::ReapIfChild(l.state->pid);
  l.alive = launch::ProcessAlive(l.state->pid, l.state->proc_start_ticks);
  l.url = launch::LocalBaseUrl(l.state->host, l.state->port);
  if (l.alive) {
    auto h = launch::HttpGet(l.url + "/health", 5000);
    l.healthy = h.connected && h.status == 200;
  }
  return l;
}

void CopyIfExists(const std::string& from, const std::string& to) {
  std::error_code ec;
  if (!std::filesystem::exists(from, ec)) return;
  std::filesystem::copy_file(from, to, std::filesystem::copy_options::overwrite_existing, ec);
  if (ec) Fail("cannot copy {} to {}: {}", from, to, ec.message());
}

class Flow {
 public:
  // `io` gets the flow's log; `doc_out` the verdict document (stdout).
  Flow(const RebalanceOptions& o, CommandIo& io, std::ostream& doc_out) : o_(o), io_(io), doc_out_(doc_out) {
    control_run_dir_ = EffectiveRunDir(o.run_dir);
    state_path_ = o.ab_dir + "/state.json";
    Load();
  }

  ExitCode Dispatch() {
    const std::string& step = o_.step;
    if (step == "preflight")
      return Step("preflight:" + ArmName(SplitOrBest()), [&] { return Preflight(SplitOrBest()); });
    if (step == "control") return Step(kControl, [&] { return Control(); });
    if (step == "boot") return Step("boot:" + ArmName(RequiredSplit()), [&] { return Boot(RequiredSplit()); });
    if (step == "verify") return Step("verify:" + ArmName(LastSplit()), [&] { return VerifyArm(LastSplit()); });
    if (step == "verdict") {  // recomputed every time: it reads the two results, nothing is measured
      doc_["steps"].erase("verdict:" + ArmName(LastSplit()));
      return Step("verdict:" + ArmName(LastSplit()), [&] { return Verdict(LastSplit()); });
    }
    if (step == "restore") return Restore();
    if (step == "run") return RunAll(RequiredSplit());
    Fail("rebalance: unknown step \"{}\" (preflight, control, boot, verify, verdict, restore, run)", step);
  }

 private:
  // ---- state ----
  void Load() {
    if (IsRegularFile(state_path_)) {
      doc_ = ParseJsonText(ReadFileText(state_path_), state_path_);
      const JsonContext ctx{state_path_, ""};
      RequireObject(doc_, ctx);
      if (doc_.value("schema", "") != kSchema)
        Fail("{}: schema: expected \"{}\", got {}", state_path_, kSchema,
             ShortJson(doc_.value("schema", nlohmann::json())));
      const std::string recorded = OptString(doc_, "control_run_dir", ctx).value_or(control_run_dir_);
      if (recorded != control_run_dir_)
        Fail("{}: this A/B's control arm runs from {}, not {} (--run-dir); use another --ab-dir", state_path_, recorded,
             control_run_dir_);
    } else {
      doc_ = {{"schema", kSchema}, {"control_run_dir", control_run_dir_}, {"steps", nlohmann::json::object()}};
    }
    if (!doc_.contains("steps") || !doc_["steps"].is_object()) doc_["steps"] = nlohmann::json::object();
  }
  void Save() {
    std::error_code ec;
    std::filesystem::create_directories(o_.ab_dir, ec);
    if (ec) Fail("{}: cannot create the A/B directory: {}", o_.ab_dir, ec.message());
    WriteFileText(state_path_, doc_.dump(2) + "\n");
  }
  bool IsDone(const std::string& step) const {
    return doc_["steps"].contains(step) && doc_["steps"][step].value("status", "") == "done";
  }
  std::string ArmDir(const std::string& arm) const { return o_.ab_dir + "/" + arm; }

  // A step: skipped when done (unless --force), else "running" -> "done" / "failed" / "interrupted".
  ExitCode Step(const std::string& name, const std::function<ExitCode()>& body) {
    if (IsDone(name) && !o_.force) {
      const auto& s = doc_["steps"][name];
      fmt::print(io_.out, "== {}: done (exit {}{}); not repeated (--force repeats it)\n", name, s.value("exit", 0),
                 s.contains("note") ? ", " + s.value("note", "") : "");
      return static_cast<ExitCode>(s.value("exit", 0));
    }
    fmt::print(io_.out, "== {}\n", name);
    io_.out.flush();
    auto& s = doc_["steps"][name];
    s = {{"status", "running"}, {"started_unix_ms", launch::NowUnixMs()}};
    Save();
    ExitCode rc = ExitCode::kError;
    std::string error;
    try {
      rc = body();
    } catch (const std::exception& e) {
      error = e.what();
      rc = ExitCode::kError;
    }
    if (InterruptGuard::Raised()) rc = ExitCode::kInterrupted;
    auto& done = doc_["steps"][name];
    done["finished_unix_ms"] = launch::NowUnixMs();
    done["exit"] = static_cast<int>(rc);
    done["status"] = rc == ExitCode::kInterrupted ? "interrupted" : rc == ExitCode::kError ? "failed" : "done";
    if (!error.empty()) done["note"] = error;
    if (!note_.empty()) done["note"] = note_;
    note_.clear();
    Save();
    if (!error.empty()) throw Error(error);
    return rc;
  }

  // ---- the control arm and the arms' requests ----
  launch::RunState ControlState() const {
    if (auto s = launch::ReadRunState(ArmDir(kControl)); s && s->request.is_array()) return *s;  // control's snapshot
    auto s = launch::ReadRunState(control_run_dir_);
    if (!s)
      Fail(
          "no control arm: nothing was started in {} (start the current deployment with `ppdeploy start` and "
          "`ppdeploy wait`, or give its --run-dir)",
          control_run_dir_);
    if (!s->request.is_array())
      Fail("{}: the control arm's run state records no deployment request (it was started by an older ppdeploy)",
           launch::StatePath(control_run_dir_));
    return *s;
  }

  launch::PreparedLaunch PrepareArm(const std::string& split) const {
    nlohmann::json request = ControlState().request;
    bool found = false;
    for (auto& s : request)
      if (s.is_object() && s.value("key", "") == "pp_layer_partition") {
        s["value"] = split;
        s["source"] = "flag";
        s["origin"] = "rebalance " + split;
        found = true;
      }
    if (!found) Fail("the control arm's request has no pp_layer_partition setting");
    return launch::PrepareLaunch(
        ResolveStoredDeployment(request, fmt::format("the control arm's request with the split {}", split)));
  }

  std::string RequiredSplit() const {
    if (o_.split.empty()) Fail("rebalance {}: give the split, e.g. `ppdeploy rebalance {} 41,37`", o_.step, o_.step);
    ArmName(o_.split);  // validates
    return o_.split;
  }
  // verify / verdict: the split given, else the one booted last.
  std::string LastSplit() const {
    if (!o_.split.empty()) return RequiredSplit();
    const std::string last = doc_.value("last_split", "");
    if (last.empty()) Fail("rebalance {}: give the split (no arm was booted in {})", o_.step, o_.ab_dir);
    return last;
  }
  std::string SplitOrBest() {
    if (!o_.split.empty()) return RequiredSplit();
    if (!best_split_.empty()) return best_split_;
    const ResolvedDeployment d = ResolveStoredDeployment(ControlState().request, "the control arm's request");
    if (d.request.pp_size < 2)
      Fail("rebalance preflight: the control arm runs PP={}: no split to rebalance", d.request.pp_size);
    const auto best = OptimizeSplit(d.planner, d.request.tp_size, d.request.pp_size, OptimizeOptions{});
    best_split_ = FormatPartition(best.best.partition);
    fmt::print(io_.out, "no SPLIT given: the split optimiser's best for TP{}/PP{} is {} ({} tokens)\n",
               d.request.tp_size, d.request.pp_size, best_split_, WithThousands(best.best.kv_tokens));
    return best_split_;
  }

  // Stops every arm's server that runs (the control and the arms under <ab>), except `keep`.
  void StopServing(const std::string& keep_dir) {
    std::vector<std::string> dirs = {control_run_dir_};
    std::error_code ec;
    if (std::filesystem::is_directory(o_.ab_dir, ec))
      for (const auto& e : std::filesystem::directory_iterator(o_.ab_dir, ec))
        if (e.is_directory() && e.path().filename() != kControl) dirs.push_back(e.path().string());
    for (const auto& dir : dirs) {
      if (dir == keep_dir) continue;
      auto state = launch::ReadRunState(dir);
      if (!state || !launch::ProcessAlive(state->pid, state->proc_start_ticks)) continue;
      fmt::print(io_.out, "stopping the server of {} (pid {})\n", dir, state->pid);
      RenderStop(launch::StopServer(dir, o_.grace_s), io_);
    }
  }

  // Starts `prepared` in `run_dir` and waits; returns 0 ready, 1 refused / died / timed out, 130 interrupted.
  ExitCode StartAndWait(const launch::PreparedLaunch& prepared, const std::string& run_dir,
                        const std::string& serving) {
    PrintGates(io_.out, prepared);
    if (prepared.gates.Refused()) {
      fmt::print(io_.err, "ppdeploy: rebalance: the gates refuse this launch\n");
      return ExitCode::kError;
    }
    const Liveness live = Probe(run_dir);
    if (live.alive) {
      // Started by an earlier run that was cut (Ctrl-C, a fault) while it booted: wait for it again.
      fmt::print(io_.out, "the server of {} already runs (pid {}): waiting for it instead of starting it again\n",
                 run_dir, live.state->pid);
      StopServing(run_dir);
    } else {
      StopServing(run_dir);
      doc_["serving"] = "none";  // until the new server is up, nothing serves
      Save();
      const launch::StartResult started = launch::StartServer(prepared, run_dir, false);
      const ExitCode rc = RenderStart(started, prepared, io_, run_dir);
      if (rc != ExitCode::kOk) return rc;
    }
    doc_["serving"] = serving;
    Save();
    return WaitAndReport(run_dir, o_.wait, io_);
  }

  // Starts the control arm again from its recorded request (after a candidate that did not boot, or `restore`);
  // the state says "control" serves once it is ready, "none" when it did not come up.
  ExitCode RestartControl() {
    const launch::RunState control = ControlState();
    const launch::PreparedLaunch prepared =
        launch::PrepareLaunch(ResolveStoredDeployment(control.request, ArmDir(kControl) + "/state.json"));
    const ExitCode rc = StartAndWait(prepared, control_run_dir_, kControl);
    if (rc != ExitCode::kOk && rc != ExitCode::kInterrupted) doc_["serving"] = "none";
    Save();
    return rc;
  }

  void WriteRequest(const std::string& arm, const launch::RunState& s) {
    std::error_code ec;
    std::filesystem::create_directories(ArmDir(arm), ec);
    nlohmann::json j = {
        {"schema", "ppdeploy.ab-request/1"}, {"arm", arm}, {"request", s.request}, {"resolved", s.resolved}};
    WriteFileText(ArmDir(arm) + "/request.json", j.dump(2) + "\n");
  }

  // ---- steps ----
  ExitCode Preflight(const std::string& split) {
    const launch::RunState control = ControlState();
    fmt::print(io_.out, "control arm: {} (split {}); candidate split {}\n", control_run_dir_,
               SplitText(control.resolved.value("layer_partition", nlohmann::json())), split);
    const launch::PreparedLaunch arm = PrepareArm(split);
    bool unsafe = false;
    try {
      const PreflightReport r = PreflightReportOf(arm.deployment);
      RenderPreflight(r, OutputFormat::kTable, io_.out);
      unsafe = !r.safe();
    } catch (const Error& e) {
      fmt::print(io_.err, "ppdeploy: rebalance preflight: {}\n", e.what());
    }
    PrintGates(io_.out, arm);
    if (arm.plan_error.empty()) {
      const std::int64_t before = control.resolved.value("predicted_kv_tokens", std::int64_t{0});
      const std::int64_t after = arm.plan.pool.kv_tokens;
      fmt::print(io_.out, "planned pool: control {} tokens -> {} {} tokens{}\n", WithThousands(before), split,
                 WithThousands(after),
                 before > 0 ? fmt::format(" ({:+.1f}%)", 100.0 * (static_cast<double>(after) / before - 1.0)) : "");
      doc_["steps"]["preflight:" + ArmName(split)]["predicted_kv_tokens"] = after;
    }
    if (unsafe) {
      note_ = "unsafe split (index share)";
      return ExitCode::kCheckFailed;
    }
    if (arm.gates.Refused()) {
      note_ = "refused by the gates";
      return ExitCode::kError;
    }
    return ExitCode::kOk;
  }

  ExitCode Control() {
    const Liveness live = Probe(control_run_dir_);
    if (!live.state)
      Fail("no control arm: nothing was started in {} (`ppdeploy start` and `ppdeploy wait` it first)",
           control_run_dir_);
    if (!live.alive || !live.healthy)
      Fail("the control arm of {} is not {} (pid {}): `ppdeploy rebalance restore` restarts it", control_run_dir_,
           live.alive ? "healthy" : "running", live.state->pid);
    if (!live.state->request.is_array())
      Fail("{}: the control arm's run state records no deployment request", launch::StatePath(control_run_dir_));
    // The arm's directory: the request, the run state and the boot log as they are now.
    WriteRequest(kControl, *live.state);
    CopyIfExists(launch::StatePath(control_run_dir_), ArmDir(kControl) + "/state.json");
    CopyIfExists(live.state->log_path, ArmDir(kControl) + "/vllm.log");
    doc_["control_split"] = live.state->resolved.value("layer_partition", nlohmann::json());
    if (!doc_.contains("serving")) doc_["serving"] = kControl;
    Save();
    return Measure(kControl, control_run_dir_, live.url,
                   "control " + SplitText(live.state->resolved.value("layer_partition", nlohmann::json())));
  }

  ExitCode Measure(const std::string& arm, const std::string& run_dir, const std::string& url,
                   const std::string& label) {
    VerifyOptions v = o_.verify;
    v.url = url;
    v.run_dir = run_dir;
    v.out = ArmDir(arm) + "/verify.json";
    v.label = label;
    v.resume = !o_.force;
    const VerifyOutcome r = RunVerify(v, io_);
    io_.out << VerifyStepTable(r.result);
    fmt::print(io_.out, "result: {}\n", v.out);
    if (r.code == ExitCode::kCheckFailed)
      note_ = "a check found a problem (the verdict weighs it against the other arm)";
    // Steps that ended in errors (failed requests) on a server that answered are measurements too: the verdict's
    // request-error row weighs them (issue 23 item 8: with --skip probes such an arm ended the flow with exit 1).
    const bool answered =
        r.result.unknown.value(nlohmann::json::json_pointer("/verify/steps/server/status"), std::string()) == "ok";
    if (r.code == ExitCode::kError && answered) {
      note_ = "some steps ended in errors (the verdict weighs the failed requests against the other arm)";
      return ExitCode::kOk;
    }
    // A problem is a measurement for the verdict, not the end of the flow.
    return r.code == ExitCode::kCheckFailed ? ExitCode::kOk : r.code;
  }

  ExitCode Boot(const std::string& split) {
    const std::string arm = ArmName(split);
    const launch::PreparedLaunch prepared = PrepareArm(split);
    const ExitCode rc = StartAndWait(prepared, ArmDir(arm), arm);
    doc_["last_split"] = split;
    Save();
    if (rc == ExitCode::kOk) {
      if (auto s = launch::ReadRunState(ArmDir(arm))) WriteRequest(arm, *s);
      return rc;
    }
    // The candidate did not boot (died, timed out): the control was stopped for it, so boot the control again
    // rather than leave nothing serving (issue 23 item 8). Refused by the gates: nothing was stopped.
    if (rc == ExitCode::kInterrupted || prepared.gates.Refused()) return rc;
    fmt::print(io_.err, "ppdeploy: rebalance: the {} arm did not boot; restarting the control arm\n", split);
    const ExitCode restored = RestartControl();
    note_ = restored == ExitCode::kOk
                ? "the new arm did not boot; the control arm serves again"
                : "the new arm did not boot, and the control arm did not come back: nothing serves";
    fmt::print(io_.err, "ppdeploy: rebalance: {}\n", note_);
    return rc;
  }

  ExitCode VerifyArm(const std::string& split) {
    const std::string arm = ArmName(split);
    Liveness live = Probe(ArmDir(arm));
    if (!live.alive || !live.healthy) {
      // A fault took the arm down (or it was never booted): boot it again before measuring.
      fmt::print(io_.out, "the {} arm is not serving ({}); booting it\n", split,
                 live.state ? (live.alive ? "not healthy" : "not running") : "never booted");
      doc_["steps"].erase("boot:" + arm);
      const ExitCode rc = Step("boot:" + arm, [&] { return Boot(split); });
      if (rc != ExitCode::kOk) return rc;
      live = Probe(ArmDir(arm));
    }
    return Measure(arm, ArmDir(arm), live.url, split);
  }

  ExitCode Verdict(const std::string& split) {
    const std::string arm = ArmName(split);
    const std::string fa = ArmDir(kControl) + "/verify.json", fb = ArmDir(arm) + "/verify.json";
    for (const auto& f : {fa, fb})
      if (!IsRegularFile(f)) Fail("rebalance verdict: no {} (run the `control` and `verify` steps)", f);
    const auto a = probes::VerifyResultFromJson(ParseJsonText(ReadFileText(fa), fa), fa);
    const auto b = probes::VerifyResultFromJson(ParseJsonText(ReadFileText(fb), fb), fb);
    const probes::Verdict v = probes::Compare(a, b, o_.alpha);
    const probes::NewArmJudgement j = probes::JudgeNewArm(a, b, v, o_.speed_tolerance);
    nlohmann::json doc = probes::ToJson(v);
    doc["judgement"] = {
        {"b_worse", j.worse}, {"reasons", j.reasons}, {"better", j.better}, {"control", fa}, {"candidate", fb}};
    const std::string base = o_.ab_dir + "/verdict-" + arm;
    WriteFileText(base + ".json", doc.dump(2) + "\n");
    std::string md = report::VerdictMarkdown(v);
    md += "\nResult: " + probes::ResultSentence(v, j) + "\n";
    for (const auto& r : j.reasons) md += "- " + r + "\n";
    if (!j.better.empty()) md += std::string(probes::kBetterHeading) + "\n";
    for (const auto& r : j.better) md += "- " + r + "\n";
    WriteFileText(base + ".md", md);
    std::ostringstream html;
    RenderVerdictHtml(v, a, b, j, html);
    WriteFileText(base + ".html", html.str());
    if (o_.format == "json")
      doc_out_ << doc.dump(2) << "\n";
    else if (o_.format == "html")
      doc_out_ << html.str();
    else
      doc_out_ << md;
    fmt::print(io_.err, "verdict written to {}.json, .md and .html\n", base);
    note_ = j.worse ? "the new arm is worse" : "the new arm is not worse";
    return j.worse ? ExitCode::kCheckFailed : ExitCode::kOk;
  }

  ExitCode Restore() {
    fmt::print(io_.out, "== restore\n");
    ControlState();  // a control arm is recorded
    const Liveness live = Probe(control_run_dir_);
    if (live.alive && live.healthy && doc_.value("serving", "") == kControl && !o_.force) {
      fmt::print(io_.out, "the control arm already serves (pid {}, {})\n", live.state->pid, live.url);
      return ExitCode::kOk;
    }
    const ExitCode rc = RestartControl();
    doc_["steps"]["restore"] = {{"status", rc == ExitCode::kOk ? "done" : "failed"},
                                {"exit", static_cast<int>(rc)},
                                {"finished_unix_ms", launch::NowUnixMs()}};
    Save();
    return rc;
  }

  ExitCode RunAll(const std::string& split) {
    const std::string arm = ArmName(split);
    struct Stage {
      std::string name;
      std::function<ExitCode()> body;
    };
    const std::vector<Stage> stages = {
        {"preflight:" + arm, [&] { return Preflight(split); }},
        {kControl, [&] { return Control(); }},
        {"boot:" + arm, [&] { return Boot(split); }},
        {"verify:" + arm, [&] { return VerifyArm(split); }},
    };
    for (const auto& s : stages) {
      // The control is measured while it serves; once the new arm was booted, its measurement stays as it is.
      const ExitCode rc = Step(s.name, s.body);
      if (rc != ExitCode::kOk) {
        fmt::print(io_.err, "ppdeploy: rebalance run: {} ended with exit {}; run again to resume\n", s.name,
                   static_cast<int>(rc));
        return rc;
      }
    }
    // The verdict is recomputed on every run (it reads the two results; nothing is measured).
    doc_["steps"].erase("verdict:" + arm);
    return Step("verdict:" + arm, [&] { return Verdict(split); });
  }

  const RebalanceOptions& o_;
  CommandIo& io_;
  std::ostream& doc_out_;
  std::string control_run_dir_, state_path_, best_split_, note_;
  nlohmann::json doc_;
};

}  // namespace

std::string ArmName(const std::string& split) {
  if (split.empty() || split.find_first_not_of("0123456789,") != std::string::npos || split.front() == ',' ||
      split.back() == ',' || split.find(",,") != std::string::npos)
    Fail("SPLIT: expected layer counts per stage like 41,37, got {}", ShortJson(nlohmann::json(split)));
  std::string name = split;
  std::replace(name.begin(), name.end(), ',', '-');
  return name;
}

ExitCode RunRebalance(const RebalanceOptions& options, CommandIo& io) {
  InterruptGuard interrupt;
  // --format json / html: stdout is the verdict document alone; the flow's log goes to stderr.
  CommandIo log_io{io.err, io.err, io.err_is_tty, io.err_is_tty};
  // One rebalance per A/B directory; every run directory it starts or stops is locked by StartServer/StopServer.
  const launch::RunLock lock = launch::RunLock::Acquire(options.ab_dir, "rebalance");
  Flow flow(options, options.format == "md" ? io : log_io, io.out);
  const ExitCode rc = flow.Dispatch();
  return InterruptGuard::Raised() ? ExitCode::kInterrupted : rc;
}

}  // namespace ppdeploy::cli
