#include "cli/verify_run.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/backend_factory.h"
#include "cli/facts_collect.h"
#include "cli/interrupt.h"
#include "cli/progress.h"
#include "cli/target.h"
#include "client/http.h"
#include "client/openai_client.h"
#include "core/error.h"
#include "core/json_fields.h"
#include "io/files.h"
#include "io/output_file.h"
#include "probes/degen_run.h"
#include "probes/needle.h"
#include "probes/quality.h"
#include "probes/server_facts.h"

namespace ppdeploy::cli {
namespace {

/// The planner's predicted KV pool in a `ppdeploy plan --format json` output: the first detailed
/// layout (the one asked for with --tp/--pp), else layouts[best_layout]; nullopt when neither.
std::optional<std::int64_t> PredictedPool(const nlohmann::json& plan, const std::string& source) {
  const std::string schema = plan.is_object() ? plan.value("schema", "") : "";
  if (schema != "ppdeploy.plan/1" && schema != "ppdeploy.plan/2" && schema != "ppdeploy.plan/3")
    Fail("{}: expected a ppdeploy.plan/3 JSON (ppdeploy plan --format json)", source);
  const nlohmann::json* layout = nullptr;
  if (plan.contains("detailed") && plan["detailed"].is_array() && !plan["detailed"].empty()) {
    layout = &plan["detailed"][0];
  } else if (plan.contains("best_layout") && plan["best_layout"].is_number_integer() && plan.contains("layouts") &&
             plan["layouts"].is_array()) {
    const auto best = plan["best_layout"].get<std::int64_t>();
    if (best >= 0 && best < static_cast<std::int64_t>(plan["layouts"].size()))
      layout = &plan["layouts"][static_cast<std::size_t>(best)];
  }
  if (layout == nullptr || !layout->contains("kv_tokens") || !(*layout)["kv_tokens"].is_number_integer())
    return std::nullopt;
  return (*layout)["kv_tokens"].get<std::int64_t>();
}

/// The run's state: the result, what each step did, and the file written after each step.
class VerifyRun {
 public:
  VerifyRun(std::string out, std::string label) : out_(std::move(out)) {
    result_.label = std::move(label);
    result_.unknown["verify"] = {{"steps", nlohmann::json::object()}, {"missing", VerifySteps()}};
  }
  /// Continues an earlier run's file: its sections and step statuses are kept.
  void Resume(probes::VerifyResult earlier) {
    const std::string label = result_.label;
    result_ = std::move(earlier);
    result_.label = label;
    auto& v = result_.unknown["verify"];
    if (!v.is_object()) v = nlohmann::json::object();
    if (!v.contains("steps") || !v["steps"].is_object()) v["steps"] = nlohmann::json::object();
    nlohmann::json missing = nlohmann::json::array();
    for (const auto& s : VerifySteps())
      if (!Kept(s)) missing.push_back(s);
    v["missing"] = missing;
    v["resumed"] = true;
  }
  probes::VerifyResult& result() { return result_; }
  nlohmann::json& extra(const std::string& key) { return result_.unknown[key]; }

  /// Whether the step has a complete result from an earlier run (ok, problem or skipped).
  bool Kept(const std::string& step) const {
    const auto& v = result_.unknown.contains("verify") ? result_.unknown["verify"] : nlohmann::json();
    if (!v.is_object() || !v.contains("steps") || !v["steps"].contains(step)) return false;
    const std::string status = v["steps"][step].value("status", "");
    return status == "ok" || status == "problem" || status == "skipped";
  }

  /// Records step `name` as "ok", "problem", "error", "skipped" or "interrupted" (+ a note) and rewrites the file.
  /// "missing" keeps the steps without a complete result: not run yet, ended in an error or interrupted.
  void Done(const std::string& name, const std::string& status, const std::string& note = "") {
    auto& v = result_.unknown["verify"];
    v["steps"][name] =
        note.empty() ? nlohmann::json{{"status", status}} : nlohmann::json{{"status", status}, {"note", note}};
    auto& missing = v["missing"];
    const bool complete = status == "ok" || status == "problem" || status == "skipped";
    for (auto it = missing.begin(); complete && it != missing.end(); ++it)
      if (*it == name) {
        missing.erase(it);
        break;
      }
    if (status == "problem") problem_ = true;
    if (status == "error") error_ = true;
    if (status == "interrupted") interrupted_ = true;
    Write();
  }
  void NoteKeptProblem() { problem_ = true; }
  void Write() const {
    // The one file writer: a temporary file renamed over the target, so a reader never sees half a
    // file; a target that is not a regular file was refused before the run (CheckOutputTarget).
    WriteFileText(out_, ToJson(result_).dump(2) + "\n");
  }
  ExitCode Exit() const {
    return interrupted_ ? ExitCode::kInterrupted
           : problem_   ? ExitCode::kCheckFailed
           : error_     ? ExitCode::kError
                        : ExitCode::kOk;
  }
  bool interrupted() const { return interrupted_; }

 private:
  std::string out_;
  probes::VerifyResult result_;
  bool problem_ = false, error_ = false, interrupted_ = false;
};

bool Skipped(const VerifyOptions& o, const std::string& step) {
  return std::find(o.skip.begin(), o.skip.end(), step) != o.skip.end();
}

/// /v1/models and /version; the model to use; max_model_len as the server reports it.
void ServerStep(VerifyRun& run, const std::string& url, std::string& model, const std::atomic<bool>* cancel) {
  auto http = client::MakeCurlHttpClient("", cancel);
  nlohmann::json facts = nlohmann::json::object();
  const std::string models_url = client::JoinUrl(url, "/v1/models");
  const client::HttpResponse m = http->Get(models_url, 30.0);
  if (!m.ok()) Fail("{}: {}", models_url, m.error.empty() ? fmt::format("HTTP {}", m.status) : m.error);
  const nlohmann::json models = m.Json(models_url);
  facts["models"] = models;
  if (model.empty()) {
    if (!models.contains("data") || !models["data"].is_array() || models["data"].empty() ||
        !models["data"][0].contains("id") || !models["data"][0]["id"].is_string())
      Fail("{}: no model listed; give --model", models_url);
    model = models["data"][0]["id"].get<std::string>();
  }
  facts["model"] = model;
  if (models.contains("data") && models["data"].is_array())
    for (const auto& d : models["data"])
      if (d.is_object() && d.value("id", "") == model && d.contains("max_model_len") &&
          d["max_model_len"].is_number_integer()) {
        run.result().max_model_len = d["max_model_len"].get<std::int64_t>();
        run.result().max_model_len_source = models_url;
      }
  const std::string version_url = client::JoinUrl(url, "/version");
  const client::HttpResponse v = http->Get(version_url, 10.0);
  if (v.ok()) {
    auto j = nlohmann::json::parse(v.body, nullptr, false);
    if (j.is_object() && j.contains("version")) facts["version"] = j["version"];
  }
  run.extra("server") = facts;
}

std::string SmokeStep(probes::ChatBackend& backend, VerifyRun& run) {
  probes::ChatRequest q;
  q.messages = nlohmann::json::array({{{"role", "user"}, {"content", "Say hello in one short sentence."}}});
  q.max_tokens = 32;
  q.temperature = 0.0;
  const auto r = backend.Chat(q);
  run.extra("smoke") = {{"ok", r.ok},
                        {"error", r.error},
                        {"finish_reason", r.finish_reason},
                        {"text", r.text.substr(0, 200)},
                        {"completion_tokens", r.completion_tokens},
                        {"e2e_ms", r.e2e_ms}};
  if (r.cancelled) return "interrupted";
  run.result().requests["smoke"] = {r.ok ? 0 : 1, 1};
  if (!r.ok) return r.error;
  if (r.text.empty() && r.tool_calls.empty()) return "empty answer";
  return "";
}

/// One bench level: per-request decode throughput (output tokens / E2EL) and the level's totals.
struct BenchLevelResult {
  std::vector<double> tok_s;
  std::int64_t sent = 0, failed = 0, output_tokens = 0;
  double duration_s = 0;  ///< wall time of the level, first request sent to last answer
  nlohmann::json Json(int concurrency) const {
    nlohmann::json j = {{"concurrency", concurrency},
                        {"requests", sent},
                        {"failed", failed},
                        {"output_tokens", output_tokens},
                        {"duration_s", duration_s}};
    if (duration_s > 0) {
      j["output_tok_s"] = static_cast<double>(output_tokens) / duration_s;
      j["request_throughput_rps"] = static_cast<double>(sent - failed) / duration_s;
    }
    return j;
  }
};

/// `n` streamed requests at `concurrency` (failed ones are listed in `errors`).
BenchLevelResult BenchLevel(const std::string& url, const std::string& model, int n, int concurrency,
                            std::int64_t output_len, nlohmann::json& errors, const std::atomic<bool>* stop,
                            const std::function<void()>& on_done) {
  client::OpenAiClient c({url, "", 10.0});
  std::vector<client::ChatRequest> requests;
  for (int i = 0; i < n; ++i) {
    client::ChatRequest q;
    q.model = model;
    q.messages = nlohmann::json::array(
        {{{"role", "user"}, {"content", fmt::format("Write a short story about a lighthouse keeper, part {}.", i)}}});
    q.max_tokens = output_len;
    q.min_tokens = output_len;
    q.ignore_eos = true;
    q.temperature = 0.0;
    q.tag = i;
    q.timeout_s = 600;
    requests.push_back(std::move(q));
  }
  BenchLevelResult level;
  const auto t0 = std::chrono::steady_clock::now();
  c.RunConcurrent(
      requests, concurrency,
      [&](RequestResult&& r) {
        if (r.error_kind == RequestErrorKind::kCancelled) return;  // interrupted: not a measurement
        on_done();
        ++level.sent;
        if (!r.ok()) {
          ++level.failed;
          errors.push_back(fmt::format("{}: {}", r.ErrorKey(), r.error_message.substr(0, 200)));
          return;
        }
        level.output_tokens += r.output_tokens;
        if (r.e2el_ms > 0 && r.output_tokens > 0)
          level.tok_s.push_back(static_cast<double>(r.output_tokens) * 1000.0 / r.e2el_ms);
      },
      stop);
  level.duration_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return level;
}

std::string StatusOf(ExitCode code) {
  return code == ExitCode::kCheckFailed ? "problem" : code == ExitCode::kError ? "error" : "ok";
}

}  // namespace

const std::vector<std::string>& VerifySteps() {
  static const std::vector<std::string> steps = {"server", "smoke", "needle", "degeneration", "bench", "probes"};
  return steps;
}

void AddVerifyCheckOptions(CLI::App* sub, VerifyOptions& o) {
  sub->add_option("--model", o.model, "Served model name (default: the first of /v1/models)");
  sub->add_option("--skip", o.skip, "Steps to skip")
      ->delimiter(',')
      ->check(CLI::IsMember({"smoke", "needle", "degeneration", "bench", "probes"}));
  sub->add_option("--needle-lengths", o.lengths, "Needle prompt lengths (K = 1000 tokens)")->capture_default_str();
  sub->add_option("--needle-depths", o.depths, "Needle depths in percent")->capture_default_str();
  sub->add_option("--trials", o.trials, "Degeneration trials (default: env AGENT_PROBE_TRIALS, else 40)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--degen-max-tokens", o.degen_max_tokens, "Degeneration output cap")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--degen-concurrency", o.degen_concurrency, "Degeneration requests in flight")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--degen-seed", o.degen_seed, "Degeneration sampling seed base (default unseeded)");
  sub->add_option("--bench-requests", o.bench_requests, "Requests per bench level (single stream and concurrent)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--bench-output-len", o.bench_output_len, "Output tokens per bench request")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--bench-concurrency", o.bench_concurrency, "Concurrent bench level")
      ->capture_default_str()
      ->check(CLI::Range(2, 1024));
  sub->add_option("--probe-max-tokens", o.probe_max_tokens, "Output cap per probe request")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_flag("--no-arg-check", o.no_arg_check,
                "Do not require the expected tool arguments (ppdeploy sim sends placeholders)");
}

namespace {

/// What every verify step reads and writes: the options, the run, the server and its facts.
struct VerifyContext {
  const VerifyOptions& o;
  CommandIo& io;
  VerifyRun& run;
  const ServerTarget& target;
  const std::atomic<bool>* stop;
  probes::ServerFacts facts;
  std::string model;

  void StepError(const std::string& step, const std::exception& e) {
    io.err << "ppdeploy verify: " << step << ": " << e.what() << "\n";
    run.Done(step, "error", e.what());
  }
  /// True (and the step recorded as interrupted) when Ctrl-C was pressed.
  bool InterruptedNow(const std::string& step, const std::string& note) {
    if (!InterruptGuard::Raised()) return false;
    run.Done(step, "interrupted", note);
    return true;
  }
  VerifyOutcome Finish() {
    VerifyOutcome r;
    r.code = run.Exit();
    r.interrupted = run.interrupted();
    r.result = run.result();
    return r;
  }
};

/// Runs one step unless it was kept from an earlier run or skipped. Returns true when the run must end
/// now (interrupted). An exception is the step's error; with `interrupt_on_error`, an exception raised
/// while Ctrl-C was pressed ends the run as interrupted instead.
bool RunStep(VerifyContext& c, const std::string& step, bool interrupt_on_error, const std::function<bool()>& body) {
  if (c.run.Kept(step)) return false;
  if (Skipped(c.o, step)) {
    c.run.Done(step, "skipped");
    return false;
  }
  try {
    return body();
  } catch (const std::exception& e) {
    if (interrupt_on_error && c.InterruptedNow(step, "interrupted")) return true;
    c.StepError(step, e);
    return false;
  }
}

/// Parses the inputs (before touching the server), resolves the output and resumes an earlier run.
VerifyRun OpenVerifyRun(const VerifyOptions& o, const ServerTarget& target, std::string& out) {
  out = o.out;
  if (out.empty()) {
    if (!target.state) Fail("--out is required when --url names a server ppdeploy did not start");
    out = target.run_dir + "/verify.json";
  }
  CheckOutputTarget(out);  // a FIFO, device or directory is refused before any step runs
  VerifyRun run(out, o.label.empty() ? target.url : o.label);
  if (o.resume && IsRegularFile(out)) {
    auto earlier = probes::VerifyResultFromJson(ParseJsonText(ReadFileText(out), out), out);
    if (!o.label.empty() && !earlier.label.empty() && earlier.label != o.label)
      Fail("--resume: {} is the result of \"{}\", not of \"{}\"", out, earlier.label, o.label);
    run.Resume(std::move(earlier));
    for (const auto& s : VerifySteps())
      if (run.Kept(s) && run.result().unknown["verify"]["steps"][s].value("status", "") == "problem")
        run.NoteKeptProblem();
  }
  return run;
}

/// Step 1: the model, and the server's facts. Returns false when nothing else can run.
bool FactsStep(VerifyContext& c, const std::string& out, bool& finish_now) {
  if (!c.run.result().facts.is_null()) c.facts = probes::ServerFactsFromJson(c.run.result().facts, out);
  auto& facts = c.facts;
  const nlohmann::json kept_step_time = facts.count("metrics") && facts["metrics"].Find("step_time_ms")
                                            ? *facts["metrics"].Find("step_time_ms")
                                            : nlohmann::json();
  try {
    ServerStep(c.run, c.target.url, c.model, c.stop);
    facts["boot_log"] = CollectBootLogFacts(c.target);
    facts["run_state"] = CollectRunStateFacts(c.target);
    facts["metrics"] = MetricsGroup(ScrapeMetrics(c.target.url, c.stop));
    if (!kept_step_time.is_null() && facts["metrics"].unavailable.empty())
      facts["metrics"].facts["step_time_ms"] = kept_step_time;  // from the kept bench step
    facts["nvidia_smi"] = CollectNvidiaSmiFacts(c.target);
    probes::ApplyFacts(c.run.result(), facts);
    finish_now = c.InterruptedNow("server", "interrupted while reading the server facts");
    if (!finish_now) c.run.Done("server", "ok");
    return true;
  } catch (const std::exception& e) {
    finish_now = true;
    if (c.InterruptedNow("server", "interrupted")) return true;
    c.StepError("server", e);
    return false;
  }
}

bool SmokeStepRun(VerifyContext& c, probes::ChatBackend& backend) {
  const std::string why = SmokeStep(backend, c.run);
  if (c.InterruptedNow("smoke", "interrupted")) return true;
  c.run.Done("smoke", why.empty() ? "ok" : "error", why);
  if (!why.empty()) c.io.err << "ppdeploy verify: smoke: " << why << "\n";
  return false;
}

bool NeedleStep(VerifyContext& c, probes::ChatBackend& backend, const std::vector<std::int64_t>& lengths,
                const std::vector<double>& depths) {
  probes::NeedleConfig cfg;
  cfg.lengths = lengths;
  cfg.depths_pct = depths;
  const std::int64_t cells = static_cast<std::int64_t>(lengths.size() * depths.size());
  std::int64_t done = 0;
  probes::NeedleResult r;
  {
    Progress progress(c.io, "verify needle", cells);
    r = probes::RunNeedle(backend, cfg, [&](const probes::NeedleCell& cell) {
      progress.Update(
          ++done, fmt::format("{} @ {}%: {}", probes::FormatLength(cell.length_tokens), cell.depth_pct, cell.status));
    });
  }
  probes::SetNeedle(c.run.result(), r);
  c.run.result().requests["needle"] = {r.errors, r.passed + r.failed + r.errors};
  const std::string note =
      fmt::format("{} passed, {} failed, {} skipped, {} errors", r.passed, r.failed, r.skipped, r.errors);
  if (r.interrupted || InterruptGuard::Raised()) {
    c.run.Done("needle", "interrupted", fmt::format("{} of {} cells done: {}", r.cells.size(), cells, note));
    return true;
  }
  c.run.Done("needle", StatusOf(probes::NeedleExitCode(r)), note);
  return false;
}

bool DegenStep(VerifyContext& c, probes::ChatBackend& backend) {
  probes::DegenConfig cfg;
  cfg.trials = c.o.trials > 0 ? c.o.trials : TrialsFromEnv();
  cfg.max_tokens = c.o.degen_max_tokens;
  cfg.concurrency = c.o.degen_concurrency;
  if (c.o.degen_seed >= 0) cfg.seed = c.o.degen_seed;
  int done = 0, degenerate = 0;
  probes::DegenSummary s;
  {
    Progress progress(c.io, "verify degeneration", cfg.trials);
    s = probes::RunDegen(backend, cfg, [&](const probes::DegenTrial& t) {
      degenerate += t.degenerate ? 1 : 0;
      progress.Update(++done, fmt::format("{} degenerate", degenerate));
    });
  }
  if (s.completed > 0) probes::SetDegeneration(c.run.result(), s);  // no answer at all: no section
  c.run.result().requests["degeneration"] = {s.errors, s.completed + s.errors};
  c.run.extra("degeneration_summary") = probes::ToJson(s, /*with_records=*/false);
  const std::string note = fmt::format("{}/{} degenerate, {} errors", s.degenerate, s.completed, s.errors);
  if (s.cancelled > 0 || InterruptGuard::Raised()) {
    c.run.Done("degeneration", "interrupted", fmt::format("{} of {} trials done: {}", s.trials, cfg.trials, note));
    return true;
  }
  c.run.Done("degeneration", StatusOf(probes::DegenExitCode(s)), note);
  return false;
}

/// Step 5: bench, with the step-time histogram of /metrics over it.
bool BenchStep(VerifyContext& c) {
  const VerifyOptions& o = c.o;
  nlohmann::json errors = nlohmann::json::array();
  const MetricsScrape before = ScrapeMetrics(c.target.url, c.stop);
  std::int64_t done = 0;
  BenchLevelResult single, conc;
  {
    Progress progress(c.io, "verify bench", 2LL * o.bench_requests);
    auto tick = [&] { progress.Update(++done); };
    single = BenchLevel(c.target.url, c.model, o.bench_requests, 1, o.bench_output_len, errors, c.stop, tick);
    c.run.result().single_stream_tok_s = single.tok_s;
    c.run.result().concurrent_tok_s.clear();
    conc = BenchLevel(c.target.url, c.model, o.bench_requests, o.bench_concurrency, o.bench_output_len, errors, c.stop,
                      tick);
    if (!conc.tok_s.empty()) c.run.result().concurrent_tok_s[o.bench_concurrency] = conc.tok_s;
  }
  c.run.result().requests["bench"] = {single.failed + conc.failed, single.sent + conc.sent};
  const MetricsScrape after = ScrapeMetrics(c.target.url, c.stop);
  auto& metrics = c.facts["metrics"];
  if (before.ok() && after.ok() && metrics.unavailable.empty()) {
    metrics.facts.erase("step_time_ms");
    metrics.missing.erase("step_time_ms");
    probes::AddStepTime(metrics, before.samples, after.samples, "the verify bench step", after.url);
    probes::ApplyFacts(c.run.result(), c.facts);
  }
  c.run.extra("bench") = {{"requests_per_level", o.bench_requests},
                          {"output_len", o.bench_output_len},
                          {"concurrency", {1, o.bench_concurrency}},
                          {"levels", {single.Json(1), conc.Json(o.bench_concurrency)}},
                          {"errors", errors}};
  if (InterruptGuard::Raised()) {
    c.run.Done("bench", "interrupted", fmt::format("{} of {} requests done", done, 2 * o.bench_requests));
    return true;
  }
  // Failed requests among answered ones are a finding about the server (the verdict's request-error row);
  // when none was answered the step could not measure anything.
  const std::int64_t failed = single.failed + conc.failed, sent = single.sent + conc.sent;
  c.run.Done("bench",
             failed == 0     ? "ok"
             : failed < sent ? "problem"
                             : "error",
             failed == 0 ? "" : fmt::format("{} of {} requests failed", failed, sent));
  return false;
}

bool ProbesStep(VerifyContext& c, probes::ChatBackend& backend) {
  probes::ProbeConfig cfg;
  cfg.max_tokens = c.o.probe_max_tokens;
  cfg.check_tool_arguments = !c.o.no_arg_check;
  std::int64_t done = 0;
  probes::ProbeSummary s;
  {
    Progress progress(c.io, "verify probes", 42);
    s = probes::RunProbes(backend, cfg, [&](const probes::ProbeRecord&) { progress.Update(++done); });
  }
  nlohmann::json failed = nlohmann::json::array();
  int graded_failures = 0, errors = 0;
  for (const auto& r : s.records) {
    if (!r.pass) failed.push_back(fmt::format("{}/{}: {}", r.kind, r.name, r.detail));
    if (r.error)
      ++errors;
    else if (!r.pass)
      ++graded_failures;
  }
  // Only requests that were answered and graded wrong are a finding; when every request failed
  // (e.g. the server died) there is no section and the step is an error, not a problem.
  const bool all_errors = errors == static_cast<int>(s.records.size());
  if (!all_errors) probes::SetProbes(c.run.result(), s);
  c.run.result().requests["probes"] = {errors, static_cast<std::int64_t>(s.records.size())};
  c.run.extra("probe_failures") = failed;
  const std::string note = fmt::format("quality {}/{}, responses {}/{}, tools {}/{}", s.quality_passed, s.quality_total,
                                       s.responses_passed, s.responses_total, s.tools_passed, s.tools_total);
  if (s.cancelled > 0 || InterruptGuard::Raised()) {
    c.run.Done("probes", "interrupted", fmt::format("{} probes cut: {}", s.cancelled, note));
    return true;
  }
  // Request errors among answered probes are a finding too (the verdict's request-error row).
  c.run.Done("probes",
             graded_failures > 0 || (errors > 0 && !all_errors) ? "problem"
             : errors > 0 || s.records.empty()                  ? "error"
                                                                : "ok",
             errors > 0 ? fmt::format("{}; {} request errors", note, errors) : note);
  return false;
}

}  // namespace

VerifyOutcome RunVerify(const VerifyOptions& o, CommandIo& io) {
  // Parse the inputs before touching the server.
  const auto lengths = probes::ParseLengths(o.lengths);
  const auto depths = probes::ParseDepths(o.depths);
  std::optional<std::int64_t> predicted;
  if (!o.plan_json.empty())
    predicted = PredictedPool(ParseJsonText(ReadFileText(o.plan_json), o.plan_json), o.plan_json);
  const ServerTarget target = ResolveTarget(o.url, o.run_dir);
  std::string out;
  VerifyRun run = OpenVerifyRun(o, target, out);
  InterruptGuard interrupt;
  if (!o.plan_json.empty()) {
    run.result().kv_pool_predicted_tokens = predicted;
    run.result().kv_pool_predicted_source = "--plan-json " + o.plan_json;
    run.extra("plan_json") = o.plan_json;
  }
  VerifyContext c{o, io, run, target, InterruptGuard::Flag(), {}, o.model};

  bool finish_now = false;
  if (!FactsStep(c, out, finish_now)) {
    VerifyOutcome r = c.Finish();
    r.code = ExitCode::kError;  // nothing else can run; the file says what is missing
    return r;
  }
  if (finish_now) return c.Finish();
  auto backend = MakeHttpBackend(target.url, c.model, c.stop);
  const bool ended = RunStep(c, "smoke", false, [&] { return SmokeStepRun(c, *backend); }) ||
                     RunStep(c, "needle", true, [&] { return NeedleStep(c, *backend, lengths, depths); }) ||
                     RunStep(c, "degeneration", true, [&] { return DegenStep(c, *backend); }) ||
                     RunStep(c, "bench", true, [&] { return BenchStep(c); }) ||
                     RunStep(c, "probes", true, [&] { return ProbesStep(c, *backend); });
  (void)ended;  // interrupted or done: the result is the same file
  return c.Finish();
}

std::string VerifyStepTable(const probes::VerifyResult& result) {
  std::string s;
  const auto& v = result.unknown.contains("verify") ? result.unknown.at("verify") : nlohmann::json();
  if (!v.is_object() || !v.contains("steps")) return s;
  for (const auto& step : VerifySteps()) {
    if (!v["steps"].contains(step)) continue;
    const auto& st = v["steps"][step];
    s += fmt::format("{:<13} {:<11} {}\n", step, st.value("status", ""), st.value("note", ""));
  }
  return s;
}

}  // namespace ppdeploy::cli
