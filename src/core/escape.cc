#include "core/escape.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>

namespace ppdeploy {
namespace {

struct Range {
  char32_t first, last;
};

// IsInvisibleCodePoint's table, sorted by `first` (see the header for what each row is).
constexpr Range kInvisible[] = {
    {0x0080, 0x00A0},    {0x00AD, 0x00AD},   {0x034F, 0x034F},   {0x0600, 0x0605},   {0x061C, 0x061C},
    {0x06DD, 0x06DD},    {0x070F, 0x070F},   {0x0890, 0x0891},   {0x08E2, 0x08E2},   {0x115F, 0x1160},
    {0x1680, 0x1680},    {0x17B4, 0x17B5},   {0x180B, 0x180F},   {0x2000, 0x200F},   {0x2028, 0x202F},
    {0x205F, 0x206F},    {0x3000, 0x3000},   {0x3164, 0x3164},   {0xE000, 0xF8FF},   {0xFDD0, 0xFDEF},
    {0xFE00, 0xFE0F},    {0xFEFF, 0xFEFF},   {0xFFA0, 0xFFA0},   {0xFFF9, 0xFFFB},   {0x110BD, 0x110BD},
    {0x110CD, 0x110CD},  {0x13430, 0x1343F}, {0x1BCA0, 0x1BCA3}, {0x1D173, 0x1D17A}, {0xE0000, 0xE0FFF},
    {0xF0000, 0x10FFFF},
};

bool IsContinuation(unsigned char c) { return (c & 0xC0) == 0x80; }

}  // namespace

std::optional<Utf8CodePoint> DecodeUtf8At(std::string_view text, std::size_t pos) {
  if (pos >= text.size()) return std::nullopt;
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[pos + i]); };
  const unsigned char b0 = byte(0);
  if (b0 < 0x80) return Utf8CodePoint{b0, 1};
  std::size_t len = 0;
  char32_t cp = 0;
  // Second-byte bounds of Table 3-7 exclude overlong forms (E0, F0), surrogates (ED) and values
  // above U+10FFFF (F4); C0, C1 and F5-FF never start a sequence.
  unsigned char lo = 0x80, hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
    cp = b0 & 0x1F;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    cp = b0 & 0x0F;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    cp = b0 & 0x07;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return std::nullopt;
  }
  if (text.size() - pos < len) return std::nullopt;
  const unsigned char b1 = byte(1);
  if (b1 < lo || b1 > hi) return std::nullopt;
  cp = (cp << 6) | (b1 & 0x3F);
  for (std::size_t i = 2; i < len; ++i) {
    if (!IsContinuation(byte(i))) return std::nullopt;
    cp = (cp << 6) | (byte(i) & 0x3F);
  }
  return Utf8CodePoint{cp, len};
}

std::optional<std::size_t> FindInvalidUtf8(std::string_view text) {
  std::size_t pos = 0;
  while (pos < text.size()) {
    // ASCII runs are the common case.
    if (static_cast<unsigned char>(text[pos]) < 0x80) {
      ++pos;
      continue;
    }
    auto cp = DecodeUtf8At(text, pos);
    if (!cp) return pos;
    pos += cp->length;
  }
  return std::nullopt;
}

bool IsInvisibleCodePoint(char32_t cp) {
  if ((cp & 0xFFFE) == 0xFFFE) return true;  // U+nFFFE and U+nFFFF in every plane
  auto it = std::upper_bound(std::begin(kInvisible), std::end(kInvisible), cp,
                             [](char32_t v, const Range& r) { return v < r.first; });
  return it != std::begin(kInvisible) && cp <= std::prev(it)->last;
}

std::string CodePointName(char32_t code_point) {
  return fmt::format("<U+{:04X}>", static_cast<std::uint32_t>(code_point));
}

std::string EscapeForMessage(std::string_view text, std::size_t max_code_points) {
  std::string out;
  out.reserve(std::min<std::size_t>(text.size(), 256));
  std::size_t pos = 0, shown = 0;
  while (pos < text.size()) {
    if (max_code_points != 0 && shown == max_code_points) {
      out += fmt::format("... ({} bytes)", text.size());
      return out;
    }
    ++shown;
    const auto c = static_cast<unsigned char>(text[pos]);
    if (c >= 0x20 && c < 0x7F) {
      out.push_back(static_cast<char>(c));
      ++pos;
      continue;
    }
    if (c < 0x80) {  // C0 control or DEL
      out += fmt::format("\\x{:02x}", c);
      ++pos;
      continue;
    }
    auto cp = DecodeUtf8At(text, pos);
    if (!cp) {
      out += fmt::format("\\x{:02x}", c);
      ++pos;
      continue;
    }
    if (IsInvisibleCodePoint(cp->code_point))
      out += CodePointName(cp->code_point);
    else
      out.append(text.substr(pos, cp->length));
    pos += cp->length;
  }
  return out;
}

std::string QuoteForMessage(std::string_view text, std::size_t max_code_points) {
  // (Appended, not "\"" + std::string: GCC 12 warns falsely on that, -Wrestrict, PR 105329.)
  std::string out = "\"";
  out += EscapeForMessage(text, max_code_points);
  out += '"';
  return out;
}

bool IsPrintableForMessage(std::string_view text) { return EscapeForMessage(text, 0) == text; }

}  // namespace ppdeploy
