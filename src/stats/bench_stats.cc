#include "stats/bench_stats.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.h"

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
  stats::QuantileEstimator e(v.size() + 1);
  for (double x : v) e.Add(x);
  return DistributionOf(e);
}

Distribution DistributionOf(const stats::QuantileEstimator& e) {
  Distribution d;
  d.method = e.Method();
  if (e.count() == 0) return d;
  d.count = e.count();
  d.mean = e.mean();
  d.stddev = e.stddev();
  d.median = e.Quantile(50);
  d.p90 = e.Quantile(90);
  d.p99 = e.Quantile(99);
  d.min = e.min();
  d.max = e.max();
  return d;
}

// ---------------------------------------------------------------- SLOs

std::string Slo::Text() const {
  std::string s;
  auto add = [&](const char* k, double v) {
    if (v >= 0) s += fmt::format("{}{}:{:g}", s.empty() ? "" : " ", k, v);
  };
  add("ttft", ttft_ms);
  add("tpot", tpot_ms);
  add("e2el", e2el_ms);
  return s;
}

Slo ParseSlo(const std::vector<std::string>& items) {
  Slo slo;
  for (const std::string& item : items) {
    std::size_t pos = 0;
    while (pos < item.size()) {
      std::size_t end = item.find_first_of(" ,", pos);
      if (end == std::string::npos) end = item.size();
      std::string one = item.substr(pos, end - pos);
      pos = end + 1;
      if (one.empty()) continue;
      std::size_t colon = one.find(':');
      if (colon == std::string::npos)
        Fail("--goodput: expected NAME:MS with NAME ttft, tpot or e2el (vLLM's syntax), got \"{}\"", one);
      std::string name = one.substr(0, colon), value = one.substr(colon + 1);
      double ms = 0;
      std::size_t used = 0;
      try {
        ms = std::stod(value, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != value.size() || value.empty() || !(ms >= 0) || !std::isfinite(ms))
        Fail("--goodput: {}: expected a number of milliseconds >= 0, got \"{}\"", name, value);
      if (name == "ttft") {
        slo.ttft_ms = ms;
      } else if (name == "tpot") {
        slo.tpot_ms = ms;
      } else if (name == "e2el") {
        slo.e2el_ms = ms;
      } else {
        Fail("--goodput: unknown metric \"{}\" in \"{}\" (expected ttft, tpot or e2el)", name, one);
      }
    }
  }
  if (!slo.any()) Fail("--goodput: no SLO given (e.g. --goodput ttft:2000 tpot:50)");
  return slo;
}

bool MeetsSlo(const RequestResult& r, const Slo& slo) {
  if (!r.ok() || !slo.any()) return false;
  if (slo.ttft_ms >= 0 && !(r.ttft_ms >= 0 && r.ttft_ms <= slo.ttft_ms)) return false;
  double tpot = r.output_tokens >= 2 ? r.tpot_ms : 0;  // vLLM: "if output_len <= 1, we regard tpot as 0"
  if (slo.tpot_ms >= 0 && !(tpot >= 0 && tpot <= slo.tpot_ms)) return false;
  if (slo.e2el_ms >= 0 && !(r.e2el_ms >= 0 && r.e2el_ms <= slo.e2el_ms)) return false;
  return true;
}

std::string LoadSpec::Label() const {
  std::string cap = concurrency > 0 ? fmt::format(" cap {}", concurrency) : "";
  if (phase == "synchronous") return "sync";
  if (phase == "throughput") return fmt::format("peak conc {}", concurrency);
  if (!ramp.empty()) return fmt::format("ramp {:g}->{:g} {}{}", ramp_start_rps, ramp_end_rps, ramp, cap);
  if (std::isinf(rate)) return fmt::format("rate inf{}", cap);
  if (rate > 0) {
    std::string r = fmt::format("{:.4g}", rate);
    std::string kind = arrival == "gamma" ? fmt::format("gamma(b={:g})", burstiness) : arrival;
    return fmt::format("rate {} {}{}", r, kind, cap);
  }
  return fmt::format("conc {}", concurrency);
}

// ---------------------------------------------------------------- the accumulator

LevelAccumulator::LevelAccumulator(LoadSpec load, Slo slo) : load_(std::move(load)), slo_(slo) {}

void LevelAccumulator::AddLength(Lengths& l, std::int64_t want, std::int64_t got, TokenCountSource source) {
  if (want >= 0) {
    ++l.targets;
    l.target_sum += static_cast<double>(want);
    l.same_target = l.same_target == -2 ? want : (l.same_target == want ? want : -1);
  }
  l.sum += static_cast<double>(got);
  l.min = l.n == 0 ? got : std::min(l.min, got);
  l.max = l.n == 0 ? got : std::max(l.max, got);
  ++l.n;
  if (want >= 0 && got != want && source != TokenCountSource::kUnknown) ++l.mismatched;
  ++l.sources[TokenCountSourceName(source)];
}

LengthCheck LevelAccumulator::CheckOf(const Lengths& l) {
  LengthCheck c;
  c.requested = l.same_target >= 0 ? l.same_target : -1;
  c.mean_requested = l.targets > 0 ? l.target_sum / static_cast<double>(l.targets) : 0;
  c.mean_achieved = l.n > 0 ? l.sum / static_cast<double>(l.n) : 0;
  c.min_achieved = l.min;
  c.max_achieved = l.max;
  c.mismatched = l.mismatched;
  c.source = l.sources.size() == 1 ? l.sources.begin()->first : l.sources.empty() ? "none" : "mixed";
  return c;
}

void LevelAccumulator::AddSend(std::int64_t index, double send_ms) {
  sends_.emplace(index, send_ms);
  if (next_send_index_ < 0) return;  // the first index is only known at Finish
  auto pop = [&](std::map<std::int64_t, double>::iterator it) {
    double t = it->second;
    if (sends_seen_ > 0) gaps_.Add(t - last_send_);
    if (first_send_ < 0) first_send_ = t;
    last_send_ = t;
    ++sends_seen_;
    next_send_index_ = it->first + 1;
    sends_.erase(it);
  };
  while (!sends_.empty() && (sends_.begin()->first <= next_send_index_ || sends_.size() > 100000)) pop(sends_.begin());
}

bool LevelAccumulator::Add(const RequestResult& r) {
  if (r.warmup) {
    ++warmup_.total;
    if (r.ok()) {
      ++warmup_.ok;
    } else {
      ++warmup_.failed;
      if (r.error_kind == RequestErrorKind::kCancelled) ++warmup_.cancelled;
      ++warmup_.errors[r.ErrorKey()];
    }
    return false;
  }
  ++total_;
  AddSend(r.index, r.send_offset_ms + r.send_lateness_ms);
  if (load_.open_loop()) lateness_.Add(r.send_lateness_ms);
  if (!r.ok()) {
    ++failed_;
    if (r.error_kind == RequestErrorKind::kCancelled) ++cancelled_;
    ++errors_[r.ErrorKey()];
    if (r.failed_at_ms >= 0) failed_at_.Add(r.failed_at_ms);
    if (r.stalled_ms >= 0) stalled_.Add(r.stalled_ms);
    return false;
  }
  ++ok_;
  out_tokens_ += static_cast<double>(r.output_tokens);
  in_tokens_ += static_cast<double>(std::max<std::int64_t>(0, r.input_tokens));
  if (r.ttft_ms >= 0) ttft_.Add(r.ttft_ms);
  if (r.tpot_ms >= 0) tpot_.Add(r.tpot_ms);
  e2el_.Add(r.e2el_ms);
  connect_.Add(r.connect_ms);
  for (double v : r.itl_ms) itl_.Add(v);
  for (double v : r.chunk_itl_ms) chunk_itl_.Add(v);
  // Without any usage the level's flag "counted by the client" says it already.
  if (!r.itl_exact && r.output_tokens >= 2 && r.output_tokens_source != TokenCountSource::kClientChunks) ++itl_approx_;
  if (r.output_tokens >= 2 && r.ttft_ms >= 0 && r.last_token_ms > r.ttft_ms)
    decode_.Add(static_cast<double>(r.output_tokens - 1) / ((r.last_token_ms - r.ttft_ms) / 1000.0));
  AddLength(input_, r.requested_input_tokens, r.input_tokens, r.input_tokens_source);
  AddLength(output_, r.requested_output_tokens, r.output_tokens, r.output_tokens_source);
  bool good = MeetsSlo(r, slo_);
  if (good) ++good_;
  return good;
}

LevelResult LevelAccumulator::Finish(double duration_ms, std::int64_t peak_in_flight) const {
  LevelResult L;
  L.load = load_;
  L.concurrency = load_.concurrency;
  L.total = total_;
  L.ok = ok_;
  L.failed = failed_;
  L.cancelled = cancelled_;
  L.duration_s = duration_ms / 1000.0;
  L.peak_in_flight = peak_in_flight;
  if (L.duration_s > 0) {
    L.request_throughput = static_cast<double>(ok_) / L.duration_s;
    L.output_throughput = out_tokens_ / L.duration_s;
    L.total_token_throughput = (out_tokens_ + in_tokens_) / L.duration_s;
  }
  L.ttft_ms = DistributionOf(ttft_);
  L.tpot_ms = DistributionOf(tpot_);
  L.itl_ms = DistributionOf(itl_);
  L.chunk_itl_ms = DistributionOf(chunk_itl_);
  L.e2el_ms = DistributionOf(e2el_);
  L.connect_ms = DistributionOf(connect_);
  L.decode_tok_s = DistributionOf(decode_);
  L.send_lateness_ms = DistributionOf(lateness_);
  L.failed_at_ms = DistributionOf(failed_at_);
  L.stalled_ms = DistributionOf(stalled_);
  for (int q = 0; q <= 100; ++q) {
    L.ttft_q.push_back(ttft_.Quantile(q));
    L.tpot_q.push_back(tpot_.Quantile(q));
    L.itl_q.push_back(itl_.Quantile(q));
  }
  // Arrivals: drain the re-order buffer (a copy: Finish is const).
  {
    stats::QuantileEstimator gaps = gaps_;
    double first = first_send_, last = last_send_;
    std::int64_t seen = sends_seen_;
    for (const auto& [index, t] : sends_) {
      if (seen > 0) gaps.Add(t - last);
      if (first < 0) first = t;
      last = t;
      ++seen;
    }
    if (seen >= 2 && last > first) L.arrival_rate = static_cast<double>(seen - 1) / ((last - first) / 1000.0);
    if (gaps.count() > 0 && gaps.mean() > 0) L.arrival_cv = gaps.stddev() / gaps.mean();
  }
  L.slo = slo_;
  if (slo_.any()) {
    L.good = good_;
    L.goodput_rps = L.duration_s > 0 ? static_cast<double>(good_) / L.duration_s : 0;
    L.attainment = total_ > 0 ? static_cast<double>(good_) / static_cast<double>(total_) : 0;
    L.attainment_ci = stats::Wilson(good_, total_);
  }
  L.errors = errors_;
  L.input = CheckOf(input_);
  L.output = CheckOf(output_);
  L.warmup = warmup_;
  if (L.input.mismatched > 0)
    L.flags.push_back(
        fmt::format("input length: {} of {} requests differ from their requested length (mean requested "
                    "{:.1f}, achieved {}-{})",
                    L.input.mismatched, L.ok, L.input.mean_requested, L.input.min_achieved, L.input.max_achieved));
  if (L.output.mismatched > 0)
    L.flags.push_back(
        fmt::format("output length: {} of {} requests differ from their requested length (mean requested "
                    "{:.1f}, achieved {}-{})",
                    L.output.mismatched, L.ok, L.output.mean_requested, L.output.min_achieved, L.output.max_achieved));
  if (L.output.source == TokenCountSourceName(TokenCountSource::kClientChunks) || L.output.source == "mixed")
    L.flags.push_back(
        "output tokens counted by the client (one per chunk): the server sent no usage; ITL/TPOT may be off");
  if (L.input.source == "unknown" && L.ok > 0)
    L.flags.push_back("input length unknown: the server reported no prompt_tokens");
  if (itl_approx_ > 0)
    L.flags.push_back(
        fmt::format("per-token ITL of {} requests is approximate: their chunks carried several tokens and "
                    "the server sent no per-chunk usage (use --continuous-usage on)",
                    itl_approx_));
  if (load_.open_loop() && L.send_lateness_ms.count > 0 && L.send_lateness_ms.p99 > 10)
    L.flags.push_back(
        fmt::format("the client fell behind the arrival schedule: send lateness p99 {:.1f} ms (max {:.1f})"
                    "{}",
                    L.send_lateness_ms.p99, L.send_lateness_ms.max,
                    load_.concurrency > 0 ? " (the concurrency cap queues requests)" : ""));
  if (L.ok == 0 && L.total > 0) L.flags.push_back("no request succeeded");
  if (warmup_.failed > 0)
    L.flags.push_back(
        fmt::format("warm-up: {} of {} requests failed (not counted in this level)", warmup_.failed, warmup_.total));
  return L;
}

LevelResult SummarizeLevel(int concurrency, const std::vector<RequestResult>& results, double duration_ms) {
  LoadSpec load;
  load.concurrency = concurrency;
  LevelAccumulator acc(load);
  for (const auto& r : results) acc.Add(r);
  return acc.Finish(duration_ms);
}

}  // namespace ppdeploy
