// Per-request prompts: exact lengths by the server's /tokenize, no shared prefix unless asked for. The
// tokenizer here is ppdeploy sim's (src/sim/sim_engine.h: a word with its leading space is one token), served
// through a fake HttpClient, so counts are the sim's real ones.
#include "client/prompts.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

#include "core/error.h"
#include "sim/sim_engine.h"
#include "test_util.h"

namespace ppdeploy::client {
namespace {

// POST /tokenize answered by the sim engine; `split` words count as two tokens (a tokenizer that does not
// know them), `calls` counts requests.
class SimTokenizeHttp : public HttpClient {
 public:
  std::set<std::string> split;
  int calls = 0;
  bool fail = false;
  HttpResponse Get(const std::string&, double) override { return {404, "", "", 0}; }
  HttpResponse PostJson(const std::string& url, const nlohmann::json& body, double) override {
    ++calls;
    if (fail || url.find("/tokenize") == std::string::npos) return {404, "{}", "", 0};
    nlohmann::json j = engine_.TokenizeBody(body);
    std::string text =
        body.contains("messages") ? sim::RenderChat(body["messages"]) : body["prompt"].get<std::string>();
    std::int64_t extra = 0;
    for (const auto& piece : sim::Tokenize(text))
      if (split.count(piece.substr(piece[0] == ' ' ? 1 : 0))) ++extra;
    j["count"] = j["count"].get<std::int64_t>() + extra;
    return {200, j.dump(), "", 0};
  }

 private:
  sim::SimEngine engine_{sim::SimOptions{}};
};

// The chat prompt the sim sees for `content`, as tokens.
std::vector<std::string> ChatTokens(const std::string& content) {
  return sim::Tokenize(sim::RenderChat(nlohmann::json::array({{{"role", "user"}, {"content", content}}})));
}

TEST(PromptFactory, ExactLengthsIncludingTheChatTemplate) {
  SimTokenizeHttp http;
  PromptFactory f(http, "http://x", Endpoint::kChat, "m", 0, 1);
  // The sim's chat template "<|user|>" + content + "\n<|assistant|>": < | user | > \n < | assistant | > = 11.
  EXPECT_EQ(f.template_tokens(), 11);
  for (std::int64_t len : {16, 100, 1024}) {
    Prompt p = f.Make(3, len);
    EXPECT_EQ(p.tokens, len);
    EXPECT_EQ(static_cast<std::int64_t>(ChatTokens(p.text).size()), len) << len;
  }
  f.Verify(128, 8);
  EXPECT_EQ(f.method(), "tokenize (8 of 8 sampled prompts exact)");
  EXPECT_TRUE(f.exact());
  EXPECT_THROW(f.Make(0, 11), Error);  // nothing left after the template
}

// Issue 17 acceptance: no two requests of a default run share their first 64 prompt tokens (the chat
// template's 11 shared tokens included), over 5,000 requests.
TEST(PromptFactory, NoTwoDefaultPromptsShareTheirFirst64Tokens) {
  SimTokenizeHttp http;
  PromptFactory f(http, "http://x", Endpoint::kChat, "m", 0, 0);
  std::set<std::vector<std::string>> prefixes;
  for (std::int64_t i = 0; i < 5000; ++i) {
    auto tokens = ChatTokens(f.Make(i, 128).text);
    ASSERT_GE(tokens.size(), 64u);
    tokens.resize(64);
    EXPECT_TRUE(prefixes.insert(tokens).second) << "request " << i << " repeats an earlier 64-token prefix";
  }
}

TEST(PromptFactory, SharedPrefixIsSharedExactlyThatFar) {
  SimTokenizeHttp http;
  PromptFactory f(http, "http://x", Endpoint::kCompletions, "m", 48, 0);
  EXPECT_EQ(f.template_tokens(), 0);  // completions: the prompt as is
  auto a = sim::Tokenize(f.Make(0, 200).text), b = sim::Tokenize(f.Make(1, 200).text);
  ASSERT_EQ(a.size(), 200u);
  ASSERT_EQ(b.size(), 200u);
  std::size_t common = 0;
  while (common < a.size() && a[common] == b[common]) ++common;
  EXPECT_GE(common, 48u);
  EXPECT_LT(common, 52u);  // the index words follow at once (two requests may share a digit by chance)
}

TEST(PromptFactory, DropsWordsTheServerSplitsAndFallsBackWithoutTokenize) {
  SimTokenizeHttp http;
  http.split = {"harbor", "meadow", "violet"};
  PromptFactory f(http, "http://x", Endpoint::kChat, "m", 0, 0);
  for (const auto& w : f.vocabulary()) EXPECT_EQ(http.split.count(w), 0u) << w;
  f.Verify(300, 8);
  EXPECT_TRUE(f.exact()) << f.method();

  SimTokenizeHttp none;
  none.fail = true;
  PromptFactory g(none, "http://x", Endpoint::kChat, "m", 0, 0);
  EXPECT_FALSE(g.has_tokenize());
  EXPECT_EQ(g.Make(0, 50).tokens, -1);
  EXPECT_NE(g.method().find("words_fallback"), std::string::npos);
}

TEST(LengthDist, ParsesAndDrawsLikeTheirSources) {
  EXPECT_EQ(ParseLengthDist("fixed", "--input-len-dist").kind, LengthDist::Kind::kFixed);
  LengthDist u = ParseLengthDist("uniform:0.5", "--input-len-dist");
  std::mt19937_64 rng(1);
  std::int64_t lo = 1 << 30, hi = 0;
  double sum = 0;
  for (int i = 0; i < 20000; ++i) {
    std::int64_t v = DrawLength(u, 100, rng);
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    sum += static_cast<double>(v);
  }
  EXPECT_EQ(lo, 50);  // vLLM RandomDataset: integers in [floor(100 x 0.5), ceil(100 x 1.5)]
  EXPECT_EQ(hi, 150);
  EXPECT_NEAR(sum / 20000, 100, 1);
  LengthDist n = ParseLengthDist("normal:10", "--output-len-dist");
  double s2 = 0, m = 0;
  std::vector<std::int64_t> v;
  for (int i = 0; i < 20000; ++i) v.push_back(DrawLength(n, 200, rng));
  for (auto x : v) m += static_cast<double>(x);
  m /= 20000;
  for (auto x : v) s2 += (static_cast<double>(x) - m) * (static_cast<double>(x) - m);
  EXPECT_NEAR(m, 200, 0.5);
  EXPECT_NEAR(std::sqrt(s2 / 20000), 10, 0.3);
  EXPECT_EQ(DrawLength(ParseLengthDist("normal:1000", "x"), 1, rng) >= 1, true);  // never below 1
  EXPECT_EQ(
      testing::ErrorOf([] { ParseLengthDist("uniform:1.5", "--input-len-dist"); }),
      "--input-len-dist: uniform:R needs a range ratio 0 <= R < 1 (vLLM --random-range-ratio), got \"uniform:1.5\"");
  EXPECT_EQ(testing::ErrorOf([] { ParseLengthDist("zipf", "--output-len-dist"); }),
            "--output-len-dist: expected fixed, uniform:R or normal:STD, got \"zipf\"");
}

}  // namespace
}  // namespace ppdeploy::client
