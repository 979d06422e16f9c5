// Scripted fakes of probes::ChatBackend for tests: no network, deterministic.
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "probes/backend.h"

namespace ppdeploy::probes::testing {

/// A toy tokenizer: every whitespace-separated word is one token, its id a hash of the word.
inline std::vector<int> WordTokens(const std::string& text) {
  std::vector<int> ids;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\n' || text[i] == '\t')) ++i;
    if (i >= text.size()) break;
    std::size_t j = i;
    unsigned h = 2166136261u;
    while (j < text.size() && text[j] != ' ' && text[j] != '\n' && text[j] != '\t') {
      h = (h ^ static_cast<unsigned char>(text[j])) * 16777619u;
      ++j;
    }
    ids.push_back(static_cast<int>(h & 0x7fffffff));
    i = j;
  }
  return ids;
}

/// Base fake: Chat answers with a user-supplied function; Tokenize uses WordTokens (or nullopt).
class ScriptedBackend : public ChatBackend {
 public:
  using Responder = std::function<ChatResult(const ChatRequest&, int call_index)>;
  explicit ScriptedBackend(Responder responder) : responder_(std::move(responder)) {}
  // Movable before use (factories return it by value); not while requests are in flight.
  ScriptedBackend(ScriptedBackend&& o) noexcept
      : has_tokenize(o.has_tokenize),
        max_model_len(o.max_model_len),
        post(std::move(o.post)),
        responder_(std::move(o.responder_)),
        calls_(o.calls_.load()),
        requests_(std::move(o.requests_)) {}

  ChatResult Chat(const ChatRequest& request) override {
    const int i = calls_.fetch_add(1);
    {
      std::lock_guard<std::mutex> lock(mu_);
      requests_.push_back(request);
    }
    return responder_(request, i);
  }
  std::optional<std::vector<int>> Tokenize(const std::string& text) override {
    if (!has_tokenize) return std::nullopt;
    return WordTokens(text);
  }
  std::optional<std::int64_t> MaxModelLen() override { return max_model_len; }
  PostResult Post(const std::string& path, const nlohmann::json& body) override {
    if (post) return post(path, body);
    return PostResult{false, 404, "not found", nlohmann::json(), -1};
  }

  bool has_tokenize = true;
  std::optional<std::int64_t> max_model_len;
  std::function<PostResult(const std::string&, const nlohmann::json&)> post;
  int calls() const { return calls_.load(); }
  std::vector<ChatRequest> requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }

 private:
  Responder responder_;
  std::atomic<int> calls_{0};
  std::mutex mu_;
  std::vector<ChatRequest> requests_;
};

/// The text of the last user/tool message of a request.
inline std::string LastContent(const ChatRequest& r) {
  if (!r.messages.is_array() || r.messages.empty()) return "";
  const auto& m = r.messages.back();
  return m.contains("content") && m["content"].is_string() ? m["content"].get<std::string>() : "";
}

/// A normal answer: "stop", text of `words` words.
inline ChatResult NormalAnswer(int words, bool with_ids = true) {
  ChatResult r;
  r.ok = true;
  r.finish_reason = "stop";
  std::string t = "I am a helpful assistant built to answer questions.";
  for (int i = 0; i < words; ++i) t += " word" + std::to_string(i);
  r.text = t;
  if (with_ids) r.token_ids = WordTokens(t);
  r.completion_tokens = static_cast<std::int64_t>(WordTokens(t).size());
  r.e2e_ms = 10;
  return r;
}

/// A degenerate answer: a correct start, then `cycle` repeated until `cap` words, finish "length".
inline ChatResult LoopAnswer(const std::string& cycle, int cap, bool with_ids = true) {
  ChatResult r;
  r.ok = true;
  r.finish_reason = "length";
  std::string t = "Hello! I am GLM, a large language model.";
  while (static_cast<int>(WordTokens(t).size()) < cap) t += " " + cycle;
  r.text = t;
  if (with_ids) r.token_ids = WordTokens(t);
  r.completion_tokens = static_cast<std::int64_t>(WordTokens(t).size());
  r.e2e_ms = 100;
  return r;
}

}  // namespace ppdeploy::probes::testing
