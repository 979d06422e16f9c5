// The simulator's behaviour without the network. Expected values: vLLM's error shape and message
// (serving_engine.py _validate_input, vLLM 0.6-0.11), TokenizeResponse fields (protocol.py), and the sim's
// own documented rules (sim_engine.h).
#include <gtest/gtest.h>

#include "core/error.h"
#include "sim/sim_engine.h"

namespace ppdeploy::sim {
namespace {

nlohmann::json Chat(const std::string& content, int max_tokens) {
  return {{"model", "ppdeploy-sim"},
          {"messages", nlohmann::json::array({{{"role", "user"}, {"content", content}}})},
          {"max_tokens", max_tokens}};
}

TEST(SimTokenizer, WordPieces) {
  // " word" with its leading space is one piece; punctuation and newlines are their own pieces.
  auto t = Tokenize("Hello, world! foo\nbar");
  std::vector<std::string> want = {"Hello", ",", " world", "!", " foo", "\n", "bar"};
  EXPECT_EQ(t, want);
  EXPECT_TRUE(Tokenize("").empty());
}

TEST(SimEngine, DeterministicUnderSeedAndStopsBeforeMaxTokens) {
  SimEngine e({});
  Plan a = e.MakePlan(Api::kChat, Chat("tell me", 500), 0, 0);
  Plan b = e.MakePlan(Api::kChat, Chat("tell me", 500), 7, 0);
  EXPECT_EQ(a.Text(), b.Text());  // content depends on seed + prompt, not on arrival order
  EXPECT_EQ(a.finish_reason, "stop");
  EXPECT_LT(a.tokens.size(), 500u);
  // Re-tokenizing the answer gives the same count (usage and the text agree).
  EXPECT_EQ(Tokenize(a.Text()).size(), a.tokens.size());
  SimOptions other;
  other.seed = 1;
  EXPECT_NE(SimEngine(other).MakePlan(Api::kChat, Chat("tell me", 500), 0, 0).Text(), a.Text());
}

TEST(SimEngine, IgnoreEosAndMinTokensHonoured) {
  SimEngine e({});
  auto body = Chat("x", 37);
  body["ignore_eos"] = true;
  Plan p = e.MakePlan(Api::kChat, body, 0, 0);
  EXPECT_EQ(p.tokens.size(), 37u);
  EXPECT_EQ(p.finish_reason, "length");
  auto body2 = Chat("x", 300);
  body2["min_tokens"] = 120;
  Plan q = e.MakePlan(Api::kChat, body2, 0, 0);
  EXPECT_GE(q.tokens.size(), 120u);
  EXPECT_LE(q.tokens.size(), 300u);
}

TEST(SimEngine, MaxModelLenOverflowIsVllmError) {
  SimOptions o;
  o.max_model_len = 100;
  SimEngine e(o);
  Plan p = e.MakePlan(Api::kChat, Chat("hi", 200), 0, 0);
  ASSERT_TRUE(p.error);
  EXPECT_EQ(p.status, 400);
  EXPECT_EQ(p.error_body["object"], "error");
  EXPECT_EQ(p.error_body["type"], "BadRequestError");
  EXPECT_EQ(p.error_body["code"], 400);
  EXPECT_TRUE(p.error_body["param"].is_null());
  EXPECT_EQ(p.error_body["message"].get<std::string>().rfind("This model's maximum context length is 100 tokens.", 0), 0u);
}

TEST(SimEngine, NeedleRecalledOnlyWithinEffectiveContext) {
  std::string prompt = "The value of key alpha-7 is 48213. Some filler text here. What is the value of key alpha-7?";
  SimOptions o;
  o.effective_context = 1000;
  Plan ok = SimEngine(o).MakePlan(Api::kChat, Chat(prompt, 50), 0, 0);
  EXPECT_NE(ok.Text().find("48213"), std::string::npos) << ok.Text();
  o.effective_context = 10;  // the prompt is longer than 10 tokens
  Plan miss = SimEngine(o).MakePlan(Api::kChat, Chat(prompt, 50), 0, 0);
  EXPECT_EQ(miss.Text().find("48213"), std::string::npos) << miss.Text();
  EXPECT_NE(miss.Text().find("The value of key alpha-7 is"), std::string::npos);
}

// The limit counts the message's own tokens (what `ppdeploy needle` measures with /tokenize), not the
// "<|user|>...<|assistant|>" template around them: a message of exactly N tokens is recalled at N.
TEST(SimEngine, EffectiveContextCountsMessageTokensNotTemplate) {
  std::string prompt = "The value of key alpha-7 is 48213. Some filler text here. What is the value of key alpha-7?";
  SimOptions o;
  o.effective_context = static_cast<std::int64_t>(Tokenize(prompt).size());
  Plan at = SimEngine(o).MakePlan(Api::kChat, Chat(prompt, 50), 0, 0);
  EXPECT_GT(at.prompt_tokens, o.effective_context);  // usage still counts the template
  EXPECT_NE(at.Text().find("48213"), std::string::npos) << at.Text();
  o.effective_context -= 1;
  Plan over = SimEngine(o).MakePlan(Api::kChat, Chat(prompt, 50), 0, 0);
  EXPECT_EQ(over.Text().find("48213"), std::string::npos) << over.Text();
}

TEST(SimEngine, ToolCallThenToolResult) {
  SimEngine e({});
  nlohmann::json tools = nlohmann::json::parse(R"([{"type":"function","function":{"name":"get_weather",
      "parameters":{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"}}}}}])");
  auto body = Chat("weather?", 100);
  body["tools"] = tools;
  Plan p = e.MakePlan(Api::kChat, body, 0, 0);
  EXPECT_EQ(p.finish_reason, "tool_calls");
  ASSERT_TRUE(p.tool_calls.is_array());
  EXPECT_EQ(p.tool_calls[0]["function"]["name"], "get_weather");
  auto args = nlohmann::json::parse(p.tool_calls[0]["function"]["arguments"].get<std::string>());
  EXPECT_EQ(args["days"], 1);
  body["messages"].push_back({{"role", "assistant"}, {"tool_calls", p.tool_calls}});
  body["messages"].push_back({{"role", "tool"}, {"tool_call_id", "x"}, {"content", "sunny, 21 C"}});
  Plan q = e.MakePlan(Api::kChat, body, 0, 0);
  EXPECT_EQ(q.finish_reason, "stop");
  EXPECT_NE(q.Text().find("sunny, 21 C"), std::string::npos);
}

TEST(SimEngine, DegenerateLoopsUntilMaxTokens) {
  SimOptions o;
  o.degenerate_rate = 1.0;
  Plan p = SimEngine(o).MakePlan(Api::kChat, Chat("hello", 200), 0, 0);
  EXPECT_TRUE(p.degenerate);
  EXPECT_EQ(p.tokens.size(), 200u);
  EXPECT_EQ(p.finish_reason, "length");
  // the tail repeats with a short period (3-6 pieces)
  bool periodic = false;
  for (std::size_t per = 3; per <= 6; ++per) {
    bool ok = true;
    for (std::size_t i = 150; i < 200; ++i) ok &= p.tokens[i] == p.tokens[i - per];
    periodic |= ok;
  }
  EXPECT_TRUE(periodic);
}

TEST(SimEngine, StreamPartsChunkingAndUsage) {
  SimOptions o;
  o.itl_ms = 10;
  o.ttft_ms = 100;
  o.tokens_per_chunk = 4;
  SimEngine e(o);
  auto body = Chat("x", 9);
  body["ignore_eos"] = true;
  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}, {"continuous_usage_stats", true}};
  Plan p = e.MakePlan(Api::kChat, body, 0, 0);
  auto parts = e.StreamParts(p);
  // first token alone at TTFT, then 4 + 4 tokens, then usage + [DONE]
  ASSERT_EQ(parts.size(), 4u);
  EXPECT_DOUBLE_EQ(parts[0].at_ms, 100);
  EXPECT_DOUBLE_EQ(parts[1].at_ms, 140);
  EXPECT_DOUBLE_EQ(parts[2].at_ms, 180);
  EXPECT_NE(parts[3].bytes.find("data: [DONE]"), std::string::npos);
  EXPECT_NE(parts[3].bytes.find("\"completion_tokens\":9"), std::string::npos);
}

TEST(SimEngine, TokenizeMatchesUsage) {
  SimEngine e({});
  auto body = Chat("one two three", 5);
  Plan p = e.MakePlan(Api::kChat, body, 0, 0);
  auto t = e.TokenizeBody({{"messages", body["messages"]}});
  EXPECT_EQ(t["count"].get<std::int64_t>(), p.prompt_tokens);
  EXPECT_EQ(t["max_model_len"], 32768);
  EXPECT_EQ(t["tokens"].size(), t["count"].get<std::size_t>());
}

TEST(SimEngine, StartupLogHasVllmLines) {
  SimOptions o;
  o.max_model_len = 524288;
  o.kv_cache_tokens = 729280;
  auto lines = SimEngine(o).StartupLog(42, "11-29 18:00:00", "http://127.0.0.1:1");
  std::string all;
  for (const auto& l : lines) all += l + "\n";
  EXPECT_NE(all.find("(EngineCore_DP0 pid=42) INFO 11-29 18:00:00 [gpu_worker.py:349] Available KV cache memory: 15.56 GiB"), std::string::npos);
  EXPECT_NE(all.find("GPU KV cache size: 729,280 tokens"), std::string::npos);
  // 729280 / 524288 = 1.39 (docs/seed.md's figure)
  EXPECT_NE(all.find("Maximum concurrency for 524,288 tokens per request: 1.39x"), std::string::npos);
}

TEST(SimEngine, RejectsBadOptions) {
  SimOptions o;
  o.fault_kinds = {"teapot"};
  o.fault_rate = 0.5;
  EXPECT_THROW(SimEngine{o}, Error);
}

}  // namespace
}  // namespace ppdeploy::sim
