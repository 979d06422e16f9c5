// The record of one benchmark/probe request, as measured by the client (src/client) and summarised by
// src/stats. Pure data. Times in milliseconds, measured from the request's intended send time (the moment
// the load generator decided to send it), so that client-side queueing shows up instead of being hidden.
//
// Definitions (vLLM vllm/benchmarks/serve.py, with the per-chunk-token fix of vllm#27485 / aiperf#1279):
//   intended send time = closed loop: when a slot freed and the request was started; open loop (a request
//           rate): the scheduled arrival, so client-side lateness and queueing under a concurrency cap count
//   TTFT  = first chunk that carries >= 1 output token - intended send time
//   ITL per token = gap between successive token-carrying chunks; a chunk carrying n tokens (by the server's
//           continuous usage delta) counts as n tokens and its gap is split evenly into n ITL values
//   ITL per chunk = the raw gap between successive token-carrying chunks (vLLM bench's ITL: one chunk is
//           assumed to be one token)
//   TPOT  = (last token-carrying chunk - TTFT) / (output_tokens - 1), only when output_tokens >= 2
//           (vLLM bench's formula and end point)
//   E2EL  = last byte of the response - intended send time (vLLM bench ends at the last token chunk, which
//           leaves out the final usage chunk and [DONE]; that end point is `last_token_ms`)
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ppdeploy {

/// What went wrong with a request (kNone when it succeeded).
enum class RequestErrorKind {
  kNone,
  kHttp,          ///< the server answered with a non-2xx status (http_status, error_body)
  kConnect,       ///< could not connect / resolve
  kDisconnect,    ///< the connection dropped before the response was complete (no [DONE] / no finish)
  kTimeout,       ///< the request ran past its timeout
  kMalformedSse,  ///< the event stream or a chunk's JSON could not be parsed
  kServerError,   ///< the stream carried an {"error": ...} object (vLLM in-stream errors)
  kBadUrl,        ///< the URL was malformed or unsupported
  kCancelled,     ///< the run was interrupted while the request was in flight
  kOther,         ///< any other transport error (message says which)
};

/// Stable lower-case name of a kind ("http", "disconnect", ...).
const char* ErrorKindName(RequestErrorKind kind);

/// Where a token count came from.
enum class TokenCountSource {
  kUnknown,
  kUsage,            ///< the server's final `usage` object (stream_options.include_usage or non-streaming)
  kContinuousUsage,  ///< the last per-chunk usage (vLLM stream_options.continuous_usage_stats)
  kClientChunks,     ///< FALLBACK: one token per content-carrying chunk (wrong when a chunk carries more)
  kClientEstimate,   ///< FALLBACK: characters / 4 (input side only)
  kTokenize,         ///< the server's POST /tokenize count of the prompt (input side, when usage is missing)
};
const char* TokenCountSourceName(TokenCountSource source);

struct RequestResult {
  std::int64_t index = 0;  ///< caller's tag (position in the run)
  bool warmup = false;
  RequestErrorKind error_kind = RequestErrorKind::kNone;
  int http_status = 0;        ///< last HTTP status seen (0 when none)
  std::string error_message;  ///< one line; for kHttp the body (cut to 4 KiB)

  double send_offset_ms = 0;    ///< intended send time relative to the start of the run
  double send_lateness_ms = 0;  ///< actual start of the transfer - intended send time (open loop; 0 closed loop)
  double connect_ms = 0;        ///< TCP connect time of this transfer (0 when a kept-alive connection was reused)
  double ttft_ms = -1;          ///< -1 when no token arrived
  double last_token_ms = -1;    ///< arrival of the last token-carrying chunk (-1 when none)
  double e2el_ms = -1;
  double tpot_ms = -1;               ///< -1 when output_tokens < 2
  std::vector<double> itl_ms;        ///< per-token inter-token latencies (output_tokens - 1 values when `itl_exact`)
  std::vector<double> chunk_itl_ms;  ///< per-chunk gaps (chunks - 1 values)
  /// True when the tokens of every chunk are known (continuous usage, or one token per chunk confirmed by the
  /// final usage). False: the chunks carried more tokens than chunks and the server sent no per-chunk usage;
  /// then itl_ms holds one value per chunk gap, gap / (average tokens per chunk), an approximation.
  bool itl_exact = true;
  double failed_at_ms = -1;  ///< failed requests: intended send time -> the failure was detected
  double stalled_ms = -1;    ///< failed requests: the last byte received (or the send, when none) -> the failure

  std::int64_t output_tokens = 0;
  TokenCountSource output_tokens_source = TokenCountSource::kUnknown;
  std::int64_t input_tokens = 0;
  TokenCountSource input_tokens_source = TokenCountSource::kUnknown;
  std::int64_t requested_input_tokens = -1;   ///< what the load generator aimed for (-1: no target)
  std::int64_t requested_output_tokens = -1;  ///< max_tokens asked for (-1: none)
  std::int64_t chunks = 0;                    ///< SSE data events that carried tokens
  std::int64_t chunk_tokens_max = 0;          ///< most tokens seen in one chunk (by continuous usage; 1 without it)

  std::string finish_reason;
  std::string text;           ///< generated text (content or text deltas, concatenated)
  nlohmann::json tool_calls;  ///< assembled tool calls (array) or null
  nlohmann::json response;    ///< non-streaming: the response body; streaming: null

  bool ok() const { return error_kind == RequestErrorKind::kNone; }
  /// Grouping key for error counts: "http_429", "disconnect", "timeout", ...
  std::string ErrorKey() const;
  /// One JSON object per request (the JSONL line of `ppdeploy bench`).
  nlohmann::json ToJson() const;
};

}  // namespace ppdeploy
