#include "stats/request_result.h"

namespace ppdeploy {

const char* ErrorKindName(RequestErrorKind kind) {
  switch (kind) {
    case RequestErrorKind::kNone:
      return "none";
    case RequestErrorKind::kHttp:
      return "http";
    case RequestErrorKind::kConnect:
      return "connect";
    case RequestErrorKind::kDisconnect:
      return "disconnect";
    case RequestErrorKind::kTimeout:
      return "timeout";
    case RequestErrorKind::kMalformedSse:
      return "malformed_sse";
    case RequestErrorKind::kServerError:
      return "server_error";
    case RequestErrorKind::kBadUrl:
      return "bad_url";
    case RequestErrorKind::kCancelled:
      return "cancelled";
    case RequestErrorKind::kOther:
      return "other";
  }
  return "other";
}

const char* TokenCountSourceName(TokenCountSource source) {
  switch (source) {
    case TokenCountSource::kUnknown:
      return "unknown";
    case TokenCountSource::kUsage:
      return "usage";
    case TokenCountSource::kContinuousUsage:
      return "continuous_usage";
    case TokenCountSource::kClientChunks:
      return "client_chunks_fallback";
    case TokenCountSource::kClientEstimate:
      return "client_estimate_fallback";
    case TokenCountSource::kTokenize:
      return "tokenize";
  }
  return "unknown";
}

std::string RequestResult::ErrorKey() const {
  if (error_kind == RequestErrorKind::kHttp) return "http_" + std::to_string(http_status);
  return ErrorKindName(error_kind);
}

nlohmann::json RequestResult::ToJson() const {
  nlohmann::json j = {
      {"index", index},
      {"warmup", warmup},
      {"ok", ok()},
      {"send_offset_ms", send_offset_ms},
      {"send_lateness_ms", send_lateness_ms},
      {"connect_ms", connect_ms},
      {"ttft_ms", ttft_ms},
      {"tpot_ms", tpot_ms},
      {"last_token_ms", last_token_ms},
      {"e2el_ms", e2el_ms},
      {"itl_ms", itl_ms},
      {"chunk_itl_ms", chunk_itl_ms},
      {"itl_exact", itl_exact},
      {"output_tokens", output_tokens},
      {"output_tokens_source", TokenCountSourceName(output_tokens_source)},
      {"input_tokens", input_tokens},
      {"input_tokens_source", TokenCountSourceName(input_tokens_source)},
      {"requested_input_tokens", requested_input_tokens},
      {"requested_output_tokens", requested_output_tokens},
      {"chunks", chunks},
      {"finish_reason", finish_reason},
      {"http_status", http_status},
  };
  if (!ok()) {
    j["error_kind"] = ErrorKindName(error_kind);
    j["error"] = error_message;
    j["failed_at_ms"] = failed_at_ms;
    j["stalled_ms"] = stalled_ms;
  }
  j["text"] = text;
  if (!tool_calls.is_null()) j["tool_calls"] = tool_calls;
  return j;
}

}  // namespace ppdeploy
