// The line reader the vLLM log kinds share (log_kinds*.cc): a Cursor that reads one message left to right
// (hand-written string_view scanning: no regex, no recursion, no exceptions). Internal to src/vllm.
#pragma once

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "vllm/log_kinds.h"

namespace ppdeploy::log_kinds {

inline constexpr std::size_t npos = std::string_view::npos;

inline bool IsDigit(char c) { return c >= '0' && c <= '9'; }
inline bool IsAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
inline bool IsSpace(char c) { return c == ' ' || c == '\t'; }

/// Left-to-right reader over one line. Every Read* returns false (and leaves `ok` false) on a mismatch;
/// `hit_end` tells whether the mismatch was the end of the line.
struct Cursor {
  std::string_view s;
  std::size_t pos = 0;
  bool ok = true;
  bool hit_end = false;

  bool Fail() {
    if (pos >= s.size()) hit_end = true;
    ok = false;
    return false;
  }
  bool AtEnd() const { return pos >= s.size(); }
  void SkipSpaces() {
    while (pos < s.size() && IsSpace(s[pos])) ++pos;
  }
  /// Consumes `lit` exactly.
  bool Lit(std::string_view lit) {
    if (!ok) return false;
    std::string_view rest = s.substr(std::min(pos, s.size()));
    if (rest.substr(0, lit.size()) == lit) {
      pos += lit.size();
      return true;
    }
    // A prefix of `lit` that runs to the end of the line is a truncation.
    if (rest.size() < lit.size() && lit.substr(0, rest.size()) == rest) pos = s.size();
    return Fail();
  }
  /// Consumes `lit` if it is next; no failure otherwise.
  bool Opt(std::string_view lit) {
    if (!ok) return false;
    if (s.substr(std::min(pos, s.size())).substr(0, lit.size()) == lit) {
      pos += lit.size();
      return true;
    }
    return false;
  }
  /// Moves just past the next `lit` at or after pos.
  bool SkipPast(std::string_view lit) {
    if (!ok) return false;
    std::size_t at = s.find(lit, pos);
    if (at == npos) {
      pos = s.size();
      return Fail();
    }
    pos = at + lit.size();
    return true;
  }
  /// A decimal number: optional '-', digits, optional fraction. No exponent, no inf/nan.
  bool Double(double& out) {
    if (!ok) return false;
    std::size_t b = pos;
    std::size_t e = pos;
    if (e < s.size() && s[e] == '-') ++e;
    std::size_t d0 = e;
    while (e < s.size() && IsDigit(s[e])) ++e;
    if (e == d0) return Fail();
    if (e < s.size() && s[e] == '.') {
      ++e;
      while (e < s.size() && IsDigit(s[e])) ++e;
    }
    double v = 0;
    auto r = std::from_chars(s.data() + b, s.data() + e, v);
    if (r.ec != std::errc() || !std::isfinite(v)) return Fail();
    pos = static_cast<std::size_t>(r.ptr - s.data());
    out = v;
    return true;
  }
  /// A non-negative integer, optionally with ',' thousands separators ("807,792"). At most 18 digits.
  bool Int(std::int64_t& out, bool commas = false) {
    if (!ok) return false;
    std::size_t e = pos;
    std::int64_t v = 0;
    int digits = 0;
    while (e < s.size()) {
      char c = s[e];
      if (IsDigit(c)) {
        if (++digits > 18) return Fail();
        v = v * 10 + (c - '0');
        ++e;
      } else if (commas && c == ',' && digits > 0 && e + 1 < s.size() && IsDigit(s[e + 1])) {
        ++e;
      } else {
        break;
      }
    }
    if (digits == 0) return Fail();
    pos = e;
    out = v;
    return true;
  }
  bool Int32(int& out) {
    std::int64_t v = 0;
    if (!Int(v)) return false;
    if (v > 1'000'000'000) return Fail();
    out = static_cast<int>(v);
    return true;
  }
  /// A size unit: "GiB" or "GB", optionally preceded by one space (format_gib values are printed as "12.3GiB").
  bool GiB() {
    if (!ok) return false;
    Opt(" ");
    if (Opt("GiB") || Opt("GB")) return true;
    return Fail();
  }
  /// Characters up to (not including) one of `stops` or the end.
  std::string_view Until(std::string_view stops) {
    std::size_t b = std::min(pos, s.size());
    std::size_t e = std::min(s.find_first_of(stops, b), s.size());
    pos = e;
    return s.substr(b, e - b);
  }
};

inline void Problem(LogKindContext& ctx, std::string_view kind, const Cursor& c) {
  ctx.Problem(kind, c.s, c.pos, c.hit_end || c.pos >= c.s.size());
}

/// The text after marker `m` in `s`, or npos if absent.
inline std::size_t After(std::string_view s, std::string_view m) {
  std::size_t at = s.find(m);
  return at == npos ? npos : at + m.size();
}

/// `X GiB` right after the anchor (one optional space before X).
inline bool GiBAfter(std::string_view m, std::size_t a, double& v, Cursor& c) {
  c = Cursor{m, a};
  c.SkipSpaces();
  return c.Double(v) && c.GiB();
}

}  // namespace ppdeploy::log_kinds
