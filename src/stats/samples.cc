#include "stats/samples.h"

#include <algorithm>
#include <boost/math/distributions/normal.hpp>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "core/error.h"

namespace ppdeploy::stats {

namespace {
double PercentileSorted(const std::vector<double>& s, double q) {
  if (s.empty()) return std::numeric_limits<double>::quiet_NaN();
  const double pos = q / 100.0 * static_cast<double>(s.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, s.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return s[lo] + (s[hi] - s[lo]) * frac;
}
// A sample sorted once, with the rank of each original element, and per-rank draw counts.
class RankedSample {
 public:
  explicit RankedSample(std::span<const double> values)
      : sorted_(values.begin(), values.end()), rank_(values.size()), counts_(values.size()) {
    std::vector<std::size_t> order(values.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) { return values[x] < values[y]; });
    for (std::size_t r = 0; r < order.size(); ++r) {
      sorted_[r] = values[order[r]];
      rank_[order[r]] = static_cast<std::uint32_t>(r);
    }
  }

  // One resample with replacement: values.size() draws, in the order the old code made them.
  template <typename Rng, typename Dist>
  void Draw(Rng& rng, Dist& pick) {
    std::fill(counts_.begin(), counts_.end(), 0u);
    for (std::size_t k = 0; k < rank_.size(); ++k) ++counts_[rank_[pick(rng)]];
  }

  // PercentileSorted(resample sorted, 50) from the counts.
  double Median() const {
    const std::size_t n = rank_.size();
    const double pos = 0.5 * static_cast<double>(n - 1);
    const auto lo = static_cast<std::size_t>(std::floor(pos));
    const std::size_t hi = std::min(lo + 1, n - 1);
    const double frac = pos - static_cast<double>(lo);
    double v_lo = 0.0, v_hi = 0.0;
    std::size_t seen = 0;  // resample elements with a smaller rank
    for (std::size_t r = 0; r < n; ++r) {
      if (counts_[r] == 0) continue;
      const std::size_t next = seen + counts_[r];
      if (lo >= seen && lo < next) v_lo = sorted_[r];
      if (hi >= seen && hi < next) {
        v_hi = sorted_[r];
        break;
      }
      seen = next;
    }
    return v_lo + (v_hi - v_lo) * frac;
  }

 private:
  std::vector<double> sorted_;
  std::vector<std::uint32_t> rank_;    // rank_[i]: position of values[i] in sorted_
  std::vector<std::uint32_t> counts_;  // draws per rank in the current resample
};

}  // namespace

double Percentile(std::span<const double> values, double q) {
  if (!(q >= 0.0 && q <= 100.0)) Fail("percentile must be in [0, 100], got {}", q);
  std::vector<double> s(values.begin(), values.end());
  std::sort(s.begin(), s.end());
  return PercentileSorted(s, q);
}

double Median(std::span<const double> values) { return Percentile(values, 50.0); }

MannWhitneyResult MannWhitney(std::span<const double> a, std::span<const double> b) {
  MannWhitneyResult r;
  r.n_a = static_cast<std::int64_t>(a.size());
  r.n_b = static_cast<std::int64_t>(b.size());
  if (a.empty() || b.empty()) return r;
  struct Item {
    double v;
    bool from_a;
  };
  std::vector<Item> all;
  all.reserve(a.size() + b.size());
  for (double v : a) all.push_back({v, true});
  for (double v : b) all.push_back({v, false});
  std::sort(all.begin(), all.end(), [](const Item& x, const Item& y) { return x.v < y.v; });
  const double n = static_cast<double>(all.size());
  double rank_sum_a = 0.0, tie_term = 0.0;
  for (std::size_t i = 0; i < all.size();) {
    std::size_t j = i;
    while (j < all.size() && all[j].v == all[i].v) ++j;
    const double avg_rank = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2.0;  // ranks i+1..j
    const double t = static_cast<double>(j - i);
    tie_term += t * t * t - t;
    for (std::size_t k = i; k < j; ++k)
      if (all[k].from_a) rank_sum_a += avg_rank;
    i = j;
  }
  const double na = static_cast<double>(r.n_a), nb = static_cast<double>(r.n_b);
  r.u_a = rank_sum_a - na * (na + 1.0) / 2.0;
  const double mean = na * nb / 2.0;
  const double var = na * nb / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0)));
  if (!(var > 0.0)) return r;
  const double diff = r.u_a - mean;
  const double corrected = std::max(0.0, std::fabs(diff) - 0.5);
  r.z = (diff < 0 ? -corrected : corrected) / std::sqrt(var);
  const boost::math::normal_distribution<double> normal;
  r.p_two_sided = std::min(1.0, 2.0 * boost::math::cdf(boost::math::complement(normal, std::fabs(r.z))));
  return r;
}

MannWhitneyResult MannWhitneyGrouped(std::span<const double> counts_a, std::span<const double> counts_b) {
  if (counts_a.size() != counts_b.size())
    Fail("Mann-Whitney on buckets: {} and {} buckets differ", counts_a.size(), counts_b.size());
  MannWhitneyResult r;
  double na = 0, nb = 0;
  for (std::size_t i = 0; i < counts_a.size(); ++i) {
    if (!(counts_a[i] >= 0) || !(counts_b[i] >= 0) || counts_a[i] != std::floor(counts_a[i]) ||
        counts_b[i] != std::floor(counts_b[i]))
      Fail("Mann-Whitney on buckets: bucket {} holds {} and {} (counts must be non-negative integers)", i, counts_a[i],
           counts_b[i]);
    na += counts_a[i];
    nb += counts_b[i];
  }
  r.n_a = static_cast<std::int64_t>(na);
  r.n_b = static_cast<std::int64_t>(nb);
  if (na == 0 || nb == 0) return r;
  const double n = na + nb;
  double below = 0, rank_sum_a = 0, tie_term = 0;
  for (std::size_t i = 0; i < counts_a.size(); ++i) {
    const double t = counts_a[i] + counts_b[i];
    if (t == 0) continue;
    const double avg_rank = below + (t + 1.0) / 2.0;  // ranks below+1 .. below+t
    rank_sum_a += counts_a[i] * avg_rank;
    tie_term += t * t * t - t;
    below += t;
  }
  r.u_a = rank_sum_a - na * (na + 1.0) / 2.0;
  const double mean = na * nb / 2.0;
  const double var = na * nb / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0)));
  if (!(var > 0.0)) return r;
  const double diff = r.u_a - mean;
  const double corrected = std::max(0.0, std::fabs(diff) - 0.5);
  r.z = (diff < 0 ? -corrected : corrected) / std::sqrt(var);
  const boost::math::normal_distribution<double> normal;
  r.p_two_sided = std::min(1.0, 2.0 * boost::math::cdf(boost::math::complement(normal, std::fabs(r.z))));
  return r;
}

BootstrapInterval BootstrapMedianDiff(std::span<const double> a, std::span<const double> b, std::uint64_t seed,
                                      int resamples, double alpha) {
  if (a.empty() || b.empty()) Fail("bootstrap: both samples must be non-empty (got {} and {})", a.size(), b.size());
  if (resamples < 100) Fail("bootstrap: need at least 100 resamples, got {}", resamples);
  if (!(alpha > 0.0 && alpha < 1.0)) Fail("bootstrap: alpha must be in (0, 1), got {}", alpha);
  BootstrapInterval r;
  r.resamples = resamples;
  r.estimate = Median(b) - Median(a);
  // The median of a resample depends only on how often each value was drawn. Counting the draws
  // per rank of the sorted sample and reading the two middle order statistics off the counts gives
  // exactly the values sorting the resample gave (the same draws from the same generator, the same
  // multiset), in O(n) per resample instead of O(n log n): 2,000 sorts of 20,000 values per arm
  // took seconds per metric.
  std::mt19937_64 rng(seed);
  std::vector<double> diffs(static_cast<std::size_t>(resamples));
  std::uniform_int_distribution<std::size_t> pick_a(0, a.size() - 1), pick_b(0, b.size() - 1);
  RankedSample sa(a), sb(b);
  for (int i = 0; i < resamples; ++i) {
    sa.Draw(rng, pick_a);
    sb.Draw(rng, pick_b);
    diffs[static_cast<std::size_t>(i)] = sb.Median() - sa.Median();
  }
  std::sort(diffs.begin(), diffs.end());
  r.lower = PercentileSorted(diffs, 100.0 * alpha / 2.0);
  r.upper = PercentileSorted(diffs, 100.0 * (1.0 - alpha / 2.0));
  return r;
}

}  // namespace ppdeploy::stats
