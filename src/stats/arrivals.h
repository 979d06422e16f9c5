// Open-loop arrival schedules for `ppdeploy bench --request-rate` (pure, deterministic under a seed).
//
// Definitions follow vLLM's vllm/benchmarks/serve.py get_request(): the gap before request i is drawn from
// a gamma distribution with shape = burstiness and scale = 1 / (rate_i x burstiness), so the mean gap is
// 1 / rate_i and the coefficient of variation is 1 / sqrt(burstiness): burstiness 1 is a Poisson process
// (exponential gaps, CV 1), < 1 is burstier, > 1 more regular; "constant" is the limit burstiness -> inf
// (every gap exactly 1 / rate, GuideLLM's constant profile). With a ramp-up the rate of request i goes from
// `ramp_start_rps` to `ramp_end_rps`: linearly, rate_i = start + (end - start) p, or exponentially,
// rate_i = start (end / start)^p, where p = i / (N - 1) over a run of N requests (vLLM's
// _get_current_request_rate) or p = t / duration over a timed run. Unlike vLLM, the gaps are not rescaled
// to make N requests take exactly N / rate: the schedule is a true renewal process, so a timed run and a
// counted run see the same arrivals, and the measured rate shows the sampling error it really has.
//
// The first request arrives after one gap (a stationary process started at 0). Rate inf: every request
// at 0 (the client's concurrency cap then decides).
#pragma once

#include <cstdint>
#include <random>
#include <string>

namespace ppdeploy::stats {

enum class ArrivalKind { kPoisson, kGamma, kConstant };
enum class RampKind { kNone, kLinear, kExponential };

/// "poisson" / "gamma" / "constant"; Error naming `flag` otherwise.
ArrivalKind ParseArrivalKind(const std::string& text, const std::string& flag = "--arrival");
const char* ArrivalKindName(ArrivalKind kind);
/// "linear" / "exponential"; Error otherwise.
RampKind ParseRampKind(const std::string& text, const std::string& flag = "--ramp-up");
const char* RampKindName(RampKind kind);

struct ArrivalOptions {
  double rate = 1;  ///< requests/s (> 0; +inf = all at once); ignored with a ramp
  ArrivalKind kind = ArrivalKind::kPoisson;
  double burstiness = 1;  ///< gamma shape (> 0); poisson forces 1
  RampKind ramp = RampKind::kNone;
  double ramp_start_rps = 0;        ///< > 0 with a ramp
  double ramp_end_rps = 0;          ///< > 0 with a ramp
  std::int64_t total_requests = 0;  ///< ramp by request index when > 0
  double duration_s = 0;            ///< else ramp by time over this duration (> 0)
  std::uint64_t seed = 0;
};

/// Throws Error naming the flag (--request-rate, --burstiness, --ramp-up-start-rps, ...) for bad options.
void ValidateArrivalOptions(const ArrivalOptions& options);

class ArrivalSchedule {
 public:
  explicit ArrivalSchedule(const ArrivalOptions& options);
  /// The scheduled time of the next request, ms after the start (non-decreasing).
  double NextMs();
  /// The rate the next request is drawn at (req/s).
  double CurrentRate() const;
  std::int64_t issued() const { return issued_; }

 private:
  ArrivalOptions o_;
  std::mt19937_64 rng_;
  std::int64_t issued_ = 0;
  double t_ms_ = 0;
};

}  // namespace ppdeploy::stats
