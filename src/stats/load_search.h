// Load profiles that adapt to the server (pure): GuideLLM's sweep and a bisection for the highest request
// rate that still meets the goodput SLOs.
//
// Sweep (GuideLLM src/guidellm/benchmark/profiles.py SweepProfile): a synchronous level (one request at a
// time) measures the baseline rate r_sync, a throughput level (every request at once, up to the concurrency
// cap) measures the peak r_peak, then N constant-rate levels at linspace(r_sync, r_peak, N + 1)[1:] (the last
// one paces requests at the peak rate itself). `ppdeploy bench --sweep N` = GuideLLM `--profile sweep
// --rate N+2`.
//
// Search for the maximum goodput rate. A rate meets the SLOs when the share of measured requests that meet
// every SLO (attainment) is >= the target (default 0.9, DistServe's 90% SLO attainment). Known: the
// synchronous level (met: a lower bound lo = r_sync; not met: no rate can meet them) and the peak r_peak.
// Then: probe r_peak at that constant rate; met -> the answer is r_peak. Otherwise bisect [lo, hi = r_peak]:
// probe (lo + hi) / 2; met -> lo = mid, else hi = mid.
// Stop rule: stop when hi - lo <= tolerance x hi (default 5%) or after max_probes bisection probes
// (default 8); the answer is lo, the highest rate measured to meet the SLOs (r_sync when no probe met them).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace ppdeploy::stats {

/// linspace(sync_rate, peak_rate, n + 1)[1:] (n rates, the last equal to peak_rate).
std::vector<double> SweepRates(double sync_rate, double peak_rate, int n);

class GoodputSearch {
 public:
  GoodputSearch(double target_attainment, double tolerance, int max_probes);

  /// The synchronous level's rate and whether it met the SLOs; then the peak rate.
  void SetBaseline(double sync_rate, bool sync_met, double peak_rate);
  /// The next rate to probe, nullopt when the search is over.
  std::optional<double> NextRate() const;
  /// Records a probe at `rate` with its attainment.
  void Record(double rate, double attainment);
  bool Met(double attainment) const { return attainment >= target_; }

  double target() const { return target_; }
  /// The answer: the highest rate measured to meet the SLOs (-1 when none, not even the synchronous level).
  double best() const { return best_; }
  double lo() const { return lo_; }
  double hi() const { return hi_; }
  int probes() const { return probes_; }
  /// Why the search ended (or "" while running).
  std::string Outcome() const;
  /// The stop rule in words, with this search's numbers.
  std::string Rule() const;

 private:
  double target_, tolerance_;
  int max_probes_;
  bool have_baseline_ = false, peak_probed_ = false, peak_met_ = false, sync_met_ = false;
  double lo_ = 0, hi_ = 0, best_ = -1, peak_ = 0;
  int probes_ = 0;
};

}  // namespace ppdeploy::stats
