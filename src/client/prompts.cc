#include "client/prompts.h"

#include <algorithm>
#include <random>

#include "core/error.h"

namespace ppdeploy::client {
namespace {

const std::vector<std::string>& Words() {
  static const std::vector<std::string> w = {
      "alpha", "river", "stone", "garden", "window", "paper", "letter", "number", "table", "light",
      "water", "green", "silver", "quiet", "bright", "gentle", "careful", "modern", "ancient", "local",
      "market", "forest", "bridge", "castle", "signal", "engine", "planet", "orange", "harbor", "valley",
      "pencil", "meadow", "rocket", "violet", "winter", "summer", "autumn", "spring", "mirror", "candle"};
  return w;
}

std::string MakeText(std::uint64_t seed, std::int64_t words) {
  std::mt19937_64 rng(seed);
  std::string s;
  for (std::int64_t i = 0; i < words; ++i) {
    if (i > 0) s += ' ';
    s += Words()[rng() % Words().size()];
  }
  return s;
}

std::int64_t Count(HttpClient& http, const std::string& url, Endpoint endpoint, const std::string& model,
                   const std::string& text, bool& supported) {
  nlohmann::json body = {{"model", model}};
  if (endpoint == Endpoint::kChat) {
    body["messages"] = nlohmann::json::array({{{"role", "user"}, {"content", text}}});
  } else {
    body["prompt"] = text;
  }
  HttpResponse r = http.PostJson(url, body, 30.0);
  if (!r.ok()) {
    supported = false;
    return -1;
  }
  nlohmann::json j = nlohmann::json::parse(r.body, nullptr, false);
  if (j.is_discarded() || !j.contains("count") || !j["count"].is_number_integer()) {
    supported = false;
    return -1;
  }
  return j["count"].get<std::int64_t>();
}

}  // namespace

PromptSet BuildPrompts(HttpClient& http, const std::string& base_url, Endpoint endpoint, const std::string& model,
                       std::int64_t target, int count, std::uint64_t seed) {
  if (target < 1) Fail("--input-len: expected >= 1, got {}", target);
  PromptSet set;
  std::string url = JoinUrl(base_url, "/tokenize");
  bool supported = true;
  std::int64_t words_guess = target;
  for (int i = 0; i < std::max(1, count); ++i) {
    std::uint64_t s = seed * 1000003ULL + static_cast<std::uint64_t>(i);
    if (supported) {
      std::int64_t w = words_guess, best_w = w, best_diff = -1, got = -1, best_got = -1;
      for (int iter = 0; iter < 8 && supported; ++iter) {
        got = Count(http, url, endpoint, model, MakeText(s, w), supported);
        if (!supported) break;
        std::int64_t diff = std::llabs(got - target);
        if (best_diff < 0 || diff < best_diff) {
          best_diff = diff;
          best_w = w;
          best_got = got;
        }
        if (got == target) break;
        std::int64_t next = got > 0 ? std::max<std::int64_t>(1, w + (target - got) * w / std::max<std::int64_t>(got, 1))
                                    : w + 1;
        if (next == w) next = got < target ? w + 1 : std::max<std::int64_t>(1, w - 1);
        w = next;
      }
      if (supported) {
        words_guess = best_w;
        set.prompts.push_back(MakeText(s, best_w));
        set.token_counts.push_back(best_got);
        continue;
      }
      set.prompts.clear();
      set.token_counts.clear();
      i = -1;  // start over with the fallback
      continue;
    }
    // Fallback: 4 characters per token (labelled).
    std::string text = MakeText(s, target);
    if (static_cast<std::int64_t>(text.size()) > target * 4) text.resize(static_cast<std::size_t>(target * 4));
    while (static_cast<std::int64_t>(text.size()) < target * 4) text += " x";
    set.prompts.push_back(text);
    set.token_counts.push_back(-1);
  }
  set.method = supported ? "tokenize" : "chars_per_token_fallback(4)";
  return set;
}

}  // namespace ppdeploy::client
