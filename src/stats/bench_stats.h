// Summary statistics of a benchmark level (pure), accumulated request by request in constant memory
// (stats/estimator.h): a level keeps counters and estimators, never the requests. Percentiles are exact
// (numpy.percentile's default linear interpolation, which vLLM's vllm/benchmarks/serve.py uses) while a
// metric has at most 10,000 values, then a sketch with a documented relative error bound (0.5%).
//
// Goodput (vLLM --goodput, DistServe's SLO attainment): a request is good when it succeeded and every given
// SLO holds: TTFT <= ttft, TPOT <= tpot (a one-token answer has TPOT 0), E2EL <= e2el. Goodput = good
// requests / level duration; attainment = good / measured requests (failures are never good).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "stats/binomial.h"
#include "stats/estimator.h"
#include "stats/request_result.h"

namespace ppdeploy {

/// count/mean/std/median/p90/p99/min/max of a sample; all 0 with count 0 for an empty sample.
struct Distribution {
  std::int64_t count = 0;
  double mean = 0, stddev = 0, median = 0, p90 = 0, p99 = 0, min = 0, max = 0;
  std::string method = "exact";  ///< QuantileEstimator::Method() of the percentiles
};

/// The q-th percentile (q in [0, 100]) of an ascending sample, linear interpolation; 0 for an empty sample.
double PercentileSorted(const std::vector<double>& sorted, double q);
Distribution Summarize(std::vector<double> values);
Distribution DistributionOf(const stats::QuantileEstimator& estimator);

/// Service-level objectives of --goodput (ms; < 0 = not set).
struct Slo {
  double ttft_ms = -1, tpot_ms = -1, e2el_ms = -1;
  bool any() const { return ttft_ms >= 0 || tpot_ms >= 0 || e2el_ms >= 0; }
  /// "ttft:150 tpot:50" (the given ones, vLLM's syntax).
  std::string Text() const;
};
/// Parses vLLM's --goodput items "ttft:MS", "tpot:MS", "e2el:MS" (each item may hold several separated by
/// spaces or commas). Throws Error naming --goodput and the bad item.
Slo ParseSlo(const std::vector<std::string>& items);
/// Whether `r` succeeded and meets every SLO of `slo` (vLLM calculate_metrics: value <= bound).
bool MeetsSlo(const RequestResult& r, const Slo& slo);

/// What a level asked of the server.
struct LoadSpec {
  std::string phase = "concurrency";  ///< concurrency, rate, ramp, synchronous, throughput, sweep, search
  int concurrency = 0;                ///< closed loop: requests in flight; open loop: the cap (0 = none)
  double rate = 0;                    ///< open loop: req/s (inf allowed); 0 for closed loop
  std::string arrival;                ///< open loop: poisson, gamma or constant
  double burstiness = 1;
  std::string ramp;  ///< "" or linear/exponential
  double ramp_start_rps = 0, ramp_end_rps = 0;
  bool open_loop() const { return rate > 0 || !ramp.empty(); }
  /// "conc 4", "rate 20 poisson", "rate 20 gamma(b=0.5) cap 64", "ramp 1->10 linear", "sync", "peak conc 256".
  std::string Label() const;
};

/// Token-length check of a level: what was asked vs what the server reported.
struct LengthCheck {
  std::int64_t requested = -1;  ///< the target when every request had the same one; -1 when none or mixed
  double mean_requested = 0;    ///< mean target over requests that had one
  double mean_achieved = 0;
  std::int64_t min_achieved = 0, max_achieved = 0;
  std::int64_t mismatched = 0;  ///< ok requests whose count differs from their target
  std::string source;           ///< TokenCountSourceName of the counts ("mixed" when they differ)
};

/// The warm-up before a level: outside every other figure of the level (faults included).
struct WarmupSummary {
  std::int64_t total = 0, ok = 0, failed = 0, cancelled = 0;
  double wall_s = 0;
  std::map<std::string, std::int64_t> errors;
};

/// One load level.
struct LevelResult {
  LoadSpec load;
  int concurrency = 0;                                        ///< = load.concurrency (kept for readers of schema 1)
  std::int64_t total = 0, ok = 0, failed = 0, cancelled = 0;  ///< warm-up requests excluded
  double duration_s = 0;                                      ///< first send to last result
  double request_throughput = 0;                              ///< ok requests / duration_s
  double output_throughput = 0;                               ///< output tokens of ok requests / duration_s
  double total_token_throughput = 0;                          ///< (input + output tokens) of ok requests / duration_s
  Distribution ttft_ms, tpot_ms, itl_ms, chunk_itl_ms, e2el_ms, connect_ms;
  Distribution decode_tok_s;              ///< per request (n - 1) / (last token - TTFT) in tok/s, n >= 2
  Distribution send_lateness_ms;          ///< open loop: actual send - scheduled arrival
  Distribution failed_at_ms, stalled_ms;  ///< failed requests: when they failed, how long nothing arrived
  double arrival_rate = 0;                ///< measured: (sends - 1) / (last send - first send), req/s
  double arrival_cv = 0;                  ///< coefficient of variation of the gaps between actual sends
  std::int64_t peak_in_flight = 0;
  double client_cpu_s = -1;  ///< CPU time (user + system) the client process spent in the measured phase
  // Goodput (when SLOs were given).
  Slo slo;
  std::int64_t good = 0;
  double goodput_rps = 0;
  double attainment = 0;          ///< good / total
  stats::Interval attainment_ci;  ///< Wilson 95% interval of the attainment
  // Quantiles at q = 0, 1, ..., 100 (for CDF pictures).
  std::vector<double> ttft_q, tpot_q, itl_q;
  std::map<std::string, std::int64_t> errors;  ///< ErrorKey -> count
  LengthCheck input, output;
  WarmupSummary warmup;
  std::vector<std::string> flags;  ///< human-readable warnings (length mismatches, fallbacks)
};

/// Folds the finished requests of one level, one at a time, in constant memory.
class LevelAccumulator {
 public:
  explicit LevelAccumulator(LoadSpec load, Slo slo = {});
  /// Adds one finished request (a warm-up record only counts in the warm-up tally). Returns whether it is
  /// good (met every SLO; false when no SLO was given).
  bool Add(const RequestResult& r);
  /// The level, with `duration_ms` its measured wall time (first send to last result) and `peak_in_flight`.
  LevelResult Finish(double duration_ms, std::int64_t peak_in_flight = 0) const;
  void SetWarmupWall(double wall_s) { warmup_.wall_s = wall_s; }
  /// The request index (RequestResult::index) of the level's first measured request: send times are then
  /// folded as they come (without it they wait in a buffer until Finish).
  void SetFirstIndex(std::int64_t index) { next_send_index_ = index; }
  std::int64_t measured() const { return total_; }
  std::int64_t failed() const { return failed_; }

 private:
  struct Lengths {
    std::int64_t targets = 0, same_target = -2;  // -2: none yet, -1: mixed
    double target_sum = 0, sum = 0;
    std::int64_t n = 0, min = 0, max = 0, mismatched = 0;
    std::map<std::string, std::int64_t> sources;
  };
  static void AddLength(Lengths& l, std::int64_t want, std::int64_t got, TokenCountSource source);
  static LengthCheck CheckOf(const Lengths& l);
  void AddSend(std::int64_t index, double send_ms);

  LoadSpec load_;
  Slo slo_;
  std::int64_t total_ = 0, ok_ = 0, failed_ = 0, cancelled_ = 0, good_ = 0;
  double out_tokens_ = 0, in_tokens_ = 0;
  stats::QuantileEstimator ttft_, tpot_, itl_, chunk_itl_, e2el_, connect_, decode_, lateness_, failed_at_, stalled_;
  std::map<std::string, std::int64_t> errors_;
  Lengths input_, output_;
  std::int64_t itl_approx_ = 0;
  WarmupSummary warmup_;
  // Actual send times, re-ordered by request index (results arrive out of order; at most the requests in
  // flight wait here).
  std::map<std::int64_t, double> sends_;
  std::int64_t next_send_index_ = -1;
  double first_send_ = -1, last_send_ = -1;
  std::int64_t sends_seen_ = 0;
  stats::QuantileEstimator gaps_{0};
};

/// Summarises the results of one closed-loop level (warm-up records are ignored). `duration_ms` is the
/// level's wall time.
LevelResult SummarizeLevel(int concurrency, const std::vector<RequestResult>& results, double duration_ms);

}  // namespace ppdeploy
