// Constant-memory summaries of a stream of non-negative values (latencies in ms, tok/s), for `ppdeploy bench`
// runs of any length (issue 17: memory flat over a 1-hour run).
//
// Exact while small: the first `exact_limit` values are kept, and quantiles are numpy.percentile's default
// (linear interpolation between closest ranks, as vLLM's vllm/benchmarks/serve.py reports them).
// Past that the values move into a log-bucketed sketch (DDSketch, Masson, Rim and Lee, VLDB 2019): bucket i
// holds the values in (gamma^(i-1), gamma^i] with gamma = (1 + a) / (1 - a), and a value is represented by
// 2 gamma^i / (gamma + 1), which is within relative error a of every value in the bucket. Quantiles are then
// interpolated as numpy does between the representatives of the two closest ranks, so:
//
//   Error bound (sketch mode): if numpy would interpolate between the order statistics x_lo <= x_hi at the
//   rank q (n - 1) / 100, the estimate lies in [x_lo (1 - a), x_hi (1 + a)]; in particular it is within
//   relative error a of the exact value when x_lo = x_hi. Values below 1e-9 (zero ITLs of chunks read
//   together) share one zero bucket and are represented by 0. Count, mean, min, max and the standard
//   deviation are exact in both modes (Welford's update).
//
// With a = 0.005 (gamma = 1.01005) the sketch holds one counter per bucket between the smallest and the
// largest value seen: 921 counters for four decades (1 ms .. 10 s), 3,700 for 1e-9 .. 1e7; memory is bounded
// by exact_limit doubles plus that.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ppdeploy::stats {

class QuantileEstimator {
 public:
  static constexpr std::size_t kDefaultExactLimit = 10000;
  static constexpr double kDefaultRelativeAccuracy = 0.005;

  explicit QuantileEstimator(std::size_t exact_limit = kDefaultExactLimit,
                             double relative_accuracy = kDefaultRelativeAccuracy);

  /// Adds one value; negative values and NaN count as 0 (a clock that went backwards, never a latency).
  void Add(double value);
  /// Adds every value of `other` (same accuracy; sketches merge exactly, exact samples stay exact while they fit).
  void Merge(const QuantileEstimator& other);

  std::int64_t count() const { return count_; }
  double mean() const { return count_ > 0 ? mean_ : 0; }
  double min() const { return count_ > 0 ? min_ : 0; }
  double max() const { return count_ > 0 ? max_ : 0; }
  /// Population standard deviation (numpy.std's default, as vLLM reports std_*_ms).
  double stddev() const;
  /// q in [0, 100]; 0 for an empty estimator.
  double Quantile(double q) const;
  /// True while every value is kept (quantiles exact).
  bool exact() const { return !sketching_; }
  double relative_accuracy() const { return alpha_; }
  /// "exact" or "sketch(relative_accuracy=0.005)".
  std::string Method() const;
  /// Share of values <= x (the empirical CDF; in sketch mode values are compared by their representative).
  double ShareAtOrBelow(double x) const;

 private:
  int BucketOf(double v) const;
  double Representative(int bucket) const;
  void StartSketch();
  void AddToSketch(double v);
  void AddToBucket(int bucket, std::int64_t n);
  double SketchValueAtRank(std::int64_t rank) const;  // 0-based rank among all values

  std::size_t exact_limit_;
  double alpha_, gamma_, log_gamma_;
  std::int64_t count_ = 0;
  double mean_ = 0, m2_ = 0, min_ = 0, max_ = 0;
  bool sketching_ = false;
  mutable std::vector<double> exact_;  // sorted lazily
  mutable bool sorted_ = true;
  std::int64_t zeros_ = 0;
  int offset_ = 0;                    // bucket index of counts_[0]
  std::vector<std::int64_t> counts_;  // dense from the lowest to the highest bucket seen
};

}  // namespace ppdeploy::stats
