#include "core/json_fields.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "test_util.h"

namespace ppdeploy {
namespace {

using testing::ErrorOf;

TEST(JsonFieldsTest, WrongTypedIntegerNamesFileFieldAndValue) {
  auto j = nlohmann::json::parse(R"({"num_hidden_layers": "78"})");
  EXPECT_EQ(ErrorOf([&] { ReqInt(j, "num_hidden_layers", {"config.json", ""}); }),
            "config.json: num_hidden_layers: expected an integer, got \"78\"");
}

TEST(JsonFieldsTest, NegativeAndMissing) {
  auto j = nlohmann::json::parse(R"({"hidden_size": -5})");
  EXPECT_EQ(ErrorOf([&] { ReqInt(j, "hidden_size", {"c.json", ""}); }),
            "c.json: hidden_size: expected an integer >= 1, got -5");
  EXPECT_EQ(ErrorOf([&] { ReqInt(j, "vocab_size", {"c.json", ""}); }), "c.json: vocab_size: required field is missing");
}

TEST(JsonFieldsTest, MalformedJson) {
  std::string msg = ErrorOf([] { ParseJsonText("{\"a\": ", "x/config.json"); });
  EXPECT_EQ(msg.rfind("x/config.json: malformed JSON: ", 0), 0u) << msg;
}

TEST(JsonFieldsTest, NestedPath) {
  JsonContext ctx{"c.json", ""};
  auto j = nlohmann::json::parse(R"({"bits": 3.5})");
  EXPECT_EQ(ErrorOf([&] { ReqInt(j, "bits", ctx.Child("quantization_config")); }),
            "c.json: quantization_config.bits: expected an integer, got 3.5");
}

}  // namespace
}  // namespace ppdeploy

namespace ppdeploy {
namespace {

TEST(JsonFieldsTest, DeepNestingAndNulAreErrorsNotCrashes) {
  // Found by fuzz/model_config_fuzz (32,000 nested brackets overflowed the stack).
  std::string deep = "{\"architectures\": " + std::string(32000, '[') + std::string(32000, ']') + "}";
  EXPECT_EQ(ErrorOf([&] { ParseJsonText(deep, "c.json"); }), "c.json: malformed JSON: nested deeper than 256 levels");
  std::string nul = std::string("{\"a\": 1}") + '\0' + "garbage";
  EXPECT_EQ(ErrorOf([&] { ParseJsonText(nul, "c.json"); }), "c.json: malformed JSON: NUL byte at offset 8");
}

}  // namespace
}  // namespace ppdeploy

namespace ppdeploy {
namespace {

// Issue 15: "a raw 0xFF byte is echoed into error messages". JSON text must be UTF-8 (RFC 8259
// section 8.1; python3: json.loads(b'{"a": "\xff"}') raises UnicodeDecodeError), so the reader
// names the file and the byte offset and never echoes the byte.
TEST(JsonFieldsTest, InvalidUtf8NamesFileAndOffsetWithoutEchoingTheByte) {
  std::string msg = ErrorOf([] { ParseJsonText("{\"num_hidden_layers\": \"\xff\"}", "/m/config.json"); });
  EXPECT_EQ(msg, "/m/config.json: malformed JSON: invalid UTF-8 at byte offset 23 (byte 0xff)");
  EXPECT_EQ(msg.find('\xff'), std::string::npos);
  // An overlong encoding of '"' (0xC0 0xA2) is not UTF-8 either, nor is a UTF-16 surrogate.
  EXPECT_EQ(ErrorOf([] { ParseJsonText("{\"a\": \"\xc0\xa2\"}", "c.json"); }),
            "c.json: malformed JSON: invalid UTF-8 at byte offset 7 (byte 0xc0)");
  EXPECT_EQ(ErrorOf([] { ParseJsonText("{\"a\": \"\xed\xa0\x80\"}", "c.json"); }),
            "c.json: malformed JSON: invalid UTF-8 at byte offset 7 (byte 0xed)");
  // Valid UTF-8 outside ASCII is fine.
  EXPECT_EQ(ParseJsonText("{\"a\": \"caf\u00e9\"}", "c.json")["a"], "caf\u00e9");
}

TEST(JsonFieldsTest, InvisibleCharactersInValuesAreNamedInMessages) {
  // A zero-width space inside a string value is valid JSON; the message must show it.
  auto j = ParseJsonText("{\"num_hidden_layers\": \"78\u200b\"}", "c.json");
  EXPECT_EQ(ErrorOf([&] {
              ReqInt(j, "num_hidden_layers", {"c.json", ""});
            }),
            "c.json: num_hidden_layers: expected an integer, got \"78<U+200B>\"");
  // A parser message quoting the text near the error escapes it too (nlohmann's "last read: '...'").
  std::string msg = ErrorOf([] { ParseJsonText("{\"a\": 1\u200b}", "c.json"); });
  EXPECT_EQ(msg.rfind("c.json: malformed JSON: ", 0), 0u) << msg;
  EXPECT_EQ(msg.find("\u200b"), std::string::npos) << msg;
  // A long value is cut between characters, never inside one.
  std::string accents;
  for (int i = 0; i < 100; ++i) accents += "\u00e9";
  auto k = nlohmann::json::parse("{\"x\": \"" + accents + "\"}");
  std::string cut = ErrorOf([&] { ReqInt(k, "x", {"c.json", ""}); });
  EXPECT_EQ(cut.find("\\x"), std::string::npos) << cut;
  EXPECT_EQ(cut.substr(cut.size() - 3), "...");
}

}  // namespace
}  // namespace ppdeploy

namespace ppdeploy {
namespace {

TEST(JsonFieldsTest, KeysFromTheFileAreEscapedInMessages) {
  // A key is file content too: "bits\u0000" and a right-to-left override must not reach the terminal.
  auto j = ParseJsonText("{\"q\": {\"bits\\u0000\\u202e\": \"4\"}}", "c.json");
  EXPECT_EQ(ErrorOf([&] {
              ReqInt(j["q"], std::string("bits") + '\0' + "\u202e", JsonContext{"c.json", ""}.Child("q"));
            }),
            "c.json: q.bits\\x00<U+202E>: expected an integer, got \"4\"");
  EXPECT_EQ(ErrorOf([&] {
              RequireObject(j["q"][std::string("bits") + '\0' + "\u202e"], {"c.json", "q.k\u200b"});
            }),
            "c.json: q.k<U+200B>: expected a JSON object, got \"4\"");
}

}  // namespace
}  // namespace ppdeploy
