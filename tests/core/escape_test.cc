// EscapeForMessage / UTF-8 validation (core/escape.h). Expected values: the Unicode Standard's
// Table 3-7 (well-formed UTF-8) and what Python's strict decoder accepts (python3:
// b'\xc0\x80'.decode() raises, b'\xed\xa0\x80'.decode() raises, b'\xf4\x90\x80\x80'.decode() raises).
#include "core/escape.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace ppdeploy {
namespace {

TEST(EscapeTest, PrintableAsciiAndUtf8StayAsTheyAre) {
  EXPECT_EQ(EscapeForMessage("41,37"), "41,37");
  EXPECT_EQ(EscapeForMessage("/models/GLM-5.3 W4A16/config.json"), "/models/GLM-5.3 W4A16/config.json");
  EXPECT_EQ(EscapeForMessage("caf\u00e9 \u4e2d\u6587 \u0664\u0661 \U0001F600"),
            "caf\u00e9 \u4e2d\u6587 \u0664\u0661 \U0001F600");
  EXPECT_EQ(EscapeForMessage("a\\b\"c"), "a\\b\"c");  // backslash and quote are printable ASCII
  EXPECT_TRUE(IsPrintableForMessage("41,37"));
}

TEST(EscapeTest, ControlBytesAndInvalidUtf8AreHexEscaped) {
  EXPECT_EQ(EscapeForMessage(std::string_view("a\0b", 3)), "a\\x00b");
  EXPECT_EQ(EscapeForMessage("line1\nline2\r\t\x1b[31m\x7f"), "line1\\x0aline2\\x0d\\x09\\x1b[31m\\x7f");
  EXPECT_EQ(EscapeForMessage("\xff"), "\\xff");                             // never valid in UTF-8
  EXPECT_EQ(EscapeForMessage("\xc3"), "\\xc3");                             // truncated 2-byte sequence
  EXPECT_EQ(EscapeForMessage("\xc0\x80"), "\\xc0\\x80");                    // overlong NUL
  EXPECT_EQ(EscapeForMessage("\xe0\x80\xaf"), "\\xe0\\x80\\xaf");           // overlong '/'
  EXPECT_EQ(EscapeForMessage("\xed\xa0\x80"), "\\xed\\xa0\\x80");           // UTF-16 surrogate U+D800
  EXPECT_EQ(EscapeForMessage("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // above U+10FFFF
  EXPECT_EQ(EscapeForMessage("\x80x"), "\\x80x");                           // stray continuation byte
  EXPECT_FALSE(IsPrintableForMessage("\xff"));
}

TEST(EscapeTest, InvisibleCodePointsAreNamed) {
  // "41,37" with a zero-width space after 41 must not read as a valid split.
  EXPECT_EQ(EscapeForMessage("41\u200b,37"), "41<U+200B>,37");
  EXPECT_EQ(EscapeForMessage("\ufeff{}"), "<U+FEFF>{}");                                // byte order mark
  EXPECT_EQ(EscapeForMessage("a\u202eb\u2066c\u2069"), "a<U+202E>b<U+2066>c<U+2069>");  // bidi controls
  EXPECT_EQ(EscapeForMessage("\u200c\u200d\u200e\u200f"), "<U+200C><U+200D><U+200E><U+200F>");
  EXPECT_EQ(EscapeForMessage("a\u2028b\u2029"), "a<U+2028>b<U+2029>");                 // line / paragraph separator
  EXPECT_EQ(EscapeForMessage("1\u00a02\u30003"), "1<U+00A0>2<U+3000>3");               // spaces other than U+0020
  EXPECT_EQ(EscapeForMessage("\u0085"), "<U+0085>");                                   // C1 control NEL
  EXPECT_EQ(EscapeForMessage("\u00ad\u2060\U000E0041"), "<U+00AD><U+2060><U+E0041>");  // soft hyphen, WJ, tag A
  EXPECT_EQ(EscapeForMessage("\ue000\U0010FFFD"), "<U+E000><U+10FFFD>");               // private use
  EXPECT_EQ(EscapeForMessage("\uffff\U0001FFFE"), "<U+FFFF><U+1FFFE>");                // noncharacters
  EXPECT_TRUE(IsInvisibleCodePoint(0x200B));
  EXPECT_FALSE(IsInvisibleCodePoint(0x20));
  EXPECT_FALSE(IsInvisibleCodePoint(0x00E9));
  EXPECT_FALSE(IsInvisibleCodePoint(0xFFFD));  // the replacement character has a glyph
}

TEST(EscapeTest, LongTextIsCutOnACharacterBoundary) {
  std::string digits(4301, '7');
  EXPECT_EQ(EscapeForMessage(digits), std::string(200, '7') + "... (4301 bytes)");
  std::string accents;
  for (int i = 0; i < 300; ++i) accents += "\u00e9";
  EXPECT_EQ(EscapeForMessage(accents, 3), "\u00e9\u00e9\u00e9... (600 bytes)");
  EXPECT_EQ(EscapeForMessage("ab\xff"
                             "cd",
                             3),
            "ab\\xff... (5 bytes)");
  EXPECT_EQ(EscapeForMessage(digits, 0), digits);  // 0 = no limit
}

TEST(EscapeTest, FindInvalidUtf8GivesTheOffset) {
  EXPECT_FALSE(FindInvalidUtf8("{\"name\": \"caf\u00e9\"}").has_value());
  EXPECT_EQ(FindInvalidUtf8("{\"a\": \"\xff\"}"), 7u);
  EXPECT_EQ(FindInvalidUtf8("ok\xe2\x82"), 2u);  // truncated U+20AC at the end
  auto euro = DecodeUtf8At("\xe2\x82\xac", 0);
  ASSERT_TRUE(euro.has_value());
  EXPECT_EQ(euro->code_point, 0x20ACu);
  EXPECT_EQ(euro->length, 3u);
  EXPECT_EQ(DecodeUtf8At("\xf0\x9f\x98\x80", 0)->code_point, 0x1F600u);
  EXPECT_FALSE(DecodeUtf8At("\xf8\x88\x80\x80\x80", 0).has_value());  // 5-byte forms are not UTF-8
}

TEST(EscapeTest, QuoteForMessageQuotesTheEscapedText) {
  EXPECT_EQ(QuoteForMessage("41\u200b,37"), "\"41<U+200B>,37\"");
  EXPECT_EQ(QuoteForMessage("glm\xff"), "\"glm\\xff\"");
  EXPECT_EQ(QuoteForMessage(std::string("a\0b", 3)), "\"a\\x00b\"");
  EXPECT_EQ(QuoteForMessage(std::string(300, 'x'), 3), "\"xxx... (300 bytes)\"");
}

// Issue 15: one escaping convention. Every message escapes through this file: no other source formats
// bytes as \xNN or code points as U+XXXX for a message (the partition parser's "(U+00B2)" names a visible
// character it has already quoted, which is not an escape).
TEST(EscapeTest, NoOtherEscapingHelperInTheSources) {
  namespace fs = std::filesystem;
  int files = 0;
  for (const auto& e : fs::recursive_directory_iterator(fs::path(PPDEPLOY_SOURCE_DIR) / "src")) {
    if (!e.is_regular_file()) continue;
    const std::string rel = fs::relative(e.path(), PPDEPLOY_SOURCE_DIR).string();
    if (rel == "src/core/escape.cc") continue;
    std::ifstream in(e.path());
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string text = ss.str();
    ++files;
    EXPECT_EQ(text.find("\\\\x{:02"), std::string::npos) << rel << " escapes bytes itself";
    std::size_t at = text.find("U+{:04X}");
    if (rel == "src/layout/partition.cc" && at != std::string::npos && text.compare(at - 1, 1, "(") == 0)
      at = text.find("U+{:04X}", at + 1);
    EXPECT_EQ(at, std::string::npos) << rel << " names code points itself";
  }
  EXPECT_GT(files, 100);
}

}  // namespace
}  // namespace ppdeploy
