// `ppdeploy bench`: closed-loop load test of an OpenAI-compatible server at one or more concurrency levels.
#include <fmt/format.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/command.h"
#include "client/http.h"
#include "client/openai_client.h"
#include "client/prompts.h"
#include "core/error.h"
#include "report/bench_report.h"
#include "stats/bench_stats.h"

namespace ppdeploy::cli {
namespace {

std::atomic<bool> g_stop{false};
volatile sig_atomic_t g_sigint = 0;

extern "C" void OnSigint(int) {
  g_sigint = 1;
  g_stop.store(true);
}

struct BenchArgs {
  std::string url;
  std::string model;
  std::vector<int> concurrency = {1};
  std::int64_t requests = -1;
  double duration_s = 0;
  std::int64_t warmup = -1;  // -1: the level's concurrency (opens every kept-alive connection before measuring)
  std::int64_t input_len = 128;
  std::int64_t output_len = 128;
  std::optional<double> temperature;
  std::optional<double> top_p;
  std::optional<std::int64_t> seed;
  std::string endpoint = "chat";
  std::string format = "table";
  std::string out_jsonl;
  double timeout_s = 600;
  std::string api_key;
  bool no_continuous_usage = false;
  std::string extra_body;
  int prompt_pool = 32;
  int max_consecutive_connect_errors = 20;
};

std::string DefaultJsonlPath() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "bench-%Y%m%d-%H%M%S.jsonl", &tm);
  return buf;
}

}  // namespace

RunFunction DeclareBench(CLI::App* sub) {
  auto a = std::make_shared<BenchArgs>();
  sub->add_option("--url", a->url, "Server base URL, e.g. http://127.0.0.1:8000")->required();
  sub->add_option("--model", a->model, "Model name (default: the first of GET /v1/models)");
  sub->add_option("--concurrency", a->concurrency, "Concurrency levels, e.g. 1,4,8,16")
      ->delimiter(',')
      ->capture_default_str();
  sub->add_option("--requests", a->requests, "Requests per level (default 32, or unlimited with --duration-s)");
  sub->add_option("--duration-s", a->duration_s, "Stop starting requests this long into each level");
  sub->add_option("--warmup", a->warmup,
                  "Warm-up requests before each level, not counted (default: the level's concurrency, so that TTFT of "
                  "measured requests excludes TCP connect)");
  sub->add_option("--input-len", a->input_len, "Prompt tokens (exact via the server's /tokenize)")
      ->capture_default_str();
  sub->add_option("--output-len", a->output_len, "Output tokens (max_tokens = min_tokens, ignore_eos)")
      ->capture_default_str();
  sub->add_option("--temperature", a->temperature, "Sampling temperature");
  sub->add_option("--top-p", a->top_p, "Sampling top_p");
  sub->add_option("--seed", a->seed, "Sampling seed sent with every request");
  sub->add_option("--endpoint", a->endpoint, "chat or completions")
      ->check(CLI::IsMember({"chat", "completions"}))
      ->capture_default_str();
  sub->add_option("--format", a->format, "table, json or csv")
      ->check(CLI::IsMember({"table", "json", "csv"}))
      ->capture_default_str();
  sub->add_option("--out-jsonl", a->out_jsonl,
                  "Per-request records, one JSON line written and flushed as each request finishes (default bench-<UTC "
                  "time>.jsonl in the current directory; 'none' = off)");
  sub->add_option("--timeout-s", a->timeout_s, "Per-request timeout")->capture_default_str();
  sub->add_option("--api-key", a->api_key, "Bearer token (default: $OPENAI_API_KEY)");
  sub->add_flag("--no-continuous-usage", a->no_continuous_usage,
                "Do not ask for vLLM's per-chunk usage (for non-vLLM servers)");
  sub->add_option("--extra-body", a->extra_body, "JSON object merged into every request body");
  sub->add_option("--prompt-pool", a->prompt_pool, "Distinct prompts per run")->capture_default_str();

  return [a](CommandIo& io) -> ExitCode {
    // SIGINT from here on: stop starting requests, cancel the in-flight ones, print what finished, exit 130.
    g_stop.store(false);
    g_sigint = 0;
    struct sigaction sa {
    }, old_sa{};
    sa.sa_handler = OnSigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_sa);
    struct Restore {
      struct sigaction old;
      ~Restore() { sigaction(SIGINT, &old, nullptr); }
    } restore{old_sa};
    if (a->url.rfind("http://", 0) != 0 && a->url.rfind("https://", 0) != 0)
      Fail("--url: expected http://host:port or https://..., got \"{}\"", a->url);
    for (int c : a->concurrency)
      if (c < 1 || c > 100000) Fail("--concurrency: expected 1-100000, got {}", c);
    if (a->output_len < 1) Fail("--output-len: expected >= 1, got {}", a->output_len);
    if (a->timeout_s <= 0) Fail("--timeout-s: expected > 0, got {}", a->timeout_s);
    if (a->requests < 0) a->requests = a->duration_s > 0 ? 0 : 32;
    if (a->requests == 0 && a->duration_s <= 0) Fail("--requests 0 needs --duration-s");
    nlohmann::json extra = nlohmann::json::object();
    if (!a->extra_body.empty()) {
      extra = nlohmann::json::parse(a->extra_body, nullptr, false);
      if (extra.is_discarded() || !extra.is_object())
        Fail("--extra-body: expected a JSON object, got {}", a->extra_body);
    }
    if (a->api_key.empty()) {
      if (const char* k = std::getenv("OPENAI_API_KEY")) a->api_key = k;
    }
    client::Endpoint endpoint = a->endpoint == "chat" ? client::Endpoint::kChat : client::Endpoint::kCompletions;
    auto http = client::MakeCurlHttpClient(a->api_key);
    if (a->model.empty()) {
      std::string models_url = client::JoinUrl(a->url, "/v1/models");
      nlohmann::json models = http->Get(models_url, 10.0).Json(models_url);
      if (!models.contains("data") || !models["data"].is_array() || models["data"].empty() ||
          !models["data"][0].contains("id"))
        Fail("{}: no model listed; pass --model", models_url);
      a->model = models["data"][0]["id"].get<std::string>();
    }
    std::uint64_t prompt_seed = static_cast<std::uint64_t>(a->seed.value_or(0));
    int pool = static_cast<int>(std::max<std::int64_t>(
        1, std::min<std::int64_t>(a->prompt_pool, a->requests > 0 ? a->requests : a->prompt_pool)));
    client::PromptSet prompts =
        client::BuildPrompts(*http, a->url, endpoint, a->model, a->input_len, pool, prompt_seed);

    BenchResult result;
    result.url = a->url;
    result.model = a->model;
    result.endpoint = a->endpoint;
    result.input_len_method = prompts.method;
    result.settings = {{"concurrency", a->concurrency},
                       {"requests", a->requests},
                       {"duration_s", a->duration_s},
                       {"warmup", a->warmup},
                       {"input_len", a->input_len},
                       {"output_len", a->output_len},
                       {"endpoint", a->endpoint},
                       {"timeout_s", a->timeout_s},
                       {"continuous_usage_stats", !a->no_continuous_usage},
                       {"extra_body", extra}};
    if (a->temperature) result.settings["temperature"] = *a->temperature;
    if (a->top_p) result.settings["top_p"] = *a->top_p;
    if (a->seed) result.settings["seed"] = *a->seed;
    if (prompts.method != "tokenize")
      result.notes.push_back(
          "the server has no /tokenize: prompts were sized at 4 characters per token (FALLBACK); "
          "check the achieved input lengths");

    std::string jsonl_path = a->out_jsonl.empty() ? DefaultJsonlPath() : a->out_jsonl;
    std::ofstream jsonl;
    if (jsonl_path != "none") {
      jsonl.open(jsonl_path, std::ios::out | std::ios::trunc);
      if (!jsonl) Fail("--out-jsonl: cannot open {}", jsonl_path);
      result.jsonl_path = jsonl_path;
    }

    client::OpenAiClient client({a->url, a->api_key, std::min(10.0, a->timeout_s)});
    std::int64_t tag = 0;
    auto make_request = [&](bool warmup) {
      client::ChatRequest q;
      q.endpoint = endpoint;
      q.model = a->model;
      std::size_t pi = static_cast<std::size_t>(tag) % prompts.prompts.size();
      if (endpoint == client::Endpoint::kChat) {
        q.messages = nlohmann::json::array({{{"role", "user"}, {"content", prompts.prompts[pi]}}});
      } else {
        q.prompt = prompts.prompts[pi];
      }
      q.requested_input_tokens = prompts.token_counts[pi] >= 0 ? a->input_len : -1;
      q.max_tokens = a->output_len;
      q.min_tokens = a->output_len;
      q.ignore_eos = true;
      q.temperature = a->temperature;
      q.top_p = a->top_p;
      q.seed = a->seed;
      q.extra_body = extra;
      q.continuous_usage_stats = !a->no_continuous_usage;
      q.timeout_s = a->timeout_s;
      q.tag = tag++;
      q.warmup = warmup;
      return q;
    };

    int consecutive_connect = 0;
    for (int c : a->concurrency) {
      if (g_stop.load()) break;
      std::vector<RequestResult> results;
      auto last_progress = std::chrono::steady_clock::now();
      auto on_result = [&](RequestResult&& r) {
        std::size_t pi = static_cast<std::size_t>(r.index) % prompts.prompts.size();
        if (r.input_tokens_source == TokenCountSource::kUnknown && prompts.token_counts[pi] >= 0) {
          r.input_tokens = prompts.token_counts[pi];  // the server's own count, from /tokenize before the run
          r.input_tokens_source = TokenCountSource::kTokenize;
        }
        if (jsonl.is_open()) {
          nlohmann::json j = r.ToJson();
          j["concurrency"] = c;
          jsonl << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
          jsonl.flush();
        }
        if (r.error_kind == RequestErrorKind::kConnect || r.error_kind == RequestErrorKind::kBadUrl) {
          if (++consecutive_connect >= a->max_consecutive_connect_errors && !g_stop.load()) {
            result.aborted = fmt::format("{} consecutive connection failures ({}): server unreachable",
                                         consecutive_connect, r.error_message);
            g_stop.store(true);
          }
        } else {
          consecutive_connect = 0;
        }
        results.push_back(std::move(r));
        auto now = std::chrono::steady_clock::now();
        if (io.err_is_tty && now - last_progress > std::chrono::milliseconds(200)) {
          last_progress = now;
          std::int64_t errors = 0;
          for (const auto& x : results) errors += x.ok() ? 0 : 1;
          io.err << fmt::format("\rconc {}: {} done, {} errors   ", c, results.size(), errors) << std::flush;
        }
      };
      std::int64_t warmup = a->warmup < 0 ? c : a->warmup;
      if (warmup > 0) {
        std::int64_t n = 0;
        client.RunConcurrent(
            [&]() -> std::optional<client::ChatRequest> {
              if (n >= warmup) return std::nullopt;
              ++n;
              return make_request(true);
            },
            static_cast<int>(std::min<std::int64_t>(c, warmup)), on_result, &g_stop);
      }
      if (g_stop.load()) {
        results.clear();
        break;
      }
      std::size_t warm = results.size();
      std::int64_t sent = 0;
      client::RunSummary summary = client.RunConcurrent(
          [&]() -> std::optional<client::ChatRequest> {
            if (a->requests > 0 && sent >= a->requests) return std::nullopt;
            ++sent;
            return make_request(false);
          },
          c, on_result, &g_stop, a->duration_s * 1000.0);
      if (io.err_is_tty) io.err << "\n";
      std::vector<RequestResult> measured(std::make_move_iterator(results.begin() + static_cast<std::ptrdiff_t>(warm)),
                                          std::make_move_iterator(results.end()));
      result.levels.push_back(SummarizeLevel(c, measured, summary.wall_ms));
    }
    result.interrupted = g_sigint != 0;
    if (jsonl.is_open()) jsonl.close();

    if (a->format == "json") {
      io.out << RenderBenchJson(result).dump(2) << "\n";
    } else if (a->format == "csv") {
      io.out << RenderBenchCsv(result);
    } else {
      io.out << RenderBenchTable(result);
    }
    io.out.flush();
    if (result.interrupted) return ExitCode::kInterrupted;
    if (!result.aborted.empty()) {
      io.err << "ppdeploy bench: " << result.aborted << "\n";
      return ExitCode::kError;
    }
    return ExitCode::kOk;
  };
}

}  // namespace ppdeploy::cli
