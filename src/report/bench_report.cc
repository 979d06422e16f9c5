#include "report/bench_report.h"

#include <fmt/format.h>

#include <cmath>
#include <sstream>

#include "report/table.h"

namespace ppdeploy {
namespace {

nlohmann::json DistJson(const Distribution& d) {
  return {{"count", d.count}, {"mean", d.mean}, {"std", d.stddev}, {"median", d.median},     {"p90", d.p90},
          {"p99", d.p99},     {"min", d.min},   {"max", d.max},    {"percentiles", d.method}};
}

nlohmann::json LengthJson(const LengthCheck& c) {
  return {{"requested", c.requested},
          {"mean_requested", c.mean_requested},
          {"mean_achieved", c.mean_achieved},
          {"min_achieved", c.min_achieved},
          {"max_achieved", c.max_achieved},
          {"mismatched", c.mismatched},
          {"source", c.source}};
}

nlohmann::json Number(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json("inf"); }

nlohmann::json LoadJson(const LoadSpec& l) {
  nlohmann::json j = {
      {"phase", l.phase}, {"label", l.Label()}, {"concurrency", l.concurrency}, {"open_loop", l.open_loop()}};
  if (l.rate > 0) j["request_rate"] = Number(l.rate);
  if (!l.arrival.empty()) {
    j["arrival"] = l.arrival;
    j["burstiness"] = l.burstiness;
  }
  if (!l.ramp.empty())
    j["ramp_up"] = {{"strategy", l.ramp}, {"start_rps", l.ramp_start_rps}, {"end_rps", l.ramp_end_rps}};
  return j;
}

std::string ErrorsText(const std::map<std::string, std::int64_t>& errors) {
  std::string s;
  for (const auto& [k, v] : errors) s += fmt::format("{}{}={}", s.empty() ? "" : " ", k, v);
  return s.empty() ? "none" : s;
}

std::string GoodputText(const LevelResult& L) {
  if (!L.slo.any()) return "-";
  return fmt::format("{:.2f} ({:.1f}%)", L.goodput_rps, L.attainment * 100);
}

// The per-level table shared by Markdown and HTML.
Table LevelTable(const BenchResult& r) {
  Table t;
  t.headers = {"load",
               "ok",
               "failed",
               "req/s",
               "out tok/s",
               "goodput req/s (attained)",
               "TTFT ms mean",
               "TTFT ms p50",
               "TTFT ms p90",
               "TTFT ms p99",
               "TPOT ms p50",
               "TPOT ms p99",
               "ITL/token p50",
               "ITL/token p99",
               "ITL/chunk p50",
               "ITL/chunk p99",
               "E2EL ms p50",
               "E2EL ms p99",
               "decode tok/s p50",
               "arrivals req/s (CV)",
               "errors"};
  for (const auto& L : r.levels) {
    t.AddRow({L.load.Label(),
              std::to_string(L.ok),
              std::to_string(L.failed),
              fmt::format("{:.2f}", L.request_throughput),
              fmt::format("{:.1f}", L.output_throughput),
              GoodputText(L),
              fmt::format("{:.1f}", L.ttft_ms.mean),
              fmt::format("{:.1f}", L.ttft_ms.median),
              fmt::format("{:.1f}", L.ttft_ms.p90),
              fmt::format("{:.1f}", L.ttft_ms.p99),
              fmt::format("{:.2f}", L.tpot_ms.median),
              fmt::format("{:.2f}", L.tpot_ms.p99),
              fmt::format("{:.2f}", L.itl_ms.median),
              fmt::format("{:.2f}", L.itl_ms.p99),
              fmt::format("{:.2f}", L.chunk_itl_ms.median),
              fmt::format("{:.2f}", L.chunk_itl_ms.p99),
              fmt::format("{:.0f}", L.e2el_ms.median),
              fmt::format("{:.0f}", L.e2el_ms.p99),
              fmt::format("{:.1f}", L.decode_tok_s.median),
              fmt::format("{:.2f} ({:.2f})", L.arrival_rate, L.arrival_cv),
              ErrorsText(L.errors)});
  }
  return t;
}

std::string SearchText(const GoodputSearchResult& s) {
  std::string out = s.best_rate >= 0 ? fmt::format("highest rate meeting the SLOs: {:.3g} req/s", s.best_rate)
                                     : std::string("no rate met the SLOs");
  out += fmt::format(" (bracket [{:.3g}, {:.3g}]; {})", s.lo, s.hi, s.outcome);
  return out;
}

}  // namespace

const std::vector<std::pair<std::string, std::string>>& BenchMetricDefinitions() {
  static const std::vector<std::pair<std::string, std::string>> defs = {
      {"intended send time",
       "closed loop (--concurrency): when a slot freed and the request started; open loop "
       "(--request-rate): its scheduled arrival, so client lateness and queueing under "
       "--max-concurrency count in every latency (and are reported as send lateness)"},
      {"TTFT",
       "time from the intended send time to the first chunk carrying >= 1 output token (connect time included)"},
      {"ITL per token",
       "gap between token-carrying chunks split per token: a chunk carrying n tokens (server usage "
       "delta) gives n values of gap/n; pooled over requests. Approximate (flagged) when chunks carry "
       "several tokens and the server sent no per-chunk usage"},
      {"ITL per chunk",
       "raw gap between successive token-carrying chunks, pooled over requests: vLLM bench's ITL "
       "(one chunk assumed to be one token; inflated when chunks bundle tokens, vllm#27485)"},
      {"TPOT",
       "(last token-carrying chunk - TTFT) / (output_tokens - 1) per request, requests with >= 2 tokens "
       "(vLLM bench's definition and end point); GuideLLM's TPOT includes the first token, this one does not"},
      {"E2EL",
       "intended send time to the last byte of the response (vLLM bench ends at the last token chunk, before "
       "the usage chunk and [DONE]; that point is last_token_ms in the JSONL)"},
      {"decode tok/s",
       "per request (output_tokens - 1) / (last token - TTFT); the median over requests is the "
       "per-stream decode speed"},
      {"req/s, out tok/s",
       "successful requests and their output tokens (server usage) / level duration (first send "
       "to last result); warm-up excluded"},
      {"goodput",
       "requests/s that succeeded and met every --goodput SLO (TTFT <= ttft, TPOT <= tpot with TPOT 0 for a "
       "one-token answer, E2EL <= e2el; vLLM bench's rule); attained = good / measured requests"},
      {"arrivals",
       "measured arrival rate (sends - 1) / (last send - first send) and the coefficient of variation of "
       "the gaps between actual sends (1 for Poisson)"},
      {"failed requests",
       "failed_at_ms: intended send time -> failure; stalled_ms: last byte received (or the send) -> "
       "failure"},
      {"warm-up",
       "requests before each level, outside all of its figures (faults included); stragglers are cancelled "
       "at --warmup-timeout-s"},
      {"percentiles",
       "numpy.percentile linear interpolation (exact) up to 10,000 values per metric, then a log-bucket "
       "sketch: within 0.5% relative of the values numpy would interpolate between"},
      {"tokens",
       "from the server's usage (stream_options.include_usage; continuous_usage_stats when on); client "
       "fallbacks are labelled"},
  };
  return defs;
}

std::string RenderBenchTable(const BenchResult& r) {
  std::string s = fmt::format("ppdeploy bench: {} model={} endpoint={} dataset={} prompts={}\n", r.url, r.model,
                              r.endpoint, r.dataset, r.input_len_method);
  if (!r.continuous_usage.empty()) s += "continuous usage: " + r.continuous_usage + "\n";
  s += fmt::format("{:<28} {:>6} {:>5} {:>8} {:>10} {:>15} | {:>26} | {:>19} | {:>13} | {:>13} | {:>13} | {}\n", "load",
                   "ok", "fail", "req/s", "out tok/s", "goodput (att.)", "TTFT ms mean/med/p90/p99",
                   "TPOT ms med/p90/p99", "ITL/tok med/p99", "ITL/chk med/p99", "E2EL ms med/p99", "errors");
  for (const auto& L : r.levels) {
    s += fmt::format(
        "{:<28} {:>6} {:>5} {:>8.2f} {:>10.1f} {:>15} | {:>6.1f}/{:>6.1f}/{:>6.1f}/{:>6.1f} | "
        "{:>5.2f}/{:>6.2f}/{:>6.2f} | {:>6.2f}/{:>6.2f} | {:>6.2f}/{:>6.2f} | {:>6.0f}/{:>6.0f} | {}\n",
        L.load.Label(), L.ok, L.failed, L.request_throughput, L.output_throughput, GoodputText(L), L.ttft_ms.mean,
        L.ttft_ms.median, L.ttft_ms.p90, L.ttft_ms.p99, L.tpot_ms.median, L.tpot_ms.p90, L.tpot_ms.p99, L.itl_ms.median,
        L.itl_ms.p99, L.chunk_itl_ms.median, L.chunk_itl_ms.p99, L.e2el_ms.median, L.e2el_ms.p99, ErrorsText(L.errors));
  }
  for (const auto& L : r.levels) {
    std::string tag = L.load.Label();
    s += fmt::format(
        "  {}: input tokens requested {:.1f} achieved mean {:.1f} ({}); output tokens requested {:.1f} "
        "achieved mean {:.1f} ({})",
        tag, L.input.mean_requested, L.input.mean_achieved, L.input.source, L.output.mean_requested,
        L.output.mean_achieved, L.output.source);
    if (L.load.open_loop())
      s += fmt::format("; arrivals {:.2f} req/s, CV {:.2f}, send lateness p99 {:.1f} ms", L.arrival_rate, L.arrival_cv,
                       L.send_lateness_ms.p99);
    if (L.failed > 0 && L.stalled_ms.count > 0)
      s += fmt::format("; failed requests stalled median {:.0f} ms, max {:.0f} ms", L.stalled_ms.median,
                       L.stalled_ms.max);
    if (L.warmup.total > 0) s += fmt::format("; warm-up {}/{} ok", L.warmup.ok, L.warmup.total);
    s += "\n";
    for (const auto& f : L.flags) s += fmt::format("  {}: WARNING {}\n", tag, f);
  }
  if (r.search.ran) {
    s += "Goodput search: " + SearchText(r.search) + "\n";
    s += "  stop rule: " + r.search.rule + "\n";
  }
  if (r.interrupted) s += "Interrupted (SIGINT): the figures cover the requests that finished.\n";
  if (!r.aborted.empty()) s += "Stopped early: " + r.aborted + "\n";
  for (const auto& n : r.notes) s += "Note: " + n + "\n";
  if (!r.jsonl_path.empty()) s += "Per-request records: " + r.jsonl_path + "\n";
  s += "Definitions:\n";
  for (const auto& [k, v] : BenchMetricDefinitions()) s += fmt::format("  {}: {}\n", k, v);
  return s;
}

nlohmann::json RenderBenchJson(const BenchResult& r) {
  nlohmann::json levels = nlohmann::json::array();
  for (const auto& L : r.levels) {
    nlohmann::json j = {
        {"load", LoadJson(L.load)},
        {"concurrency", L.concurrency},
        {"requests", {{"total", L.total}, {"ok", L.ok}, {"failed", L.failed}, {"cancelled", L.cancelled}}},
        {"duration_s", L.duration_s},
        {"request_throughput_rps", L.request_throughput},
        {"output_throughput_tok_s", L.output_throughput},
        {"total_token_throughput_tok_s", L.total_token_throughput},
        {"per_stream_decode_tok_s", DistJson(L.decode_tok_s)},
        {"ttft_ms", DistJson(L.ttft_ms)},
        {"tpot_ms", DistJson(L.tpot_ms)},
        {"itl_ms", DistJson(L.itl_ms)},
        {"itl_per_chunk_ms", DistJson(L.chunk_itl_ms)},
        {"e2el_ms", DistJson(L.e2el_ms)},
        {"connect_ms", DistJson(L.connect_ms)},
        {"arrivals",
         {{"measured_rate_rps", L.arrival_rate},
          {"gap_cv", L.arrival_cv},
          {"send_lateness_ms", DistJson(L.send_lateness_ms)}}},
        {"peak_in_flight", L.peak_in_flight},
        {"client_cpu_s", L.client_cpu_s},
        {"failed_requests", {{"failed_at_ms", DistJson(L.failed_at_ms)}, {"stalled_ms", DistJson(L.stalled_ms)}}},
        {"errors", L.errors},
        {"warmup",
         {{"total", L.warmup.total},
          {"ok", L.warmup.ok},
          {"failed", L.warmup.failed},
          {"cancelled", L.warmup.cancelled},
          {"wall_s", L.warmup.wall_s},
          {"errors", L.warmup.errors}}},
        {"input_tokens", LengthJson(L.input)},
        {"output_tokens", LengthJson(L.output)},
        {"quantiles", {{"q", "0..100 step 1"}, {"ttft_ms", L.ttft_q}, {"tpot_ms", L.tpot_q}, {"itl_ms", L.itl_q}}},
        {"flags", L.flags}};
    if (L.slo.any()) {
      j["goodput"] = {{"slo", L.slo.Text()},
                      {"good", L.good},
                      {"goodput_rps", L.goodput_rps},
                      {"attainment", L.attainment},
                      {"attainment_wilson95", {L.attainment_ci.lower, L.attainment_ci.upper}}};
    }
    levels.push_back(std::move(j));
  }
  nlohmann::json defs = nlohmann::json::object();
  for (const auto& [k, v] : BenchMetricDefinitions()) defs[k] = v;
  nlohmann::json out = {{"schema", "ppdeploy.bench/2"},
                        {"url", r.url},
                        {"model", r.model},
                        {"endpoint", r.endpoint},
                        {"dataset", r.dataset},
                        {"profile", r.profile},
                        {"input_len_method", r.input_len_method},
                        {"continuous_usage", r.continuous_usage},
                        {"settings", r.settings},
                        {"levels", levels},
                        {"interrupted", r.interrupted},
                        {"aborted", r.aborted},
                        {"jsonl", r.jsonl_path},
                        {"notes", r.notes},
                        {"metric_definitions", defs}};
  if (r.search.ran) {
    out["goodput_search"] = {
        {"target_attainment", r.search.target_attainment},
        {"best_rate_rps", r.search.best_rate >= 0 ? nlohmann::json(r.search.best_rate) : nlohmann::json(nullptr)},
        {"bracket_rps", {r.search.lo, r.search.hi}},
        {"stop_rule", r.search.rule},
        {"outcome", r.search.outcome},
        {"probe_levels", r.search.probe_levels}};
  }
  return out;
}

std::string RenderBenchMarkdown(const BenchResult& r) {
  std::ostringstream out;
  out << "# ppdeploy bench\n\n"
      << fmt::format("`{}` model `{}`, endpoint {}, dataset {}, prompts: {}", r.url, r.model, r.endpoint, r.dataset,
                     r.input_len_method);
  if (!r.continuous_usage.empty()) out << "; continuous usage: " << r.continuous_usage;
  out << "\n\n";
  LevelTable(r).RenderMarkdown(out);
  out << "\n";
  for (const auto& L : r.levels)
    for (const auto& f : L.flags) out << "- **" << L.load.Label() << "**: " << f << "\n";
  if (r.search.ran)
    out << "\n**Goodput search**: " << SearchText(r.search) << ". Stop rule: " << r.search.rule << ".\n";
  if (r.interrupted) out << "\nInterrupted (SIGINT): the figures cover the requests that finished.\n";
  if (!r.aborted.empty()) out << "\nStopped early: " << r.aborted << "\n";
  for (const auto& n : r.notes) out << "\nNote: " << n << "\n";
  out << "\n## Definitions\n\n";
  for (const auto& [k, v] : BenchMetricDefinitions()) out << "- **" << k << "**: " << v << "\n";
  return out.str();
}

std::string RenderBenchCsv(const BenchResult& r) {
  std::string s =
      "load,concurrency,request_rate,total,ok,failed,duration_s,request_throughput_rps,output_throughput_tok_s,"
      "goodput_rps,attainment,decode_tok_s_median,"
      "ttft_ms_mean,ttft_ms_median,ttft_ms_p90,ttft_ms_p99,tpot_ms_mean,tpot_ms_median,tpot_ms_p90,tpot_ms_p99,"
      "itl_ms_mean,itl_ms_median,itl_ms_p90,itl_ms_p99,itl_chunk_ms_mean,itl_chunk_ms_median,itl_chunk_ms_p90,"
      "itl_chunk_ms_p99,e2el_ms_mean,e2el_ms_median,e2el_ms_p90,e2el_ms_p99,arrival_rate_rps,arrival_cv,"
      "input_tokens_requested,input_tokens_mean,input_mismatched,output_tokens_requested,output_tokens_mean,"
      "output_mismatched,errors\n";
  for (const auto& L : r.levels) {
    s += fmt::format("{},{},{},{},{},{},{:.3f},{:.3f},{:.3f},", CsvField(L.load.Label()), L.concurrency,
                     std::isfinite(L.load.rate) ? fmt::format("{:g}", L.load.rate) : "inf", L.total, L.ok, L.failed,
                     L.duration_s, L.request_throughput, L.output_throughput);
    s += L.slo.any() ? fmt::format("{:.3f},{:.4f},", L.goodput_rps, L.attainment) : ",,";
    s += fmt::format("{:.3f},", L.decode_tok_s.median);
    for (const Distribution* d : {&L.ttft_ms, &L.tpot_ms, &L.itl_ms, &L.chunk_itl_ms, &L.e2el_ms})
      s += fmt::format("{:.3f},{:.3f},{:.3f},{:.3f},", d->mean, d->median, d->p90, d->p99);
    s += fmt::format("{:.3f},{:.3f},", L.arrival_rate, L.arrival_cv);
    s += fmt::format("{:.2f},{:.2f},{},{:.2f},{:.2f},{},{}\n", L.input.mean_requested, L.input.mean_achieved,
                     L.input.mismatched, L.output.mean_requested, L.output.mean_achieved, L.output.mismatched,
                     CsvField(ErrorsText(L.errors)));
  }
  return s;
}

}  // namespace ppdeploy
