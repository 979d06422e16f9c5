#include "probes/degeneration.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace ppdeploy::probes {

namespace {
template <typename Seq>
TailCycle FindCycle(const Seq& s, int max_period, int min_repeats, std::int64_t min_cover) {
  if (max_period < 1 || min_repeats < 1) Fail("degeneration: max_period and min_repeats must be >= 1");
  TailCycle best;
  const auto n = static_cast<std::int64_t>(s.size());
  for (std::int64_t p = 1; p <= max_period && p * 2 <= n; ++p) {
    std::int64_t i = n - 1;
    while (i - p >= 0 && s[static_cast<std::size_t>(i)] == s[static_cast<std::size_t>(i - p)]) --i;
    const std::int64_t cover = (n - 1 - i) + p;  // matched positions plus the first copy
    if (cover >= p * min_repeats && cover >= min_cover) {
      best.found = true;
      best.period = static_cast<int>(p);
      best.cover = cover;
      best.repeats = cover / p;
      return best;
    }
  }
  return best;
}
}  // namespace

TailCycle FindTailCycle(std::span<const int> units, int max_period, int min_repeats, std::int64_t min_cover) {
  return FindCycle(units, max_period, min_repeats, min_cover);
}

TailCycle FindTailCycle(std::string_view text, int max_period, int min_repeats, std::int64_t min_cover) {
  return FindCycle(text, max_period, min_repeats, min_cover);
}

std::string NormalizeWhitespace(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  bool pending_space = false;
  for (char c : text) {
    const bool ws = c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
    if (ws) {
      pending_space = !out.empty();
      continue;
    }
    if (pending_space) out.push_back(' ');
    pending_space = false;
    out.push_back(c);
  }
  return out;
}

DegenerationCheck CheckDegeneration(std::string_view finish_reason, const std::optional<std::vector<int>>& token_ids,
                                    std::string_view text, const DegenerationParams& params) {
  if (params.chars_per_token <= 0) Fail("degeneration: chars_per_token must be > 0, got {}", params.chars_per_token);
  DegenerationCheck c;
  c.stopped_without_eos = finish_reason == "length" || finish_reason == "repetition_detected";
  TailCycle cycle;
  if (token_ids && !token_ids->empty()) {
    c.unit = "tokens";
    cycle = FindTailCycle(std::span<const int>(*token_ids), params.max_period_tokens, params.min_repeats,
                          params.min_cover_tokens);
  } else {
    c.unit = "chars";
    const std::string norm = NormalizeWhitespace(text);
    const int max_p = static_cast<int>(std::lround(params.max_period_tokens * params.chars_per_token));
    const auto min_cover = static_cast<std::int64_t>(std::llround(params.min_cover_tokens * params.chars_per_token));
    cycle = FindTailCycle(std::string_view(norm), std::max(1, max_p), params.min_repeats, min_cover);
    if (cycle.found) c.tail = norm.substr(norm.size() - static_cast<std::size_t>(cycle.period));
  }
  if (cycle.found) {
    c.period = cycle.period;
    c.repeats = cycle.repeats;
    c.cover = cycle.cover;
  }
  c.degenerate = c.stopped_without_eos && cycle.found;
  return c;
}

DegenerationCheck CheckDegeneration(const ChatResult& result, const DegenerationParams& params) {
  return CheckDegeneration(result.finish_reason, result.token_ids, result.text, params);
}

}  // namespace ppdeploy::probes
