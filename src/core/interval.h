// A value with an honest interval: lo <= value <= hi, bytes (or any integer unit). Estimated
// memory terms carry one; a measured or given figure has lo == value == hi.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace ppdeploy {

struct Interval {
  std::int64_t value = 0;
  std::int64_t lo = 0;
  std::int64_t hi = 0;

  /// An exact figure (no range).
  static Interval Exact(std::int64_t v) { return {v, v, v}; }
  /// `v` +- `plus_minus` (a non-negative half-width).
  static Interval Around(std::int64_t v, std::int64_t plus_minus) {
    plus_minus = std::max<std::int64_t>(0, plus_minus);
    return {v, v - plus_minus, v + plus_minus};
  }
  /// `v` with a relative half-width (0.01 = +-1%).
  static Interval Relative(std::int64_t v, double fraction) {
    return Around(v, static_cast<std::int64_t>(std::llround(std::abs(static_cast<double>(v)) * fraction)));
  }
  bool exact() const { return lo == value && hi == value; }
  std::int64_t below() const { return value - lo; }
  std::int64_t above() const { return hi - value; }
};

/// Sum of two intervals whose errors are independent: values add, half-widths add in
/// quadrature (each side separately).
inline Interval AddIndependent(const Interval& a, const Interval& b) {
  auto rss = [](std::int64_t x, std::int64_t y) {
    return static_cast<std::int64_t>(std::llround(
        std::sqrt(static_cast<double>(x) * static_cast<double>(x) + static_cast<double>(y) * static_cast<double>(y))));
  };
  std::int64_t v = a.value + b.value;
  return {v, v - rss(a.below(), b.below()), v + rss(a.above(), b.above())};
}

/// a - b with independent errors: b's upper error lowers the result's lower end.
inline Interval SubtractIndependent(const Interval& a, const Interval& b) {
  Interval nb{-b.value, -b.hi, -b.lo};
  return AddIndependent(a, nb);
}

/// The larger of two alternatives (vLLM's shared workspace is the max of its users).
inline Interval MaxOf(const Interval& a, const Interval& b) {
  return {std::max(a.value, b.value), std::max(a.lo, b.lo), std::max(a.hi, b.hi)};
}

}  // namespace ppdeploy
