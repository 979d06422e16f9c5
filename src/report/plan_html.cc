#include "report/plan_html.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/error.h"
#include "core/units.h"
#include "layout/index_share.h"
#include "memory/kv.h"
#include "memory/pool.h"
#include "report/html_page.h"
#include "report/plan_chart.h"
#include "report/plan_render.h"
#include "report/svg.h"

namespace ppdeploy {
namespace {

using plan_chart::kChartWidth;
using plan_chart::kFont;
using plan_chart::NiceStep;
using plan_chart::Patterns;
using plan_chart::TextWidth;

std::string B(bool v) { return plan_chart::Bool(v); }
std::string Ints(const std::vector<int>& v) { return FormatPartition(v); }

}  // namespace

namespace plan_chart {

double TextWidth(std::string_view text, double font_px) {
  size_t n = 0;
  for (unsigned char c : text)
    if ((c & 0xC0) != 0x80) ++n;
  return static_cast<double>(n) * font_px * 0.6;
}

double NiceStep(double max, int target) {
  double raw = max / std::max(1, target);
  if (raw <= 0) return 1;
  double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (raw <= m * mag) return m * mag;
  return 10 * mag;
}

std::string Bool(bool v) { return v ? "true" : "false"; }

void Patterns(SvgWriter& w) {
  w.Open("defs");
  auto hatch = [&](const char* name, const char* bg, const char* fg, double angle, double width, double gap) {
    w.Open("pattern", {{"id", w.Id(name)},
                       {"patternUnits", "userSpaceOnUse"},
                       {"width", SvgNumber(gap)},
                       {"height", SvgNumber(gap)},
                       {"patternTransform", fmt::format("rotate({})", SvgNumber(angle))}});
    w.Rect(0, 0, gap, gap, {{"fill", bg}});
    w.Line(0, 0, 0, gap, {{"stroke", fg}, {"stroke-width", SvgNumber(width)}});
    w.Close();
  };
  hatch("act", "#fde0b8", "#d9761e", 45, 3, 7);
  hatch("nt", "#5b3f86", "#c9b8ea", 0, 2, 6);
  hatch("idle", "#ffffff", "#3f8f47", -45, 1.5, 6);
  w.Open("pattern", {{"id", w.Id("outside")}, {"patternUnits", "userSpaceOnUse"}, {"width", "6"}, {"height", "6"}});
  w.Rect(0, 0, 6, 6, {{"fill", "#b8b8b8"}});
  w.Line(0, 3, 6, 3, {{"stroke", "#303030"}, {"stroke-width", "1.2"}});
  w.Line(3, 0, 3, 6, {{"stroke", "#303030"}, {"stroke-width", "1.2"}});
  w.Close();
  hatch("forced", "#f3c1bc", "#7a1f17", 45, 2, 5);
  w.Close();
}

}  // namespace plan_chart

// ---------------------------------------------------------------- optimiser

namespace {

// The optimiser chart's frame: margins, plot area and the token scale.
struct OptFrame {
  double left = 92, right = 24, top = 78, plot_h = 300, bottom = 118;
  double height = top + plot_h + bottom;
  double plot_w = kChartWidth - left - right;
  double step = 1, ymax = 1;
  double Y(double v) const { return top + plot_h - v / ymax * plot_h; }
};

// Legend row under the subtitle.
void OptimizerLegend(SvgWriter& w, const OptFrame& f) {
  double lx = f.left;
  const double ly = 54;
  auto item = [&](const SvgAttrs& swatch, const std::string& text) {
    SvgAttrs a = swatch;
    w.Rect(lx, ly, 14, 14, a);
    w.Text(lx + 20, ly + 11, text, {{"font-size", "12"}, {"fill", "#222222"}});
    lx += 20 + TextWidth(text, 12) + 22;
  };
  item({{"fill", "#1f2f5c"}}, "optimum");
  item({{"fill", "#8fb3d9"}, {"stroke", "#333333"}, {"stroke-width", "2"}, {"stroke-dasharray", "4 2"}},
       "vLLM default");
  item({{"fill", "#8fb3d9"}}, "other candidate");
  item({{"fill", w.Url("forced")}}, "has fix-B forced layers (strip under the bar)");
  w.Line(lx, ly + 7, lx + 16, ly + 7, {{"stroke", "#b3261e"}, {"stroke-width", "3"}});
  w.Text(lx + 22, ly + 11, "measured", {{"font-size", "12"}, {"fill", "#222222"}});
}

// Token axis and grid.
void OptimizerAxis(SvgWriter& w, const OptFrame& f) {
  const double left = f.left, plot_w = f.plot_w, top = f.top, plot_h = f.plot_h;
  w.Open("g", {{"class", "axis"}, {"font-size", "12"}, {"fill", "#333333"}});
  for (double v = 0; v <= f.ymax + 1e-9; v += f.step) {
    double y = f.Y(v);
    w.Line(left, y, left + plot_w, y, {{"stroke", v == 0 ? "#333333" : "#e2e2e2"}});
    w.Text(left - 8, y + 4, WithThousands(static_cast<std::int64_t>(std::llround(v))), {{"text-anchor", "end"}});
  }
  w.Text(16, top + plot_h / 2, "KV tokens",
         {{"transform", fmt::format("rotate(-90 16 {})", SvgNumber(top + plot_h / 2))}, {"text-anchor", "middle"}});
  w.Close();
}

// One candidate's bar, its forced strip, measured line and the value, delta and marks above it.
void CandidateBar(SvgWriter& w, const OptFrame& f, const SplitCandidate& c, double cx, double bar_w, double fs) {
  auto Y = [&](double v) { return f.Y(v); };
  const double x = cx - bar_w / 2;
  const double y = Y(static_cast<double>(c.kv_tokens));
  SvgAttrs bar = {{"class", "bar"}, {"fill", c.is_optimum ? "#1f2f5c" : "#8fb3d9"}};
  if (c.is_default) {
    bar.push_back({"stroke", "#333333"});
    bar.push_back({"stroke-width", "2"});
    bar.push_back({"stroke-dasharray", "4 2"});
  }
  w.Open("rect", [&] {
    SvgAttrs a = {
        {"x", SvgNumber(x)}, {"y", SvgNumber(y)}, {"width", SvgNumber(bar_w)}, {"height", SvgNumber(Y(0) - y)}};
    a.insert(a.end(), bar.begin(), bar.end());
    return a;
  }());
  w.Title(
      fmt::format("split {}: {} KV tokens ({} blocks), {:+.1f}% vs default, bottleneck PP{}, balance {:.3f}, forced {}",
                  FormatPartition(c.partition), WithThousands(c.kv_tokens), WithThousands(c.num_gpu_blocks),
                  100.0 * c.delta_vs_default, c.binding_rank, c.compute_balance,
                  c.forced_layers.empty() ? "none" : FormatPartition(c.forced_layers)));
  w.Close();
  // Forced-layer strip at the bar's foot.
  if (!c.forced_layers.empty()) w.Rect(x, Y(0) - 8, bar_w, 8, {{"class", "forced-strip"}, {"fill", w.Url("forced")}});
  if (c.measured_kv_tokens) {
    double my = Y(static_cast<double>(*c.measured_kv_tokens));
    w.Line(x - 6, my, x + bar_w + 6, my, {{"class", "measured"}, {"stroke", "#b3261e"}, {"stroke-width", "3"}});
  }
  // Value, delta and marks above the bar.
  w.Text(cx, y - 6, WithThousands(c.kv_tokens),
         {{"text-anchor", "middle"}, {"font-size", SvgNumber(fs)}, {"fill", "#111111"}});
  w.Text(cx, y - 6 - fs - 2, fmt::format("{:+.1f}%", 100.0 * c.delta_vs_default),
         {{"text-anchor", "middle"}, {"font-size", SvgNumber(fs)}, {"fill", "#444444"}});
  std::string mark = c.is_optimum && c.is_default ? "optimum = default"
                     : c.is_optimum               ? "optimum"
                     : c.is_default               ? "vLLM default"
                                                  : "";
  if (!mark.empty())
    w.Text(cx, y - 6 - 2 * (fs + 2), mark,
           {{"class", "mark"},
            {"text-anchor", "middle"},
            {"font-size", SvgNumber(fs)},
            {"font-weight", "bold"},
            {"fill", c.is_optimum ? "#1f2f5c" : "#333333"}});
}

// Split, forced layers, bottleneck and balance under the axis.
void CandidateCaption(SvgWriter& w, const OptFrame& f, const SplitCandidate& c, double cx, double slot, double fs) {
  const double top = f.top, plot_h = f.plot_h;
  double ty = top + plot_h + 18;
  w.Text(cx, ty, FormatPartition(c.partition),
         {{"text-anchor", "middle"}, {"font-size", SvgNumber(fs + 1)}, {"font-weight", "bold"}});
  std::string forced = c.forced_layers.empty() ? "no forced" : "forced " + FormatPartition(c.forced_layers);
  std::vector<std::string> flines = {forced};
  if (TextWidth(forced, fs) > slot - 4 && !c.forced_layers.empty())
    flines = {"forced", FormatPartition(c.forced_layers)};
  for (const auto& fl : flines) {
    ty += fs + 4;
    w.Text(cx, ty, fl,
           {{"class", c.forced_layers.empty() ? "forced-none" : "forced-note"},
            {"text-anchor", "middle"},
            {"font-size", SvgNumber(fs)},
            {"fill", c.forced_layers.empty() ? "#666666" : "#7a1f17"}});
  }
  ty += fs + 4;
  w.Text(cx, ty, fmt::format("binds PP{}", c.binding_rank),
         {{"text-anchor", "middle"}, {"font-size", SvgNumber(fs)}, {"fill", "#444444"}});
  ty += fs + 4;
  w.Text(cx, ty, fmt::format("bal {:.3f}", c.compute_balance),
         {{"text-anchor", "middle"}, {"font-size", SvgNumber(fs)}, {"fill", "#444444"}});
  if (c.measured_kv_tokens) {
    ty += fs + 4;
    w.Text(cx, ty, "measured " + WithThousands(*c.measured_kv_tokens),
           {{"class", "measured-label"},
            {"text-anchor", "middle"},
            {"font-size", SvgNumber(fs)},
            {"font-weight", "bold"},
            {"fill", "#b3261e"}});
  }
}

}  // namespace

std::string OptimizerSvg(const OptimizeResult& r, const std::string& id_prefix) {
  OptFrame f;
  std::int64_t maxv = 1;
  for (const auto& c : r.table) maxv = std::max({maxv, c.kv_tokens, c.measured_kv_tokens.value_or(0)});
  f.step = NiceStep(static_cast<double>(maxv) * 1.12, 6);
  f.ymax = std::ceil(static_cast<double>(maxv) * 1.12 / f.step) * f.step;
  const double left = f.left, height = f.height, plot_w = f.plot_w;

  const std::string title = fmt::format("Split optimiser, TP{} PP{}: KV pool of each candidate split",
                                        r.tensor_parallel_size, r.pipeline_parallel_size);
  SvgWriter w(kChartWidth, height, id_prefix,
              {{"class", "chart optimizer-chart"}, {"role", "img"}, {"aria-label", title}, {"font-family", kFont}});
  w.Title(title);
  Patterns(w);
  w.Rect(0, 0, kChartWidth, height, {{"fill", "#ffffff"}});
  w.Text(left, 24, title, {{"font-size", "18"}, {"font-weight", "bold"}, {"fill", "#111111"}});
  w.Text(left, 44,
         fmt::format(
             "best {} -> {} tokens ({:+.1f}% vs the vLLM default {}); bars: predicted KV tokens, label: vs default",
             FormatPartition(r.best.partition), WithThousands(r.best.kv_tokens), 100.0 * r.best.delta_vs_default,
             FormatPartition(r.default_split.partition)),
         {{"font-size", "13"}, {"fill", "#333333"}});
  OptimizerLegend(w, f);
  OptimizerAxis(w, f);
  const int n = static_cast<int>(r.table.size());
  const double slot = n > 0 ? plot_w / n : plot_w;
  const double bar_w = std::min(90.0, slot * 0.62);
  const double fs = slot >= 70 ? 12 : 10;
  for (int i = 0; i < n; ++i) {
    const SplitCandidate& c = r.table[i];
    const double cx = left + slot * i + slot / 2;
    w.Open("g",
           {{"class", std::string("candidate") + (c.is_optimum ? " optimum" : "") + (c.is_default ? " default" : "")},
            {"data-split", FormatPartition(c.partition)},
            {"data-kv-tokens", std::to_string(c.kv_tokens)},
            {"data-blocks", std::to_string(c.num_gpu_blocks)},
            {"data-default", B(c.is_default)},
            {"data-optimum", B(c.is_optimum)},
            {"data-zero-dependency", B(c.zero_dependency)},
            {"data-forced", Ints(c.forced_layers)}});
    CandidateBar(w, f, c, cx, bar_w, fs);
    CandidateCaption(w, f, c, cx, slot, fs);
    w.Close();
  }
  return w.Finish();
}

// ---------------------------------------------------------------- layer map

std::string LayerMapSvg(const Deployment& d, const std::vector<const LayoutPlan*>& layouts,
                        const std::string& id_prefix) {
  const ModelConfig model = EffectiveModel(d);
  const int L = model.num_hidden_layers;
  const int mtp = d.mtp_on() ? model.num_nextn_predict_layers : 0;
  const double left = 150, right = 24, top = 74, strip_h = 30, strip_gap = 62;
  const double mtp_gap = 16;
  const double plot_w = kChartWidth - left - right;
  const double cell_w = std::min(22.0, (plot_w - mtp_gap) / std::max(1, L + mtp));
  const double height = top + std::max<size_t>(1, layouts.size()) * (strip_h + strip_gap) - strip_gap + 40;
  const std::string title = "Layer map: stages, top-k index producers, fix-B forced layers, MTP";
  SvgWriter w(kChartWidth, height, id_prefix,
              {{"class", "chart layer-map"}, {"role", "img"}, {"aria-label", title}, {"font-family", kFont}});
  w.Title(title);
  Patterns(w);
  w.Rect(0, 0, kChartWidth, height, {{"fill", "#ffffff"}});
  w.Text(left, 24, title, {{"font-size", "18"}, {"font-weight", "bold"}, {"fill", "#111111"}});
  // Legend.
  {
    double lx = left;
    const double ly = 38;
    auto item = [&](const SvgAttrs& swatch, bool dot, const std::string& text) {
      w.Rect(lx, ly, 14, 18, swatch);
      if (dot)
        w.Empty("circle", {{"cx", SvgNumber(lx + 7)}, {"cy", SvgNumber(ly + 9)}, {"r", "3.2"}, {"fill", "#111111"}});
      w.Text(lx + 20, ly + 13, text, {{"font-size", "12"}, {"fill", "#222222"}});
      lx += 20 + TextWidth(text, 12) + 20;
    };
    item({{"fill", "#dbe7f5"}, {"stroke", "#555555"}}, false, "even PP stage");
    item({{"fill", "#8fb0d9"}, {"stroke", "#555555"}}, false, "odd PP stage");
    if (model.dsa)
      item({{"fill", "#ffffff"}, {"stroke", "#555555"}}, true, "computes its own top-k index (full layer)");
    item({{"fill", w.Url("forced")}, {"stroke", "#7a1f17"}, {"stroke-width", "2.5"}}, false, "forced by fix B");
    if (mtp) item({{"fill", "#ffffff"}, {"stroke", "#111111"}, {"stroke-width", "2"}}, false, "MTP layer (last stage)");
  }
  double y = top;
  for (size_t s = 0; s < layouts.size(); ++s) {
    const LayoutPlan& l = *layouts[s];
    const int pp = static_cast<int>(l.partition.size());
    const std::vector<int>& forced = l.index_share.forced;
    w.Open("g", {{"class", "layer-strip"},
                 {"data-split", SplitText(l)},
                 {"data-forced", Ints(forced)},
                 {"data-layers", std::to_string(L)},
                 {"data-mtp-layers", std::to_string(mtp)}});
    w.Text(left - 10, y + strip_h / 2 - 2, fmt::format("TP{} PP{}", l.spec.tensor_parallel_size, pp),
           {{"text-anchor", "end"}, {"font-size", "13"}, {"font-weight", "bold"}});
    w.Text(left - 10, y + strip_h / 2 + 13, "split " + SplitText(l), {{"text-anchor", "end"}, {"font-size", "12"}});
    // Stage brackets above the cells.
    for (int r = 0; r < pp; ++r) {
      LayerRange rg = RankRange(l.partition, r);
      if (rg.size() == 0) continue;
      double x0 = left + rg.start * cell_w, x1 = left + rg.end * cell_w;
      if (r == pp - 1 && mtp) x1 = left + L * cell_w + mtp_gap + mtp * cell_w;
      w.Line(x0 + 1, y - 6, x1 - 1, y - 6, {{"stroke", "#333333"}, {"stroke-width", "1.5"}});
      w.Line(x0 + 1, y - 6, x0 + 1, y - 2, {{"stroke", "#333333"}, {"stroke-width", "1.5"}});
      w.Line(x1 - 1, y - 6, x1 - 1, y - 2, {{"stroke", "#333333"}, {"stroke-width", "1.5"}});
      w.Text((x0 + x1) / 2, y - 10,
             fmt::format("PP{}: {}-{} ({} layers{})", r, rg.start, rg.end - 1, rg.size(),
                         r == pp - 1 && mtp ? " + MTP" : ""),
             {{"text-anchor", "middle"}, {"font-size", "11"}, {"fill", "#222222"}});
    }
    auto stage_of = [&](int layer) {
      for (int r = 0; r < pp; ++r)
        if (RankRange(l.partition, r).contains(layer)) return r;
      return pp - 1;
    };
    for (int i = 0; i < L + mtp; ++i) {
      const bool is_mtp = i >= L;
      const int r = is_mtp ? pp - 1 : stage_of(i);
      const bool full = model.dsa && (is_mtp || LayerIsFull(model, i));
      const bool is_forced = !is_mtp && std::find(forced.begin(), forced.end(), i) != forced.end();
      const double x = left + i * cell_w + (is_mtp ? mtp_gap : 0);
      SvgAttrs a = {{"class", is_mtp ? "cell mtp" : (is_forced ? "cell forced" : "cell")},
                    {"x", SvgNumber(x)},
                    {"y", SvgNumber(y)},
                    {"width", SvgNumber(cell_w)},
                    {"height", SvgNumber(strip_h)},
                    {"data-layer", std::to_string(i)},
                    {"data-pp-rank", std::to_string(r)},
                    {"data-full", B(full)},
                    {"data-forced", B(is_forced)},
                    {"fill", is_forced ? w.Url("forced") : (r % 2 == 0 ? "#dbe7f5" : "#8fb0d9")},
                    {"stroke", is_forced ? "#7a1f17" : (is_mtp ? "#111111" : "#ffffff")},
                    {"stroke-width", is_forced ? "2.5" : (is_mtp ? "2" : "1")}};
      w.Open("rect", a);
      w.Title(fmt::format(
          "layer {}{}: PP rank {}{}{}", i, is_mtp ? " (MTP)" : "", r,
          model.dsa ? (full ? ", computes its own top-k index" : ", reuses the previous full layer's index") : "",
          is_forced ? ", forced to compute it by fix B (its producer is on an earlier stage)" : ""));
      w.Close();
      if (full)
        w.Empty("circle", {{"class", "full-dot"},
                           {"cx", SvgNumber(x + cell_w / 2)},
                           {"cy", SvgNumber(y + strip_h / 2)},
                           {"r", SvgNumber(std::min(3.5, cell_w / 3))},
                           {"fill", "#111111"}});
      if (is_mtp)
        w.Text(x + cell_w / 2, y + strip_h + 14, "MTP",
               {{"text-anchor", "middle"}, {"font-size", "11"}, {"font-weight", "bold"}});
      else if (i % 10 == 0 || i == L - 1)
        w.Text(x + cell_w / 2, y + strip_h + 14, std::to_string(i),
               {{"text-anchor", "middle"}, {"font-size", "11"}, {"fill", "#444444"}});
    }
    if (!forced.empty()) {
      double fx = left + forced.front() * cell_w;
      w.Text(fx, y + strip_h + 28,
             fmt::format("forced {} ({})", FormatPartition(forced),
                         l.index_share.fix_applied ? "fix B applied" : "NO fix: unsafe"),
             {{"class", "forced-label"}, {"font-size", "12"}, {"font-weight", "bold"}, {"fill", "#7a1f17"}});
    } else if (l.index_share.applies) {
      w.Text(left, y + strip_h + 28, "zero-dependency split: no forced layers",
             {{"font-size", "12"}, {"fill", "#444444"}});
    }
    w.Close();
    y += strip_h + strip_gap;
  }
  return w.Finish();
}

// ---------------------------------------------------------------- page

std::vector<const LayoutPlan*> DetailedOrBest(const PlanReport& rep) {
  std::vector<const LayoutPlan*> out;
  for (const auto& l : rep.detailed) out.push_back(&l);
  if (out.empty() && rep.best >= 0 && rep.best < static_cast<int>(rep.layouts.size()))
    out.push_back(&rep.layouts[rep.best]);
  return out;
}

namespace {

bool LooksNumeric(const std::string& s) {
  if (s.empty()) return false;
  char c = s[0];
  return (c >= '0' && c <= '9') || c == '-' || c == '+';
}

void HtmlTable(const Table& t, const std::string& cls, std::ostream& out, int highlight_row = -1) {
  out << "<table class=\"" << XmlEscape(cls) << "\">\n<thead><tr>";
  for (const auto& h : t.headers) out << "<th>" << XmlEscape(h) << "</th>";
  out << "</tr></thead>\n<tbody>\n";
  for (size_t i = 0; i < t.rows.size(); ++i) {
    out << (static_cast<int>(i) == highlight_row ? "<tr class=\"best\">" : "<tr>");
    for (size_t c = 0; c < t.rows[i].size(); ++c) {
      const std::string& v = t.rows[i][c];
      bool right = c < t.right_align.size() ? t.right_align[c] : LooksNumeric(v);
      out << (right ? "<td class=\"num\">" : "<td>") << XmlEscape(v) << "</td>";
    }
    out << "</tr>\n";
  }
  out << "</tbody>\n</table>\n";
}

Table SplitTable(const OptimizeResult& r) {
  // The optimiser table of the text output (report/split_render.cc), same formats.
  Table t;
  t.headers = {"split",   "KV tokens (predicted)", "measured", "vs default", "blocks", "bottleneck",
               "balance", "forced layers",         "note"};
  t.right_align = {false, true, true, true, true, false, true, false, false};
  for (const auto& c : r.table) {
    std::string note;
    if (c.is_optimum) note += "optimum";
    if (c.is_default) note += note.empty() ? "vLLM default" : ", vLLM default";
    if (c.zero_dependency) note += note.empty() ? "zero-dependency" : ", zero-dependency";
    t.AddRow({FormatPartition(c.partition), WithThousands(c.kv_tokens),
              c.measured_kv_tokens ? WithThousands(*c.measured_kv_tokens) : "-",
              fmt::format("{:+.1f}%", 100.0 * c.delta_vs_default), WithThousands(c.num_gpu_blocks),
              fmt::format("PP{}", c.binding_rank), fmt::format("{:.3f}", c.compute_balance),
              c.forced_layers.empty() ? "none" : FormatPartition(c.forced_layers), note});
  }
  return t;
}

// What the plan page adds to the shared stylesheet (report/html_page.h), later rules winning: h3
// sections, the best-row highlight, a portrait print layout with one major section a page.
constexpr const char* kPlanCss = R"CSS(
h3 { font-size: 15px; margin: 18px 0 6px; }
svg.chart { max-width: 1200px; }
table { font-size: 12.5px; }
tr.best td { font-weight: bold; background: #f4f7ee; }
table.dims td:nth-child(4) { max-width: 640px; }
.problem { color: #b3261e; font-weight: bold; }
@media print {
  @page { size: A4 portrait; margin: 12mm 10mm; }
  section.major { break-before: page; }
  section.major:first-of-type { break-before: auto; }
  h2, h3 { break-after: avoid; }
  table { font-size: 7pt; width: 100%; }
  tr { break-inside: avoid; }
  .table-wrap { overflow: visible; }
  a { color: inherit; text-decoration: none; }
}
)CSS";

std::string Esc(const std::string& s) { return XmlEscape(s); }

// One detailed layout of the memory section: its chart, rank table and pool facts.
void LayoutDetail(const Deployment& d, const LayoutPlan& l, size_t i, std::ostream& out) {
  out << "<h3>" << Esc(PlanLayoutTitle(l)) << "</h3>\n<figure>\n"
      << MemoryBarsSvg(d, l, fmt::format("mem{}", i)) << "<figcaption>" << Esc(l.capacity_log)
      << "</figcaption>\n</figure>\n";
  out << "<div class=\"table-wrap\">\n";
  HtmlTable(PlanRankTable(l), "ranks", out);
  out << "</div>\n<ul>\n";
  out << "<li>"
      << Esc(fmt::format(
             "pool: {} blocks of {} tokens{}", WithThousands(l.pool.num_gpu_blocks), l.block_size,
             l.spec.pipeline_parallel_size > 1 ? fmt::format(" (PP rank {} binds)", l.pool.binding_rank) : ""))
      << "</li>\n";
  out << "<li>"
      << Esc(fmt::format("predicted pool: {} tokens (memory constants: {})", PoolWithRangeText(l), l.constants))
      << "</li>\n";
  out << "<li>"
      << Esc(fmt::format("largest max_model_len that fits: {}; usable tokens without the null block: {}", LimitText(l),
                         WithThousands(l.pool.usable_tokens)))
      << "</li>\n";
  if (l.index_share.applies) {
    std::string fr;
    for (const auto& r : l.index_share.ranks)
      if (!r.forced.empty()) fr += fmt::format(" rank{} [{}]", r.pp_rank, FormatPartition(r.forced));
    out << "<li>"
        << Esc("index share: " +
               (l.index_share.zero_dependency
                    ? std::string("zero-dependency split (no forced layers)")
                    : "forced self-compute:" + fr +
                          (l.index_share.fix_applied ? " (fix B applied)" : " (NO fix: unsafe)")) +
               fmt::format("; compute balance {:.3f} (layer-equivalents, MTP x k)", l.compute_balance))
        << "</li>\n";
  }
  for (const auto& wn : l.warnings) out << "<li class=\"warning\">warning: " << Esc(wn) << "</li>\n";
  for (const auto& pr : l.problems) out << "<li class=\"problem\">problem: " << Esc(pr.message) << "</li>\n";
  out << "</ul>\n";
}

// The memory section and the layer map of the detailed layouts.
void MemorySection(const Deployment& d, const std::vector<const LayoutPlan*>& detail, std::ostream& out) {
  out << "<section class=\"major\" id=\"memory\">\n<h2>Memory per GPU, by pipeline stage</h2>\n"
      << "<p class=\"muted\">One bar per PP stage (its TP ranks are identical). The budget is "
      << Esc(fmt::format("ceil(total x gpu_memory_utilization) = {} GiB",
                         PlanGiBText(detail.front()->ranks.empty() ? RequestedBytes(d)
                                                                   : detail.front()->ranks.front().requested_bytes)))
      << "; weights, non-torch, activation and the CUDA-graph estimate come out of it, the rest is the KV budget. "
         "Every stage allocates the pool's blocks (the minimum over stages); what a stage could hold beyond that is "
         "idle. "
         "The CUDA graph pool and the CUDA context lie outside the budget.</p>\n";
  for (size_t i = 0; i < detail.size(); ++i) LayoutDetail(d, *detail[i], i, out);
  out << "</section>\n";
  out << "<section id=\"layer-map\">\n<h2>Layer map</h2>\n"
      << "<p class=\"muted\">Which layers sit on which stage; with DSA index sharing, a dot marks a layer that "
         "computes "
         "its own top-k index, the others reuse the previous full layer's. A stage whose first layers would reuse an "
         "index made on an earlier stage needs fix B: those layers are forced to compute it.</p>\n<figure>\n"
      << LayerMapSvg(d, detail, "map") << "</figure>\n</section>\n";
}

// The optimiser section: one chart and table per optimised layout.
void OptimizerSection(const PlanReport& rep, std::ostream& out) {
  out << "<section class=\"major\" id=\"optimizer\">\n<h2>Split optimiser</h2>\n";
  for (size_t i = 0; i < rep.optimizations.size(); ++i) {
    const OptimizeResult& o = rep.optimizations[i];
    out << "<h3>"
        << Esc(fmt::format("TP{} PP{}: best {} -> {} tokens ({:+.1f}% vs the default {})", o.tensor_parallel_size,
                           o.pipeline_parallel_size, FormatPartition(o.best.partition), WithThousands(o.best.kv_tokens),
                           100.0 * o.best.delta_vs_default, FormatPartition(o.default_split.partition)))
        << "</h3>\n<figure>\n"
        << OptimizerSvg(o, fmt::format("opt{}", i)) << "</figure>\n<div class=\"table-wrap\">\n";
    HtmlTable(SplitTable(o), "splits", out);
    out << "</div>\n<p class=\"muted\">balance = max / min stage compute in layer-equivalents (the last stage's MTP "
           "forwards count k times).</p>\n";
  }
  out << "</section>\n";
}

}  // namespace

void RenderPlanHtml(const PlanReport& rep, std::ostream& out) {
  const Deployment& d = rep.deployment;
  const std::string headline = fmt::format("{} ({}) on {}, vLLM {}, gpu_memory_utilization {}", d.model_name,
                                           d.model.architecture, GpusText(d), d.vllm.name, d.gpu_memory_utilization);
  const LayoutPlan* any = !rep.layouts.empty() ? &rep.layouts[0] : (!rep.detailed.empty() ? &rep.detailed[0] : nullptr);
  const std::vector<const LayoutPlan*> detail = DetailedOrBest(rep);

  out << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n"
      << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n"
      << "<meta name=\"generator\" content=\"ppdeploy plan --format html\"/>\n"
      << "<title>ppdeploy plan: " << Esc(fmt::format("{} on {}", d.model_name, GpusText(d, false))) << "</title>\n"
      << "<style>" << HtmlPageCss() << kPlanCss << "</style>\n</head>\n<body>\n";
  out << "<header>\n<h1>ppdeploy plan</h1>\n<p class=\"deployment\">" << Esc(headline) << "</p>\n";
  if (any) {
    std::string kvline = fmt::format("KV cache: {} ({} B/token/layer", any->kv.layout,
                                     AttentionBytesPerTokenPerLayer(EffectiveModel(d), any->kv, 1));
    if (d.model.dsa) kvline += fmt::format(", DSA indexer {} B/token/layer", IndexerBytesPerTokenPerLayer(d.model));
    kvline += fmt::format("), block size {}, MTP {}, max_model_len {}", any->block_size,
                          d.mtp_on() ? fmt::format("k={}", d.num_speculative_tokens) : "off",
                          WithThousands(d.effective_max_model_len()));
    out << "<p class=\"kv\">" << Esc(kvline) << "</p>\n";
  }
  out << "<nav><ul>";
  if (!detail.empty())
    out << "<li><a href=\"#memory\">Memory per stage</a></li><li><a href=\"#layer-map\">Layer map</a></li>";
  if (!rep.optimizations.empty()) out << "<li><a href=\"#optimizer\">Split optimiser</a></li>";
  if (!rep.layouts.empty()) out << "<li><a href=\"#layouts\">Layouts</a></li>";
  out << "<li><a href=\"#dimensions\">Other dimensions</a></li><li><a "
         "href=\"#notes\">Notes</a></li></ul></nav>\n</header>\n";

  if (!detail.empty()) MemorySection(d, detail, out);
  if (!rep.optimizations.empty()) OptimizerSection(rep, out);
  if (!rep.layouts.empty()) {
    out << "<section class=\"major\" id=\"layouts\">\n<h2>Layouts (vLLM default split; * = largest feasible "
           "pool)</h2>\n"
        << "<div class=\"table-wrap\">\n";
    HtmlTable(PlanSummaryTable(rep), "layouts", out, rep.best);
    out << "</div>\n</section>\n";
  }

  out << "<section id=\"dimensions\">\n<h2>Other dimensions</h2>\n<div class=\"table-wrap\">\n";
  Table dims;
  dims.headers = {"dimension", "flag", "capacity", "why / why not"};
  dims.right_align = {false, false, false, false};
  for (const auto& n : rep.dimensions) dims.AddRow({n.dimension, n.flag, n.capacity_effect, n.verdict});
  HtmlTable(dims, "dims", out);
  out << "</div>\n</section>\n";

  out << "<section id=\"notes\">\n<h2>Notes</h2>\n<ul>\n";
  for (const auto& n : rep.notes) out << "<li>" << Esc(n) << "</li>\n";
  out << "</ul>\n</section>\n";
  out << "<footer><p class=\"muted\">Figure suffixes: m measured, c calibrated, e estimated, g given; GiB = 2^30 "
         "bytes. "
         "Written by ppdeploy plan --format html; the same figures as --format json.</p></footer>\n</body>\n</html>\n";
}

void RenderPlanSvg(const PlanReport& rep, std::ostream& out) {
  std::vector<const LayoutPlan*> detail = DetailedOrBest(rep);
  if (detail.empty()) Fail("--format svg: the plan has no detailed layout and no feasible layout to draw");
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n" << MemoryBarsSvg(rep.deployment, *detail.front(), "mem0");
}

}  // namespace ppdeploy
