// A tiny XML well-formedness check and start-tag helpers for the SVG/HTML snapshot tests
// (no new dependency). Not a general XML parser: enough for what report/svg.h writes.
#pragma once

#include <cctype>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace ppdeploy::testing {

namespace xml_detail {
inline bool NameStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':'; }
inline bool NameChar(char c) {
  return NameStart(c) || std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '.';
}
// Checks an '&' at s[i]: a predefined or numeric entity. Returns its length or 0.
inline size_t Entity(std::string_view s, size_t i) {
  for (std::string_view e : {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"})
    if (s.substr(i, e.size()) == e) return e.size();
  if (s.substr(i, 2) == "&#") {
    size_t j = i + 2;
    bool hex = j < s.size() && s[j] == 'x';
    if (hex) ++j;
    size_t k = j;
    while (k < s.size() &&
           (hex ? std::isxdigit(static_cast<unsigned char>(s[k])) : std::isdigit(static_cast<unsigned char>(s[k]))))
      ++k;
    if (k > j && k < s.size() && s[k] == ';') return k + 1 - i;
  }
  return 0;
}
}  // namespace xml_detail

/// "" when `doc` is well-formed (one root element; a leading <?xml ...?> and <!DOCTYPE ...> and
/// comments allowed), else a message with the offset of the first problem.
inline std::string XmlWellFormedError(std::string_view doc) {
  using namespace xml_detail;
  std::vector<std::string> stack;
  int roots = 0;
  size_t i = 0;
  auto err = [&](const std::string& what) {
    return what + " at offset " + std::to_string(i) + ": " + std::string(doc.substr(i, 60));
  };
  while (i < doc.size()) {
    char c = doc[i];
    if (c == '&') {
      size_t n = Entity(doc, i);
      if (!n) return err("bare '&'");
      i += n;
      continue;
    }
    if (c != '<') {
      if (stack.empty() && !std::isspace(static_cast<unsigned char>(c))) return err("text outside the root");
      ++i;
      continue;
    }
    if (doc.substr(i, 4) == "<!--") {
      size_t e = doc.find("-->", i);
      if (e == std::string_view::npos) return err("unterminated comment");
      i = e + 3;
      continue;
    }
    if (doc.substr(i, 2) == "<?" || doc.substr(i, 9) == "<!DOCTYPE") {
      if (!stack.empty() || roots) return err("prolog after the root started");
      size_t e = doc.find('>', i);
      if (e == std::string_view::npos) return err("unterminated prolog");
      i = e + 1;
      continue;
    }
    if (doc.substr(i, 2) == "</") {
      size_t j = i + 2, k = j;
      while (k < doc.size() && NameChar(doc[k])) ++k;
      std::string name(doc.substr(j, k - j));
      while (k < doc.size() && std::isspace(static_cast<unsigned char>(doc[k]))) ++k;
      if (k >= doc.size() || doc[k] != '>') return err("bad end tag");
      if (stack.empty() || stack.back() != name)
        return err("end tag </" + name + "> does not match <" + (stack.empty() ? "" : stack.back()) + ">");
      stack.pop_back();
      i = k + 1;
      continue;
    }
    // Start tag.
    size_t k = i + 1;
    if (k >= doc.size() || !NameStart(doc[k])) return err("bad '<'");
    while (k < doc.size() && NameChar(doc[k])) ++k;
    std::string name(doc.substr(i + 1, k - i - 1));
    std::set<std::string> attrs;
    for (;;) {
      size_t ws = k;
      while (k < doc.size() && std::isspace(static_cast<unsigned char>(doc[k]))) ++k;
      if (k >= doc.size()) return err("unterminated start tag");
      if (doc[k] == '>' || doc.substr(k, 2) == "/>") break;
      if (k == ws) return err("no space before an attribute");
      size_t a = k;
      if (!NameStart(doc[k])) return err("bad attribute name");
      while (k < doc.size() && NameChar(doc[k])) ++k;
      std::string an(doc.substr(a, k - a));
      if (!attrs.insert(an).second) return err("duplicate attribute " + an);
      if (k >= doc.size() || doc[k] != '=') return err("attribute without '='");
      ++k;
      if (k >= doc.size() || doc[k] != '"') return err("attribute value not in double quotes");
      ++k;
      while (k < doc.size() && doc[k] != '"') {
        if (doc[k] == '<') return err("'<' in an attribute value");
        if (doc[k] == '&') {
          size_t n = Entity(doc, k);
          if (!n) return err("bare '&' in an attribute value");
          k += n;
        } else {
          ++k;
        }
      }
      if (k >= doc.size()) return err("unterminated attribute value");
      ++k;
    }
    if (stack.empty()) {
      if (++roots > 1) return err("second root element");
    }
    if (doc[k] == '>') {
      stack.push_back(name);
      i = k + 1;
      // Raw text elements: the content of <style> is checked like other text (no '<', entities only).
    } else {
      i = k + 2;
    }
  }
  if (!stack.empty()) return "unclosed <" + stack.back() + ">";
  if (roots != 1) return "no root element";
  return "";
}

/// The start tags (text from '<' to '>') of every `tag` element in `doc`, in order.
inline std::vector<std::string> StartTags(std::string_view doc, std::string_view tag) {
  std::vector<std::string> out;
  std::string open = "<" + std::string(tag);
  for (size_t i = doc.find(open); i != std::string_view::npos; i = doc.find(open, i + 1)) {
    size_t after = i + open.size();
    if (after < doc.size() && !std::isspace(static_cast<unsigned char>(doc[after])) && doc[after] != '>' &&
        doc[after] != '/')
      continue;  // a longer tag name (<g> vs <glyph>)
    out.emplace_back(doc.substr(i, doc.find('>', i) + 1 - i));
  }
  return out;
}

/// The (still escaped) value of attribute `name` in a start tag, or "" when absent.
inline std::string Attr(std::string_view start_tag, std::string_view name) {
  std::string key = " " + std::string(name) + "=\"";
  size_t i = start_tag.find(key);
  if (i == std::string_view::npos) return "";
  i += key.size();
  return std::string(start_tag.substr(i, start_tag.find('"', i) - i));
}

/// True when the start tag's class attribute holds `cls` as a whole word.
inline bool HasClass(std::string_view start_tag, std::string_view cls) {
  std::string c = " " + Attr(start_tag, "class") + " ";
  return c.find(" " + std::string(cls) + " ") != std::string::npos;
}

/// Start tags of `tag` elements having class `cls`.
inline std::vector<std::string> WithClass(std::string_view doc, std::string_view tag, std::string_view cls) {
  std::vector<std::string> out;
  for (auto& t : StartTags(doc, tag))
    if (HasClass(t, cls)) out.push_back(t);
  return out;
}

}  // namespace ppdeploy::testing
