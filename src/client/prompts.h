// Synthetic prompts of an exact token length, measured with the server's own tokenizer (vLLM POST /tokenize,
// vllm/entrypoints/openai/api_server.py), so that client and server never disagree on the input length
// (vllm#10847, InferenceX#937: client-side tokenizers drifted by up to 5x). When the server has no /tokenize,
// the prompt is sized at 4 characters per token and labelled as such.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "client/http.h"
#include "client/openai_client.h"

namespace ppdeploy::client {

struct PromptSet {
  std::vector<std::string> prompts;       ///< distinct texts (user message content for chat, prompt for completions)
  std::vector<std::int64_t> token_counts; ///< the server's count per prompt (-1 when unknown)
  std::string method;                     ///< "tokenize" or "chars_per_token_fallback(4)"
};

/// Builds `count` distinct prompts of `target_tokens` tokens each (for chat: the count of the whole templated
/// request, as /tokenize with "messages" reports it). Throws Error when target_tokens < 1.
PromptSet BuildPrompts(HttpClient& http, const std::string& base_url, Endpoint endpoint, const std::string& model,
                       std::int64_t target_tokens, int count, std::uint64_t seed);

}  // namespace ppdeploy::client
