#include "stats/bench_stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

namespace ppdeploy {

double PercentileSorted(const std::vector<double>& s, double q) {
  if (s.empty()) return 0;
  if (s.size() == 1) return s[0];
  double rank = std::clamp(q, 0.0, 100.0) / 100.0 * static_cast<double>(s.size() - 1);
  auto lo = static_cast<std::size_t>(std::floor(rank));
  std::size_t hi = std::min(lo + 1, s.size() - 1);
  double frac = rank - static_cast<double>(lo);
  return s[lo] + (s[hi] - s[lo]) * frac;
}

Distribution Summarize(std::vector<double> v) {
  Distribution d;
  if (v.empty()) return d;
  std::sort(v.begin(), v.end());
  d.count = static_cast<std::int64_t>(v.size());
  d.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  d.median = PercentileSorted(v, 50);
  d.p90 = PercentileSorted(v, 90);
  d.p99 = PercentileSorted(v, 99);
  d.min = v.front();
  d.max = v.back();
  return d;
}

namespace {

LengthCheck CheckLengths(const std::vector<const RequestResult*>& ok, bool input) {
  LengthCheck c;
  std::map<std::string, int> sources;
  double sum = 0;
  bool first = true;
  for (const RequestResult* r : ok) {
    std::int64_t want = input ? r->requested_input_tokens : r->requested_output_tokens;
    std::int64_t got = input ? r->input_tokens : r->output_tokens;
    if (want >= 0) c.requested = want;  // one target per level
    sum += static_cast<double>(got);
    c.min_achieved = first ? got : std::min(c.min_achieved, got);
    c.max_achieved = first ? got : std::max(c.max_achieved, got);
    first = false;
    auto source = input ? r->input_tokens_source : r->output_tokens_source;
    if (want >= 0 && got != want && source != TokenCountSource::kUnknown) ++c.mismatched;
    ++sources[TokenCountSourceName(input ? r->input_tokens_source : r->output_tokens_source)];
  }
  if (!ok.empty()) c.mean_achieved = sum / static_cast<double>(ok.size());
  c.source = sources.size() == 1 ? sources.begin()->first : sources.empty() ? "none" : "mixed";
  return c;
}

}  // namespace

LevelResult SummarizeLevel(int concurrency, const std::vector<RequestResult>& results, double duration_ms) {
  LevelResult L;
  L.concurrency = concurrency;
  L.duration_s = duration_ms / 1000.0;
  std::vector<double> ttft, tpot, itl, e2el, connect, decode;
  std::vector<const RequestResult*> ok;
  double out_tokens = 0;
  for (const auto& r : results) {
    if (r.warmup) continue;
    ++L.total;
    if (r.error_kind == RequestErrorKind::kCancelled) ++L.cancelled;
    if (!r.ok()) {
      ++L.failed;
      ++L.errors[r.ErrorKey()];
      continue;
    }
    ++L.ok;
    ok.push_back(&r);
    out_tokens += static_cast<double>(r.output_tokens);
    if (r.ttft_ms >= 0) ttft.push_back(r.ttft_ms);
    if (r.tpot_ms >= 0) tpot.push_back(r.tpot_ms);
    e2el.push_back(r.e2el_ms);
    connect.push_back(r.connect_ms);
    itl.insert(itl.end(), r.itl_ms.begin(), r.itl_ms.end());
    if (r.output_tokens >= 2 && r.e2el_ms > r.ttft_ms && r.ttft_ms >= 0)
      decode.push_back(static_cast<double>(r.output_tokens - 1) / ((r.e2el_ms - r.ttft_ms) / 1000.0));
  }
  if (L.duration_s > 0) {
    L.request_throughput = static_cast<double>(L.ok) / L.duration_s;
    L.output_throughput = out_tokens / L.duration_s;
  }
  L.ttft_ms = Summarize(ttft);
  L.tpot_ms = Summarize(tpot);
  L.itl_ms = Summarize(itl);
  L.e2el_ms = Summarize(e2el);
  L.connect_ms = Summarize(connect);
  L.decode_tok_s = Summarize(decode);
  L.input = CheckLengths(ok, true);
  L.output = CheckLengths(ok, false);
  if (L.input.mismatched > 0)
    L.flags.push_back(fmt::format("input length: {} of {} requests differ from the requested {} tokens (achieved {}-{})",
                                  L.input.mismatched, L.ok, L.input.requested, L.input.min_achieved, L.input.max_achieved));
  if (L.output.mismatched > 0)
    L.flags.push_back(fmt::format("output length: {} of {} requests differ from the requested {} tokens (achieved {}-{})",
                                  L.output.mismatched, L.ok, L.output.requested, L.output.min_achieved, L.output.max_achieved));
  if (L.output.source == TokenCountSourceName(TokenCountSource::kClientChunks) || L.output.source == "mixed")
    L.flags.push_back("output tokens counted by the client (one per chunk): the server sent no usage; ITL/TPOT may be off");
  if (L.input.source == "unknown" && L.ok > 0) L.flags.push_back("input length unknown: the server reported no prompt_tokens");
  std::int64_t per_chunk = 0;
  for (const RequestResult* r : ok)
    if (r->output_tokens >= 2 && static_cast<std::int64_t>(r->itl_ms.size()) + 1 != r->output_tokens) ++per_chunk;
  if (per_chunk > 0)
    L.flags.push_back(fmt::format("ITL of {} requests is per chunk, not per token (chunks carried several tokens and the "
                                  "server sent no per-chunk usage)", per_chunk));
  if (L.ok == 0 && L.total > 0) L.flags.push_back("no request succeeded");
  return L;
}

}  // namespace ppdeploy
