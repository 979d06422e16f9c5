// ppdeploy verify: one pass of every check against a running server, written as a
// ppdeploy.verify/1 result (src/probes/verify_result.h) that `ppdeploy verdict` compares.
// Steps: server facts (/v1/models, /version), smoke (one short chat), needle, degeneration,
// bench (single stream and concurrency 4), probes; optionally the planner's predicted pool
// (--plan-json). The file is rewritten after every step, so a server that dies mid-way leaves a
// partial result whose "verify.missing" lists the steps not done.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/backend_factory.h"
#include "cli/command.h"
#include "client/http.h"
#include "client/openai_client.h"
#include "core/error.h"
#include "core/json_fields.h"
#include "io/files.h"
#include "probes/degen_run.h"
#include "probes/needle.h"
#include "probes/quality.h"
#include "probes/verify_result.h"

namespace ppdeploy::cli {
namespace {

struct VerifyOptions {
  std::string url, model, out, label, plan_json;
  std::vector<std::string> skip;
  // needle
  std::string lengths = "4K,16K", depths = "50";
  // degeneration (seed §7 defaults except the trial count)
  int trials = 0;  // 0 = env AGENT_PROBE_TRIALS, else 40 (as `ppdeploy degen`)
  std::int64_t degen_max_tokens = 3000;
  int degen_concurrency = 8;
  std::int64_t degen_seed = -1;
  // bench
  int bench_requests = 8;
  std::int64_t bench_output_len = 64;
  int bench_concurrency = 4;
  // probes
  std::int64_t probe_max_tokens = 1024;
  bool no_arg_check = false;
};

const std::vector<std::string> kSteps = {"server", "smoke", "needle", "degeneration", "bench", "probes"};

/// The planner's predicted KV pool in a `ppdeploy plan --format json` output: the first detailed
/// layout (the one asked for with --tp/--pp), else layouts[best_layout]; nullopt when neither.
std::optional<std::int64_t> PredictedPool(const nlohmann::json& plan, const std::string& source) {
  const std::string schema = plan.is_object() ? plan.value("schema", "") : "";
  if (schema != "ppdeploy.plan/1" && schema != "ppdeploy.plan/2")
    Fail("{}: expected a ppdeploy.plan/2 JSON (ppdeploy plan --format json)", source);
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
    result_.unknown["verify"] = {{"steps", nlohmann::json::object()}, {"missing", kSteps}};
  }
  probes::VerifyResult& result() { return result_; }
  nlohmann::json& extra(const std::string& key) { return result_.unknown[key]; }

  /// Records step `name` as "ok", "problem", "error" or "skipped" (+ a note) and rewrites the file.
  /// "missing" keeps the steps without a result: not run yet, or ended in an error.
  void Done(const std::string& name, const std::string& status, const std::string& note = "") {
    auto& v = result_.unknown["verify"];
    v["steps"][name] =
        note.empty() ? nlohmann::json{{"status", status}} : nlohmann::json{{"status", status}, {"note", note}};
    auto& missing = v["missing"];
    for (auto it = missing.begin(); status != "error" && it != missing.end(); ++it)
      if (*it == name) {
        missing.erase(it);
        break;
      }
    if (status == "problem") problem_ = true;
    if (status == "error") error_ = true;
    Write();
  }
  void Write() const {
    // WriteFileText writes a temporary file and renames it, so a reader never sees half a file; a symlink
    // (/dev/stdout) or a path that is not a regular file (a FIFO, /dev/null) is written in place, never replaced.
    const std::string text = ToJson(result_).dump(2) + "\n";
    std::error_code ec;
    if (std::filesystem::is_symlink(out_, ec) || (std::filesystem::exists(out_, ec) && !IsRegularFile(out_))) {
      std::ofstream f(out_, std::ios::binary);
      f << text;
      f.flush();
      if (!f) Fail("--out: cannot write {}", out_);
      return;
    }
    WriteFileText(out_, text);
  }
  ppdeploy::ExitCode Exit() const {
    return problem_ ? ppdeploy::ExitCode::kCheckFailed : error_ ? ppdeploy::ExitCode::kError : ppdeploy::ExitCode::kOk;
  }

 private:
  std::string out_;
  probes::VerifyResult result_;
  bool problem_ = false, error_ = false;
};

bool Skipped(const VerifyOptions& o, const std::string& step) {
  return std::find(o.skip.begin(), o.skip.end(), step) != o.skip.end();
}

void ServerFacts(VerifyRun& run, const std::string& url, std::string& model) {
  auto http = client::MakeCurlHttpClient();
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
  if (!r.ok) return r.error;
  if (r.text.empty() && r.tool_calls.empty()) return "empty answer";
  return "";
}

/// Per-request decode throughput (output tokens / E2EL) of `n` streamed requests at `concurrency`.
std::vector<double> BenchLevel(const std::string& url, const std::string& model, int n, int concurrency,
                               std::int64_t output_len, nlohmann::json& errors) {
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
  c.RunConcurrent(requests, concurrency, [&](RequestResult&& r) {
    if (!r.ok()) {
      errors.push_back(fmt::format("{}: {}", r.ErrorKey(), r.error_message.substr(0, 200)));
      return;
    }
    if (r.e2el_ms > 0 && r.output_tokens > 0)
      tok_s.push_back(static_cast<double>(r.output_tokens) * 1000.0 / r.e2el_ms);
  });
  return tok_s;
}

}  // namespace

RunFunction DeclareVerify(CLI::App* sub) {
  auto o = std::make_shared<VerifyOptions>();
  sub->add_option("--url", o->url, "Server base URL, e.g. http://127.0.0.1:8000")->required();
  sub->add_option("--out", o->out, "Result file (ppdeploy.verify/1 JSON), rewritten after every step")->required();
  sub->add_option("--model", o->model, "Served model name (default: the first of /v1/models)");
  sub->add_option("--label", o->label, "Label of this arm in the verdict (default: the URL)");
  sub->add_option("--plan-json", o->plan_json, "Output of `ppdeploy plan --format json`: adds the predicted KV pool");
  sub->add_option("--skip", o->skip, "Steps to skip")
      ->delimiter(',')
      ->check(CLI::IsMember({"smoke", "needle", "degeneration", "bench", "probes"}));
  sub->add_option("--needle-lengths", o->lengths, "Needle prompt lengths (K = 1000 tokens)")->capture_default_str();
  sub->add_option("--needle-depths", o->depths, "Needle depths in percent")->capture_default_str();
  sub->add_option("--trials", o->trials, "Degeneration trials (default: env AGENT_PROBE_TRIALS, else 40)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--degen-max-tokens", o->degen_max_tokens, "Degeneration output cap")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--degen-concurrency", o->degen_concurrency, "Degeneration requests in flight")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--degen-seed", o->degen_seed, "Degeneration sampling seed base (default unseeded)");
  sub->add_option("--bench-requests", o->bench_requests, "Requests per bench level (single stream and concurrent)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--bench-output-len", o->bench_output_len, "Output tokens per bench request")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_option("--bench-concurrency", o->bench_concurrency, "Concurrent bench level")
      ->capture_default_str()
      ->check(CLI::Range(2, 1024));
  sub->add_option("--probe-max-tokens", o->probe_max_tokens, "Output cap per probe request")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  sub->add_flag("--no-arg-check", o->no_arg_check,
                "Do not require the expected tool arguments (ppdeploy sim sends placeholders)");
  return [o](CommandIo& io) -> ExitCode {
    // Parse the inputs before touching the server.
    const auto lengths = probes::ParseLengths(o->lengths);
    const auto depths = probes::ParseDepths(o->depths);
    std::optional<std::int64_t> predicted;
    if (!o->plan_json.empty())
      predicted = PredictedPool(ParseJsonText(ReadFileText(o->plan_json), o->plan_json), o->plan_json);

    VerifyRun run(o->out, o->label.empty() ? o->url : o->label);
    if (!o->plan_json.empty()) {
      run.result().kv_pool_predicted_tokens = predicted;
      run.extra("plan_json") = o->plan_json;
    }
    auto step_error = [&](const std::string& step, const std::exception& e) {
      io.err << "ppdeploy verify: " << step << ": " << e.what() << "\n";
      run.Done(step, "error", e.what());
    };

    std::string model = o->model;
    try {
      ServerFacts(run, o->url, model);
      run.Done("server", "ok");
    } catch (const std::exception& e) {
      step_error("server", e);
      return ExitCode::kError;  // nothing else can run; the file says what is missing
    }
    auto backend = MakeHttpBackend(o->url, model);

    if (Skipped(*o, "smoke")) {
      run.Done("smoke", "skipped");
    } else {
      try {
        const std::string why = SmokeStep(*backend, run);
        run.Done("smoke", why.empty() ? "ok" : "error", why);
        if (!why.empty()) io.err << "ppdeploy verify: smoke: " << why << "\n";
      } catch (const std::exception& e) {
        step_error("smoke", e);
      }
    }

    if (Skipped(*o, "needle")) {
      run.Done("needle", "skipped");
    } else {
      try {
        probes::NeedleConfig cfg;
        cfg.lengths = lengths;
        cfg.depths_pct = depths;
        const auto r = probes::RunNeedle(*backend, cfg);
        probes::SetNeedle(run.result(), r);
        const int code = static_cast<int>(probes::NeedleExitCode(r));
        run.Done("needle",
                 code == 2   ? "problem"
                 : code == 1 ? "error"
                             : "ok",
                 fmt::format("{} passed, {} failed, {} skipped, {} errors", r.passed, r.failed, r.skipped, r.errors));
      } catch (const std::exception& e) {
        step_error("needle", e);
      }
    }

    if (Skipped(*o, "degeneration")) {
      run.Done("degeneration", "skipped");
    } else {
      try {
        probes::DegenConfig cfg;
        cfg.trials = o->trials > 0 ? o->trials : TrialsFromEnv();
        cfg.max_tokens = o->degen_max_tokens;
        cfg.concurrency = o->degen_concurrency;
        if (o->degen_seed >= 0) cfg.seed = o->degen_seed;
        const auto s = probes::RunDegen(*backend, cfg);
        if (s.completed > 0) probes::SetDegeneration(run.result(), s);  // no answer at all: no section
        run.extra("degeneration_summary") = probes::ToJson(s, /*with_records=*/false);
        const int code = static_cast<int>(probes::DegenExitCode(s));
        run.Done("degeneration",
                 code == 2   ? "problem"
                 : code == 1 ? "error"
                             : "ok",
                 fmt::format("{}/{} degenerate, {} errors", s.degenerate, s.completed, s.errors));
      } catch (const std::exception& e) {
        step_error("degeneration", e);
      }
    }

    if (Skipped(*o, "bench")) {
      run.Done("bench", "skipped");
    } else {
      try {
        nlohmann::json errors = nlohmann::json::array();
        run.result().single_stream_tok_s = BenchLevel(o->url, model, o->bench_requests, 1, o->bench_output_len, errors);
        run.result().concurrent_tok_s[o->bench_concurrency] =
            BenchLevel(o->url, model, o->bench_requests, o->bench_concurrency, o->bench_output_len, errors);
        run.extra("bench") = {{"requests_per_level", o->bench_requests},
                              {"output_len", o->bench_output_len},
                              {"concurrency", {1, o->bench_concurrency}},
                              {"errors", errors}};
        run.Done("bench", errors.empty() ? "ok" : "error",
                 errors.empty() ? "" : fmt::format("{} failed requests", errors.size()));
      } catch (const std::exception& e) {
        step_error("bench", e);
      }
    }

    if (Skipped(*o, "probes")) {
      run.Done("probes", "skipped");
    } else {
      try {
        probes::ProbeConfig cfg;
        cfg.max_tokens = o->probe_max_tokens;
        cfg.check_tool_arguments = !o->no_arg_check;
        const auto s = probes::RunProbes(*backend, cfg);
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
        run.Done("probes",
                 graded_failures > 0               ? "problem"
                 : errors > 0 || s.records.empty() ? "error"
                                                   : "ok",
                 fmt::format("quality {}/{}, responses {}/{}, tools {}/{}", s.quality_passed, s.quality_total,
                             s.responses_passed, s.responses_total, s.tools_passed, s.tools_total));
      } catch (const std::exception& e) {
        step_error("probes", e);
      }
    }

    for (const auto& step : kSteps) {
      const auto& steps = run.extra("verify")["steps"];
      if (!steps.contains(step)) continue;
      io.out << fmt::format("{:<13} {:<8} {}\n", step, steps[step].value("status", ""), steps[step].value("note", ""));
    }
    io.out << "result written to " << o->out << "\n";
    return run.Exit();
  };
}

}  // namespace ppdeploy::cli
