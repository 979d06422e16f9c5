#include "stats/estimator.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace ppdeploy::stats {
namespace {

constexpr double kZero = 1e-9;

double LinearPercentile(const std::vector<double>& s, double q) {
  if (s.empty()) return 0;
  double rank = std::clamp(q, 0.0, 100.0) / 100.0 * static_cast<double>(s.size() - 1);
  auto lo = static_cast<std::size_t>(std::floor(rank));
  std::size_t hi = std::min(lo + 1, s.size() - 1);
  return s[lo] + (s[hi] - s[lo]) * (rank - static_cast<double>(lo));
}

}  // namespace

QuantileEstimator::QuantileEstimator(std::size_t exact_limit, double relative_accuracy)
    : exact_limit_(exact_limit), alpha_(relative_accuracy) {
  if (!(relative_accuracy > 0 && relative_accuracy < 0.5))
    Fail("QuantileEstimator: relative accuracy must be in (0, 0.5), got {}", relative_accuracy);
  gamma_ = (1 + alpha_) / (1 - alpha_);
  log_gamma_ = std::log(gamma_);
}

int QuantileEstimator::BucketOf(double v) const { return static_cast<int>(std::ceil(std::log(v) / log_gamma_)); }

double QuantileEstimator::Representative(int bucket) const { return 2.0 * std::pow(gamma_, bucket) / (gamma_ + 1.0); }

void QuantileEstimator::AddToSketch(double v) {
  if (v < kZero) {
    ++zeros_;
    return;
  }
  AddToBucket(BucketOf(v), 1);
}

void QuantileEstimator::AddToBucket(int b, std::int64_t n) {
  if (counts_.empty()) {
    offset_ = b;
    counts_.assign(1, 0);
  } else if (b < offset_) {
    counts_.insert(counts_.begin(), static_cast<std::size_t>(offset_ - b), 0);
    offset_ = b;
  } else if (b - offset_ >= static_cast<int>(counts_.size())) {
    counts_.resize(static_cast<std::size_t>(b - offset_ + 1), 0);
  }
  counts_[static_cast<std::size_t>(b - offset_)] += n;
}

void QuantileEstimator::StartSketch() {
  sketching_ = true;
  for (double v : exact_) AddToSketch(v);
  std::vector<double>().swap(exact_);
  sorted_ = true;
}

void QuantileEstimator::Add(double v) {
  if (!(v > 0)) v = 0;  // negative and NaN
  ++count_;
  if (count_ == 1) {
    min_ = max_ = v;
  } else {
    min_ = std::min(min_, v);
    max_ = std::max(max_, v);
  }
  double delta = v - mean_;
  mean_ += delta / static_cast<double>(count_);
  m2_ += delta * (v - mean_);
  if (sketching_) {
    AddToSketch(v);
    return;
  }
  if (!exact_.empty() && v < exact_.back()) sorted_ = false;
  exact_.push_back(v);
  if (exact_.size() > exact_limit_) StartSketch();
}

void QuantileEstimator::Merge(const QuantileEstimator& o) {
  if (o.count_ == 0) return;
  if (o.alpha_ != alpha_) Fail("QuantileEstimator::Merge: accuracies differ ({} vs {})", alpha_, o.alpha_);
  // Moments (Chan et al. parallel update).
  std::int64_t n = count_ + o.count_;
  double delta = o.mean_ - mean_;
  double mean = mean_ + delta * static_cast<double>(o.count_) / static_cast<double>(n);
  double m2 = m2_ + o.m2_ +
              delta * delta * static_cast<double>(count_) * static_cast<double>(o.count_) / static_cast<double>(n);
  double mn = count_ > 0 ? std::min(min_, o.min_) : o.min_;
  double mx = count_ > 0 ? std::max(max_, o.max_) : o.max_;
  if (!o.sketching_ && !sketching_ && exact_.size() + o.exact_.size() <= exact_limit_) {
    exact_.insert(exact_.end(), o.exact_.begin(), o.exact_.end());
    sorted_ = false;
  } else {
    if (!sketching_) StartSketch();
    if (o.sketching_) {
      zeros_ += o.zeros_;
      for (std::size_t i = 0; i < o.counts_.size(); ++i) {
        if (o.counts_[i] != 0) AddToBucket(o.offset_ + static_cast<int>(i), o.counts_[i]);
      }
    } else {
      for (double v : o.exact_) AddToSketch(v);
    }
  }
  count_ = n;
  mean_ = mean;
  m2_ = m2;
  min_ = mn;
  max_ = mx;
}

double QuantileEstimator::stddev() const {
  if (count_ < 1) return 0;
  return std::sqrt(std::max(0.0, m2_ / static_cast<double>(count_)));
}

double QuantileEstimator::SketchValueAtRank(std::int64_t rank) const {
  if (rank < zeros_) return 0;
  std::int64_t seen = zeros_;
  for (std::size_t i = 0; i < counts_.size(); ++i) {
    seen += counts_[i];
    if (rank < seen) return Representative(offset_ + static_cast<int>(i));
  }
  return counts_.empty() ? 0 : Representative(offset_ + static_cast<int>(counts_.size()) - 1);
}

double QuantileEstimator::Quantile(double q) const {
  if (count_ == 0) return 0;
  if (!sketching_) {
    if (!sorted_) {
      std::sort(exact_.begin(), exact_.end());
      sorted_ = true;
    }
    return LinearPercentile(exact_, q);
  }
  double rank = std::clamp(q, 0.0, 100.0) / 100.0 * static_cast<double>(count_ - 1);
  auto lo = static_cast<std::int64_t>(std::floor(rank));
  std::int64_t hi = std::min(lo + 1, count_ - 1);
  double a = SketchValueAtRank(lo), b = SketchValueAtRank(hi);
  double v = a + (b - a) * (rank - static_cast<double>(lo));
  // The exact extremes are known: never report beyond them.
  return std::clamp(v, min_, max_);
}

double QuantileEstimator::ShareAtOrBelow(double x) const {
  if (count_ == 0) return 0;
  std::int64_t n = 0;
  if (!sketching_) {
    for (double v : exact_) n += v <= x ? 1 : 0;
  } else {
    if (x >= 0) n += zeros_;
    for (std::size_t i = 0; i < counts_.size(); ++i)
      if (Representative(offset_ + static_cast<int>(i)) <= x) n += counts_[i];
  }
  return static_cast<double>(n) / static_cast<double>(count_);
}

std::string QuantileEstimator::Method() const {
  return sketching_ ? fmt::format("sketch(relative_accuracy={})", alpha_) : "exact";
}

}  // namespace ppdeploy::stats
