// Issue 24: every JSON integer is read in range of its target type, and a parse error names the line,
// the column and the field. Before, an `int` field of 2^32 + 39 = 4294967335 read as 39
// (static_cast<int> of the int64), and `1e400` gave "number overflow parsing '1e400'" with no position.
#include <gtest/gtest.h>

#include <climits>

#include "core/error.h"
#include "core/json_fields.h"

namespace ppdeploy {
namespace {

std::string ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(JsonIntRangeTest, AnIntFieldRefusesTwoToTheThirtyTwoPlusK) {
  const JsonContext ctx{"cal.json", ""};
  auto j = nlohmann::json::parse(R"({"tp": 4294967335, "pp": 2, "big": 18446744073709551615, "neg": -1})");
  EXPECT_EQ(ErrorOf([&] { ReqIntAs<int>(j, "tp", ctx); }),
            "cal.json: tp: value 4294967335 is out of range (expected an integer from 1 to 2147483647)");
  EXPECT_EQ(ReqIntAs<int>(j, "pp", ctx), 2);
  EXPECT_EQ(ErrorOf([&] { ReqInt(j, "big", ctx); }),
            "cal.json: big: value 18446744073709551615 is out of range (expected an integer from 1 to "
            "9223372036854775807)");
  // A count is >= 0: the message of a plain minimum is kept.
  EXPECT_EQ(ErrorOf([&] { OptIntAs<int>(j, "neg", ctx); }),
            "cal.json: neg: value -1 is out of range (expected an integer from 0 to 2147483647)");
  EXPECT_EQ(ErrorOf([&] { OptInt(j, "neg", ctx); }), "cal.json: neg: expected an integer >= 0, got -1");
}

TEST(JsonIntRangeTest, ListElementsAreCheckedAndNamed) {
  const JsonContext ctx{"cal.json", ""};
  auto j = nlohmann::json::parse(R"({"p": [4294967335, 4294967335], "q": [41, 37], "r": [41, "37"], "s": 7})");
  EXPECT_EQ(ErrorOf([&] { OptIntListAs<int>(j, "p", ctx); }),
            "cal.json: p[0]: value 4294967335 is out of range (expected an integer from 0 to 2147483647)");
  EXPECT_EQ(OptIntListAs<int>(j, "q", ctx), (std::vector<int>{41, 37}));
  EXPECT_EQ(ErrorOf([&] { OptIntListAs<int>(j, "r", ctx); }), "cal.json: r[1]: expected an integer, got \"37\"");
  EXPECT_EQ(ErrorOf([&] { OptIntListAs<int>(j, "s", ctx); }), "cal.json: s: expected a list of integers, got 7");
  EXPECT_TRUE(OptIntListAs<int>(j, "absent", ctx).empty());
}

TEST(JsonIntRangeTest, IntegerTextIsDigitsOnly) {
  EXPECT_EQ(ParseIntText("11395"), 11395);
  EXPECT_EQ(ParseIntText("-5"), -5);
  EXPECT_EQ(ParseIntText(""), std::nullopt);
  EXPECT_EQ(ParseIntText("12 "), std::nullopt);
  EXPECT_EQ(ParseIntText("None"), std::nullopt);
  EXPECT_EQ(ParseIntText("99999999999999999999"), std::nullopt);  // past int64
}

// 1e400 overflows a double: nlohmann reports out_of_range.406 with no position; the reader names the
// line, the column where the number starts and the field.
TEST(JsonIntRangeTest, NumberOverflowNamesLineColumnAndField) {
  const std::string text =
      "{\n  \"schema\": \"ppdeploy.calibration/1\",\n  \"ranks\": [\n    {\"pp_rank\": 0, "
      "\"available_kv_gib\": 1e400}\n  ]\n}\n";
  EXPECT_EQ(ErrorOf([&] { ParseJsonText(text, "cal.json"); }),
            "cal.json: malformed JSON: line 4, column 40 (field ranks[0].available_kv_gib): number overflow "
            "parsing '1e400'");
  EXPECT_EQ(ErrorOf([&] { ParseJsonText("[1, 2, -1e999]", "a.json"); }),
            "a.json: malformed JSON: line 1, column 8 (field [2]): number overflow parsing '-1e999'");
}

TEST(JsonIntRangeTest, SyntaxErrorsNameLineColumnAndField) {
  // A syntax error keeps nlohmann's own line and column (the character after the bad token) and its text.
  EXPECT_EQ(ErrorOf([&] { ParseJsonText("{\"a\": 1,\n \"b\": tru}", "x.json"); }),
            "x.json: malformed JSON: line 2, column 10 (field b): syntax error while parsing value - invalid "
            "literal; last read: '\"b\": tru}'");
  const std::string msg = ErrorOf([&] { ParseJsonText("{\"a\": ", "x.json"); });
  EXPECT_EQ(msg.rfind("x.json: malformed JSON: line 1, column ", 0), 0u) << msg;
}

}  // namespace
}  // namespace ppdeploy
