// A small SVG writer for the plan's charts (issue 7): elements with escaped attributes and text,
// nested groups, <defs> patterns. Output is well-formed XML that can stand alone (with the SVG
// namespace) or sit inline in an HTML page. Pure: builds a string, no I/O.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ppdeploy {

/// Escapes text for XML character data and attribute values: & < > " ' become entities;
/// control characters other than tab, LF and CR (not allowed in XML 1.0) become U+FFFD.
std::string XmlEscape(std::string_view text);

/// Formats a coordinate/length for SVG: "%.2f" without trailing zeros, and "0" for -0
/// (12.5 -> "12.5", 3 -> "3", 0.126 -> "0.13").
std::string SvgNumber(double v);

/// One attribute: name (written as is: a fixed identifier) and value (escaped on output).
using SvgAttr = std::pair<std::string, std::string>;
using SvgAttrs = std::vector<SvgAttr>;

/// Builds one <svg> document. Elements are opened/closed in order; Finish() closes what is
/// left open and returns the text. `id_prefix` is prepended to ids made by Id() so that several
/// charts can share one HTML page without duplicate ids.
class SvgWriter {
 public:
  /// Starts `<svg xmlns=... viewBox="0 0 width height" width=... height=...>` with `attrs` added
  /// (e.g. role, aria-label, class, data-*).
  SvgWriter(double width, double height, std::string id_prefix, const SvgAttrs& attrs = {});

  /// A page-unique id: id_prefix + "-" + name.
  std::string Id(std::string_view name) const;
  /// "url(#<Id(name)>)", for fill="..." references to patterns.
  std::string Url(std::string_view name) const;

  /// Opens an element with children (g, defs, pattern, text with tspans, ...).
  void Open(std::string_view tag, const SvgAttrs& attrs = {});
  /// Closes the innermost open element. Throws Error when none is open besides <svg>.
  void Close();
  /// An element without children: <tag a="v"/>.
  void Empty(std::string_view tag, const SvgAttrs& attrs = {});
  /// An element with escaped text content: <tag a="v">text</tag>.
  void Element(std::string_view tag, const SvgAttrs& attrs, std::string_view text);

  void Rect(double x, double y, double w, double h, SvgAttrs attrs = {});
  void Line(double x1, double y1, double x2, double y2, SvgAttrs attrs = {});
  void Text(double x, double y, std::string_view text, SvgAttrs attrs = {});
  /// <title> child: the tooltip of the enclosing element (and its accessible name).
  void Title(std::string_view text) { Element("title", {}, text); }

  /// Closes every open element and returns the document. The writer must not be used after.
  std::string Finish();

 private:
  void Indent();
  void WriteAttrs(const SvgAttrs& attrs);
  std::string out_;
  std::string id_prefix_;
  std::vector<std::string> open_;
};

}  // namespace ppdeploy
