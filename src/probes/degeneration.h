// Degeneration detector: is one answer a repetition loop that never emits EOS?
//
// Rule (docs/seed.md §7: "a correct answer, then a loop that never emits EOS and runs to the cap";
// docs/sources.md §6: "hit max_tokens with finish_reason=length while the tail repeats", detector on
// token ids or normalised text, calibrated against natural repetition in code, tables and lists):
// a trial is degenerate when
//   (1) it stopped without EOS: finish_reason == "length" (or the server's own repetition stop,
//       vLLM >= 0.17 "repetition_detected"), AND
//   (2) its tail is one exact cycle: for some period p in [1, max_period], out[i] == out[i - p]
//       for every position i of the last `cover` units, with cover >= p * min_repeats and
//       cover >= min_cover (the same shape as vLLM's RepetitionDetectionParams with
//       max_pattern_size = max_period, min_count = min_repeats, plus a minimum covered length).
// Units: token ids when the server returned them, else bytes of the whitespace-normalised text
// (runs of whitespace -> one space, trimmed), with period and cover limits scaled by
// chars_per_token. Bytes (not words) so that CJK output without spaces is covered too.
//
// Calibration (tests/probes/degeneration_test.cc): repeated code lines with different
// indices/values, a numbered list and a markdown table that hit the cap do not fire (their exact
// periodic tails cover < 64 tokens / 256 chars); "I am GLM. " loops and a ~50-token loop fire.
// Known limit: a loop whose copies differ (sampling noise inside the cycle) is not detected.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "probes/backend.h"

namespace ppdeploy::probes {

/// Detector thresholds, in tokens (text mode multiplies them by chars_per_token).
struct DegenerationParams {
  int max_period_tokens = 256;   ///< longest cycle looked for (vLLM max_pattern_size)
  int min_repeats = 3;           ///< copies of the cycle in the tail (vLLM min_count)
  int min_cover_tokens = 64;     ///< tail length the cycle must cover
  double chars_per_token = 4.0;  ///< text fallback scale (labelled in the result as unit "chars")
};

/// The longest exactly periodic tail found.
struct TailCycle {
  bool found = false;     ///< a period met both thresholds
  int period = 0;         ///< smallest qualifying period, in units
  std::int64_t cover = 0; ///< units at the end covered by the cycle (including the first copy)
  std::int64_t repeats = 0;  ///< cover / period (whole copies)
};

/// Smallest period p in [1, max_period] whose periodic tail covers >= max(min_cover, p * min_repeats)
/// units. O(max_period x cover).
TailCycle FindTailCycle(std::span<const int> units, int max_period, int min_repeats, std::int64_t min_cover);
/// Same on the bytes of `text`.
TailCycle FindTailCycle(std::string_view text, int max_period, int min_repeats, std::int64_t min_cover);

/// Collapses every run of whitespace (space, tab, CR, LF, FF, VT) to one space and trims the ends.
std::string NormalizeWhitespace(std::string_view text);

/// The verdict on one answer.
struct DegenerationCheck {
  bool degenerate = false;
  bool stopped_without_eos = false;  ///< finish_reason "length" or "repetition_detected"
  std::string unit;                  ///< "tokens" or "chars" (normalised text bytes)
  int period = 0;                    ///< detected cycle period in `unit` (0 = none)
  std::int64_t repeats = 0;          ///< whole copies of the cycle in the tail
  std::int64_t cover = 0;            ///< tail units covered by the cycle
  std::string tail;                  ///< one copy of the cycle as text when found in text mode, else ""
};

/// Classifies one answer (see the file comment).
DegenerationCheck CheckDegeneration(std::string_view finish_reason, const std::optional<std::vector<int>>& token_ids,
                                    std::string_view text, const DegenerationParams& params = {});
/// Convenience for a ChatResult.
DegenerationCheck CheckDegeneration(const ChatResult& result, const DegenerationParams& params = {});

}  // namespace ppdeploy::probes
