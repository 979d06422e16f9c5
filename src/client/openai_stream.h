// Interpretation of OpenAI-compatible streaming chunks (chat.completion.chunk / text_completion) into a
// RequestResult. Pure: the caller passes each SSE event with its arrival time in ms since the intended
// send time. Source of the chunk shapes: vLLM vllm/entrypoints/openai/protocol.py (ChatCompletionStreamResponse,
// CompletionStreamResponse, UsageInfo, ErrorResponse) and the OpenAI API reference.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "client/sse.h"
#include "stats/request_result.h"

namespace ppdeploy::client {

/// The error a JSON object (an SSE chunk, or a non-streaming body) reports, or nullopt when it is not an
/// error. vLLM has sent three shapes over its versions, all recognised:
///   {"error": {"message": .., "type": .., "param": .., "code": ..}}   (ErrorResponse(error=ErrorInfo), 0.10+)
///   {"error": {"object": "error", "message": .., "type": .., "code": ..}}  (create_streaming_error_response
///                                                                    wrapping the flat ErrorResponse, <= 0.9)
///   {"object": "error", "message": .., "type": .., "param": .., "code": ..}  (the flat legacy ErrorResponse)
/// The text is one line: "<type> (code <code>): <message>", cut at 4,096 characters, non-printable bytes escaped
/// (core/escape.h).
std::optional<std::string> ErrorInChunk(const nlohmann::json& chunk);

class StreamAccumulator {
 public:
  explicit StreamAccumulator(RequestResult& result) : r_(result) {}

  /// Consumes one event that arrived at `t_ms`. Returns false when the stream must be abandoned
  /// (malformed JSON or an in-stream error); the result's error fields say why.
  bool OnEvent(const SseEvent& event, double t_ms);

  /// Completes the result at the end of the transfer (`t_ms` = last byte). `transport_ok` is false when
  /// the transport already recorded an error. Sets token counts, ITL (both definitions), TPOT, E2EL and the
  /// disconnect error when the stream ended without [DONE] or a finish_reason.
  void Finish(double t_ms, bool transport_ok);

  bool done() const { return done_; }

 private:
  RequestResult& r_;
  bool done_ = false;
  bool have_first_ = false;
  bool all_counts_known_ = true;  // every token chunk carried a continuous usage delta
  double last_token_ms_ = 0;
  std::int64_t counted_tokens_ = 0;
  std::int64_t continuous_completion_ = -1;
  std::int64_t continuous_prompt_ = -1;
  std::int64_t final_completion_ = -1;
  std::int64_t final_prompt_ = -1;
  std::vector<std::int64_t> chunk_tokens_;  // tokens of each token-carrying chunk (1 when not known)
};

}  // namespace ppdeploy::client
