#include "stats/arrivals.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace ppdeploy::stats {

ArrivalKind ParseArrivalKind(const std::string& text, const std::string& flag) {
  if (text == "poisson") return ArrivalKind::kPoisson;
  if (text == "gamma") return ArrivalKind::kGamma;
  if (text == "constant") return ArrivalKind::kConstant;
  Fail("{}: expected poisson, gamma or constant, got \"{}\"", flag, text);
}

const char* ArrivalKindName(ArrivalKind kind) {
  switch (kind) {
    case ArrivalKind::kPoisson:
      return "poisson";
    case ArrivalKind::kGamma:
      return "gamma";
    case ArrivalKind::kConstant:
      return "constant";
  }
  return "poisson";
}

RampKind ParseRampKind(const std::string& text, const std::string& flag) {
  if (text == "linear") return RampKind::kLinear;
  if (text == "exponential") return RampKind::kExponential;
  Fail("{}: expected linear or exponential, got \"{}\"", flag, text);
}

const char* RampKindName(RampKind kind) {
  switch (kind) {
    case RampKind::kNone:
      return "none";
    case RampKind::kLinear:
      return "linear";
    case RampKind::kExponential:
      return "exponential";
  }
  return "none";
}

void ValidateArrivalOptions(const ArrivalOptions& o) {
  if (o.ramp == RampKind::kNone) {
    if (!(o.rate > 0)) Fail("--request-rate: expected a rate > 0 (or inf), got {}", o.rate);
  } else {
    if (!(o.ramp_start_rps > 0) || !std::isfinite(o.ramp_start_rps))
      Fail("--ramp-up-start-rps: expected a finite rate > 0, got {}", o.ramp_start_rps);
    if (!(o.ramp_end_rps > 0) || !std::isfinite(o.ramp_end_rps))
      Fail("--ramp-up-end-rps: expected a finite rate > 0, got {}", o.ramp_end_rps);
    if (o.total_requests <= 0 && !(o.duration_s > 0))
      Fail("--ramp-up: needs --requests or --duration-s to know how long the ramp lasts");
  }
  if (o.kind == ArrivalKind::kGamma && (!(o.burstiness > 0) || !std::isfinite(o.burstiness)))
    Fail("--burstiness: expected a finite number > 0, got {}", o.burstiness);
}

ArrivalSchedule::ArrivalSchedule(const ArrivalOptions& options) : o_(options), rng_(options.seed) {
  ValidateArrivalOptions(o_);
  if (o_.kind == ArrivalKind::kPoisson) o_.burstiness = 1;
}

double ArrivalSchedule::CurrentRate() const {
  if (o_.ramp == RampKind::kNone) return o_.rate;
  double p = 0;
  if (o_.total_requests > 0) {
    p = static_cast<double>(issued_) / static_cast<double>(std::max<std::int64_t>(o_.total_requests - 1, 1));
  } else {
    p = t_ms_ / (o_.duration_s * 1000.0);
  }
  p = std::clamp(p, 0.0, 1.0);
  if (o_.ramp == RampKind::kLinear) return o_.ramp_start_rps + (o_.ramp_end_rps - o_.ramp_start_rps) * p;
  return o_.ramp_start_rps * std::pow(o_.ramp_end_rps / o_.ramp_start_rps, p);
}

double ArrivalSchedule::NextMs() {
  double rate = CurrentRate();
  ++issued_;
  if (std::isinf(rate)) return t_ms_;
  double gap_s = 0;
  if (o_.kind == ArrivalKind::kConstant) {
    gap_s = 1.0 / rate;
  } else {
    std::gamma_distribution<double> gamma(o_.burstiness, 1.0 / (rate * o_.burstiness));
    gap_s = gamma(rng_);
  }
  t_ms_ += gap_s * 1000.0;
  return t_ms_;
}

}  // namespace ppdeploy::stats
