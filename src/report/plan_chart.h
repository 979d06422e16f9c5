// Helpers shared by the plan's SVG charts (report/plan_html.cc, report/plan_memory_svg.cc): the font,
// the chart width, text-width and tick-step estimates and the fill patterns. Pure: no I/O.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "report/svg.h"

namespace ppdeploy::plan_chart {

inline constexpr const char* kFont = "DejaVu Sans, Liberation Sans, Arial, Helvetica, sans-serif";
inline constexpr double kChartWidth = 1200;

/// Approximate rendered width of `text` at `font_px` in a sans-serif face (0.6 em per UTF-8 character).
double TextWidth(std::string_view text, double font_px);

/// A "nice" tick step (1, 2, 2.5, 5 x 10^k) giving about `target` ticks up to `max`.
double NiceStep(double max, int target);

/// "true" / "false" for data attributes.
std::string Bool(bool v);

/// The fill patterns every plan chart uses (ids "act", "nt", "idle", "outside", "forced"), in a <defs>.
void Patterns(SvgWriter& w);

}  // namespace ppdeploy::plan_chart
