// Synthetic prompts of an exact token length, measured with the server's own tokenizer (vLLM POST /tokenize,
// vllm/entrypoints/openai/api_server.py), so that client and server never disagree on the input length
// (vllm#10847, InferenceX#937: client-side tokenizers drifted by up to 5x).
//
// Every request gets its own prompt, generated on the fly from (seed, request index) in constant memory:
// [shared prefix: --shared-prefix-tokens words, the same for every request] [4 words spelling the request
// index in base |vocabulary|, lowest digit first] [seeded random words]. So no two requests share their
// first (template + shared + 4) tokens and a server's prefix cache can only reuse what the shared prefix asks
// for (a fixed pool of 32 reused prompts flattered TTFT on vLLM, where prefix caching is on by default).
//
// Exactness comes from calibration, not from a client tokenizer: the vocabulary is reduced to words the
// server tokenizes as one token each after a space (checked with /tokenize), the template's own tokens are
// measured, and then a prompt of k words has template + k tokens. A sample of generated prompts is checked
// with /tokenize and the method says how many matched. Without /tokenize the count assumes one token per
// word and no template, labelled as a fallback; the server's usage then reports what was really sent.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "client/http.h"
#include "client/openai_client.h"

namespace ppdeploy::client {

/// How request lengths vary around their mean (--input-len-dist / --output-len-dist).
struct LengthDist {
  enum class Kind { kFixed, kUniform, kNormal };
  Kind kind = Kind::kFixed;
  double param = 0;  ///< uniform: range ratio r (U[len (1 - r), len (1 + r)], vLLM --random-range-ratio);
                     ///< normal: standard deviation in tokens (LLMPerf --stddev-*-tokens)
  /// "fixed", "uniform:0.25", "normal:50".
  std::string Text() const;
};
/// Parses "fixed", "uniform:R" (0 <= R < 1) or "normal:STD" (STD >= 0). Throws Error naming `flag`.
LengthDist ParseLengthDist(const std::string& text, const std::string& flag);
/// Draws one length (>= 1) around `mean`.
std::int64_t DrawLength(const LengthDist& dist, std::int64_t mean, std::mt19937_64& rng);

/// A ready-to-send prompt.
struct Prompt {
  std::string text;          ///< the user message content (chat) or the prompt (completions)
  std::int64_t tokens = -1;  ///< the token count the server will see (-1 when unknown)
};

class PromptFactory {
 public:
  /// Calibrates against the server (a few /tokenize calls). `shared_prefix_tokens` words open every prompt.
  /// Throws Error (naming --input-len / --shared-prefix-tokens) when the lengths cannot be met.
  PromptFactory(HttpClient& http, const std::string& base_url, Endpoint endpoint, const std::string& model,
                std::int64_t shared_prefix_tokens, std::uint64_t seed);

  /// The prompt of request `index` with `target_tokens` tokens in all (template included).
  Prompt Make(std::int64_t index, std::int64_t target_tokens) const;
  /// The prefix that makes a dataset prompt unique: the index words and a blank line (`unique_prefix_tokens`).
  std::string UniquePrefix(std::int64_t index) const;
  std::int64_t unique_prefix_tokens() const { return unique_prefix_tokens_; }

  /// Checks `samples` generated prompts of `target_tokens` with /tokenize; records the outcome in method().
  void Verify(std::int64_t target_tokens, int samples);
  /// "tokenize (8 of 8 sampled prompts exact)", or the fallback's label.
  const std::string& method() const { return method_; }
  bool exact() const { return exact_; }
  std::int64_t template_tokens() const { return template_tokens_; }
  const std::vector<std::string>& vocabulary() const { return words_; }

  /// The server's token count of `text` sent as this endpoint's prompt, template included (-1 when /tokenize
  /// is missing).
  std::int64_t Count(const std::string& text) const;
  /// The token count of bare `text` (no template, no special tokens): a reference answer's length.
  std::int64_t CountRaw(const std::string& text) const;
  bool has_tokenize() const { return tokenize_; }

 private:
  std::string Words(std::uint64_t stream, std::int64_t n) const;
  std::string IndexWords(std::int64_t index) const;

  HttpClient& http_;
  std::string url_;
  Endpoint endpoint_;
  std::string model_;
  std::uint64_t seed_;
  bool tokenize_ = true;
  std::vector<std::string> words_;
  std::int64_t template_tokens_ = 0;
  std::int64_t shared_tokens_ = 0;
  std::string shared_;
  std::int64_t unique_prefix_tokens_ = 0;
  std::string method_;
  bool exact_ = false;
};

}  // namespace ppdeploy::client
