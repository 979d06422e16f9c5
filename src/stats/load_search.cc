#include "stats/load_search.h"

#include <fmt/format.h>

#include <cmath>

#include "core/error.h"

namespace ppdeploy::stats {

std::vector<double> SweepRates(double sync_rate, double peak_rate, int n) {
  std::vector<double> out;
  if (n < 1) return out;
  for (int i = 1; i <= n; ++i) out.push_back(sync_rate + (peak_rate - sync_rate) * static_cast<double>(i) / n);
  return out;
}

GoodputSearch::GoodputSearch(double target, double tolerance, int max_probes)
    : target_(target), tolerance_(tolerance), max_probes_(max_probes) {
  if (!(target > 0 && target <= 1)) Fail("--slo-attainment: expected a share in (0, 1], got {}", target);
  if (!(tolerance > 0 && tolerance < 1)) Fail("--search-tolerance: expected a fraction in (0, 1), got {}", tolerance);
  if (max_probes < 1) Fail("--search-max-probes: expected >= 1, got {}", max_probes);
}

void GoodputSearch::SetBaseline(double sync_rate, bool sync_met, double peak_rate) {
  have_baseline_ = true;
  sync_met_ = sync_met;
  lo_ = sync_rate;
  hi_ = std::max(peak_rate, sync_rate);
  peak_ = hi_;
  if (sync_met) best_ = sync_rate;
}

std::optional<double> GoodputSearch::NextRate() const {
  if (!have_baseline_ || !sync_met_ || !(peak_ > 0)) return std::nullopt;
  if (!peak_probed_) return peak_;
  if (peak_met_) return std::nullopt;
  if (probes_ >= max_probes_ + 1) return std::nullopt;  // + 1: the peak probe
  if (hi_ - lo_ <= tolerance_ * hi_) return std::nullopt;
  return (lo_ + hi_) / 2;
}

void GoodputSearch::Record(double rate, double attainment) {
  ++probes_;
  bool met = Met(attainment);
  if (!peak_probed_) {
    peak_probed_ = true;
    peak_met_ = met;
    if (met) {
      best_ = rate;
      lo_ = rate;
    } else {
      hi_ = rate;
    }
    return;
  }
  if (met) {
    lo_ = rate;
    if (rate > best_) best_ = rate;
  } else {
    hi_ = rate;
  }
}

std::string GoodputSearch::Outcome() const {
  if (!have_baseline_) return "";
  if (!sync_met_) return "no rate meets the SLOs: even one request at a time falls short of the target attainment";
  if (peak_probed_ && peak_met_)
    return fmt::format(
        "the SLOs hold at the measured peak rate {:.3g} req/s: the server saturates before it "
        "violates them",
        best_);
  if (NextRate()) return "";
  if (hi_ - lo_ <= tolerance_ * hi_)
    return fmt::format("bracket [{:.3g}, {:.3g}] req/s is within {:g}% of its top", lo_, hi_, tolerance_ * 100);
  return fmt::format("probe limit reached with the bracket [{:.3g}, {:.3g}] req/s", lo_, hi_);
}

std::string GoodputSearch::Rule() const {
  return fmt::format(
      "a rate meets the SLOs when >= {:g}% of its requests meet every SLO; after the synchronous baseline and the "
      "peak, probe the peak rate, then bisect [highest met, lowest failed] with Poisson arrivals; stop when the "
      "bracket is within {:g}% of its top or after {} bisection probes; the answer is the highest rate measured to "
      "meet them",
      target_ * 100, tolerance_ * 100, max_probes_);
}

}  // namespace ppdeploy::stats
