// Text from files, flags and environment variables, made safe to quote in a one-line message.
//
// An error message must show the user exactly what was read, including what they cannot see:
// `41,37` with a zero-width space after 41 must not read as a valid split, a raw 0xFF byte must not
// reach the terminal, and a newline in a value must not break the one-line `ppdeploy: error: ...`.
// The model is Python's repr() (str.isprintable()), which is what vLLM's own messages show; the
// escapes follow the project's convention instead of Python's quoting. This is the one convention:
// every message of every reader (configs, checkpoints, logs, settings, partitions, streams, node
// output) escapes through this file, and no other escaping helper exists:
//   printable ASCII and printable UTF-8 as is;
//   ASCII control bytes (0x00-0x1F, 0x7F) as \xNN;
//   bytes that are not valid UTF-8 (RFC 3629: no overlong forms, no surrogates, <= U+10FFFF) as \xNN;
//   invisible, format, separator and unassigned-for-display code points as <U+XXXX>.
// Pure: no I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ppdeploy {

/// One code point decoded from UTF-8 and the number of bytes it used (1-4).
struct Utf8CodePoint {
  char32_t code_point = 0;
  std::size_t length = 0;
};

/// Decodes the UTF-8 sequence that starts at `text[pos]` (pos < text.size()). Returns nullopt
/// when the byte at `pos` does not start a well-formed sequence (Unicode 15 Table 3-7, the rule
/// of Python's and Rust's strict decoders): a stray continuation byte, C0/C1/F5-FF, an overlong
/// form, a UTF-16 surrogate (U+D800-U+DFFF), a value above U+10FFFF or a truncated sequence.
std::optional<Utf8CodePoint> DecodeUtf8At(std::string_view text, std::size_t pos);

/// Offset of the first byte that is not part of well-formed UTF-8, or nullopt when all of
/// `text` is well-formed.
std::optional<std::size_t> FindInvalidUtf8(std::string_view text);

/// True for code points a terminal shows as nothing, as blank, or not at all reliably, which a
/// message therefore spells as <U+XXXX>: C1 controls (U+0080-U+009F); separators other than
/// U+0020 (Zs: U+00A0, U+1680, U+2000-U+200A, U+202F, U+205F, U+3000; Zl U+2028; Zp U+2029);
/// format characters (Cf: U+00AD, U+0600-U+0605, U+061C, U+06DD, U+070F, U+0890-U+0891, U+08E2,
/// U+180E, U+200B-U+200F, U+202A-U+202E, U+2060-U+2064, U+2066-U+206F, U+FEFF, U+FFF9-U+FFFB,
/// U+110BD, U+110CD, U+13430-U+1343F, U+1BCA0-U+1BCA3, U+1D173-U+1D17A, U+E0001, U+E0020-U+E007F);
/// other default-ignorable code points (U+034F, U+115F-U+1160, U+17B4-U+17B5, U+180B-U+180F,
/// U+3164, U+FE00-U+FE0F, U+FFA0, U+E0000-U+E0FFF); private use (U+E000-U+F8FF, planes 15-16);
/// noncharacters (U+FDD0-U+FDEF, U+nFFFE, U+nFFFF).
bool IsInvisibleCodePoint(char32_t code_point);

/// "<U+200B>" (at least 4 upper-case hex digits).
std::string CodePointName(char32_t code_point);

/// The longest input shown by default, in code points (CPython cuts its repr of a bad int()
/// literal at 200 characters: "%.200R").
inline constexpr std::size_t kMessageTextLimit = 200;

/// `text` escaped as described at the top of this file. Text longer than `max_code_points`
/// (0 = no limit) is cut there, never inside a character or an escape, and ends in
/// "... (N bytes)" with N the input's length.
std::string EscapeForMessage(std::string_view text, std::size_t max_code_points = kMessageTextLimit);

/// `text` escaped as EscapeForMessage does, between double quotes: the form every message uses to
/// quote a value it read ("41<U+200B>,37", "glm\xff"). Quotes inside are not escaped.
std::string QuoteForMessage(std::string_view text, std::size_t max_code_points = kMessageTextLimit);

/// True when EscapeForMessage(text, 0) == text (nothing to escape).
bool IsPrintableForMessage(std::string_view text);

}  // namespace ppdeploy
