// `ppdeploy bench --format html`: one self-contained page in the style of `plan --format html` (inline SVG and
// CSS, no script, nothing from the network). Every figure comes from the BenchResult the JSON renders.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "report/bench_report.h"
#include "report/html_page.h"
#include "report/svg.h"
#include "report/table.h"

namespace ppdeploy {
namespace {

std::string Esc(const std::string& s) { return XmlEscape(s); }

double NiceStep(double max, int target) {
  double raw = max / std::max(1, target);
  if (!(raw > 0)) return 1;
  double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (raw <= m * mag) return m * mag;
  return 10 * mag;
}

std::string Tick(double v) {
  if (v == 0) return "0";
  if (std::fabs(v) >= 100) return fmt::format("{:.0f}", v);
  if (std::fabs(v) >= 10) return fmt::format("{:.1f}", v);
  return fmt::format("{:.3g}", v);
}

// CDF of one metric: x = value (ms), y = share of requests (or of ITL values) at or below it.
std::string CdfSvg(const BenchResult& r, const std::string& metric, const std::string& title, int chart) {
  const double W = 1160, H = 360, left = 70, right = 230, top = 34, bottom = 48;
  const double pw = W - left - right, ph = H - top - bottom;
  auto quantiles = [&](const LevelResult& L) -> const std::vector<double>& {
    return metric == "ttft" ? L.ttft_q : metric == "tpot" ? L.tpot_q : L.itl_q;
  };
  auto count = [&](const LevelResult& L) {
    return metric == "ttft" ? L.ttft_ms.count : metric == "tpot" ? L.tpot_ms.count : L.itl_ms.count;
  };
  // x range: up to the largest p99 (the top percent is clipped at the edge and said so).
  double xmax = 0;
  for (const auto& L : r.levels)
    if (count(L) > 0 && quantiles(L).size() == 101) xmax = std::max(xmax, quantiles(L)[99]);
  if (!(xmax > 0)) xmax = 1;
  double step = NiceStep(xmax * 1.05, 8);
  xmax = std::ceil(xmax * 1.05 / step) * step;
  SvgWriter w(W, H, fmt::format("cdf{}", chart),
              {{"class", "chart cdf-chart"},
               {"data-metric", metric},
               {"role", "img"},
               {"aria-label", title + ": cumulative distribution by load level"},
               {"font-family", kSvgFont},
               {"font-size", "12"}});
  w.Title(title + ": cumulative distribution by load level");
  w.Text(left, 20, title + " (ms)", {{"font-weight", "bold"}, {"font-size", "14"}});
  auto X = [&](double v) { return left + std::min(v, xmax) / xmax * pw; };
  auto Y = [&](double share) { return top + (1 - share) * ph; };
  w.Open("g", {{"class", "axes"}});
  for (double v = 0; v <= xmax + step / 2; v += step) {
    w.Line(X(v), top, X(v), top + ph, {{"stroke", "#e3e3e3"}});
    w.Text(X(v), top + ph + 16, Tick(v), {{"text-anchor", "middle"}});
  }
  for (int p = 0; p <= 100; p += 25) {
    w.Line(left, Y(p / 100.0), left + pw, Y(p / 100.0), {{"stroke", "#e3e3e3"}});
    w.Text(left - 6, Y(p / 100.0) + 4, fmt::format("{}%", p), {{"text-anchor", "end"}});
  }
  w.Rect(left, top, pw, ph, {{"fill", "none"}, {"stroke", "#888"}});
  w.Text(left + pw / 2, H - 10, "ms (the slowest 1% may lie beyond the right edge)", {{"text-anchor", "middle"}});
  w.Close();
  for (std::size_t i = 0; i < r.levels.size(); ++i) {
    const LevelResult& L = r.levels[i];
    const auto& q = quantiles(L);
    if (count(L) == 0 || q.size() != 101) continue;
    std::string pts;
    for (std::size_t k = 0; k < q.size(); ++k)
      pts += fmt::format("{}{},{}", k ? " " : "", SvgNumber(X(q[k])), SvgNumber(Y(static_cast<double>(k) / 100.0)));
    w.Open("polyline", {{"class", "cdf"},
                        {"data-level", std::to_string(i)},
                        {"data-label", L.load.Label()},
                        {"data-p50", SvgNumber(q[50])},
                        {"data-p99", SvgNumber(q[99])},
                        {"points", pts},
                        {"fill", "none"},
                        {"stroke", SeriesColour(i)},
                        {"stroke-width", "2"}});
    w.Title(fmt::format("{}: p50 {} ms, p90 {} ms, p99 {} ms", L.load.Label(), Tick(q[50]), Tick(q[90]), Tick(q[99])));
    w.Close();
    double ly = top + 14 + static_cast<double>(i) * 18;
    w.Line(left + pw + 14, ly - 4, left + pw + 40, ly - 4, {{"stroke", SeriesColour(i)}, {"stroke-width", "3"}});
    w.Text(left + pw + 46, ly, L.load.Label());
  }
  return w.Finish();
}

// Request throughput and goodput by level (bars), output tokens/s as a label.
std::string ThroughputSvg(const BenchResult& r) {
  const double W = 1160, left = 70, right = 20, top = 34, bottom = 90;
  const double H = 380, pw = W - left - right, ph = H - top - bottom;
  double ymax = 0;
  bool any_goodput = false;
  for (const auto& L : r.levels) {
    ymax = std::max(ymax, L.request_throughput);
    any_goodput |= L.slo.any();
  }
  if (!(ymax > 0)) ymax = 1;
  double step = NiceStep(ymax * 1.1, 6);
  ymax = std::ceil(ymax * 1.1 / step) * step;
  SvgWriter w(W, H, "tp",
              {{"class", "chart throughput-chart"},
               {"role", "img"},
               {"aria-label", "Request throughput and goodput by load level"},
               {"font-family", kSvgFont},
               {"font-size", "12"}});
  w.Title("Request throughput and goodput by load level");
  w.Text(left, 20, any_goodput ? "requests/s: all successful (dark) and meeting the SLOs (light)" : "requests/s",
         {{"font-weight", "bold"}, {"font-size", "14"}});
  auto Y = [&](double v) { return top + (1 - v / ymax) * ph; };
  for (double v = 0; v <= ymax + step / 2; v += step) {
    w.Line(left, Y(v), left + pw, Y(v), {{"stroke", "#e3e3e3"}});
    w.Text(left - 6, Y(v) + 4, Tick(v), {{"text-anchor", "end"}});
  }
  std::size_t n = std::max<std::size_t>(1, r.levels.size());
  double slot = pw / static_cast<double>(n);
  double bw = std::min(60.0, slot * (any_goodput ? 0.35 : 0.6));
  for (std::size_t i = 0; i < r.levels.size(); ++i) {
    const LevelResult& L = r.levels[i];
    double cx = left + slot * (static_cast<double>(i) + 0.5);
    w.Open("g", {{"class", "level"},
                 {"data-level", std::to_string(i)},
                 {"data-label", L.load.Label()},
                 {"data-rps", SvgNumber(L.request_throughput)},
                 {"data-goodput-rps", L.slo.any() ? SvgNumber(L.goodput_rps) : ""},
                 {"data-output-tok-s", SvgNumber(L.output_throughput)}});
    w.Title(fmt::format(
        "{}: {:.2f} req/s, {:.1f} output tok/s{}", L.load.Label(), L.request_throughput, L.output_throughput,
        L.slo.any() ? fmt::format(", goodput {:.2f} req/s ({:.1f}% attained)", L.goodput_rps, L.attainment * 100)
                    : ""));
    double x0 = any_goodput ? cx - bw : cx - bw / 2;
    w.Rect(x0, Y(L.request_throughput), bw, Y(0) - Y(L.request_throughput),
           {{"class", "bar-rps"}, {"fill", "#1f2f5c"}});
    if (any_goodput)
      w.Rect(cx, Y(L.goodput_rps), bw, Y(0) - Y(L.goodput_rps), {{"class", "bar-goodput"}, {"fill", "#5aae61"}});
    w.Text(cx, Y(L.request_throughput) - 6, fmt::format("{:.2f}", L.request_throughput), {{"text-anchor", "middle"}});
    w.Text(cx, top + ph + 16, L.load.Label(), {{"text-anchor", "middle"}});
    w.Text(cx, top + ph + 32, fmt::format("{:.0f} tok/s", L.output_throughput),
           {{"text-anchor", "middle"}, {"fill", "#555"}});
    w.Close();
  }
  w.Rect(left, top, pw, ph, {{"fill", "none"}, {"stroke", "#888"}});
  return w.Finish();
}

}  // namespace

void RenderBenchHtml(const BenchResult& r, std::ostream& out) {
  out << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n"
      << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n"
      << "<meta name=\"generator\" content=\"ppdeploy bench --format html\"/>\n"
      << "<title>" << Esc(fmt::format("ppdeploy bench: {} at {}", r.model, r.url)) << "</title>\n"
      << "<style>" << HtmlPageCss() << "</style>\n</head>\n<body>\n";
  out << "<header>\n<h1>ppdeploy bench</h1>\n<p class=\"run\">"
      << Esc(fmt::format("{} model {}, endpoint {}, dataset {}, load profile {}", r.url, r.model, r.endpoint, r.dataset,
                         r.profile))
      << "</p>\n<p class=\"muted\">" << Esc("prompts: " + r.input_len_method);
  if (!r.continuous_usage.empty()) out << Esc("; continuous usage: " + r.continuous_usage);
  if (!r.jsonl_path.empty()) out << Esc("; per-request records: " + r.jsonl_path);
  out << "</p>\n";
  out << "<nav><ul><li><a href=\"#throughput\">Throughput and goodput</a></li><li><a href=\"#latency\">Latency "
         "distributions</a></li><li><a href=\"#levels\">Levels</a></li><li><a "
         "href=\"#definitions\">Definitions</a></li>"
         "</ul></nav>\n</header>\n";

  out << "<section id=\"throughput\">\n<h2>Throughput and goodput by load level</h2>\n<figure>\n"
      << ThroughputSvg(r) << "<figcaption>"
      << Esc("Successful requests per second of each level (first send to last result), and with --goodput the "
             "requests "
             "per second that met every SLO.")
      << "</figcaption>\n</figure>\n";
  if (r.search.ran) {
    out << "<p class=\"search\">"
        << Esc(r.search.best_rate >= 0
                   ? fmt::format("Highest rate meeting the SLOs: {:.3g} req/s (bracket [{:.3g}, {:.3g}]). {}.",
                                 r.search.best_rate, r.search.lo, r.search.hi, r.search.outcome)
                   : "No rate met the SLOs. " + r.search.outcome + ".")
        << "</p>\n<p class=\"muted\">" << Esc("Stop rule: " + r.search.rule + ".") << "</p>\n";
  }
  out << "</section>\n";

  out << "<section id=\"latency\">\n<h2>Latency distributions</h2>\n";
  int chart = 0;
  for (const auto& [metric, title] :
       std::vector<std::pair<std::string, std::string>>{{"ttft", "TTFT"}, {"tpot", "TPOT"}, {"itl", "ITL per token"}}) {
    out << "<figure>\n" << CdfSvg(r, metric, title, chart++) << "</figure>\n";
  }
  out << "</section>\n";

  out << "<section id=\"levels\">\n<h2>Levels</h2>\n<div class=\"table-wrap\">\n";
  Table t;
  t.headers = {"load",
               "ok",
               "failed",
               "req/s",
               "out tok/s",
               "goodput req/s (attained)",
               "TTFT ms p50",
               "TTFT ms p99",
               "TPOT ms p50",
               "TPOT ms p99",
               "ITL/token p50",
               "ITL/chunk p50",
               "E2EL ms p50",
               "E2EL ms p99",
               "arrivals req/s (CV)",
               "warm-up ok"};
  for (const auto& L : r.levels) {
    t.AddRow({L.load.Label(), std::to_string(L.ok), std::to_string(L.failed),
              fmt::format("{:.2f}", L.request_throughput), fmt::format("{:.1f}", L.output_throughput),
              L.slo.any() ? fmt::format("{:.2f} ({:.1f}%)", L.goodput_rps, L.attainment * 100) : "-",
              fmt::format("{:.1f}", L.ttft_ms.median), fmt::format("{:.1f}", L.ttft_ms.p99),
              fmt::format("{:.2f}", L.tpot_ms.median), fmt::format("{:.2f}", L.tpot_ms.p99),
              fmt::format("{:.2f}", L.itl_ms.median), fmt::format("{:.2f}", L.chunk_itl_ms.median),
              fmt::format("{:.0f}", L.e2el_ms.median), fmt::format("{:.0f}", L.e2el_ms.p99),
              L.load.open_loop() ? fmt::format("{:.2f} ({:.2f})", L.arrival_rate, L.arrival_cv) : "-",
              fmt::format("{}/{}", L.warmup.ok, L.warmup.total)});
  }
  WriteHtmlTable(t, "levels", out);
  out << "</div>\n<ul>\n";
  for (const auto& L : r.levels)
    for (const auto& f : L.flags) out << "<li class=\"warning\">" << Esc(L.load.Label() + ": " + f) << "</li>\n";
  if (r.interrupted)
    out << "<li class=\"warning\">Interrupted (SIGINT): the figures cover the requests that finished.</li>\n";
  if (!r.aborted.empty()) out << "<li class=\"warning\">" << Esc("Stopped early: " + r.aborted) << "</li>\n";
  for (const auto& n : r.notes) out << "<li>" << Esc(n) << "</li>\n";
  out << "</ul>\n</section>\n";

  out << "<section id=\"definitions\">\n<h2>Definitions</h2>\n<dl class=\"definitions\">\n";
  for (const auto& [k, v] : BenchMetricDefinitions()) out << "<dt>" << Esc(k) << "</dt><dd>" << Esc(v) << "</dd>\n";
  out << "</dl>\n</section>\n</body>\n</html>\n";
}

}  // namespace ppdeploy
