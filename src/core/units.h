// Units. Everything inside the library is bytes (std::int64_t); GiB only for display and
// for inputs that people give in GiB. GiB = 2^30 B, MiB = 2^20 B.
#pragma once

#include <cstdint>

namespace ppdeploy {

inline constexpr std::int64_t kMiB = std::int64_t{1} << 20;
inline constexpr std::int64_t kGiB = std::int64_t{1} << 30;

/// Bytes -> GiB as a double, for display.
inline double ToGiB(std::int64_t bytes) { return static_cast<double>(bytes) / static_cast<double>(kGiB); }
/// Bytes -> MiB as a double, for display.
inline double ToMiB(std::int64_t bytes) { return static_cast<double>(bytes) / static_cast<double>(kMiB); }
/// GiB (as people write it, e.g. 79.25) -> bytes, rounded to the nearest byte.
inline std::int64_t GiBToBytes(double gib) {
  double b = gib * static_cast<double>(kGiB);
  return static_cast<std::int64_t>(b < 0 ? b - 0.5 : b + 0.5);
}
/// MiB -> bytes, rounded to the nearest byte.
inline std::int64_t MiBToBytes(double mib) {
  double b = mib * static_cast<double>(kMiB);
  return static_cast<std::int64_t>(b < 0 ? b - 0.5 : b + 0.5);
}
/// Ceiling division of non-negative integers (Python's cdiv in vLLM).
inline constexpr std::int64_t CeilDiv(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

}  // namespace ppdeploy
