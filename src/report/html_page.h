// The style shared by ppdeploy's self-contained HTML pages (bench, verify, verdict; plan has its own): one
// stylesheet inlined in <style>, tables written the same way, a colour-blind-safe palette. Pure.
#pragma once

#include <cstddef>
#include <ostream>
#include <string>

#include "report/table.h"

namespace ppdeploy {

/// The stylesheet (inline in <style>): page width, headings, tables, charts, print layout.
const char* HtmlPageCss();

/// The font list of the SVG charts.
inline constexpr const char* kSvgFont = "DejaVu Sans, Liberation Sans, Arial, Helvetica, sans-serif";

/// Series colour i: the Okabe-Ito palette, then greys.
const char* SeriesColour(std::size_t i);

/// `<table class="cls">` with a header row; cells after the first are right-aligned (class "num"). Escaped.
void WriteHtmlTable(const Table& table, const std::string& cls, std::ostream& out);

}  // namespace ppdeploy
