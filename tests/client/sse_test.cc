// SSE framing and OpenAI stream interpretation. Expected values come from the WHATWG HTML event-stream
// rules (line endings, comments, multi-line data) and the chunk shapes vLLM emits (serving_chat.py).
#include "client/sse.h"

#include <gtest/gtest.h>

#include "client/openai_client.h"
#include "client/openai_stream.h"

namespace ppdeploy::client {
namespace {

TEST(SseParser, SplitsEventsAcrossArbitraryPieces) {
  std::string stream =
      "data: {\"a\":1}\n\n: comment\ndata: x\r\ndata: y\r\n\r\nevent: response.created\ndata: z\r\rdata: [DONE]\n\n";
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
  ASSERT_TRUE(acc.OnEvent(
      Data(
          R"({"choices":[{"index":0,"delta":{"role":"assistant","content":""}}],"usage":{"prompt_tokens":7,"completion_tokens":0}})"),
      50));
  ASSERT_TRUE(acc.OnEvent(chunk("a", 1), 100));
  ASSERT_TRUE(acc.OnEvent(chunk(" b c d e", 5), 140));
  ASSERT_TRUE(acc.OnEvent(Data(R"({"choices":[{"index":0,"delta":{},"finish_reason":"length"}]})"), 140));
  ASSERT_TRUE(
      acc.OnEvent(Data(R"({"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":5,"total_tokens":12}})"), 141));
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
  EXPECT_TRUE(r.itl_exact);
  // Per chunk (vLLM's ITL): one gap of 40 ms. TPOT ends at the last token chunk (140), as vLLM's does;
  // E2EL at the last byte (141).
  ASSERT_EQ(r.chunk_itl_ms.size(), 1u);
  EXPECT_DOUBLE_EQ(r.chunk_itl_ms[0], 40);
  EXPECT_EQ(r.chunk_tokens_max, 4);
  EXPECT_DOUBLE_EQ(r.last_token_ms, 140);
  EXPECT_DOUBLE_EQ(r.tpot_ms, (140.0 - 100.0) / 4);
  EXPECT_DOUBLE_EQ(r.e2el_ms, 141);
}

TEST(StreamAccumulator, BundledChunksWithoutContinuousUsageAreApproximateAndSaySo) {
  // 1 + 2 x 4 tokens in 3 chunks at 100, 140, 180 ms, final usage 9: the per-token split is unknown, so each
  // 40 ms gap stands for (9 - 1) / 2 = 4 tokens -> 10 ms values, labelled approximate.
  RequestResult r;
  StreamAccumulator acc(r);
  ASSERT_TRUE(acc.OnEvent(Data(R"({"choices":[{"delta":{"content":"a"}}]})"), 100));
  ASSERT_TRUE(acc.OnEvent(Data(R"({"choices":[{"delta":{"content":" b c d e"}}]})"), 140));
  ASSERT_TRUE(acc.OnEvent(Data(R"({"choices":[{"delta":{"content":" f g h i"},"finish_reason":"length"}]})"), 180));
  ASSERT_TRUE(acc.OnEvent(Data(R"({"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":9}})"), 181));
  acc.Finish(181, true);
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.output_tokens, 9);
  EXPECT_FALSE(r.itl_exact);
  ASSERT_EQ(r.itl_ms.size(), 2u);
  EXPECT_DOUBLE_EQ(r.itl_ms[0], 10);
  EXPECT_EQ(r.chunk_itl_ms, (std::vector<double>{40, 40}));
  EXPECT_DOUBLE_EQ(r.tpot_ms, (180.0 - 100.0) / 8);

  // One token per chunk confirmed by the final usage: exact without per-chunk usage.
  RequestResult s;
  StreamAccumulator acc_s(s);
  ASSERT_TRUE(acc_s.OnEvent(Data(R"({"choices":[{"delta":{"content":"a"}}]})"), 10));
  ASSERT_TRUE(acc_s.OnEvent(Data(R"({"choices":[{"delta":{"content":" b"},"finish_reason":"stop"}]})"), 20));
  ASSERT_TRUE(acc_s.OnEvent(Data(R"({"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2}})"), 21));
  acc_s.Finish(21, true);
  EXPECT_TRUE(s.itl_exact);
  EXPECT_EQ(s.itl_ms, (std::vector<double>{10}));
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
  EXPECT_FALSE(r.itl_exact);  // nothing from the server confirms one token per chunk
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

// Issue 15: a legacy {"object":"error",...} chunk after two content chunks was counted as a success with 2
// tokens. vLLM's three in-stream error shapes (serving_engine.py create_streaming_error_response across
// versions) all end the request as server_error.
TEST(StreamAccumulator, VllmsThreeErrorShapesFailTheRequest) {
  const std::vector<std::string> shapes = {
      // 0.10+: ErrorResponse(error=ErrorInfo(...))
      R"({"error":{"message":"boom","type":"InternalServerError","param":null,"code":500}})",
      // <= 0.9: {"error": flat ErrorResponse.model_dump()}
      R"({"error":{"object":"error","message":"boom","type":"InternalServerError","param":null,"code":500}})",
      // the flat legacy ErrorResponse as a chunk
      R"({"object":"error","message":"boom","type":"InternalServerError","param":null,"code":500})",
  };
  for (const auto& shape : shapes) {
    RequestResult r;
    StreamAccumulator acc(r);
    ASSERT_TRUE(acc.OnEvent(Data(R"({"choices":[{"delta":{"content":"a"}}]})"), 1));
    ASSERT_TRUE(acc.OnEvent(Data(R"({"choices":[{"delta":{"content":" b"}}]})"), 2));
    EXPECT_FALSE(acc.OnEvent(Data(shape), 3)) << shape;
    acc.Finish(4, false);
    EXPECT_EQ(r.error_kind, RequestErrorKind::kServerError) << shape;
    EXPECT_FALSE(r.ok());
    EXPECT_EQ(r.error_message, "in-stream error: InternalServerError (code 500): boom") << shape;
  }
  // finish_reason "error" (vLLM FinishReason.ERROR) is not a success either.
  RequestResult f;
  StreamAccumulator acc_f(f);
  EXPECT_FALSE(acc_f.OnEvent(Data(R"({"choices":[{"delta":{"content":"a"},"finish_reason":"error"}]})"), 1));
  EXPECT_EQ(f.error_kind, RequestErrorKind::kServerError);
  // Not errors: "error": null, and an object that is a normal chunk.
  EXPECT_FALSE(ErrorInChunk(nlohmann::json::parse(R"({"error":null,"choices":[]})")));
  EXPECT_FALSE(ErrorInChunk(nlohmann::json::parse(R"({"object":"chat.completion.chunk"})")));
  // Control bytes in a message are escaped, never echoed raw.
  auto msg = ErrorInChunk(nlohmann::json::parse(R"({"object":"error","message":"a\u0000b\nc","type":"X"})"));
  ASSERT_TRUE(msg);
  EXPECT_EQ(*msg, "X: a\\x00b\\x0ac");
}

TEST(StreamAccumulator, AssemblesToolCallDeltas) {
  RequestResult r;
  StreamAccumulator acc(r);
  ASSERT_TRUE(acc.OnEvent(
      Data(
          R"({"choices":[{"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"ci"}}]}}]})"),
      5));
  ASSERT_TRUE(acc.OnEvent(
      Data(
          R"({"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"ty\":\"x\"}"}}]},"finish_reason":"tool_calls"}]})"),
      6));
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
  // Per-chunk usage costs the server CPU (issue 17): off unless asked for.
  EXPECT_FALSE(b["stream_options"].contains("continuous_usage_stats"));
  q.continuous_usage_stats = true;
  EXPECT_EQ(BuildRequestBody(q)["stream_options"]["continuous_usage_stats"], true);
  EXPECT_EQ(b["ignore_eos"], true);
  EXPECT_EQ(b["top_k"], 3);
  EXPECT_FALSE(b.contains("temperature"));
}

}  // namespace
}  // namespace ppdeploy::client
