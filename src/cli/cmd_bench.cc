// `ppdeploy bench`: load test of an OpenAI-compatible server (closed-loop concurrency levels, open-loop
// request rates, ramps, GuideLLM-style sweeps, a search for the highest rate meeting goodput SLOs). The logic
// is client::RunBench (src/client/bench_runner.h); this file maps flags to BenchOptions, handles SIGINT and
// renders the BenchResult.
#include <fmt/format.h>

#include <atomic>
#include <cmath>
#include <ctime>
#include <limits>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/interrupt.h"
#include "cli/target.h"
#include "client/bench_runner.h"
#include "core/error.h"
#include "io/output_file.h"
#include "report/bench_report.h"
#include "report/table.h"

namespace ppdeploy::cli {
namespace {

struct BenchArgs {
  client::BenchOptions o;
  std::string run_dir;
  std::string endpoint = "chat";
  std::string format = "table";
  std::string out_jsonl;
  std::vector<std::string> request_rates;
  std::string arrival = "poisson";
  std::string ramp;
  std::vector<std::string> goodput;
  std::string input_dist = "fixed", output_dist = "fixed";
  bool no_continuous_usage = false;
  bool no_unique_prompts = false;
  std::string extra_body;
};

std::string DefaultJsonlPath() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "bench-%Y%m%d-%H%M%S.jsonl", &tm);
  return buf;
}

double ParseRate(const std::string& s) {
  if (s == "inf") return std::numeric_limits<double>::infinity();
  double v = 0;
  std::size_t used = 0;
  try {
    v = std::stod(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != s.size() || s.empty() || !(v > 0) || !std::isfinite(v))
    Fail("--request-rate: expected a rate in req/s > 0 or inf, got \"{}\"", s);
  return v;
}

// Maps the parsed flags onto BenchOptions (every check that needs more than one flag is in ValidateBenchOptions).
client::BenchOptions Resolve(BenchArgs& a, const CLI::App& sub) {
  client::BenchOptions o = a.o;
  o.endpoint = a.endpoint == "chat" ? client::Endpoint::kChat : client::Endpoint::kCompletions;
  for (const auto& r : a.request_rates) o.request_rates.push_back(ParseRate(r));
  o.arrival = stats::ParseArrivalKind(a.arrival);
  if (!a.ramp.empty()) o.ramp = stats::ParseRampKind(a.ramp);
  if (!a.goodput.empty()) o.slo = ParseSlo(a.goodput);
  o.input_dist = client::ParseLengthDist(a.input_dist, "--input-len-dist");
  o.output_dist = client::ParseLengthDist(a.output_dist, "--output-len-dist");
  o.output_len_given = sub.count("--output-len") > 0;
  if (a.no_continuous_usage) {
    if (sub.count("--continuous-usage") > 0 && o.continuous_usage != "off")
      Fail("--no-continuous-usage contradicts --continuous-usage {}", o.continuous_usage);
    o.continuous_usage = "off";
  }
  o.unique_prompts = !a.no_unique_prompts;
  if (o.requests < 0) o.requests = o.duration_s > 0 ? 0 : 32;
  if (!a.extra_body.empty()) {
    o.extra_body = nlohmann::json::parse(a.extra_body, nullptr, false);
    if (o.extra_body.is_discarded() || !o.extra_body.is_object())
      Fail("--extra-body: expected a JSON object, got {}", a.extra_body);
  }
  if (o.api_key.empty()) {
    if (const char* k = std::getenv("OPENAI_API_KEY")) o.api_key = k;
  }
  std::string path = a.out_jsonl.empty() ? DefaultJsonlPath() : a.out_jsonl;
  o.out_jsonl = path == "none" ? "" : path;
  if (!o.out_jsonl.empty()) CheckOutputTarget(o.out_jsonl);  // refused before the server is asked anything
  return o;
}

/// The load profile: closed or open loop, ramps, sweeps and the goodput search.
void AddLoadOptions(CLI::App* sub, BenchArgs& args) {
  auto* a = &args;
  auto& o = a->o;
  auto* g_load = sub->add_option_group(
      "load profile", "one of: --concurrency/--request-rate, --ramp-up, --sweep, --search-max-goodput");
  g_load
      ->add_option("--concurrency", o.concurrency, "Closed-loop levels: requests in flight, e.g. 1,4,8,16 (default 1)")
      ->delimiter(',');
  g_load
      ->add_option("--request-rate", a->request_rates,
                   "Open-loop levels in req/s, e.g. 5,10,20 or inf (all at once up to --max-concurrency)")
      ->delimiter(',');
  g_load
      ->add_option("--arrival", a->arrival,
                   "Arrivals of --request-rate: poisson, gamma (with --burstiness) or constant")
      ->capture_default_str();
  g_load
      ->add_option("--burstiness", o.burstiness,
                   "Gamma shape of --arrival gamma: < 1 burstier, > 1 more regular (vLLM --burstiness)")
      ->capture_default_str();
  g_load->add_option("--ramp-up", a->ramp,
                     "One level whose rate ramps: linear or exponential (vLLM --ramp-up-strategy)");
  g_load->add_option("--ramp-up-start-rps", o.ramp_start_rps, "Rate at the start of the ramp (req/s)");
  g_load->add_option("--ramp-up-end-rps", o.ramp_end_rps, "Rate at the end of the ramp (req/s)");
  g_load->add_option("--max-concurrency", o.max_concurrency,
                     fmt::format("Open loop: cap on requests in flight (0 = none); sweep/search: the peak level's "
                                 "concurrency (default {})",
                                 client::kDefaultPeakConcurrency));
  g_load->add_option("--sweep", o.sweep, "GuideLLM sweep: synchronous, throughput peak, then N rates up to the peak");
  g_load->add_option("--goodput", a->goodput, "SLOs in ms, vLLM syntax: ttft:MS tpot:MS e2el:MS")->expected(1, 3);
  g_load->add_flag("--search-max-goodput", o.search_max_goodput,
                   "Find the highest request rate meeting the --goodput SLOs (bisection)");
  g_load
      ->add_option("--slo-attainment", o.slo_attainment, "Share of requests that must meet the SLOs for a rate to pass")
      ->capture_default_str();
  g_load
      ->add_option("--search-tolerance", o.search_tolerance, "Stop when the bracket is within this fraction of its top")
      ->capture_default_str();
  g_load->add_option("--search-max-probes", o.search_max_probes, "Stop after this many bisection probes")
      ->capture_default_str();
}

/// Per level (requests, warm-up, timeouts) and the prompts.
void AddLevelAndPromptOptions(CLI::App* sub, BenchArgs& args) {
  auto* a = &args;
  auto& o = a->o;
  // Per level.
  sub->add_option("--requests", o.requests, "Measured requests per level (default 32, or unlimited with --duration-s)");
  sub->add_option("--duration-s", o.duration_s, "Start nothing intended later than this into each level");
  sub->add_option("--warmup", o.warmup,
                  "Warm-up requests before each level, outside its figures (default: the level's concurrency, so that "
                  "TTFT of measured requests excludes TCP connect; open loop: 4)");
  sub->add_option("--warmup-timeout-s", o.warmup_timeout_s, "Cancel warm-up requests still in flight after this")
      ->capture_default_str();
  sub->add_option("--timeout-s", o.timeout_s, "Per-request timeout")->capture_default_str();
  // Prompts.
  sub->add_option("--dataset", o.dataset, "random (synthetic, exact lengths), sharegpt or jsonl (with --dataset-path)")
      ->capture_default_str();
  sub->add_option("--dataset-path", o.dataset_path,
                  "ShareGPT JSON or a JSONL of {\"prompt\"|\"messages\", \"output_tokens\"}");
  sub->add_option("--dataset-limit", o.dataset_limit, "ShareGPT entries sampled (seeded reservoir)")
      ->capture_default_str();
  sub->add_option("--input-len", o.input_len, "Prompt tokens, template included (exact via the server's /tokenize)")
      ->capture_default_str();
  sub->add_option(
         "--output-len", o.output_len,
         "Output tokens (max_tokens = min_tokens, ignore_eos); ShareGPT: overrides the reference answers' lengths")
      ->capture_default_str();
  sub->add_option("--input-len-dist", a->input_dist,
                  "fixed, uniform:R (vLLM --random-range-ratio) or normal:STD (tokens)")
      ->capture_default_str();
  sub->add_option("--output-len-dist", a->output_dist, "fixed, uniform:R or normal:STD")->capture_default_str();
  sub->add_option("--shared-prefix-tokens", o.shared_prefix_tokens,
                  "Tokens every prompt shares at its start (a cacheable system-prompt-like prefix; default 0: no two "
                  "requests share a prefix)")
      ->capture_default_str();
  sub->add_flag(
      "--no-unique-prompts", a->no_unique_prompts,
      "Datasets: send the prompts as they are (no per-request prefix; repeated prompts may hit the prefix cache)");
  sub->add_option("--seed", o.seed,
                  "Seeds prompts, lengths, arrivals and the dataset sample (vllm bench serve --seed); a sampling seed "
                  "goes in --extra-body '{\"seed\": N}'")
      ->capture_default_str();
  sub->add_option("--temperature", o.temperature, "Sampling temperature");
  sub->add_option("--top-p", o.top_p, "Sampling top_p");
  sub->add_option("--extra-body", a->extra_body, "JSON object merged into every request body");
  sub->add_option(
         "--continuous-usage", o.continuous_usage,
         "vLLM's per-chunk usage (stream_options.continuous_usage_stats): auto (on only when the warm-up shows "
         "the server bundles tokens into chunks; it costs the server CPU), on or off")
      ->check(CLI::IsMember({"auto", "on", "off"}))
      ->capture_default_str();
  sub->add_flag("--no-continuous-usage", a->no_continuous_usage,
                "Same as --continuous-usage off (for non-vLLM servers)");
}

ExitCode RunBenchCommand(BenchArgs* a, CLI::App* sub, CommandIo& io) {
  client::BenchOptions options = Resolve(*a, *sub);
  options.url = ResolveTarget(options.url, a->run_dir).url;
  OutputFormat format = ParseOutputFormat(a->format, {"table", "json", "md", "csv", "html"});
  // SIGINT from here on: stop starting requests, cancel the in-flight ones, print what finished, exit 130.
  InterruptGuard interrupt;
  client::BenchHooks hooks;
  hooks.stop = InterruptGuard::Flag();
  if (io.err_is_tty) {
    hooks.progress = [&io](const std::string& line) {
      io.err << "\r" << line << (line.empty() ? "\n" : "   ") << std::flush;
    };
  }
  BenchResult result = client::RunBench(options, hooks);
  result.interrupted = InterruptGuard::Raised();
  switch (format) {
    case OutputFormat::kJson:
      io.out << RenderBenchJson(result).dump(2) << "\n";
      break;
    case OutputFormat::kCsv:
      io.out << RenderBenchCsv(result);
      break;
    case OutputFormat::kMarkdown:
      io.out << RenderBenchMarkdown(result);
      break;
    case OutputFormat::kHtml:
      RenderBenchHtml(result, io.out);
      break;
    default:
      io.out << RenderBenchTable(result);
      break;
  }
  io.out.flush();
  if (result.interrupted) return ExitCode::kInterrupted;
  if (!result.aborted.empty()) {
    io.err << "ppdeploy bench: " << result.aborted << "\n";
    return ExitCode::kError;
  }
  return ExitCode::kOk;
}

}  // namespace

RunFunction DeclareBench(CLI::App* sub) {
  auto a = std::make_shared<BenchArgs>();
  auto& o = a->o;
  o.requests = -1;
  AddTargetOptions(sub, o.url, a->run_dir);
  sub->add_option("--model", o.model, "Model name (default: the first of GET /v1/models)");
  sub->add_option("--api-key", o.api_key, "Bearer token (default: $OPENAI_API_KEY)");
  sub->add_option("--endpoint", a->endpoint, "chat or completions")
      ->check(CLI::IsMember({"chat", "completions"}))
      ->capture_default_str();
  sub->add_option("--format", a->format, "table, json, md, csv or html")
      ->check(CLI::IsMember({"table", "json", "md", "csv", "html"}))
      ->capture_default_str();
  sub->add_option("--out-jsonl", a->out_jsonl,
                  "Per-request records, one JSON line written and flushed as each request finishes (default "
                  "bench-<UTC time>.jsonl in the current directory; 'none' = off)");
  AddLoadOptions(sub, *a);
  AddLevelAndPromptOptions(sub, *a);

  return [a, sub](CommandIo& io) -> ExitCode { return RunBenchCommand(a.get(), sub, io); };
}

}  // namespace ppdeploy::cli
