// Issue 24: an index_topk_pattern shorter than the layer count is said, not passed in silence. vLLM
// (DeepseekV2MLAAttention.__init__, main 2026-06-07 and later) reads pattern[layer_id] only while
// `0 <= layer_id < len(index_topk_pattern)` and sets skip_topk = False past it: those layers build an
// indexer, as memory/kv.h LayerIsFull mirrors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "model/config.h"
#include "support/fake_checkpoint.h"

namespace ppdeploy {
namespace {

using ::testing::HasSubstr;

ModelConfig WithPattern(const std::string& pattern) {
  auto j = nlohmann::json::parse(testing::FakeMlaMoeConfigJson(testing::Glm5Spec()));
  j["index_topk_pattern"] = pattern;
  return ParseModelConfigText(j.dump(), "c.json");
}

TEST(IndexPatternLengthTest, AShortPatternIsWarnedWithTheLayersReadAsFull) {
  const ModelConfig m = WithPattern("FFFS");
  ASSERT_EQ(m.num_hidden_layers, 78);
  ASSERT_FALSE(m.warnings.empty());
  EXPECT_EQ(m.warnings.back(),
            "c.json: index_topk_pattern: 4 characters for num_hidden_layers=78: layers 4-77 have no letter and are "
            "read as 'F' (vLLM builds an indexer past the pattern's end)");
  const ModelConfig longer = WithPattern(std::string(80, 'F'));
  ASSERT_FALSE(longer.warnings.empty());
  EXPECT_THAT(longer.warnings.back(), HasSubstr("80 characters for num_hidden_layers=78: the letters past"));
  const ModelConfig exact = WithPattern(std::string(78, 'F'));
  for (const auto& w : exact.warnings) EXPECT_THAT(w, ::testing::Not(HasSubstr("index_topk_pattern"))) << w;
}

}  // namespace
}  // namespace ppdeploy
