#include "probes/needle.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "probes/fake_backend.h"

namespace ppdeploy::probes {
namespace {

using testing::LastContent;
using testing::ScriptedBackend;
using testing::WordTokens;

// A fake server that recalls a needle only while the prompt fits its effective context.
ScriptedBackend RecallBackend(std::int64_t effective_context) {
  return ScriptedBackend([effective_context](const ChatRequest& req, int) {
    const std::string prompt = LastContent(req);
    ChatResult r;
    r.ok = true;
    r.finish_reason = "stop";
    const auto tokens = static_cast<std::int64_t>(WordTokens(prompt).size());
    const std::string question = "What is the value of key ";
    const auto q = prompt.rfind(question) + question.size();
    const std::string key = prompt.substr(q, prompt.find('?', q) - q);
    const std::string marker = "The value of key " + key + " is ";
    const auto at = prompt.find(marker);
    if (tokens <= effective_context && at != std::string::npos) {
      const auto start = at + marker.size();
      r.text = "<think>looking</think>The code is " + prompt.substr(start, prompt.find(". ", start) - start) + ".";
    } else {
      r.text = "I could not find an access code in the text.";
    }
    return r;
  });
}

TEST(NeedleTest, ParseLengthsUsesDecimalK) {
  // Decision documented in needle.h: K = 1,000 tokens (the seed writes 300K/500K loosely).
  EXPECT_EQ(ParseLengths("128K,300k, 500K"), (std::vector<std::int64_t>{128000, 300000, 500000}));
  EXPECT_EQ(ParseLengths("1M,0.5M,131072"), (std::vector<std::int64_t>{1000000, 500000, 131072}));
  EXPECT_THROW(ParseLengths("128K,,1M"), Error);
  EXPECT_THROW(ParseLengths("abc"), Error);
  EXPECT_THROW(ParseLengths("0"), Error);
  EXPECT_EQ(ParseDepths("10,50%,90"), (std::vector<double>{10, 50, 90}));
  EXPECT_THROW(ParseDepths("120"), Error);
  EXPECT_EQ(FormatLength(128000), "128K");
  EXPECT_EQ(FormatLength(1000000), "1M");
  EXPECT_EQ(FormatLength(131072), "131072");  // not a round K: shown exactly
}

TEST(NeedleTest, HaystackHasTheExactTokenLengthWithTokenize) {
  auto backend = RecallBackend(1 << 30);
  const Needle n = MakeNeedle(5);
  EXPECT_EQ(MakeNeedle(5).value, n.value);  // seeded
  EXPECT_NE(MakeNeedle(6).value, n.value);
  for (std::int64_t target : {200, 5000, 64000}) {
    const Haystack h = BuildHaystack(backend, target, 50, n, 1);
    EXPECT_EQ(h.tokens, target);
    EXPECT_EQ(static_cast<std::int64_t>(WordTokens(h.prompt).size()), target);
    EXPECT_FALSE(h.estimated);
    EXPECT_NE(h.prompt.find(n.sentence), std::string::npos);
    if (target >= 5000) {  // in short prompts the needle itself is ~10% of the bytes
      EXPECT_NEAR(h.needle_depth_pct, 50, 2);
    }
    EXPECT_LT(h.tokenize_calls, 60);
  }
  const Haystack shallow = BuildHaystack(backend, 20000, 10, n, 1);
  EXPECT_NEAR(shallow.needle_depth_pct, 10, 2);
  EXPECT_THROW(BuildHaystack(backend, 10, 50, n, 1), Error);  // smaller than the needle + question
}

TEST(NeedleTest, FallbackEstimatesFromCharsPerToken) {
  auto backend = RecallBackend(1 << 30);
  backend.has_tokenize = false;
  const Haystack h = BuildHaystack(backend, 10000, 50, MakeNeedle(1), 1, 4.0);
  EXPECT_TRUE(h.estimated);
  EXPECT_LE(h.tokens, 10000);
  EXPECT_GE(h.tokens, 9995);
  EXPECT_NEAR(static_cast<double>(h.prompt.size()) / 4.0, 10000, 5);
}

TEST(NeedleTest, EffectiveContext300KPasses128KAnd300KFails500K) {
  auto backend = RecallBackend(300000);
  backend.max_model_len = 600000;
  NeedleConfig cfg;
  cfg.lengths = ParseLengths("128K,300K,500K");
  cfg.depths_pct = {10, 90};
  std::vector<std::string> order;
  const NeedleResult r = RunNeedle(backend, cfg, [&](const NeedleCell& c) { order.push_back(c.status); });
  ASSERT_EQ(r.cells.size(), 6u);
  EXPECT_EQ(order.size(), 6u);
  for (const auto& c : r.cells) {
    EXPECT_EQ(c.prompt_tokens, c.length_tokens);
    EXPECT_EQ(c.status, c.length_tokens <= 300000 ? "pass" : "fail") << c.length_tokens << " " << c.answer;
  }
  EXPECT_EQ(r.passed, 4);
  EXPECT_EQ(r.failed, 2);
  EXPECT_EQ(NeedleExitCode(r), ExitCode::kCheckFailed);
  // The request asks for the answer room only, deterministically.
  const auto reqs = backend.requests();
  EXPECT_EQ(reqs.back().max_tokens, 256);
  EXPECT_DOUBLE_EQ(*reqs.back().temperature, 0.0);
}

TEST(NeedleTest, LengthsOverMaxModelLenAreSkippedWithANote) {
  auto backend = RecallBackend(1 << 30);
  backend.max_model_len = 2000;
  NeedleConfig cfg;
  cfg.lengths = {1000, 1800, 5000};
  cfg.depths_pct = {50};
  const NeedleResult r = RunNeedle(backend, cfg);
  ASSERT_EQ(r.cells.size(), 3u);
  EXPECT_EQ(r.cells[0].status, "pass");
  EXPECT_EQ(r.cells[1].status, "skipped");  // 1800 + 256 > 2000
  EXPECT_EQ(r.cells[1].note, "1.8K + 256 answer tokens > max_model_len 2000");
  EXPECT_EQ(r.cells[2].status, "skipped");
  EXPECT_EQ(NeedleExitCode(r), ExitCode::kOk);
  const auto j = ToJson(r);
  EXPECT_EQ(j["schema"], "ppdeploy.needle/1");
  EXPECT_EQ(j["skipped"], 2);
}

}  // namespace
}  // namespace ppdeploy::probes
