// Regression (found by fuzz/model_config_fuzz): a number literal too large for a double made
// nlohmann throw out_of_range.406, which ParseJsonText did not turn into ppdeploy::Error, so
// `ppdeploy plan` would have died in std::terminate instead of printing an error.
#include <gtest/gtest.h>

#include "core/error.h"
#include "core/json_fields.h"
#include "model/config.h"

namespace ppdeploy {
namespace {

TEST(JsonTextOverflowTest, HugeNumberIsAnError) {
  try {
    ParseJsonText(R"({"max_position_embeddings": 1e999})", "config.json");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "config.json: malformed JSON: line 1, column 29 (field max_position_embeddings): number overflow "
              "parsing '1e999'");
  }
  EXPECT_THROW(ParseModelConfigText(R"({"architectures": ["LlamaForCausalLM"], "x": -1e400})", "c.json"), Error);
}

}  // namespace
}  // namespace ppdeploy
