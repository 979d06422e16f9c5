#include "client/prompts.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace ppdeploy::client {
namespace {

// Common English words: one token after a space in GPT-2-style BPE and SentencePiece vocabularies (checked
// against the server before use).
const std::vector<std::string>& Vocabulary() {
  static const std::vector<std::string> w = {
      "alpha",   "river",  "stone",   "garden",   "window", "paper",      "letter",  "number",  "table",   "light",
      "water",   "green",  "silver",  "quiet",    "bright", "gentle",     "careful", "modern",  "ancient", "local",
      "market",  "forest", "bridge",  "castle",   "signal", "engine",     "planet",  "orange",  "harbor",  "valley",
      "pencil",  "meadow", "rocket",  "violet",   "winter", "summer",     "autumn",  "spring",  "mirror",  "candle",
      "house",   "music",  "story",   "field",    "night",  "money",      "world",   "school",  "family",  "friend",
      "money",   "power",  "party",   "woman",    "child",  "place",      "point",   "group",   "water",   "month",
      "lot",     "right",  "study",   "book",     "word",   "business",   "issue",   "side",    "kind",    "head",
      "service", "area",   "money",   "story",    "fact",   "night",      "hand",    "part",    "case",    "week",
      "company", "system", "program", "question", "work",   "government", "country", "problem", "state",   "student"};
  return w;
}

std::uint64_t Mix(std::uint64_t x) {  // splitmix64 finaliser
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::string Join(const std::vector<std::string>& words) {
  std::string s;
  for (const auto& w : words) s += " " + w;
  return s;
}

constexpr int kIndexWords = 4;
constexpr int kPrefixRandomWords = 4;

}  // namespace

std::string LengthDist::Text() const {
  switch (kind) {
    case Kind::kFixed:
      return "fixed";
    case Kind::kUniform:
      return fmt::format("uniform:{:g}", param);
    case Kind::kNormal:
      return fmt::format("normal:{:g}", param);
  }
  return "fixed";
}

LengthDist ParseLengthDist(const std::string& text, const std::string& flag) {
  LengthDist d;
  if (text == "fixed") return d;
  std::size_t colon = text.find(':');
  std::string kind = text.substr(0, colon);
  std::string value = colon == std::string::npos ? "" : text.substr(colon + 1);
  double v = 0;
  std::size_t used = 0;
  try {
    v = std::stod(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  bool number = !value.empty() && used == value.size() && std::isfinite(v);
  if (kind == "uniform") {
    if (!number || v < 0 || v >= 1)
      Fail("{}: uniform:R needs a range ratio 0 <= R < 1 (vLLM --random-range-ratio), got \"{}\"", flag, text);
    d.kind = LengthDist::Kind::kUniform;
  } else if (kind == "normal") {
    if (!number || v < 0) Fail("{}: normal:STD needs a standard deviation >= 0 in tokens, got \"{}\"", flag, text);
    d.kind = LengthDist::Kind::kNormal;
  } else {
    Fail("{}: expected fixed, uniform:R or normal:STD, got \"{}\"", flag, text);
  }
  d.param = v;
  return d;
}

std::int64_t DrawLength(const LengthDist& d, std::int64_t mean, std::mt19937_64& rng) {
  double v = static_cast<double>(mean);
  if (d.kind == LengthDist::Kind::kUniform) {
    // vLLM RandomDataset: integers in [floor(len (1 - r)), ceil(len (1 + r))].
    auto lo = static_cast<std::int64_t>(std::floor(v * (1 - d.param)));
    auto hi = static_cast<std::int64_t>(std::ceil(v * (1 + d.param)));
    std::uniform_int_distribution<std::int64_t> u(std::max<std::int64_t>(1, lo), std::max<std::int64_t>(1, hi));
    return u(rng);
  }
  if (d.kind == LengthDist::Kind::kNormal && d.param > 0) {
    std::normal_distribution<double> n(v, d.param);
    return std::max<std::int64_t>(1, std::llround(n(rng)));
  }
  return std::max<std::int64_t>(1, mean);
}

std::int64_t PromptFactory::Count(const std::string& text) const {
  if (!tokenize_) return -1;
  nlohmann::json body = {{"model", model_}};
  if (endpoint_ == Endpoint::kChat) {
    body["messages"] = nlohmann::json::array({{{"role", "user"}, {"content", text}}});
  } else {
    body["prompt"] = text;
  }
  HttpResponse r = http_.PostJson(url_, body, 30.0);
  if (!r.ok()) return -1;
  nlohmann::json j = nlohmann::json::parse(r.body, nullptr, false);
  if (j.is_discarded() || !j.contains("count") || !j["count"].is_number_integer()) return -1;
  return j["count"].get<std::int64_t>();
}

std::int64_t PromptFactory::CountRaw(const std::string& text) const {
  if (!tokenize_) return -1;
  nlohmann::json body = {{"model", model_}, {"prompt", text}, {"add_special_tokens", false}};
  HttpResponse r = http_.PostJson(url_, body, 30.0);
  if (!r.ok()) return -1;
  nlohmann::json j = nlohmann::json::parse(r.body, nullptr, false);
  if (j.is_discarded() || !j.contains("count") || !j["count"].is_number_integer()) return -1;
  return j["count"].get<std::int64_t>();
}

PromptFactory::PromptFactory(HttpClient& http, const std::string& base_url, Endpoint endpoint, const std::string& model,
                             std::int64_t shared_prefix_tokens, std::uint64_t seed)
    : http_(http), url_(JoinUrl(base_url, "/tokenize")), endpoint_(endpoint), model_(model), seed_(seed) {
  if (shared_prefix_tokens < 0) Fail("--shared-prefix-tokens: expected >= 0, got {}", shared_prefix_tokens);
  // Deduplicated vocabulary (order kept).
  for (const auto& w : Vocabulary())
    if (std::find(words_.begin(), words_.end(), w) == words_.end()) words_.push_back(w);
  // Template tokens: a one-word prompt " w" is the template plus one token.
  std::int64_t one = Count(" " + words_[0]);
  if (one < 0) {
    tokenize_ = false;
    method_ = "words_fallback (the server has no /tokenize: 1 token per word and no template assumed)";
  } else {
    template_tokens_ = one - 1;
    std::int64_t all = Count(Join(words_));
    if (all != template_tokens_ + static_cast<std::int64_t>(words_.size())) {
      // Keep the words that are one token after a space.
      std::vector<std::string> keep;
      for (std::size_t i = 0; i < words_.size(); ++i)
        if (Count(" " + words_[0] + " " + words_[i]) == template_tokens_ + 2) keep.push_back(words_[i]);
      if (keep.size() < 16)
        Fail(
            "/tokenize at {}: only {} of {} vocabulary words are one token each; cannot build exact-length prompts "
            "(use --dataset jsonl with your own prompts)",
            url_, keep.size(), words_.size());
      words_ = std::move(keep);
    }
    method_ = "tokenize";
    exact_ = true;
  }
  shared_tokens_ = shared_prefix_tokens;
  shared_ = Words(0x5a4eddULL, shared_tokens_);
  std::string probe = UniquePrefix(0);
  unique_prefix_tokens_ = kIndexWords + kPrefixRandomWords + 2;  // the words, "." and the blank line (estimate)
  if (tokenize_) {
    std::int64_t with = Count(probe + " " + words_[0]);
    if (with >= 0) unique_prefix_tokens_ = with - one;
  }
}

std::string PromptFactory::Words(std::uint64_t stream, std::int64_t n) const {
  std::mt19937_64 rng(Mix(seed_ ^ Mix(stream)));
  std::string s;
  s.reserve(static_cast<std::size_t>(std::max<std::int64_t>(0, n)) * 8);
  for (std::int64_t i = 0; i < n; ++i) {
    s += ' ';
    s += words_[rng() % words_.size()];
  }
  return s;
}

std::string PromptFactory::IndexWords(std::int64_t index) const {
  std::string s;
  auto v = static_cast<std::uint64_t>(index);
  for (int i = 0; i < kIndexWords; ++i) {
    s += ' ';
    s += words_[v % words_.size()];
    v /= words_.size();
  }
  return s;
}

std::string PromptFactory::UniquePrefix(std::int64_t index) const {
  return IndexWords(index) + Words(0x1000000ULL + static_cast<std::uint64_t>(index), kPrefixRandomWords) + ".\n\n";
}

Prompt PromptFactory::Make(std::int64_t index, std::int64_t target) const {
  std::int64_t k = target - template_tokens_;
  if (k < 1)
    Fail("--input-len: {} tokens is not more than the {} tokens of the server's chat template", target,
         template_tokens_);
  Prompt p;
  // [shared prefix][index words][random words], cut to k words.
  std::int64_t shared = std::min(shared_tokens_, k);
  if (shared_tokens_ > 0) {
    std::size_t pos = 0;
    for (std::int64_t i = 0; i < shared && pos != std::string::npos; ++i) pos = shared_.find(' ', pos + 1);
    p.text = shared_.substr(0, pos);
  }
  std::int64_t left = k - shared;
  std::string idx = IndexWords(index);
  std::int64_t idx_words = std::min<std::int64_t>(kIndexWords, left);
  if (idx_words > 0) {
    std::size_t pos = 0;
    for (std::int64_t i = 0; i < idx_words && pos != std::string::npos; ++i) pos = idx.find(' ', pos + 1);
    p.text += idx.substr(0, pos);
  }
  left -= idx_words;
  if (left > 0) p.text += Words(0x2000000ULL + static_cast<std::uint64_t>(index), left);
  p.tokens = tokenize_ ? target : -1;
  return p;
}

void PromptFactory::Verify(std::int64_t target, int samples) {
  if (!tokenize_ || samples <= 0) return;
  int exact = 0;
  std::int64_t worst = 0;
  for (int i = 0; i < samples; ++i) {
    std::int64_t got = Count(Make(i, target).text);
    if (got == target) {
      ++exact;
    } else {
      worst = std::max<std::int64_t>(worst, std::llabs(got - target));
    }
  }
  exact_ = exact == samples;
  method_ = exact_ ? fmt::format("tokenize ({} of {} sampled prompts exact)", exact, samples)
                   : fmt::format("tokenize ({} of {} sampled prompts exact, others off by up to {} tokens)", exact,
                                 samples, worst);
}

}  // namespace ppdeploy::client
