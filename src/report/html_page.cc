#include "report/html_page.h"

#include "report/svg.h"

namespace ppdeploy {

const char* HtmlPageCss() {
  return R"CSS(
:root { color-scheme: light; }
* { box-sizing: border-box; }
body { font-family: "DejaVu Sans", "Liberation Sans", Arial, Helvetica, sans-serif; font-size: 14px; line-height: 1.4;
       color: #111; background: #fff; margin: 0 auto; padding: 16px 20px 40px; max-width: 1240px; }
h1 { font-size: 22px; margin: 8px 0 6px; }
h2 { font-size: 18px; margin: 28px 0 8px; border-bottom: 2px solid #1f2f5c; padding-bottom: 3px; }
p, ul { margin: 4px 0 8px; }
nav ul { display: flex; flex-wrap: wrap; gap: 4px 18px; list-style: none; padding: 0; }
nav a { color: #1f2f5c; }
figure { margin: 8px 0 14px; }
figcaption { font-size: 12.5px; color: #444; margin-top: 2px; }
svg.chart { display: block; width: 100%; height: auto; max-width: 1160px; border: 1px solid #ddd; }
.table-wrap { overflow-x: auto; }
table { border-collapse: collapse; font-size: 12px; margin: 6px 0 10px; }
th, td { border: 1px solid #c8c8c8; padding: 3px 6px; vertical-align: top; }
th { background: #e9edf5; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
dl.definitions dt { font-weight: bold; margin-top: 6px; }
dl.definitions dd { margin: 0 0 0 18px; }
.warning { color: #8a4b00; }
.muted { color: #555; font-size: 12.5px; }
@media print {
  @page { size: A4 landscape; margin: 10mm; }
  body { max-width: none; padding: 0; font-size: 10pt; }
  nav { display: none; }
  figure, svg.chart { break-inside: avoid; }
  svg.chart { border: none; max-width: 100%; }
  table { font-size: 7pt; }
  th { background: #e9edf5 !important; -webkit-print-color-adjust: exact; print-color-adjust: exact; }
}
)CSS";
}

const char* SeriesColour(std::size_t i) {
  static constexpr const char* kColours[] = {"#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00",
                                             "#56b4e9", "#000000", "#f0e442", "#666666", "#999999"};
  return kColours[i % (sizeof kColours / sizeof kColours[0])];
}

void WriteHtmlTable(const Table& t, const std::string& cls, std::ostream& out) {
  out << "<table class=\"" << XmlEscape(cls) << "\">\n<thead><tr>";
  for (const auto& h : t.headers) out << "<th>" << XmlEscape(h) << "</th>";
  out << "</tr></thead>\n<tbody>\n";
  for (const auto& row : t.rows) {
    out << "<tr>";
    for (std::size_t c = 0; c < row.size(); ++c)
      out << (c == 0 ? "<td>" : "<td class=\"num\">") << XmlEscape(row[c]) << "</td>";
    out << "</tr>\n";
  }
  out << "</tbody>\n</table>\n";
}

}  // namespace ppdeploy
