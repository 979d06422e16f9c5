#include "report/bench_report.h"

#include <fmt/format.h>

namespace ppdeploy {
namespace {

nlohmann::json DistJson(const Distribution& d) {
  return {{"count", d.count}, {"mean", d.mean}, {"median", d.median}, {"p90", d.p90},
          {"p99", d.p99},     {"min", d.min},   {"max", d.max}};
}

nlohmann::json LengthJson(const LengthCheck& c) {
  return {{"requested", c.requested}, {"mean_achieved", c.mean_achieved}, {"min_achieved", c.min_achieved},
          {"max_achieved", c.max_achieved}, {"mismatched", c.mismatched}, {"source", c.source}};
}

std::string ErrorsText(const LevelResult& L) {
  std::string s;
  for (const auto& [k, v] : L.errors) s += fmt::format("{}{}={}", s.empty() ? "" : " ", k, v);
  return s.empty() ? "none" : s;
}

}  // namespace

const std::vector<std::pair<std::string, std::string>>& BenchMetricDefinitions() {
  static const std::vector<std::pair<std::string, std::string>> defs = {
      {"TTFT", "time from the intended send time to the first chunk carrying >= 1 output token (connect time included)"},
      {"ITL", "gap between token-carrying chunks; a chunk carrying n tokens (server usage delta) gives n values of gap/n; "
              "pooled over requests"},
      {"TPOT", "(E2EL - TTFT) / (output_tokens - 1) per request, requests with >= 2 tokens (vLLM bench definition)"},
      {"E2EL", "intended send time to the last byte of the response"},
      {"decode tok/s", "per request (output_tokens - 1) / (E2EL - TTFT); the median over requests is the per-stream "
                       "decode speed (content-controlled median)"},
      {"req/s, out tok/s", "successful requests and their output tokens (server usage) / level wall time (first send to "
                           "last result); warm-up excluded"},
      {"tokens", "from the server's usage (stream_options.include_usage, continuous_usage_stats); client fallbacks are "
                 "labelled"},
  };
  return defs;
}

std::string RenderBenchTable(const BenchResult& r) {
  std::string s = fmt::format("ppdeploy bench: {} model={} endpoint={} input_len_method={}\n", r.url, r.model,
                              r.endpoint, r.input_len_method);
  s += fmt::format("{:>5} {:>6} {:>5} {:>8} {:>10} {:>9} | {:>26} | {:>19} | {:>19} | {:>19} | {}\n", "conc", "ok",
                   "fail", "req/s", "out tok/s", "decode/s", "TTFT ms mean/med/p90/p99", "TPOT ms med/p90/p99",
                   "ITL ms med/p90/p99", "E2EL ms med/p90/p99", "errors");
  for (const auto& L : r.levels) {
    s += fmt::format("{:>5} {:>6} {:>5} {:>8.1f} {:>10.1f} {:>9.1f} | {:>6.1f}/{:>6.1f}/{:>6.1f}/{:>6.1f} | "
                     "{:>5.2f}/{:>6.2f}/{:>6.2f} | {:>5.2f}/{:>6.2f}/{:>6.2f} | {:>5.0f}/{:>6.0f}/{:>6.0f} | {}\n",
                     L.concurrency, L.ok, L.failed, L.request_throughput, L.output_throughput, L.decode_tok_s.median,
                     L.ttft_ms.mean, L.ttft_ms.median, L.ttft_ms.p90, L.ttft_ms.p99, L.tpot_ms.median, L.tpot_ms.p90,
                     L.tpot_ms.p99, L.itl_ms.median, L.itl_ms.p90, L.itl_ms.p99, L.e2el_ms.median, L.e2el_ms.p90,
                     L.e2el_ms.p99, ErrorsText(L));
  }
  for (const auto& L : r.levels) {
    s += fmt::format("  conc {}: input tokens requested {} achieved mean {:.1f} ({}); output tokens requested {} "
                     "achieved mean {:.1f} ({})\n",
                     L.concurrency, L.input.requested, L.input.mean_achieved, L.input.source, L.output.requested,
                     L.output.mean_achieved, L.output.source);
    for (const auto& f : L.flags) s += fmt::format("  conc {}: WARNING {}\n", L.concurrency, f);
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
    levels.push_back({{"concurrency", L.concurrency},
                      {"requests", {{"total", L.total}, {"ok", L.ok}, {"failed", L.failed}, {"cancelled", L.cancelled}}},
                      {"duration_s", L.duration_s},
                      {"request_throughput_rps", L.request_throughput},
                      {"output_throughput_tok_s", L.output_throughput},
                      {"per_stream_decode_tok_s", DistJson(L.decode_tok_s)},
                      {"ttft_ms", DistJson(L.ttft_ms)},
                      {"tpot_ms", DistJson(L.tpot_ms)},
                      {"itl_ms", DistJson(L.itl_ms)},
                      {"e2el_ms", DistJson(L.e2el_ms)},
                      {"connect_ms", DistJson(L.connect_ms)},
                      {"errors", L.errors},
                      {"input_tokens", LengthJson(L.input)},
                      {"output_tokens", LengthJson(L.output)},
                      {"flags", L.flags}});
  }
  nlohmann::json defs = nlohmann::json::object();
  for (const auto& [k, v] : BenchMetricDefinitions()) defs[k] = v;
  return {{"schema", "ppdeploy.bench/1"},
          {"url", r.url},
          {"model", r.model},
          {"endpoint", r.endpoint},
          {"input_len_method", r.input_len_method},
          {"settings", r.settings},
          {"levels", levels},
          {"interrupted", r.interrupted},
          {"aborted", r.aborted},
          {"jsonl", r.jsonl_path},
          {"notes", r.notes},
          {"metric_definitions", defs}};
}

std::string RenderBenchCsv(const BenchResult& r) {
  std::string s =
      "concurrency,total,ok,failed,duration_s,request_throughput_rps,output_throughput_tok_s,decode_tok_s_median,"
      "ttft_ms_mean,ttft_ms_median,ttft_ms_p90,ttft_ms_p99,tpot_ms_mean,tpot_ms_median,tpot_ms_p90,tpot_ms_p99,"
      "itl_ms_mean,itl_ms_median,itl_ms_p90,itl_ms_p99,e2el_ms_mean,e2el_ms_median,e2el_ms_p90,e2el_ms_p99,"
      "input_tokens_requested,input_tokens_mean,input_mismatched,output_tokens_requested,output_tokens_mean,"
      "output_mismatched,errors\n";
  for (const auto& L : r.levels) {
    s += fmt::format("{},{},{},{},{:.3f},{:.3f},{:.3f},{:.3f},", L.concurrency, L.total, L.ok, L.failed, L.duration_s,
                     L.request_throughput, L.output_throughput, L.decode_tok_s.median);
    for (const Distribution* d : {&L.ttft_ms, &L.tpot_ms, &L.itl_ms, &L.e2el_ms})
      s += fmt::format("{:.3f},{:.3f},{:.3f},{:.3f},", d->mean, d->median, d->p90, d->p99);
    s += fmt::format("{},{:.2f},{},{},{:.2f},{},\"{}\"\n", L.input.requested, L.input.mean_achieved, L.input.mismatched,
                     L.output.requested, L.output.mean_achieved, L.output.mismatched, ErrorsText(L));
  }
  return s;
}

}  // namespace ppdeploy
