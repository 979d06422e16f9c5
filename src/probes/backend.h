// The seam between the verification logic (degeneration, needle, quality probes) and an
// OpenAI-compatible server. The probes only see ChatBackend; the HTTP client (src/client) adapts
// to it, and tests use scripted fakes (tests/probes/fake_backend.h).
//
// A backend must be safe to call from several threads at once (RunMany calls Chat concurrently).
// Transport or HTTP failures are reported in the result (ok = false, error = one line); a backend
// throws only for programming errors.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace ppdeploy::probes {

/// One POST /v1/chat/completions (non-streaming semantics; a streaming client may assemble it).
struct ChatRequest {
  nlohmann::json messages = nlohmann::json::array();  ///< OpenAI messages [{role, content, ...}]
  std::int64_t max_tokens = 256;                      ///< output cap (vLLM `max_tokens`)
  std::optional<double> temperature;                  ///< unset = server default
  std::optional<double> top_p;                        ///< unset = server default
  std::optional<std::int64_t> seed;                   ///< per-request sampling seed (vLLM `seed`)
  nlohmann::json tools;                               ///< null = no tools; else the OpenAI `tools` array
  /// Extra body fields merged last, e.g. {"tool_choice": "auto"} or {"return_token_ids": true}
  /// (vLLM >= 0.10.2 returns choice.token_ids then).
  nlohmann::json extra = nlohmann::json::object();
  std::string tag;  ///< caller's label (prompt id, probe name); not sent
};

/// What came back. Counts are from the server's `usage`; -1 when absent.
struct ChatResult {
  bool ok = false;
  std::string error;          ///< one line when !ok (HTTP status + message, timeout, ...)
  std::string text;           ///< choices[0].message.content ("" when the answer is only tool calls)
  std::string finish_reason;  ///< "stop", "length", "tool_calls", "repetition_detected", ...
  std::int64_t prompt_tokens = -1;
  std::int64_t completion_tokens = -1;
  std::optional<std::vector<int>> token_ids;            ///< output token ids when the server returned them
  nlohmann::json tool_calls = nlohmann::json::array();  ///< choices[0].message.tool_calls (OpenAI shape)
  double ttft_ms = -1.0;                                ///< time to first token when streamed; -1 otherwise
  double e2e_ms = -1.0;                                 ///< request start to last byte
  /// The run was interrupted (Ctrl-C) before or during the request: no answer, and not a failure of the
  /// server either; the probes leave such requests out of their counts.
  bool cancelled = false;
};

/// Result of a generic POST (used for the Responses API, POST /v1/responses).
struct PostResult {
  bool ok = false;      ///< transport ok and HTTP 2xx
  int http_status = 0;  ///< 0 when no response
  std::string error;    ///< one line when !ok
  nlohmann::json body;  ///< parsed response body (null when not JSON)
  double e2e_ms = -1.0;
  bool cancelled = false;  ///< interrupted (see ChatResult::cancelled)
};

/// The server as the probes see it.
class ChatBackend {
 public:
  virtual ~ChatBackend() = default;
  /// POST /v1/chat/completions with `request` (model name filled in by the backend).
  virtual ChatResult Chat(const ChatRequest& request) = 0;
  /// Token ids of `text` as the server's tokenizer sees it (vLLM POST /tokenize with
  /// add_special_tokens = false); nullopt when the server has no /tokenize.
  virtual std::optional<std::vector<int>> Tokenize(const std::string& text) = 0;
  /// The served model's max_model_len (vLLM GET /v1/models `max_model_len`); nullopt when unknown.
  virtual std::optional<std::int64_t> MaxModelLen() = 0;
  /// POST `path` (e.g. "/v1/responses") with a JSON body; the backend adds "model" when absent.
  virtual PostResult Post(const std::string& path, const nlohmann::json& body) = 0;
};

/// Called once per finished request, in completion order, serialised (never concurrently).
using OnChatDone = std::function<void(std::size_t index, const ChatResult& result)>;

/// Runs `requests` on `backend` with at most `concurrency` (>= 1) in flight, on a pool of
/// std::threads. Returns the results in request order. An exception thrown by Chat becomes
/// ok = false with its message; an exception thrown by `on_done` stops new requests and is
/// rethrown after the in-flight ones finish.
std::vector<ChatResult> RunMany(ChatBackend& backend, const std::vector<ChatRequest>& requests, int concurrency,
                                const OnChatDone& on_done = {});

/// The message text with reasoning removed: drops a leading "<think>...</think>" block (and
/// everything before a lone "</think>"), then trims whitespace. Checks grade this text.
std::string AnswerText(const std::string& text);

}  // namespace ppdeploy::probes
