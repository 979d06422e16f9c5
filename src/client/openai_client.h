// Streaming OpenAI-compatible client over libcurl's multi interface: one event-loop thread (the caller's)
// drives many concurrent streams, timestamps every chunk as it arrives, and turns each request into a
// RequestResult (src/stats/request_result.h has the metric definitions).
//
// Token counts come from the server: the request sets stream_options.include_usage and, when asked,
// vLLM's stream_options.continuous_usage_stats (vllm/entrypoints/openai/protocol.py StreamOptions), so a
// chunk carrying n tokens is counted as n tokens. Per-chunk usage costs the server CPU (26-33% more at 256
// tokens, issue 17), so it is off unless the caller turns it on (`ppdeploy bench` does when the server
// bundles tokens). Without usage the count falls back to one token per content chunk, labelled
// TokenCountSource::kClientChunks.
//
// Load: closed loop (a fixed number in flight) or open loop (each request carries its scheduled arrival,
// ChatRequest::scheduled_ms; an optional cap on requests in flight).
//
// Reuse: probes build a ChatRequest, call Send() (one request) or RunConcurrent() (many), and read
// RequestResult::text / finish_reason / tool_calls.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "stats/request_result.h"

namespace ppdeploy::client {

enum class Endpoint { kChat, kCompletions };
/// "chat" / "completions".
const char* EndpointName(Endpoint e);
/// "/v1/chat/completions" / "/v1/completions".
const char* EndpointPath(Endpoint e);

/// One request. Unset optionals are not sent (the server's defaults apply).
struct ChatRequest {
  Endpoint endpoint = Endpoint::kChat;
  std::string model;
  nlohmann::json messages = nlohmann::json::array();  ///< chat: [{"role":..,"content":..}, ...]
  std::string prompt;                                 ///< completions
  std::optional<std::int64_t> max_tokens;
  std::optional<std::int64_t> min_tokens;  ///< vLLM extension
  bool ignore_eos = false;                 ///< vLLM extension (sent only when true)
  std::optional<double> temperature;
  std::optional<double> top_p;
  std::optional<std::int64_t> seed;
  nlohmann::json extra_body = nlohmann::json::object();  ///< merged into the body last (overrides)
  bool stream = true;
  bool include_usage = true;                 ///< stream_options.include_usage
  bool continuous_usage_stats = false;       ///< stream_options.continuous_usage_stats (vLLM only; costs server CPU)
  double timeout_s = 600;                    ///< whole-request timeout
  std::int64_t tag = 0;                      ///< copied to RequestResult::index
  bool warmup = false;                       ///< copied to RequestResult::warmup
  std::int64_t requested_input_tokens = -1;  ///< copied to RequestResult (for achieved-vs-requested checks)
  /// Open loop: the intended send time in ms after the start of the run (the request is not started
  /// before it, and its times are measured from it). < 0: closed loop, start as soon as a slot is free.
  double scheduled_ms = -1;
};

/// The JSON body of a request (pure; exposed for tests).
nlohmann::json BuildRequestBody(const ChatRequest& request);

struct ClientOptions {
  std::string base_url;  ///< "http://127.0.0.1:8000" (with or without a trailing "/"; a "/v1" suffix is dropped)
  std::string api_key;   ///< sent as a Bearer token when not empty
  double connect_timeout_s = 10;
};

/// Summary of a Run / RunConcurrent call.
struct RunSummary {
  std::int64_t started = 0;
  std::int64_t finished = 0;   ///< results delivered to the callback (includes errors)
  std::int64_t abandoned = 0;  ///< in flight when `stop` was raised or the hard deadline passed (kCancelled)
  double wall_ms = 0;          ///< from the start of the run to the last result
  double first_send_ms = -1;   ///< start of the first transfer, after the start of the run (-1: none)
  std::int64_t peak_in_flight = 0;
};

/// How a Run loads the server.
struct RunLimits {
  int max_in_flight = 1;        ///< closed loop: the concurrency; open loop: the cap (0 = no cap)
  double deadline_ms = 0;       ///< > 0: start nothing intended after this (ms after the start of the run)
  double hard_deadline_ms = 0;  ///< > 0: at this time, cancel what is still in flight (kCancelled)
  /// A second stop flag besides Run's `stop` (e.g. the caller's own abort, raised from on_result): when either
  /// becomes true, nothing new starts and the in-flight requests are cancelled.
  const std::atomic<bool>* abort = nullptr;
};

class OpenAiClient {
 public:
  explicit OpenAiClient(ClientOptions options);
  /// Default options for `base_url`.
  explicit OpenAiClient(const std::string& base_url) : OpenAiClient(ClientOptions{base_url, "", 10}) {}

  /// Sends one request and waits for it. Never throws for HTTP/transport problems (see error_kind).
  RequestResult Send(const ChatRequest& request);

  /// Gives the next request, or nullopt when there are no more.
  using NextRequest = std::function<std::optional<ChatRequest>()>;
  /// Receives each finished request, on the calling thread, as soon as it finishes.
  using OnResult = std::function<void(RequestResult&&)>;

  /// Starts the requests `next` gives, in order, each when its ChatRequest::scheduled_ms has come (at once
  /// when < 0) and fewer than `limits.max_in_flight` are in flight, until `next` runs dry or the deadline
  /// passes; then waits for the rest. `next` is called once per request, when the previous one has started
  /// (so a source of unbounded length costs constant memory). When `stop` becomes true, no new request
  /// starts and the in-flight ones are aborted and delivered with kCancelled.
  RunSummary Run(const NextRequest& next, const RunLimits& limits, const OnResult& on_result,
                 const std::atomic<bool>* stop = nullptr);
  /// Closed loop: keeps up to `concurrency` requests in flight. `deadline_ms` (> 0) stops starting new
  /// requests that long after the start of the run.
  RunSummary RunConcurrent(const NextRequest& next, int concurrency, const OnResult& on_result,
                           const std::atomic<bool>* stop = nullptr, double deadline_ms = 0);
  /// Convenience: runs a fixed list.
  RunSummary RunConcurrent(const std::vector<ChatRequest>& requests, int concurrency, const OnResult& on_result,
                           const std::atomic<bool>* stop = nullptr);

  const ClientOptions& options() const { return options_; }

 private:
  ClientOptions options_;
  /// The curl multi handle, kept across calls so that kept-alive connections (e.g. opened by a warm-up run)
  /// are reused. One OpenAiClient runs one RunConcurrent at a time (not thread-safe).
  std::shared_ptr<void> multi_;
  int max_connections_ = 0;
};

}  // namespace ppdeploy::client
