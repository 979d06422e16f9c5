#include "client/bench_runner.h"

#include <fmt/format.h>
#include <sys/resource.h>

#include <chrono>
#include <cmath>
#include <memory>
#include <random>

#include "client/datasets.h"
#include "client/http.h"
#include "core/error.h"
#include "io/jsonl.h"
#include "stats/load_search.h"

namespace ppdeploy::client {
namespace {

using Clock = std::chrono::steady_clock;

double CpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

std::uint64_t Mix(std::uint64_t x) {  // splitmix64 finaliser
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

nlohmann::json RateJson(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json("inf"); }

class Runner {
 public:
  Runner(const BenchOptions& o, const BenchHooks& hooks)
      : o_(o),
        hooks_(hooks),
        http_(MakeCurlHttpClient(o.api_key)),
        client_(ClientOptions{o.url, o.api_key, std::min(10.0, o.timeout_s)}) {}

  BenchResult Run() {
    ResolveModel();
    PreparePrompts();
    OpenJsonl();
    Describe();
    if (o_.sweep > 0 || o_.search_max_goodput) {
      RunAdaptive();
    } else {
      for (int c : o_.concurrency) {
        if (Stopping()) break;
        LoadSpec spec;
        spec.phase = "concurrency";
        spec.concurrency = c;
        RunLevel(spec);
      }
      for (double rate : o_.request_rates) {
        if (Stopping()) break;
        RunLevel(RateSpec("rate", rate));
      }
      if (o_.ramp != stats::RampKind::kNone && !Stopping()) {
        LoadSpec spec = RateSpec("ramp", 0);
        spec.rate = 0;
        spec.ramp = stats::RampKindName(o_.ramp);
        spec.ramp_start_rps = o_.ramp_start_rps;
        spec.ramp_end_rps = o_.ramp_end_rps;
        RunLevel(spec);
      }
    }
    CloseJsonl();
    result_.interrupted = hooks_.stop != nullptr && hooks_.stop->load() && result_.aborted.empty();
    return std::move(result_);
  }

 private:
  bool Stopping() const { return (hooks_.stop != nullptr && hooks_.stop->load()) || !result_.aborted.empty(); }

  void Progress(const std::string& s) {
    if (hooks_.progress) hooks_.progress(s);
  }

  void ResolveModel() {
    model_ = o_.model;
    if (!model_.empty()) return;
    std::string url = JoinUrl(o_.url, "/v1/models");
    nlohmann::json models = http_->Get(url, 10.0).Json(url);
    if (!models.contains("data") || !models["data"].is_array() || models["data"].empty() ||
        !models["data"][0].is_object() || !models["data"][0].contains("id") || !models["data"][0]["id"].is_string())
      Fail("{}: no model listed; pass --model", url);
    model_ = models["data"][0]["id"].get<std::string>();
  }

  void PreparePrompts() {
    factory_ = std::make_unique<PromptFactory>(*http_, o_.url, o_.endpoint, model_,
                                               o_.dataset == "random" ? o_.shared_prefix_tokens : 0, o_.seed);
    if (o_.dataset == "random") {
      if (o_.input_len - factory_->template_tokens() < 4 + o_.shared_prefix_tokens)
        result_.notes.push_back(fmt::format(
            "--input-len {} leaves fewer than {} words after the template ({} tokens) and the shared prefix: prompts "
            "may share their first tokens",
            o_.input_len, 4 + o_.shared_prefix_tokens, factory_->template_tokens()));
      factory_->Verify(o_.input_len, o_.prompt_verify_samples);
      method_ = factory_->method();
      if (!factory_->has_tokenize())
        result_.notes.push_back(
            "the server has no /tokenize: prompt lengths assume 1 token per word (FALLBACK); check "
            "the achieved input lengths");
      else if (!factory_->exact())
        result_.notes.push_back("some sampled prompts did not tokenize to the requested length: " + method_);
    } else if (o_.dataset == "sharegpt") {
      std::int64_t total = 0;
      std::vector<DatasetEntry> sample = ReadShareGpt(o_.dataset_path, o_.dataset_limit, o_.seed, &total);
      std::int64_t pruned = 0;
      std::string prefix = o_.unique_prompts ? factory_->UniquePrefix(0) : "";
      std::int64_t template_and_prefix =
          factory_->template_tokens() + (o_.unique_prompts ? factory_->unique_prefix_tokens() : 0);
      for (auto& e : sample) {
        std::int64_t in = factory_->Count(prefix + e.prompt);
        std::int64_t out = factory_->CountRaw(e.reference_answer);
        if (in < 0) in = template_and_prefix + static_cast<std::int64_t>(e.prompt.size() / 4);
        if (out < 0) out = static_cast<std::int64_t>(e.reference_answer.size() / 4);
        if (!IsValidShareGptSequence(in - template_and_prefix, out)) {
          ++pruned;
          continue;
        }
        e.input_tokens = factory_->has_tokenize() ? in : -1;
        e.output_tokens = out;
        e.reference_answer.clear();
        e.reference_answer.shrink_to_fit();
        sharegpt_.push_back(std::move(e));
      }
      if (sharegpt_.empty())
        Fail(
            "--dataset-path {}: every sampled entry was pruned by vLLM's length rules (prompt and answer >= 4 tokens, "
            "prompt <= 1024, prompt + answer <= 2048)",
            o_.dataset_path);
      method_ = factory_->has_tokenize() ? "sharegpt: lengths by /tokenize"
                                         : "sharegpt: lengths by characters / 4 (FALLBACK)";
      result_.notes.push_back(
          fmt::format("ShareGPT: {} usable entries in the file, {} sampled (seed {}), {} pruned by "
                      "vLLM's length rules; max_tokens = {}",
                      total, sharegpt_.size() + static_cast<std::size_t>(pruned), o_.seed, pruned,
                      o_.output_len_given ? fmt::format("--output-len {}", o_.output_len)
                                          : std::string("the reference answer's length")));
    } else {
      jsonl_ds_ = std::make_unique<JsonlDataset>(o_.dataset_path, o_.endpoint == Endpoint::kChat);
      method_ = "jsonl: lengths reported by the server's usage";
      result_.notes.push_back(fmt::format("JSONL dataset: {} prompts, used in file order", jsonl_ds_->size()));
    }
    if (o_.dataset != "random" && o_.unique_prompts)
      result_.notes.push_back(
          "every dataset prompt is prefixed with a per-request line of 8 words, so that no two "
          "requests share a cached prefix (--no-unique-prompts turns it off)");
  }

  void OpenJsonl() {
    if (o_.out_jsonl.empty()) return;
    jsonl_ = std::make_unique<JsonlWriter>(o_.out_jsonl);
    result_.jsonl_path = o_.out_jsonl;
  }

  /// A failed record write stops the run (exit 1) with the count of records the file keeps.
  void JsonlFailed(const Error& e) {
    if (result_.aborted.empty()) result_.aborted = fmt::format("--out-jsonl: {}", e.what());
    abort_.store(true);
  }

  void WriteJsonl(const nlohmann::json& j) {
    if (!jsonl_ || jsonl_->failed()) return;
    try {
      jsonl_->Write(j);
    } catch (const Error& e) {
      JsonlFailed(e);
    }
  }

  void CloseJsonl() {
    if (!jsonl_ || jsonl_->failed()) return;
    try {
      jsonl_->Close();
    } catch (const Error& e) {
      JsonlFailed(e);
    }
  }

  void Describe() {
    result_.url = o_.url;
    result_.model = model_;
    result_.endpoint = EndpointName(o_.endpoint);
    result_.input_len_method = method_;
    result_.dataset = o_.dataset == "random" ? "random" : o_.dataset + ":" + o_.dataset_path;
    result_.profile = o_.search_max_goodput               ? "search"
                      : o_.sweep > 0                      ? "sweep"
                      : o_.ramp != stats::RampKind::kNone ? "ramp"
                      : !o_.request_rates.empty()         ? (o_.concurrency.empty() ? "rate" : "concurrency+rate")
                                                          : "concurrency";
    nlohmann::json rates = nlohmann::json::array();
    for (double r : o_.request_rates) rates.push_back(RateJson(r));
    auto& s = result_.settings;
    s = {{"concurrency", o_.concurrency},
         {"request_rate", rates},
         {"arrival", stats::ArrivalKindName(o_.arrival)},
         {"burstiness", o_.burstiness},
         {"max_concurrency", o_.max_concurrency},
         {"requests", o_.requests},
         {"duration_s", o_.duration_s},
         {"warmup", o_.warmup},
         {"warmup_timeout_s", o_.warmup_timeout_s},
         {"dataset", o_.dataset},
         {"input_len", o_.input_len},
         {"input_len_dist", o_.input_dist.Text()},
         {"output_len", o_.output_len},
         {"output_len_dist", o_.output_dist.Text()},
         {"shared_prefix_tokens", o_.shared_prefix_tokens},
         {"unique_prompts", o_.unique_prompts},
         {"seed", o_.seed},
         {"endpoint", EndpointName(o_.endpoint)},
         {"timeout_s", o_.timeout_s},
         {"continuous_usage", o_.continuous_usage},
         {"extra_body", o_.extra_body}};
    if (o_.ramp != stats::RampKind::kNone)
      s["ramp_up"] = {
          {"strategy", stats::RampKindName(o_.ramp)}, {"start_rps", o_.ramp_start_rps}, {"end_rps", o_.ramp_end_rps}};
    if (o_.sweep > 0) s["sweep"] = o_.sweep;
    if (o_.slo.any()) s["goodput"] = o_.slo.Text();
    if (o_.search_max_goodput)
      s["search"] = {{"slo_attainment", o_.slo_attainment},
                     {"tolerance", o_.search_tolerance},
                     {"max_probes", o_.search_max_probes}};
    if (o_.temperature) s["temperature"] = *o_.temperature;
    if (o_.top_p) s["top_p"] = *o_.top_p;
    continuous_on_ = o_.continuous_usage == "on";
    result_.continuous_usage = o_.continuous_usage == "auto" ? "auto: undecided" : o_.continuous_usage;
  }

  LoadSpec RateSpec(const std::string& phase, double rate) const {
    LoadSpec spec;
    spec.phase = phase;
    spec.rate = rate;
    spec.arrival = stats::ArrivalKindName(o_.arrival);
    spec.burstiness = o_.arrival == stats::ArrivalKind::kGamma ? o_.burstiness : 1;
    spec.concurrency = o_.max_concurrency;
    if (std::isinf(rate) && spec.concurrency == 0) spec.concurrency = kDefaultPeakConcurrency;
    return spec;
  }

  // ------------------------------------------------------------ requests

  ChatRequest MakeRequest(bool warmup) {
    ChatRequest q;
    std::int64_t tag = tag_++;
    q.endpoint = o_.endpoint;
    q.model = model_;
    std::mt19937_64 rng(Mix(o_.seed ^ Mix(static_cast<std::uint64_t>(tag) + 0x1e47)));
    std::int64_t in_len = DrawLength(o_.input_dist, o_.input_len, rng);
    std::int64_t out_len = DrawLength(o_.output_dist, o_.output_len, rng);
    std::string content;
    nlohmann::json messages;
    if (o_.dataset == "random") {
      Prompt p = factory_->Make(tag, in_len);
      content = std::move(p.text);
      q.requested_input_tokens = p.tokens;
    } else if (o_.dataset == "sharegpt") {
      const DatasetEntry& e = sharegpt_[static_cast<std::size_t>(tag) % sharegpt_.size()];
      content = (o_.unique_prompts ? factory_->UniquePrefix(tag) : "") + e.prompt;
      q.requested_input_tokens = e.input_tokens;
      if (!o_.output_len_given) out_len = e.output_tokens;
    } else {
      DatasetEntry e = jsonl_ds_->Next();
      std::string prefix = o_.unique_prompts ? factory_->UniquePrefix(tag) : "";
      if (e.messages.is_null()) {
        content = prefix + e.prompt;
      } else {
        messages = std::move(e.messages);
        for (auto& m : messages) {  // the first message with string content carries the prefix
          if (m.contains("content") && m["content"].is_string()) {
            m["content"] = prefix + m["content"].get<std::string>();
            break;
          }
        }
      }
      if (e.output_tokens > 0) out_len = e.output_tokens;
    }
    if (o_.endpoint == Endpoint::kChat) {
      q.messages = messages.is_null() ? nlohmann::json::array({{{"role", "user"}, {"content", std::move(content)}}})
                                      : std::move(messages);
    } else {
      q.prompt = std::move(content);
    }
    q.max_tokens = out_len;
    q.min_tokens = out_len;
    q.ignore_eos = true;
    q.temperature = o_.temperature;
    q.top_p = o_.top_p;
    q.extra_body = o_.extra_body;
    q.continuous_usage_stats = continuous_on_;
    q.timeout_s = o_.timeout_s;
    q.tag = tag;
    q.warmup = warmup;
    return q;
  }

  void Record(RequestResult&& r, LevelAccumulator& acc, const LoadSpec& spec, std::size_t level) {
    if (r.input_tokens_source == TokenCountSource::kUnknown && r.requested_input_tokens >= 0) {
      r.input_tokens = r.requested_input_tokens;  // the server's own count, from /tokenize before the run
      r.input_tokens_source = TokenCountSource::kTokenize;
    }
    bool good = acc.Add(r);
    if (jsonl_) {
      nlohmann::json j = r.ToJson();
      j["level"] = level;
      j["load"] = spec.Label();
      if (o_.slo.any() && !r.warmup) j["good"] = good;
      WriteJsonl(j);
    }
    if (r.error_kind == RequestErrorKind::kConnect || r.error_kind == RequestErrorKind::kBadUrl) {
      if (++consecutive_connect_ >= o_.max_consecutive_connect_errors && result_.aborted.empty()) {
        result_.aborted = fmt::format("{} consecutive connection failures ({}): server unreachable",
                                      consecutive_connect_, r.error_message);
        abort_.store(true);  // stops the running level too
      }
    } else {
      consecutive_connect_ = 0;
    }
    if (!r.warmup) {
      ++done_;
      auto now = Clock::now();
      if (now - last_progress_ > std::chrono::milliseconds(250)) {
        last_progress_ = now;
        Progress(fmt::format("{}: {} done, {} failed", spec.Label(), acc.measured(), acc.failed()));
      }
    }
  }

  // Decides --continuous-usage auto from finished warm-up answers: per-chunk usage is needed only when the
  // server bundles several tokens into one chunk (speculative decoding, stream intervals, tool parsers).
  void DecideContinuousUsage(const RequestResult& r) {
    if (o_.continuous_usage != "auto" || decided_ || !r.ok() || r.output_tokens_source != TokenCountSource::kUsage)
      return;
    decided_ = true;
    if (r.output_tokens > r.chunks) {
      continuous_on_ = true;
      result_.continuous_usage =
          fmt::format("auto: on (the warm-up answer carried {} tokens in {} chunks: the server bundles tokens)",
                      r.output_tokens, r.chunks);
    } else {
      result_.continuous_usage = fmt::format(
          "auto: off (the warm-up answer carried {} tokens in {} chunks: one token per chunk, exact without it)",
          r.output_tokens, r.chunks);
    }
  }

  auto Stop() const { return hooks_.stop; }

  // Warm-up: closed loop, outside the level's figures, stragglers cancelled at the timeout.
  void Warmup(const LoadSpec& spec, LevelAccumulator& acc, std::size_t level) {
    std::int64_t n = o_.warmup;
    if (n < 0) n = spec.open_loop() && !std::isinf(spec.rate) ? 4 : std::max(1, spec.concurrency);
    bool need_probe = o_.continuous_usage == "auto" && !decided_;
    if (n == 0 && need_probe) n = 1;  // one unmeasured answer to decide --continuous-usage auto
    if (n == 0) return;
    auto start = Clock::now();
    std::int64_t sent = 0;
    RunLimits limits;
    limits.max_in_flight = static_cast<int>(
        std::max<std::int64_t>(1, std::min<std::int64_t>(n, spec.concurrency > 0 ? spec.concurrency : n)));
    limits.hard_deadline_ms = o_.warmup_timeout_s * 1000.0;
    limits.abort = &abort_;
    client_.Run(
        [&]() -> std::optional<ChatRequest> {
          if (sent >= n) return std::nullopt;
          ++sent;
          return MakeRequest(true);
        },
        limits,
        [&](RequestResult&& r) {
          DecideContinuousUsage(r);
          Record(std::move(r), acc, spec, level);
        },
        Stop());
    acc.SetWarmupWall(std::chrono::duration<double>(Clock::now() - start).count());
    if (o_.continuous_usage == "auto" && !decided_ && need_probe)
      result_.continuous_usage = "auto: off (no successful warm-up answer with usage to decide from)";
  }

  LevelResult RunLevel(const LoadSpec& spec) {
    std::size_t level = result_.levels.size();
    LevelAccumulator acc(spec, o_.slo);
    Warmup(spec, acc, level);
    if (Stopping()) {
      // Interrupted during the warm-up: the level has no measured request; keep nothing.
      return acc.Finish(0);
    }
    acc.SetFirstIndex(tag_);
    std::int64_t sent = 0;
    auto more = [&] { return o_.requests <= 0 || sent < o_.requests; };
    RunLimits limits;
    limits.deadline_ms = o_.duration_s > 0 ? o_.duration_s * 1000.0 : 0;
    limits.abort = &abort_;
    RunSummary summary;
    auto on_result = [&](RequestResult&& r) { Record(std::move(r), acc, spec, level); };
    bool open = spec.open_loop() && !(std::isinf(spec.rate) && spec.ramp.empty());
    double cpu0 = CpuSeconds();
    if (!open) {
      limits.max_in_flight = std::max(1, spec.concurrency);
      summary = client_.Run(
          [&]() -> std::optional<ChatRequest> {
            if (!more()) return std::nullopt;
            ++sent;
            return MakeRequest(false);
          },
          limits, on_result, Stop());
    } else {
      stats::ArrivalOptions a;
      a.rate = spec.rate > 0 ? spec.rate : 1;
      a.kind = o_.arrival;
      a.burstiness = o_.burstiness;
      if (!spec.ramp.empty()) {
        a.ramp = o_.ramp;
        a.ramp_start_rps = o_.ramp_start_rps;
        a.ramp_end_rps = o_.ramp_end_rps;
        a.total_requests = o_.requests;
        a.duration_s = o_.duration_s;
      }
      a.seed = Mix(o_.seed + 0xa11 + level);
      stats::ArrivalSchedule schedule(a);
      limits.max_in_flight = spec.concurrency;  // 0 = no cap
      summary = client_.Run(
          [&]() -> std::optional<ChatRequest> {
            if (!more()) return std::nullopt;
            ++sent;
            ChatRequest q = MakeRequest(false);
            q.scheduled_ms = schedule.NextMs();
            return q;
          },
          limits, on_result, Stop());
    }
    double duration_ms = summary.first_send_ms >= 0 ? summary.wall_ms - summary.first_send_ms : 0;
    LevelResult L = acc.Finish(duration_ms, summary.peak_in_flight);
    L.client_cpu_s = CpuSeconds() - cpu0;
    if (L.total > 0 || !Stopping()) result_.levels.push_back(L);
    Progress("");
    return L;
  }

  // GuideLLM's sweep, or the goodput search: both start with the synchronous baseline and the peak.
  void RunAdaptive() {
    LoadSpec sync;
    sync.phase = "synchronous";
    sync.concurrency = 1;
    LevelResult s = RunLevel(sync);
    if (Stopping()) return;
    LoadSpec peak;
    peak.phase = "throughput";
    peak.concurrency = o_.max_concurrency > 0 ? o_.max_concurrency : kDefaultPeakConcurrency;
    LevelResult p = RunLevel(peak);
    if (Stopping()) return;
    if (!(s.request_throughput > 0) || !(p.request_throughput > 0)) {
      result_.aborted =
          "the synchronous or the throughput level had no successful request: no rates to sweep or search";
      return;
    }
    if (o_.sweep > 0) {
      for (double rate : stats::SweepRates(s.request_throughput, p.request_throughput, o_.sweep)) {
        if (Stopping()) break;
        RunLevel(RateSpec("sweep", rate));
      }
      return;
    }
    stats::GoodputSearch search(o_.slo_attainment, o_.search_tolerance, o_.search_max_probes);
    search.SetBaseline(s.request_throughput, search.Met(s.attainment), p.request_throughput);
    GoodputSearchResult& out = result_.search;
    out.ran = true;
    out.target_attainment = o_.slo_attainment;
    out.rule = search.Rule();
    while (auto rate = search.NextRate()) {
      if (Stopping()) break;
      std::size_t index = result_.levels.size();
      LevelResult L = RunLevel(RateSpec("search", *rate));
      if (Stopping() && L.total == 0) break;
      out.probe_levels.push_back(static_cast<int>(index));
      search.Record(*rate, L.attainment);
    }
    out.best_rate = search.best();
    out.lo = search.lo();
    out.hi = search.hi();
    out.outcome = search.Outcome();
    if (out.outcome.empty()) out.outcome = "interrupted before the stop rule was met";
  }

  const BenchOptions& o_;
  const BenchHooks& hooks_;
  std::unique_ptr<HttpClient> http_;
  OpenAiClient client_;
  BenchResult result_;
  std::string model_, method_;
  std::unique_ptr<PromptFactory> factory_;
  std::vector<DatasetEntry> sharegpt_;
  std::unique_ptr<JsonlDataset> jsonl_ds_;
  std::unique_ptr<JsonlWriter> jsonl_;
  std::int64_t tag_ = 0, done_ = 0;
  int consecutive_connect_ = 0;
  bool continuous_on_ = false, decided_ = false;
  std::atomic<bool> abort_{false};
  Clock::time_point last_progress_ = Clock::now();
};

}  // namespace

void ValidateBenchOptions(const BenchOptions& o) {
  if (o.url.rfind("http://", 0) != 0 && o.url.rfind("https://", 0) != 0)
    Fail("--url: expected http://host:port or https://..., got \"{}\"", o.url);
  for (int c : o.concurrency)
    if (c < 1 || c > 100000) Fail("--concurrency: expected 1-100000, got {}", c);
  for (double r : o.request_rates)
    if (!(r > 0)) Fail("--request-rate: expected a rate > 0 (req/s) or inf, got {}", r);
  int profiles = (!o.concurrency.empty() || !o.request_rates.empty() ? 1 : 0) +
                 (o.ramp != stats::RampKind::kNone ? 1 : 0) + (o.sweep > 0 ? 1 : 0) + (o.search_max_goodput ? 1 : 0);
  if (profiles > 1)
    Fail(
        "--concurrency/--request-rate, --ramp-up, --sweep and --search-max-goodput are different load profiles: pick "
        "one");
  if (o.ramp != stats::RampKind::kNone) {
    stats::ArrivalOptions a;
    a.ramp = o.ramp;
    a.ramp_start_rps = o.ramp_start_rps;
    a.ramp_end_rps = o.ramp_end_rps;
    a.total_requests = o.requests;
    a.duration_s = o.duration_s;
    a.kind = o.arrival;
    a.burstiness = o.burstiness;
    stats::ValidateArrivalOptions(a);
  } else if (o.ramp_start_rps != 0 || o.ramp_end_rps != 0) {
    Fail("--ramp-up-start-rps/--ramp-up-end-rps need --ramp-up linear|exponential");
  }
  if (o.arrival == stats::ArrivalKind::kGamma && (!(o.burstiness > 0) || !std::isfinite(o.burstiness)))
    Fail("--burstiness: expected a finite number > 0, got {}", o.burstiness);
  if (o.arrival != stats::ArrivalKind::kGamma && o.burstiness != 1)
    Fail("--burstiness {} needs --arrival gamma (poisson is burstiness 1)", o.burstiness);
  if (o.sweep < 0 || o.sweep > 100) Fail("--sweep: expected 1-100 rates, got {}", o.sweep);
  if (o.search_max_goodput && !o.slo.any())
    Fail("--search-max-goodput needs --goodput (e.g. --goodput ttft:2000 tpot:50)");
  if (o.max_concurrency < 0) Fail("--max-concurrency: expected >= 0, got {}", o.max_concurrency);
  if (o.requests < 0) Fail("--requests: expected >= 0, got {}", o.requests);
  if (o.requests == 0 && !(o.duration_s > 0)) Fail("--requests 0 (unlimited) needs --duration-s");
  if (o.duration_s < 0) Fail("--duration-s: expected >= 0, got {}", o.duration_s);
  if (!(o.timeout_s > 0)) Fail("--timeout-s: expected > 0, got {}", o.timeout_s);
  if (!(o.warmup_timeout_s > 0)) Fail("--warmup-timeout-s: expected > 0, got {}", o.warmup_timeout_s);
  if (o.input_len < 1) Fail("--input-len: expected >= 1, got {}", o.input_len);
  if (o.output_len < 1) Fail("--output-len: expected >= 1, got {}", o.output_len);
  if (o.dataset != "random" && o.dataset != "sharegpt" && o.dataset != "jsonl")
    Fail("--dataset: expected random, sharegpt or jsonl, got \"{}\"", o.dataset);
  if (o.dataset != "random" && o.dataset_path.empty()) Fail("--dataset {} needs --dataset-path FILE", o.dataset);
  if (o.dataset == "random" && !o.dataset_path.empty()) Fail("--dataset-path needs --dataset sharegpt or jsonl");
  if (o.dataset != "random" && o.shared_prefix_tokens > 0)
    Fail("--shared-prefix-tokens applies to --dataset random only");
  if (o.shared_prefix_tokens < 0) Fail("--shared-prefix-tokens: expected >= 0, got {}", o.shared_prefix_tokens);
  if (o.dataset_limit < 1) Fail("--dataset-limit: expected >= 1, got {}", o.dataset_limit);
  if (o.continuous_usage != "auto" && o.continuous_usage != "on" && o.continuous_usage != "off")
    Fail("--continuous-usage: expected auto, on or off, got \"{}\"", o.continuous_usage);
  if (!o.extra_body.is_object()) Fail("--extra-body: expected a JSON object");
  if (o.search_max_goodput) stats::GoodputSearch(o.slo_attainment, o.search_tolerance, o.search_max_probes);
}

BenchResult RunBench(const BenchOptions& options, const BenchHooks& hooks) {
  BenchOptions o = options;
  if (o.concurrency.empty() && o.request_rates.empty() && o.ramp == stats::RampKind::kNone && o.sweep == 0 &&
      !o.search_max_goodput)
    o.concurrency = {1};
  ValidateBenchOptions(o);
  Runner runner(o, hooks);
  return runner.Run();
}

}  // namespace ppdeploy::client
