// SSE framing and OpenAI stream interpretation. Expected values come from the WHATWG HTML event-stream
// rules (line endings, comments, multi-line data) and the chunk shapes vLLM emits (serving_chat.py).
#include <gtest/gtest.h>

#include "client/openai_client.h"
#include "client/openai_stream.h"
#include "client/sse.h"

namespace ppdeploy::client {
namespace {

TEST(SseParser, SplitsEventsAcrossArbitraryPieces) {
  std::string stream = "data: {\"a\":1}\n\n: comment\ndata: x\r\ndata: y\r\n\r\nevent: response.created\ndata: z\r\rdata: [DONE]\n\n";
  // Feed one byte at a time: the result must equal a single Feed (WHATWG: framing is independent of TCP pieces).
  SseParser p;
  std::vector<SseEvent> events;
  for (char c : stream) ASSERT_TRUE(p.Feed(std::string_view(&c, 1), events));
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[0].data, "{\"a\":1}");
  EXPECT_EQ(events[1].data, "x\ny");  // two data lines joined with \n
  EXPECT_EQ(events[2].event, "response.created");
  EXPECT_EQ(events[2].data, "z");  // "\r" alone ends a line
  EXPECT_EQ(events[3].data, "[DONE]");
  EXPECT_FALSE(p.HasPartial());
}

TEST(SseParser, RejectsOverlongLinesAndNul) {
  SseParser p(16);
  std::vector<SseEvent> events;
  EXPECT_FALSE(p.Feed("data: 0123456789012345678\n", events));
  EXPECT_FALSE(p.error().empty());
  SseParser q;
  EXPECT_FALSE(q.Feed(std::string("data: a\0b\n\n", 11), events));
}

TEST(SseParser, ReportsCutStream) {
  SseParser p;
  std::vector<SseEvent> events;
  EXPECT_TRUE(p.Feed("data: {\"partial\"", events));
  EXPECT_TRUE(events.empty());
  EXPECT_TRUE(p.HasPartial());
}

SseEvent Data(const std::string& d) { return SseEvent{"", d, ""}; }

TEST(StreamAccumulator, SplitsBundledChunkGapEvenly) {
  // A chunk carrying 4 tokens by the continuous usage delta after a 40 ms gap -> 4 ITL values of 10 ms
  // (the vllm#27485 fix); TPOT = (E2EL - TTFT)/(n - 1) = (140 - 100)/4 = 10 ms.
  RequestResult r;
  StreamAccumulator acc(r);
  auto chunk = [](const std::string& text, int completion) {
    return Data(R"({"choices":[{"index":0,"delta":{"content":")" + text +
                R"("},"finish_reason":null}],"usage":{"prompt_tokens":7,"completion_tokens":)" +
                std::to_string(completion) + "}}");
  };
  ASSERT_TRUE(acc.OnEvent(Data(R"({"choices":[{"index":0,"delta":{"role":"assistant","content":""}}],"usage":{"prompt_tokens":7,"completion_tokens":0}})"), 50));
  ASSERT_TRUE(acc.OnEvent(chunk("a", 1), 100));
  ASSERT_TRUE(acc.OnEvent(chunk(" b c d e", 5), 140));
  ASSERT_TRUE(acc.OnEvent(Data(R"({"choices":[{"index":0,"delta":{},"finish_reason":"length"}]})"), 140));
  ASSERT_TRUE(acc.OnEvent(Data(R"({"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":5,"total_tokens":12}})"), 141));
  ASSERT_TRUE(acc.OnEvent(Data("[DONE]"), 141));
  acc.Finish(141, true);
  EXPECT_TRUE(r.ok());
  EXPECT_DOUBLE_EQ(r.ttft_ms, 100);
  ASSERT_EQ(r.itl_ms.size(), 4u);
  for (double v : r.itl_ms) EXPECT_DOUBLE_EQ(v, 10);
  EXPECT_EQ(r.output_tokens, 5);
  EXPECT_EQ(r.output_tokens_source, TokenCountSource::kUsage);
  EXPECT_EQ(r.input_tokens, 7);
  EXPECT_EQ(r.text, "a b c d e");
  EXPECT_EQ(r.finish_reason, "length");
  EXPECT_DOUBLE_EQ(r.tpot_ms, (141.0 - 100.0) / 4);
}

TEST(StreamAccumulator, FallbackCountsChunksAndLabelsIt) {
  RequestResult r;
  StreamAccumulator acc(r);
  ASSERT_TRUE(acc.OnEvent(Data(R"({"choices":[{"text":"x","finish_reason":null}]})"), 10));
  ASSERT_TRUE(acc.OnEvent(Data(R"({"choices":[{"text":"y","finish_reason":"stop"}]})"), 20));
  acc.Finish(21, true);
  EXPECT_TRUE(r.ok());  // finish_reason seen, [DONE] missing is tolerated
  EXPECT_EQ(r.output_tokens, 2);
  EXPECT_EQ(r.output_tokens_source, TokenCountSource::kClientChunks);
}

TEST(StreamAccumulator, MalformedJsonAndInStreamErrorAndCut) {
  RequestResult a;
  StreamAccumulator acc_a(a);
  EXPECT_FALSE(acc_a.OnEvent(Data("{not json"), 1));
  EXPECT_EQ(a.error_kind, RequestErrorKind::kMalformedSse);

  RequestResult b;
  StreamAccumulator acc_b(b);
  EXPECT_FALSE(acc_b.OnEvent(Data(R"({"error":{"message":"boom","code":500}})"), 1));
  EXPECT_EQ(b.error_kind, RequestErrorKind::kServerError);

  RequestResult c;
  StreamAccumulator acc_c(c);
  ASSERT_TRUE(acc_c.OnEvent(Data(R"({"choices":[{"delta":{"content":"x"}}]})"), 1));
  acc_c.Finish(2, true);
  EXPECT_EQ(c.error_kind, RequestErrorKind::kDisconnect);  // no finish_reason, no [DONE]
}

TEST(StreamAccumulator, AssemblesToolCallDeltas) {
  RequestResult r;
  StreamAccumulator acc(r);
  ASSERT_TRUE(acc.OnEvent(Data(R"({"choices":[{"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"ci"}}]}}]})"), 5));
  ASSERT_TRUE(acc.OnEvent(Data(R"({"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"ty\":\"x\"}"}}]},"finish_reason":"tool_calls"}]})"), 6));
  acc.Finish(6, true);
  ASSERT_TRUE(r.tool_calls.is_array());
  EXPECT_EQ(r.tool_calls[0]["function"]["name"], "get_weather");
  EXPECT_EQ(r.tool_calls[0]["function"]["arguments"], "{\"city\":\"x\"}");
}

TEST(BuildRequestBody, StreamOptionsAndExtras) {
  ChatRequest q;
  q.model = "m";
  q.messages = nlohmann::json::array({{{"role", "user"}, {"content", "hi"}}});
  q.max_tokens = 5;
  q.min_tokens = 5;
  q.ignore_eos = true;
  q.extra_body = {{"top_k", 3}};
  auto b = BuildRequestBody(q);
  EXPECT_EQ(b["stream_options"]["include_usage"], true);
  EXPECT_EQ(b["stream_options"]["continuous_usage_stats"], true);
  EXPECT_EQ(b["ignore_eos"], true);
  EXPECT_EQ(b["top_k"], 3);
  EXPECT_FALSE(b.contains("temperature"));
}

}  // namespace
}  // namespace ppdeploy::client
