// The plan's memory chart (MemoryBarsSvg, report/plan_html.h): one stacked bar per PP stage, from the
// weights up to the nvidia-smi total, the budget line, labels and the legend.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/units.h"
#include "memory/pool.h"
#include "report/plan_chart.h"
#include "report/plan_html.h"
#include "report/plan_render.h"
#include "report/svg.h"

namespace ppdeploy {
namespace {

using plan_chart::kChartWidth;
using plan_chart::kFont;
using plan_chart::TextWidth;

struct SegmentKind {
  const char* key;
  const char* short_name;  // in-bar label prefix when the bar is wide enough
  const char* legend;
  const char* fill;       // colour, or pattern name ("p:<name>")
  const char* text_fill;  // label colour on this segment
};

// Distinct luminance, dark to light, and hatching where two are close (grayscale print).
constexpr SegmentKind kSegments[] = {
    {"weights", "weights", "weights", "#1f2f5c", "#ffffff"},
    {"non-torch", "non-torch", "non-torch (NCCL, cuBLAS, ...)", "p:nt", "#000000"},
    {"activation", "act+CG", "activation + CUDA-graph estimate", "p:act", "#000000"},
    {"kv", "KV", "KV cache allocated (pool x page)", "#5aae61", "#000000"},
    {"idle-kv", "idle KV", "idle KV: available - allocated", "p:idle", "#000000"},
    {"outside", "CG+ctx", "CUDA graph pool + CUDA context (outside the budget)", "p:outside", "#000000"},
    {"free", "free", "free up to the nvidia-smi total", "#ffffff", "#555555"},
};
constexpr const SegmentKind* kFree = &kSegments[6];

std::string Fill(const SvgWriter& w, const SegmentKind& k) {
  std::string f = k.fill;
  return f.rfind("p:", 0) == 0 ? w.Url(f.substr(2)) : f;
}

std::string RankLayers(const RankPlan& r) {
  std::string s = r.layers.size() ? fmt::format("layers {}-{}", r.layers.start, r.layers.end - 1) : "no layers";
  if (r.mtp_layers) s += fmt::format(" +MTP{}", r.mtp_layers);
  return s;
}

struct Seg {
  const SegmentKind* kind;
  std::int64_t bytes;
  std::string tooltip;
};

// The chart's frame: margins, the plot area and the GiB scale.
struct Frame {
  double left = 72, right = 300, top = 64, plot_h = 470, bottom = 92;
  double height = top + plot_h + bottom;
  double plot_w = kChartWidth - left - right;
  double step = 1, ymax_gib = 1;
  double Y(std::int64_t bytes) const { return top + plot_h - ToGiB(bytes) / ymax_gib * plot_h; }
};

// A label of a thin segment, drawn right of its bar over the budget line.
struct Deferred {
  double x, y_seg, y_text;
  std::string text;
};

struct SideLabel {
  double y;
  std::string name, value;
};

// The segments of one stage's bar, bottom-up; `top_bytes` gets the bar's height below "free".
std::vector<Seg> StageSegments(const LayoutPlan& l, const RankPlan& r, std::int64_t smi_total,
                               std::int64_t& top_bytes) {
  std::vector<Seg> s;
  auto add = [&](int k, std::int64_t bytes, std::string tip) {
    s.push_back({&kSegments[k], std::max<std::int64_t>(0, bytes), std::move(tip)});
  };
  add(0, r.weights.bytes,
      fmt::format("weights {} GiB ({})", PlanGiBText(r.weights.bytes), ToString(r.weights.provenance)));
  add(1, r.non_torch.bytes,
      fmt::format("non-torch {} GiB ({})", PlanGiBText(r.non_torch.bytes), ToString(r.non_torch.provenance)));
  add(2, r.activation.bytes + r.cuda_graph_estimate.bytes,
      fmt::format("activation {} GiB ({}) + CUDA-graph estimate {} GiB ({})", PlanGiBText(r.activation.bytes),
                  ToString(r.activation.provenance), PlanGiBText(r.cuda_graph_estimate.bytes),
                  ToString(r.cuda_graph_estimate.provenance)));
  add(3, r.kv_allocated_bytes,
      fmt::format("KV allocated {} GiB = {} blocks x {} B page", PlanGiBText(r.kv_allocated_bytes),
                  WithThousands(l.pool.num_gpu_blocks), WithThousands(r.page_bytes)));
  add(4, r.kv_unusable_bytes,
      fmt::format("idle KV {} GiB: available {} GiB ({} blocks here) - allocated (the pool is {} blocks)",
                  PlanGiBText(r.kv_unusable_bytes), PlanGiBText(r.available_kv.bytes), WithThousands(r.num_blocks),
                  WithThousands(l.pool.num_gpu_blocks)));
  add(5, r.cuda_graph_actual.bytes + r.cuda_context.bytes,
      fmt::format("CUDA graph pool {} GiB ({}) + CUDA context {} GiB ({}), outside the budget",
                  PlanGiBText(r.cuda_graph_actual.bytes), ToString(r.cuda_graph_actual.provenance),
                  PlanGiBText(r.cuda_context.bytes), ToString(r.cuda_context.provenance)));
  top_bytes = 0;
  for (const auto& x : s) top_bytes += x.bytes;
  add(6, smi_total - top_bytes,
      fmt::format("free up to the nvidia-smi total ({} GiB): {} GiB; nvidia-smi headroom {} GiB = this + idle KV "
                  "(never allocated)",
                  PlanGiBText(smi_total), PlanGiBText(std::max<std::int64_t>(0, smi_total - top_bytes)),
                  PlanGiBText(r.headroom_bytes)));
  return s;
}

// Title, subtitle and the first problem of a rejected layout.
void Header(SvgWriter& w, const Deployment& d, const LayoutPlan& l, const Frame& f, const std::string& title) {
  w.Title(title);
  plan_chart::Patterns(w);
  w.Rect(0, 0, kChartWidth, f.height, {{"fill", "#ffffff"}});
  w.Text(f.left, 24, title, {{"font-size", "18"}, {"font-weight", "bold"}, {"fill", "#111111"}});
  w.Text(f.left, 44,
         fmt::format("{} on {}: every TP rank of a stage is identical; pool {} blocks = {} tokens{}", d.model_name,
                     GpusText(d, false), WithThousands(l.pool.num_gpu_blocks), PoolWithRangeText(l),
                     l.spec.pipeline_parallel_size > 1 ? fmt::format(" (PP rank {} binds)", l.pool.binding_rank) : ""),
         {{"font-size", "13"}, {"fill", "#333333"}});
  if (l.feasible || l.problems.empty()) return;
  std::string problem = "rejected: " + l.problems.front().message;
  const size_t max_chars = static_cast<size_t>(f.plot_w / (12 * 0.6));
  if (problem.size() > max_chars) {
    size_t cut = max_chars - 3;
    while (cut > 0 && (static_cast<unsigned char>(problem[cut]) & 0xC0) == 0x80) --cut;  // UTF-8 boundary
    problem = problem.substr(0, cut) + "...";
  }
  w.Text(f.left, f.top - 8, problem,
         {{"class", "problem"}, {"font-size", "12"}, {"font-weight", "bold"}, {"fill", "#b3261e"}});
}

// Axis and grid.
void Axis(SvgWriter& w, const Frame& f) {
  w.Open("g", {{"class", "axis"}, {"font-size", "12"}, {"fill", "#333333"}});
  for (double v = 0; v <= f.ymax_gib + 1e-9; v += f.step) {
    double y = f.top + f.plot_h - v / f.ymax_gib * f.plot_h;
    w.Line(f.left, y, f.left + f.plot_w, y, {{"stroke", v == 0 ? "#333333" : "#e2e2e2"}, {"stroke-width", "1"}});
    w.Text(f.left - 8, y + 4, SvgNumber(v), {{"text-anchor", "end"}});
  }
  w.Line(f.left, f.top, f.left, f.top + f.plot_h, {{"stroke", "#333333"}});
  w.Text(18, f.top + f.plot_h / 2, "GiB per GPU (2^30 B)",
         {{"transform", fmt::format("rotate(-90 18 {})", SvgNumber(f.top + f.plot_h / 2))}, {"text-anchor", "middle"}});
  w.Close();
}

// The label inside a segment when it fits, else a side label (returned in `side`).
void SegmentLabel(SvgWriter& w, const Seg& s, double x, double bar_w, double y0, double y1, const std::string& value,
                  std::vector<SideLabel>& side) {
  const double h = y0 - y1;
  std::string name_value = std::string(s.kind->short_name) + " " + value;
  if (h < 15) {
    if (s.kind != kFree) side.push_back({(y0 + y1) / 2, s.kind->short_name, value});
    return;
  }
  std::string text = TextWidth(name_value, 12) + 8 <= bar_w ? name_value : value;
  if (TextWidth(text, 12) + 4 > bar_w) {
    side.push_back({(y0 + y1) / 2, s.kind->short_name, value});
    return;
  }
  // A white box behind the text on hatched segments keeps it readable.
  const bool hatched = std::string(s.kind->fill).rfind("p:", 0) == 0;
  double tw = TextWidth(text, 12);
  if (hatched)
    w.Rect(x + bar_w / 2 - tw / 2 - 3, (y0 + y1) / 2 - 8, tw + 6, 15,
           {{"fill", "#ffffff"}, {"fill-opacity", "0.85"}, {"rx", "2"}});
  w.Text(x + bar_w / 2, (y0 + y1) / 2 + 4, text,
         {{"class", "seg-label"}, {"text-anchor", "middle"}, {"font-size", "12"}, {"fill", s.kind->text_fill}});
}

// The stacked segments of one bar; returns the labels that did not fit inside.
std::vector<SideLabel> Segments(SvgWriter& w, const Frame& f, const RankPlan& r, const std::vector<Seg>& segs, double x,
                                double bar_w) {
  std::vector<SideLabel> side;
  std::int64_t base = 0;
  for (const auto& s : segs) {
    const double y0 = f.Y(base), y1 = f.Y(base + s.bytes);
    const std::string value = PlanGiBText(s.bytes);
    w.Open("rect", {{"class", std::string("seg seg-") + s.kind->key},
                    {"x", SvgNumber(x)},
                    {"y", SvgNumber(y1)},
                    {"width", SvgNumber(bar_w)},
                    {"height", SvgNumber(y0 - y1)},
                    {"fill", Fill(w, *s.kind)},
                    {"stroke", s.kind == kFree ? "#9a9a9a" : "#ffffff"},
                    {"stroke-width", "0.6"},
                    {"stroke-dasharray", s.kind == kFree ? "4 3" : "none"},
                    {"data-bytes", std::to_string(s.bytes)},
                    {"data-gib", value}});
    w.Title(fmt::format("PP rank {}: {}", r.pp_rank, s.tooltip));
    w.Close();
    // A few bytes (the binding stage's idle KV) get a tooltip, no label.
    if (value != "0.00") SegmentLabel(w, s, x, bar_w, y0, y1, value, side);
    base += s.bytes;
  }
  return side;
}

// Labels of thin segments to the right of the bar, spread 12 px apart, with leader lines.
void SpreadSideLabels(const std::vector<SideLabel>& side, double x, double bar_w, double slot,
                      std::vector<Deferred>& deferred) {
  const double gap = slot - bar_w;
  if (side.empty() || gap / 2 < 34) return;
  std::vector<double> ys;
  for (const auto& sl : side) ys.push_back(sl.y);
  // side is bottom-up: y decreasing. Push each label up so that they are >= 12 px apart.
  for (size_t k = 1; k < ys.size(); ++k) ys[k] = std::min(ys[k], ys[k - 1] - 12);
  for (size_t k = 0; k < side.size(); ++k) {
    std::string text = side[k].name + " " + side[k].value;
    if (TextWidth(text, 11) + 12 > gap / 2) text = side[k].value;
    deferred.push_back({x + bar_w, side[k].y, ys[k], text});
  }
}

// Binding stage: outline of the budget part and a label above the bar.
void BindingMark(SvgWriter& w, const Frame& f, const RankPlan& r, double x, double bar_w, std::int64_t requested) {
  w.Rect(x - 3, f.Y(requested), bar_w + 6, f.Y(0) - f.Y(requested),
         {{"class", "binding-outline"}, {"fill", "none"}, {"stroke", "#b3261e"}, {"stroke-width", "3"}});
  const std::string bl = fmt::format("binds the pool: {} blocks", WithThousands(r.num_blocks));
  const double half = TextWidth(bl, 12) / 2;
  w.Text(std::clamp(x + bar_w / 2, f.left + half, f.left + f.plot_w - half), f.top - 6, bl,
         {{"class", "binding-label"},
          {"text-anchor", "middle"},
          {"font-size", "12"},
          {"font-weight", "bold"},
          {"fill", "#b3261e"}});
}

// Caption under the axis: rank, layers, blocks, nvidia-smi use (shortened to fit the slot).
void StageCaption(SvgWriter& w, const Frame& f, const RankPlan& r, double cx, double slot) {
  const double cfs = slot >= 150 ? 12 : 11;
  const double y = f.top + f.plot_h;
  auto fit = [&](std::initializer_list<std::string> options) {
    for (const auto& o : options)
      if (TextWidth(o, cfs) <= slot - 6) return o;
    return *(options.end() - 1);
  };
  w.Text(cx, y + 18,
         fit({fmt::format("PP rank {}{}", r.pp_rank, r.binding ? " (binds)" : ""),
              fmt::format("PP{}{}", r.pp_rank, r.binding ? " (binds)" : ""), fmt::format("PP{}", r.pp_rank)}),
         {{"text-anchor", "middle"}, {"font-size", SvgNumber(cfs + 1)}, {"font-weight", "bold"}, {"fill", "#111111"}});
  w.Text(cx, y + 34,
         fit({RankLayers(r), RankLayers(r).rfind("layers ", 0) == 0 ? RankLayers(r).substr(7) : RankLayers(r)}),
         {{"text-anchor", "middle"}, {"font-size", SvgNumber(cfs)}, {"fill", "#333333"}});
  w.Text(cx, y + 50, fmt::format("{} blocks", WithThousands(r.num_blocks)),
         {{"text-anchor", "middle"}, {"font-size", SvgNumber(cfs)}, {"fill", "#333333"}});
  const std::string used = PlanGiBText(r.nvidia_smi_used_bytes);
  w.Text(cx, y + 66,
         fit({fmt::format("smi used {} GiB", used), fmt::format("used {} GiB", used), fmt::format("used {}", used)}),
         {{"text-anchor", "middle"}, {"font-size", SvgNumber(cfs)}, {"fill", "#333333"}});
}

// One stage: its group, segments, side labels (deferred), binding mark and caption.
void Stage(SvgWriter& w, const Frame& f, const RankPlan& r, const std::vector<Seg>& segs, int i, double slot,
           std::int64_t requested, std::vector<Deferred>& deferred) {
  const double bar_w = std::min(150.0, slot * 0.5);
  const double x = f.left + slot * i + (slot - bar_w) / 2;
  w.Open("g", {{"class", r.binding ? "stage binding" : "stage"},
               {"data-pp-rank", std::to_string(r.pp_rank)},
               {"data-gib", PlanGiBText(r.nvidia_smi_used_bytes)},
               {"data-used-bytes", std::to_string(r.nvidia_smi_used_bytes)},
               {"data-available-kv-gib", PlanGiBText(r.available_kv.bytes)},
               {"data-blocks", std::to_string(r.num_blocks)},
               {"data-binding", plan_chart::Bool(r.binding)}});
  SpreadSideLabels(Segments(w, f, r, segs, x, bar_w), x, bar_w, slot, deferred);
  if (r.binding) BindingMark(w, f, r, x, bar_w, requested);
  StageCaption(w, f, r, f.left + slot * i + slot / 2, slot);
  w.Close();
}

// Budget line, the nvidia-smi total line and the deferred side labels above them.
void Lines(SvgWriter& w, const Frame& f, std::int64_t requested, std::int64_t smi_total,
           const std::vector<Deferred>& deferred) {
  w.Line(f.left, f.Y(requested), f.left + f.plot_w, f.Y(requested),
         {{"class", "budget-line"},
          {"data-gib", PlanGiBText(requested)},
          {"data-bytes", std::to_string(requested)},
          {"stroke", "#000000"},
          {"stroke-width", "2.5"},
          {"stroke-dasharray", "10 5"}});
  w.Line(f.left, f.Y(smi_total), f.left + f.plot_w, f.Y(smi_total),
         {{"class", "smi-total-line"},
          {"data-gib", PlanGiBText(smi_total)},
          {"stroke", "#777777"},
          {"stroke-width", "1"}});
  w.Open("g", {{"class", "side-labels"}, {"font-size", "11"}, {"fill", "#222222"}});
  for (const auto& dl : deferred) {
    w.Line(dl.x, dl.y_seg, dl.x + 6, dl.y_text, {{"stroke", "#666666"}, {"stroke-width", "0.8"}});
    w.Text(dl.x + 8, dl.y_text + 4, dl.text,
           {{"class", "seg-label side"}, {"stroke", "#ffffff"}, {"stroke-width", "3"}, {"paint-order", "stroke"}});
  }
  w.Close();
}

// Words of `text` in lines no wider than `max_px` at 12 px.
std::vector<std::string> Wrap(const std::string& text, double max_px) {
  std::vector<std::string> lines;
  std::string cur;
  std::istringstream in(text);
  std::string word;
  while (in >> word) {
    std::string next = cur.empty() ? word : cur + " " + word;
    if (!cur.empty() && TextWidth(next, 12) > max_px) {
      lines.push_back(cur);
      cur = word;
    } else {
      cur = next;
    }
  }
  if (!cur.empty()) lines.push_back(cur);
  return lines;
}

// Legend (right column), below the line labels; about 320 px tall.
void Legend(SvgWriter& w, const Frame& f, const Deployment& d, const LayoutPlan& l, std::int64_t requested,
            std::int64_t smi_total) {
  const double lx = f.left + f.plot_w + 22;
  double ly = std::min(std::max(f.top + 4, f.Y(requested) + 36), f.height - 324);
  w.Open("g", {{"class", "legend"}, {"font-size", "12"}, {"fill", "#222222"}});
  w.Text(lx, ly, "Legend (bottom to top)", {{"font-weight", "bold"}});
  ly += 14;
  for (const auto& k : kSegments) {
    w.Rect(lx, ly, 18, 18, {{"fill", Fill(w, k)}, {"stroke", "#555555"}, {"stroke-width", "0.8"}});
    auto lines = Wrap(k.legend, f.right - 50);
    for (size_t j = 0; j < lines.size(); ++j) w.Text(lx + 26, ly + 13 + 14.0 * j, lines[j]);
    ly += std::max(26.0, 14.0 * lines.size() + 10);
  }
  ly += 4;
  w.Line(lx, ly + 9, lx + 18, ly + 9, {{"stroke", "#000000"}, {"stroke-width", "2.5"}, {"stroke-dasharray", "6 3"}});
  for (const auto& [j, text] : std::vector<std::pair<int, std::string>>{
           {0, fmt::format("budget {} GiB", PlanGiBText(requested))},
           {1, fmt::format("= gpu_memory_utilization {}", d.gpu_memory_utilization)},
           {2, fmt::format("x {:.2f} GiB (torch total)", d.gpu.total_gib)}})
    w.Text(lx + 26, ly + 13 + 14.0 * j, text, {{"class", j == 0 ? "budget-label" : "budget-detail"}});
  ly += 52;
  w.Line(lx, ly + 9, lx + 18, ly + 9, {{"stroke", "#777777"}, {"stroke-width", "1"}});
  w.Text(lx + 26, ly + 13, fmt::format("nvidia-smi total {} GiB", PlanGiBText(smi_total)),
         {{"class", "smi-total-label"}});
  ly += 26;
  if (l.spec.pipeline_parallel_size > 1) {
    w.Rect(lx, ly, 18, 18, {{"fill", "none"}, {"stroke", "#b3261e"}, {"stroke-width", "3"}});
    w.Text(lx + 26, ly + 13, "binding stage (fewest blocks)");
    ly += 26;
  }
  w.Text(lx, ly + 12, "hover a segment for its figures", {{"fill", "#666666"}, {"font-size", "11"}});
  w.Close();
}

}  // namespace

std::string MemoryBarsSvg(const Deployment& d, const LayoutPlan& l, const std::string& id_prefix) {
  Frame f;
  const std::int64_t smi_total = d.gpu.nvidia_smi_mib * kMiB;
  const std::int64_t requested = l.ranks.empty() ? RequestedBytes(d) : l.ranks.front().requested_bytes;
  std::vector<std::vector<Seg>> bars;
  std::int64_t ymax_bytes = std::max(smi_total, requested);
  for (const auto& r : l.ranks) {
    std::int64_t top_bytes = 0;
    bars.push_back(StageSegments(l, r, smi_total, top_bytes));
    ymax_bytes = std::max(ymax_bytes, top_bytes);
  }
  const double ymax_gib_raw = ToGiB(ymax_bytes);
  f.step = plan_chart::NiceStep(ymax_gib_raw, 8);
  f.ymax_gib = std::ceil(ymax_gib_raw / f.step - 1e-9) * f.step;

  const std::string title = fmt::format("Memory per GPU by PP stage: {}", PlanLayoutTitle(l));
  SvgWriter w(kChartWidth, f.height, id_prefix,
              {{"class", "chart memory-chart"},
               {"role", "img"},
               {"aria-label", title},
               {"font-family", kFont},
               {"data-split", SplitText(l)},
               {"data-pool-blocks", std::to_string(l.pool.num_gpu_blocks)}});
  Header(w, d, l, f, title);
  Axis(w, f);
  const int n = static_cast<int>(l.ranks.size());
  const double slot = n > 0 ? f.plot_w / n : f.plot_w;
  std::vector<Deferred> deferred;  // side labels, drawn over the budget line
  for (int i = 0; i < n; ++i) Stage(w, f, l.ranks[i], bars[i], i, slot, requested, deferred);
  Lines(w, f, requested, smi_total, deferred);
  Legend(w, f, d, l, requested, smi_total);
  // Line labels right of the plot, at the lines' heights (the legend starts below them).
  const double by = f.Y(requested), sy = f.Y(smi_total);
  w.Text(f.left + f.plot_w + 6, by + 4, fmt::format("budget {} GiB", PlanGiBText(requested)),
         {{"class", "budget-text"}, {"font-size", "12"}, {"font-weight", "bold"}, {"fill", "#000000"}});
  w.Text(f.left + f.plot_w + 6, std::min(sy + 4, by - 12),
         fmt::format("nvidia-smi total {} GiB", PlanGiBText(smi_total)), {{"font-size", "11"}, {"fill", "#555555"}});
  return w.Finish();
}

}  // namespace ppdeploy
