// Issue 24: an invalid UTF-8 byte in a stream chunk is named (byte and offset) instead of "chunk is not a
// JSON object". JSON text is UTF-8 (RFC 8259 section 8.1), and so is an event stream (WHATWG HTML,
// server-sent events: the stream is decoded as UTF-8).
#include <gtest/gtest.h>

#include "client/openai_client.h"
#include "client/openai_stream.h"
#include "client/sse.h"

namespace ppdeploy::client {
namespace {

TEST(StreamUtf8Test, AnInvalidByteIsNamedWithItsOffset) {
  RequestResult r;
  StreamAccumulator acc(r);
  const std::string data = std::string(R"({"choices":[{"delta":{"content":"a)") + "\xff" + R"("}}]})";
  EXPECT_FALSE(acc.OnEvent(SseEvent{"", data, ""}, 10));
  EXPECT_EQ(r.error_kind, RequestErrorKind::kMalformedSse);
  EXPECT_EQ(r.error_message, "chunk is not valid UTF-8: invalid byte 0xff at byte 34 of the data");
  EXPECT_EQ(r.error_message.find('\xff'), std::string::npos);
}

TEST(StreamUtf8Test, ValidUtf8AndNonObjectsKeepTheirMessages) {
  RequestResult r;
  StreamAccumulator acc(r);
  EXPECT_TRUE(acc.OnEvent(SseEvent{"", R"({"choices":[{"delta":{"content":"caf\u00e9 \u00e9"}}]})", ""}, 10));
  RequestResult bad;
  StreamAccumulator b(bad);
  EXPECT_FALSE(b.OnEvent(SseEvent{"", "[1, 2]", ""}, 10));
  EXPECT_EQ(bad.error_message, "chunk is not a JSON object: [1, 2]");
}

}  // namespace
}  // namespace ppdeploy::client
