#include "cli/verify_run.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
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
  if (!r.ok) return r.error;
  if (r.text.empty() && r.tool_calls.empty()) return "empty answer";
  return "";
}

/// Per-request decode throughput (output tokens / E2EL) of `n` streamed requests at `concurrency`.
std::vector<double> BenchLevel(const std::string& url, const std::string& model, int n, int concurrency,
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
  std::vector<double> tok_s;
  c.RunConcurrent(
      requests, concurrency,
      [&](RequestResult&& r) {
        if (r.error_kind == RequestErrorKind::kCancelled) return;  // interrupted: not a measurement
        on_done();
        if (!r.ok()) {
          errors.push_back(fmt::format("{}: {}", r.ErrorKey(), r.error_message.substr(0, 200)));
          return;
        }
        if (r.e2el_ms > 0 && r.output_tokens > 0)
          tok_s.push_back(static_cast<double>(r.output_tokens) * 1000.0 / r.e2el_ms);
      },
      stop);
  return tok_s;
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

VerifyOutcome RunVerify(const VerifyOptions& o, CommandIo& io) {
  // Parse the inputs before touching the server.
  const auto lengths = probes::ParseLengths(o.lengths);
  const auto depths = probes::ParseDepths(o.depths);
  std::optional<std::int64_t> predicted;
  if (!o.plan_json.empty())
    predicted = PredictedPool(ParseJsonText(ReadFileText(o.plan_json), o.plan_json), o.plan_json);
  const ServerTarget target = ResolveTarget(o.url, o.run_dir);
  std::string out = o.out;
  if (out.empty()) {
    if (!target.state) Fail("--out is required when --url names a server ppdeploy did not start");
    out = target.run_dir + "/verify.json";
  }
  CheckOutputTarget(out);  // a FIFO, device or directory is refused before any step runs
  InterruptGuard interrupt;
  const std::atomic<bool>* stop = InterruptGuard::Flag();

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
  if (!o.plan_json.empty()) {
    run.result().kv_pool_predicted_tokens = predicted;
    run.result().kv_pool_predicted_source = "--plan-json " + o.plan_json;
    run.extra("plan_json") = o.plan_json;
  }
  auto step_error = [&](const std::string& step, const std::exception& e) {
    io.err << "ppdeploy verify: " << step << ": " << e.what() << "\n";
    run.Done(step, "error", e.what());
  };
  auto finish = [&]() {
    VerifyOutcome r;
    r.code = run.Exit();
    r.interrupted = run.interrupted();
    r.result = run.result();
    return r;
  };
  auto interrupted_now = [&](const std::string& step, const std::string& note) {
    if (!InterruptGuard::Raised()) return false;
    run.Done(step, "interrupted", note);
    return true;
  };

  // 1. server: the model, and the facts.
  std::string model = o.model;
  probes::ServerFacts facts;
  if (!run.result().facts.is_null()) facts = probes::ServerFactsFromJson(run.result().facts, out);
  const nlohmann::json kept_step_time = facts.count("metrics") && facts["metrics"].Find("step_time_ms")
                                            ? *facts["metrics"].Find("step_time_ms")
                                            : nlohmann::json();
  try {
    ServerStep(run, target.url, model, stop);
    facts["boot_log"] = CollectBootLogFacts(target);
    facts["run_state"] = CollectRunStateFacts(target);
    facts["metrics"] = MetricsGroup(ScrapeMetrics(target.url, stop));
    if (!kept_step_time.is_null() && facts["metrics"].unavailable.empty())
      facts["metrics"].facts["step_time_ms"] = kept_step_time;  // from the kept bench step
    facts["nvidia_smi"] = CollectNvidiaSmiFacts(target);
    probes::ApplyFacts(run.result(), facts);
    if (interrupted_now("server", "interrupted while reading the server facts")) return finish();
    run.Done("server", "ok");
  } catch (const std::exception& e) {
    if (interrupted_now("server", "interrupted")) return finish();
    step_error("server", e);
    VerifyOutcome r = finish();
    r.code = ExitCode::kError;  // nothing else can run; the file says what is missing
    return r;
  }
  auto backend = MakeHttpBackend(target.url, model, stop);

  // 2. smoke.
  if (run.Kept("smoke")) {
  } else if (Skipped(o, "smoke")) {
    run.Done("smoke", "skipped");
  } else {
    try {
      const std::string why = SmokeStep(*backend, run);
      if (interrupted_now("smoke", "interrupted")) return finish();
      run.Done("smoke", why.empty() ? "ok" : "error", why);
      if (!why.empty()) io.err << "ppdeploy verify: smoke: " << why << "\n";
    } catch (const std::exception& e) {
      step_error("smoke", e);
    }
  }

  // 3. needle.
  if (run.Kept("needle")) {
  } else if (Skipped(o, "needle")) {
    run.Done("needle", "skipped");
  } else {
    try {
      probes::NeedleConfig cfg;
      cfg.lengths = lengths;
      cfg.depths_pct = depths;
      const std::int64_t cells = static_cast<std::int64_t>(lengths.size() * depths.size());
      std::int64_t done = 0;
      probes::NeedleResult r;
      {
        Progress progress(io, "verify needle", cells);
        r = probes::RunNeedle(*backend, cfg, [&](const probes::NeedleCell& c) {
          progress.Update(++done,
                          fmt::format("{} @ {}%: {}", probes::FormatLength(c.length_tokens), c.depth_pct, c.status));
        });
      }
      probes::SetNeedle(run.result(), r);
      const std::string note =
          fmt::format("{} passed, {} failed, {} skipped, {} errors", r.passed, r.failed, r.skipped, r.errors);
      if (r.interrupted || InterruptGuard::Raised()) {
        run.Done("needle", "interrupted", fmt::format("{} of {} cells done: {}", r.cells.size(), cells, note));
        return finish();
      }
      run.Done("needle", StatusOf(probes::NeedleExitCode(r)), note);
    } catch (const std::exception& e) {
      if (interrupted_now("needle", "interrupted")) return finish();
      step_error("needle", e);
    }
  }

  // 4. degeneration.
  if (run.Kept("degeneration")) {
  } else if (Skipped(o, "degeneration")) {
    run.Done("degeneration", "skipped");
  } else {
    try {
      probes::DegenConfig cfg;
      cfg.trials = o.trials > 0 ? o.trials : TrialsFromEnv();
      cfg.max_tokens = o.degen_max_tokens;
      cfg.concurrency = o.degen_concurrency;
      if (o.degen_seed >= 0) cfg.seed = o.degen_seed;
      int done = 0, degenerate = 0;
      probes::DegenSummary s;
      {
        Progress progress(io, "verify degeneration", cfg.trials);
        s = probes::RunDegen(*backend, cfg, [&](const probes::DegenTrial& t) {
          degenerate += t.degenerate ? 1 : 0;
          progress.Update(++done, fmt::format("{} degenerate", degenerate));
        });
      }
      if (s.completed > 0) probes::SetDegeneration(run.result(), s);  // no answer at all: no section
      run.extra("degeneration_summary") = probes::ToJson(s, /*with_records=*/false);
      const std::string note = fmt::format("{}/{} degenerate, {} errors", s.degenerate, s.completed, s.errors);
      if (s.cancelled > 0 || InterruptGuard::Raised()) {
        run.Done("degeneration", "interrupted", fmt::format("{} of {} trials done: {}", s.trials, cfg.trials, note));
        return finish();
      }
      run.Done("degeneration", StatusOf(probes::DegenExitCode(s)), note);
    } catch (const std::exception& e) {
      if (interrupted_now("degeneration", "interrupted")) return finish();
      step_error("degeneration", e);
    }
  }

  // 5. bench, with the step-time histogram of /metrics over it.
  if (run.Kept("bench")) {
  } else if (Skipped(o, "bench")) {
    run.Done("bench", "skipped");
  } else {
    try {
      nlohmann::json errors = nlohmann::json::array();
      const MetricsScrape before = ScrapeMetrics(target.url, stop);
      std::int64_t done = 0;
      {
        Progress progress(io, "verify bench", 2LL * o.bench_requests);
        auto tick = [&] { progress.Update(++done); };
        run.result().single_stream_tok_s =
            BenchLevel(target.url, model, o.bench_requests, 1, o.bench_output_len, errors, stop, tick);
        run.result().concurrent_tok_s.clear();
        auto conc = BenchLevel(target.url, model, o.bench_requests, o.bench_concurrency, o.bench_output_len, errors,
                               stop, tick);
        if (!conc.empty()) run.result().concurrent_tok_s[o.bench_concurrency] = std::move(conc);
      }
      const MetricsScrape after = ScrapeMetrics(target.url, stop);
      if (before.ok() && after.ok() && facts["metrics"].unavailable.empty()) {
        facts["metrics"].facts.erase("step_time_ms");
        facts["metrics"].missing.erase("step_time_ms");
        probes::AddStepTime(facts["metrics"], before.samples, after.samples, "the verify bench step", after.url);
        probes::ApplyFacts(run.result(), facts);
      }
      run.extra("bench") = {{"requests_per_level", o.bench_requests},
                            {"output_len", o.bench_output_len},
                            {"concurrency", {1, o.bench_concurrency}},
                            {"errors", errors}};
      if (InterruptGuard::Raised()) {
        run.Done("bench", "interrupted", fmt::format("{} of {} requests done", done, 2 * o.bench_requests));
        return finish();
      }
      run.Done("bench", errors.empty() ? "ok" : "error",
               errors.empty() ? "" : fmt::format("{} failed requests", errors.size()));
    } catch (const std::exception& e) {
      if (interrupted_now("bench", "interrupted")) return finish();
      step_error("bench", e);
    }
  }

  // 6. probes.
  if (run.Kept("probes")) {
  } else if (Skipped(o, "probes")) {
    run.Done("probes", "skipped");
  } else {
    try {
      probes::ProbeConfig cfg;
      cfg.max_tokens = o.probe_max_tokens;
      cfg.check_tool_arguments = !o.no_arg_check;
      std::int64_t done = 0;
      probes::ProbeSummary s;
      {
        Progress progress(io, "verify probes", 42);
        s = probes::RunProbes(*backend, cfg, [&](const probes::ProbeRecord&) { progress.Update(++done); });
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
      if (!all_errors) probes::SetProbes(run.result(), s);
      run.extra("probe_failures") = failed;
      const std::string note =
          fmt::format("quality {}/{}, responses {}/{}, tools {}/{}", s.quality_passed, s.quality_total,
                      s.responses_passed, s.responses_total, s.tools_passed, s.tools_total);
      if (s.cancelled > 0 || InterruptGuard::Raised()) {
        run.Done("probes", "interrupted", fmt::format("{} probes cut: {}", s.cancelled, note));
        return finish();
      }
      run.Done("probes", graded_failures > 0 ? "problem" : errors > 0 || s.records.empty() ? "error" : "ok", note);
    } catch (const std::exception& e) {
      if (interrupted_now("probes", "interrupted")) return finish();
      step_error("probes", e);
    }
  }
  return finish();
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
