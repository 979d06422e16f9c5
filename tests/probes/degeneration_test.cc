#include "probes/degeneration.h"

#include <string>

#include <gtest/gtest.h>

#include "probes/fake_backend.h"

namespace ppdeploy::probes {
namespace {

using testing::WordTokens;

// Cuts `text` to its first `cap` words (what a server does at max_tokens), keeping the original spacing.
std::string CutToWords(const std::string& text, int cap) {
  int words = 0;
  bool in_word = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const bool ws = text[i] == ' ' || text[i] == '\n' || text[i] == '\t';
    if (!ws && !in_word && ++words > cap) return text.substr(0, i);
    in_word = !ws;
  }
  return text;
}

std::string Repeat(const std::string& unit, int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += unit;
  return s;
}

// Natural repetition 1: generated code with repeated lines that differ in indices and values.
std::string CodeFixture() {
  std::string s = "Here is the unrolled kernel:\n\n```c\nvoid apply(float* result, const float* input) {\n";
  for (int i = 0; i < 400; ++i)
    s += "    result[" + std::to_string(i) + "] = scale * input[" + std::to_string(i) + "] + bias[" +
         std::to_string(i % 16) + "];\n";
  return s + "}\n```\n";
}

// Natural repetition 2: a numbered list whose items share most words.
std::string NumberedListFixture() {
  std::string s = "Steps to check every node:\n\n";
  for (int i = 1; i <= 400; ++i)
    s += std::to_string(i) + ". Log in to node " + std::to_string(i) + " and check that the service is running.\n";
  return s;
}

// Natural repetition 3: a markdown table with a long separator row and similar rows.
std::string MarkdownTableFixture() {
  std::string s = "| id | name | status | latency (ms) | region | owner |\n|---|---|---|---|---|---|\n";
  const char* names[] = {"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"};
  for (int i = 0; i < 400; ++i)
    s += "| " + std::to_string(i) + " | " + names[i % 8] + " | ok | " + std::to_string(10 + (i * 7) % 90) +
         " | eu-" + std::to_string(i % 3) + " | team-" + std::to_string(i % 5) + " |\n";
  return s;
}

struct Fixture {
  const char* name;
  std::string text;
};

TEST(DegenerationTest, NaturalRepetitionAtTheCapDoesNotFire) {
  // Calibration (docs/sources.md §6): code, numbered lists and tables that hit max_tokens are not loops.
  const std::vector<Fixture> fixtures = {{"code", CodeFixture()},
                                         {"numbered list", NumberedListFixture()},
                                         {"markdown table", MarkdownTableFixture()}};
  for (const auto& f : fixtures) {
    for (int cap : {500, 1000, 3000}) {
      const std::string out = CutToWords(f.text, cap);
      const auto ids = WordTokens(out);
      const auto by_tokens = CheckDegeneration("length", ids, out);
      EXPECT_FALSE(by_tokens.degenerate) << f.name << " cap " << cap << " period " << by_tokens.period;
      EXPECT_TRUE(by_tokens.stopped_without_eos);
      EXPECT_EQ(by_tokens.unit, "tokens");
      const auto by_text = CheckDegeneration("length", std::nullopt, out);
      EXPECT_FALSE(by_text.degenerate) << f.name << " cap " << cap << " period " << by_text.period;
      EXPECT_EQ(by_text.unit, "chars");
    }
  }
}

TEST(DegenerationTest, ShortPeriodIdentityLoopFires) {
  // docs/seed.md §7: "a correct answer, then a loop that never emits EOS and runs to the cap".
  const std::string out = CutToWords("Hello! I am GLM, an AI assistant. " + Repeat("I am GLM. ", 1200), 3000);
  const auto t = CheckDegeneration("length", WordTokens(out), out);
  EXPECT_TRUE(t.degenerate);
  EXPECT_EQ(t.period, 3);  // "I" "am" "GLM."
  EXPECT_GE(t.repeats, 900);
  const auto c = CheckDegeneration("length", std::nullopt, out);
  EXPECT_TRUE(c.degenerate);
  EXPECT_EQ(c.period, 10);  // "I am GLM. " in normalised bytes
  EXPECT_EQ(c.tail.size(), 10u);
}

TEST(DegenerationTest, LongPeriodLoopFires) {
  std::string paragraph;
  for (int i = 0; i < 50; ++i) paragraph += "w" + std::to_string(i * 37 % 101) + " ";  // 50 distinct words
  const std::string out = CutToWords("Sure, here is the answer. " + Repeat(paragraph, 80), 3000);
  const auto t = CheckDegeneration("length", WordTokens(out), out);
  EXPECT_TRUE(t.degenerate);
  EXPECT_EQ(t.period, 50);
  EXPECT_GE(t.repeats, 50);
  const auto c = CheckDegeneration("length", std::nullopt, out);
  EXPECT_TRUE(c.degenerate);
  EXPECT_EQ(static_cast<std::size_t>(c.period), NormalizeWhitespace(paragraph).size() + 1);
}

TEST(DegenerationTest, CjkLoopWithoutSpacesFiresOnText) {
  const std::string out = "你好，我是GLM。" + Repeat("我是一个人工智能助手。", 400);
  EXPECT_TRUE(CheckDegeneration("length", std::nullopt, out).degenerate);
}

TEST(DegenerationTest, NeedsAStopWithoutEos) {
  const std::string out = Repeat("I am GLM. ", 300);
  EXPECT_FALSE(CheckDegeneration("stop", WordTokens(out), out).degenerate);  // EOS emitted: not a loop
  EXPECT_TRUE(CheckDegeneration("repetition_detected", WordTokens(out), out).degenerate);  // vLLM's own stop
  // A short answer that hits a tiny cap with no cycle.
  EXPECT_FALSE(CheckDegeneration("length", std::nullopt, "The capital of France is").degenerate);
}

TEST(DegenerationTest, TailCycleThresholds) {
  const std::vector<int> seq = {9, 8, 1, 2, 1, 2, 1, 2};
  const auto c = FindTailCycle(std::span<const int>(seq), 4, 3, 6);
  EXPECT_TRUE(c.found);
  EXPECT_EQ(c.period, 2);
  EXPECT_EQ(c.cover, 6);
  EXPECT_EQ(c.repeats, 3);
  EXPECT_FALSE(FindTailCycle(std::span<const int>(seq), 4, 4, 6).found);  // only 3 copies
  EXPECT_FALSE(FindTailCycle(std::span<const int>(seq), 4, 3, 7).found);  // covers 6 < 7
  EXPECT_EQ(NormalizeWhitespace("  a \n\n b\tc  "), "a b c");
}

}  // namespace
}  // namespace ppdeploy::probes
