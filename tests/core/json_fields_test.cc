#include "core/json_fields.h"

#include <gtest/gtest.h>

#include "core/error.h"

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
