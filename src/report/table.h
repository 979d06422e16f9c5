// A simple table value rendered as aligned text, Markdown or CSV (RFC 4180 quoting).
// Shared by every command that prints tables.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace ppdeploy {

/// Output formats accepted by --format.
enum class OutputFormat { kTable, kJson, kMarkdown, kCsv, kHtml, kSvg };

/// Parses a --format value among `allowed` (e.g. {"table","json","md","csv"}); Error otherwise.
OutputFormat ParseOutputFormat(const std::string& text, const std::vector<std::string>& allowed);

struct Table {
  std::vector<std::string> headers;
  std::vector<std::vector<std::string>> rows;
  std::vector<bool> right_align;  ///< per column; empty = numbers-looking columns right-aligned

  void AddRow(std::vector<std::string> row) { rows.push_back(std::move(row)); }
  void RenderText(std::ostream& out, const std::string& indent = "") const;
  void RenderMarkdown(std::ostream& out) const;
  void RenderCsv(std::ostream& out, bool header = true) const;
};

/// CSV field quoting (RFC 4180): quoted when it holds a comma, quote, CR or LF.
std::string CsvField(const std::string& s);

}  // namespace ppdeploy
