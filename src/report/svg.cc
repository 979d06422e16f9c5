#include "report/svg.h"

#include <fmt/format.h>

#include "core/error.h"

namespace ppdeploy {

std::string XmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r')
          out += "\xEF\xBF\xBD";
        else
          out += c;
    }
  }
  return out;
}

std::string SvgNumber(double v) {
  std::string s = fmt::format("{:.2f}", v);
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  if (s == "-0") s = "0";
  return s;
}

SvgWriter::SvgWriter(double width, double height, std::string id_prefix, const SvgAttrs& attrs)
    : id_prefix_(std::move(id_prefix)) {
  SvgAttrs a = {{"xmlns", "http://www.w3.org/2000/svg"},
                {"viewBox", fmt::format("0 0 {} {}", SvgNumber(width), SvgNumber(height))},
                {"width", SvgNumber(width)},
                {"height", SvgNumber(height)}};
  a.insert(a.end(), attrs.begin(), attrs.end());
  Open("svg", a);
}

std::string SvgWriter::Id(std::string_view name) const { return id_prefix_ + "-" + std::string(name); }
std::string SvgWriter::Url(std::string_view name) const { return "url(#" + Id(name) + ")"; }

void SvgWriter::Indent() { out_.append(open_.size() * 1, ' '); }

void SvgWriter::WriteAttrs(const SvgAttrs& attrs) {
  for (const auto& [k, v] : attrs) {
    out_ += ' ';
    out_ += k;
    out_ += "=\"";
    out_ += XmlEscape(v);
    out_ += '"';
  }
}

void SvgWriter::Open(std::string_view tag, const SvgAttrs& attrs) {
  Indent();
  out_ += '<';
  out_ += tag;
  WriteAttrs(attrs);
  out_ += ">\n";
  open_.emplace_back(tag);
}

void SvgWriter::Close() {
  if (open_.size() <= 1) Fail("SvgWriter::Close: no element open besides <svg>");
  std::string tag = std::move(open_.back());
  open_.pop_back();
  Indent();
  out_ += "</" + tag + ">\n";
}

void SvgWriter::Empty(std::string_view tag, const SvgAttrs& attrs) {
  Indent();
  out_ += '<';
  out_ += tag;
  WriteAttrs(attrs);
  out_ += "/>\n";
}

void SvgWriter::Element(std::string_view tag, const SvgAttrs& attrs, std::string_view text) {
  Indent();
  out_ += '<';
  out_ += tag;
  WriteAttrs(attrs);
  out_ += '>';
  out_ += XmlEscape(text);
  out_ += "</";
  out_ += tag;
  out_ += ">\n";
}

void SvgWriter::Rect(double x, double y, double w, double h, SvgAttrs attrs) {
  SvgAttrs a = {{"x", SvgNumber(x)},
                {"y", SvgNumber(y)},
                {"width", SvgNumber(w < 0 ? 0 : w)},
                {"height", SvgNumber(h < 0 ? 0 : h)}};
  a.insert(a.end(), attrs.begin(), attrs.end());
  Empty("rect", a);
}

void SvgWriter::Line(double x1, double y1, double x2, double y2, SvgAttrs attrs) {
  SvgAttrs a = {{"x1", SvgNumber(x1)}, {"y1", SvgNumber(y1)}, {"x2", SvgNumber(x2)}, {"y2", SvgNumber(y2)}};
  a.insert(a.end(), attrs.begin(), attrs.end());
  Empty("line", a);
}

void SvgWriter::Text(double x, double y, std::string_view text, SvgAttrs attrs) {
  SvgAttrs a = {{"x", SvgNumber(x)}, {"y", SvgNumber(y)}};
  a.insert(a.end(), attrs.begin(), attrs.end());
  Element("text", a, text);
}

std::string SvgWriter::Finish() {
  while (!open_.empty()) {
    std::string tag = std::move(open_.back());
    open_.pop_back();
    Indent();
    out_ += "</" + tag + ">\n";
  }
  return std::move(out_);
}

}  // namespace ppdeploy
