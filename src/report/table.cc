#include "report/table.h"

#include <algorithm>

#include <fmt/ranges.h>

#include "core/error.h"

namespace ppdeploy {

OutputFormat ParseOutputFormat(const std::string& text, const std::vector<std::string>& allowed) {
  if (std::find(allowed.begin(), allowed.end(), text) == allowed.end())
    Fail("--format: unknown value \"{}\" (accepted: {})", text, fmt::join(allowed, ", "));
  if (text == "table" || text == "text") return OutputFormat::kTable;
  if (text == "json") return OutputFormat::kJson;
  if (text == "md" || text == "markdown") return OutputFormat::kMarkdown;
  if (text == "csv") return OutputFormat::kCsv;
  if (text == "html") return OutputFormat::kHtml;
  if (text == "svg") return OutputFormat::kSvg;
  Fail("--format: unknown value \"{}\"", text);
}

namespace {
bool LooksNumeric(const std::string& s) {
  if (s.empty()) return false;
  char c = s[0];
  return (c >= '0' && c <= '9') || c == '-' || c == '+';
}
// Display width in code points (UTF-8 aware enough for our symbols).
size_t Width(const std::string& s) {
  size_t w = 0;
  for (unsigned char c : s)
    if ((c & 0xC0) != 0x80) ++w;
  return w;
}
}  // namespace

void Table::RenderText(std::ostream& out, const std::string& indent) const {
  const size_t n = headers.size();
  std::vector<size_t> width(n, 0);
  std::vector<bool> right(n, false);
  for (size_t c = 0; c < n; ++c) {
    width[c] = Width(headers[c]);
    size_t numeric = 0;
    for (const auto& r : rows)
      if (c < r.size()) {
        width[c] = std::max(width[c], Width(r[c]));
        if (LooksNumeric(r[c])) ++numeric;
      }
    right[c] = c < right_align.size() ? right_align[c] : (!rows.empty() && numeric * 2 >= rows.size() && c > 0);
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string s = indent;
    for (size_t c = 0; c < n; ++c) {
      std::string cell = c < cells.size() ? cells[c] : "";
      std::string pad(width[c] - std::min(width[c], Width(cell)), ' ');
      s += right[c] ? pad + cell : cell + (c + 1 < n ? pad : "");
      if (c + 1 < n) s += "  ";
    }
    while (!s.empty() && s.back() == ' ') s.pop_back();
    out << s << "\n";
  };
  line(headers);
  std::vector<std::string> rule;
  for (size_t c = 0; c < n; ++c) rule.push_back(std::string(width[c], '-'));
  line(rule);
  for (const auto& r : rows) line(r);
}

void Table::RenderMarkdown(std::ostream& out) const {
  auto esc = [](std::string s) {
    std::string o;
    for (char c : s) {
      if (c == '|') o += "\\|";
      else if (c == '\n') o += "<br>";
      else o += c;
    }
    return o;
  };
  out << "|";
  for (const auto& h : headers) out << " " << esc(h) << " |";
  out << "\n|";
  for (size_t c = 0; c < headers.size(); ++c) out << "---|";
  out << "\n";
  for (const auto& r : rows) {
    out << "|";
    for (size_t c = 0; c < headers.size(); ++c) out << " " << esc(c < r.size() ? r[c] : "") << " |";
    out << "\n";
  }
}

std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string o = "\"";
  for (char c : s) {
    if (c == '"') o += '"';
    o += c;
  }
  return o + "\"";
}

void Table::RenderCsv(std::ostream& out, bool header) const {
  auto line = [&](const std::vector<std::string>& cells) {
    for (size_t c = 0; c < cells.size(); ++c) out << (c ? "," : "") << CsvField(cells[c]);
    out << "\n";
  };
  if (header) line(headers);
  for (const auto& r : rows) line(r);
}

}  // namespace ppdeploy
