#include "cli/backend_factory.h"

#include <cstdlib>
#include <mutex>

#include "client/http.h"
#include "core/error.h"

namespace ppdeploy::cli {
namespace {

// probes::ChatBackend over the OpenAI-compatible HTTP API (src/client). One libcurl handle per
// call keeps it safe to use from RunMany's threads.
class HttpChatBackend final : public probes::ChatBackend {
 public:
  HttpChatBackend(std::string url, std::string model, const std::atomic<bool>* cancel)
      : url_(std::move(url)), model_(std::move(model)), cancel_(cancel) {
    if (model_.empty()) model_ = FirstModel();
  }

  probes::ChatResult Chat(const probes::ChatRequest& request) override {
    nlohmann::json body = {{"model", model_}, {"messages", request.messages}, {"max_tokens", request.max_tokens}};
    if (request.temperature) body["temperature"] = *request.temperature;
    if (request.top_p) body["top_p"] = *request.top_p;
    if (request.seed) body["seed"] = *request.seed;
    if (!request.tools.is_null() && !request.tools.empty()) body["tools"] = request.tools;
    if (request.extra.is_object())
      for (auto it = request.extra.begin(); it != request.extra.end(); ++it) body[it.key()] = it.value();
    client::HttpResponse r = Http()->PostJson(client::JoinUrl(url_, "/v1/chat/completions"), body, 1800.0);
    probes::ChatResult out;
    out.e2e_ms = r.elapsed_ms;
    out.cancelled = r.cancelled;
    if (!r.ok()) {
      out.error = r.error.empty() ? fmt::format("HTTP {}: {}", r.status, r.body.substr(0, 300)) : r.error;
      return out;
    }
    auto j = nlohmann::json::parse(r.body, nullptr, false);
    if (!j.is_object() || !j.contains("choices") || !j["choices"].is_array() || j["choices"].empty()) {
      out.error = "malformed response: " + r.body.substr(0, 200);
      return out;
    }
    const auto& c = j["choices"][0];
    out.ok = true;
    if (c.contains("message") && c["message"].is_object()) {
      const auto& m = c["message"];
      if (m.contains("content") && m["content"].is_string()) out.text = m["content"].get<std::string>();
      if (m.contains("tool_calls") && m["tool_calls"].is_array()) out.tool_calls = m["tool_calls"];
    }
    if (c.contains("finish_reason") && c["finish_reason"].is_string())
      out.finish_reason = c["finish_reason"].get<std::string>();
    if (c.contains("token_ids") && c["token_ids"].is_array()) {
      std::vector<int> ids;
      for (const auto& t : c["token_ids"])
        if (t.is_number_integer()) ids.push_back(t.get<int>());
      out.token_ids = std::move(ids);
    }
    if (j.contains("usage") && j["usage"].is_object()) {
      const auto& u = j["usage"];
      if (u.contains("prompt_tokens") && u["prompt_tokens"].is_number_integer())
        out.prompt_tokens = u["prompt_tokens"].get<std::int64_t>();
      if (u.contains("completion_tokens") && u["completion_tokens"].is_number_integer())
        out.completion_tokens = u["completion_tokens"].get<std::int64_t>();
    }
    return out;
  }

  std::optional<std::vector<int>> Tokenize(const std::string& text) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (no_tokenize_) return std::nullopt;
    }
    nlohmann::json body = {{"model", model_}, {"prompt", text}, {"add_special_tokens", false}};
    client::HttpResponse r = Http()->PostJson(client::JoinUrl(url_, "/tokenize"), body, 120.0);
    if (r.cancelled) return std::nullopt;
    auto j = nlohmann::json::parse(r.body, nullptr, false);
    if (!r.ok() || !j.is_object() || !j.contains("tokens") || !j["tokens"].is_array()) {
      std::lock_guard<std::mutex> lock(mu_);
      no_tokenize_ = true;
      return std::nullopt;
    }
    std::vector<int> ids;
    for (const auto& t : j["tokens"])
      if (t.is_number_integer()) ids.push_back(t.get<int>());
    return ids;
  }

  std::optional<std::int64_t> MaxModelLen() override {
    client::HttpResponse r = Http()->Get(client::JoinUrl(url_, "/v1/models"), 30.0);
    auto j = nlohmann::json::parse(r.body, nullptr, false);
    if (!r.ok() || !j.is_object() || !j.contains("data") || !j["data"].is_array()) return std::nullopt;
    for (const auto& m : j["data"])
      if (m.is_object() && m.value("id", "") == model_ && m.contains("max_model_len") &&
          m["max_model_len"].is_number_integer())
        return m["max_model_len"].get<std::int64_t>();
    return std::nullopt;
  }

  probes::PostResult Post(const std::string& path, const nlohmann::json& body_in) override {
    nlohmann::json body = body_in;
    if (body.is_object() && !body.contains("model")) body["model"] = model_;
    client::HttpResponse r = Http()->PostJson(client::JoinUrl(url_, path), body, 600.0);
    probes::PostResult out;
    out.http_status = r.status;
    out.e2e_ms = r.elapsed_ms;
    out.cancelled = r.cancelled;
    out.ok = r.ok();
    out.body = nlohmann::json::parse(r.body, nullptr, false);
    if (out.body.is_discarded()) out.body = nullptr;
    if (!out.ok) out.error = r.error.empty() ? fmt::format("HTTP {}: {}", r.status, r.body.substr(0, 300)) : r.error;
    return out;
  }

 private:
  std::string FirstModel() {
    std::string u = client::JoinUrl(url_, "/v1/models");
    client::HttpResponse r = Http()->Get(u, 30.0);
    nlohmann::json j = r.Json(u);
    if (!j.contains("data") || !j["data"].is_array() || j["data"].empty() || !j["data"][0].contains("id"))
      Fail("{}: no model listed; give --model", u);
    return j["data"][0]["id"].get<std::string>();
  }

  std::unique_ptr<client::HttpClient> Http() const { return client::MakeCurlHttpClient("", cancel_); }

  std::string url_, model_;
  const std::atomic<bool>* cancel_ = nullptr;
  std::mutex mu_;
  bool no_tokenize_ = false;
};

}  // namespace

int TrialsFromEnv() {
  const char* env = std::getenv("AGENT_PROBE_TRIALS");
  if (!env || !*env) return 40;
  try {
    std::size_t used = 0;
    const int n = std::stoi(env, &used);
    if (used == std::string(env).size() && n >= 1) return n;
  } catch (const std::exception&) {
  }
  Fail("AGENT_PROBE_TRIALS: expected a positive integer, got \"{}\"", env);
}

std::unique_ptr<probes::ChatBackend> MakeHttpBackend(const std::string& url, const std::string& model,
                                                     const std::atomic<bool>* cancel) {
  if (url.empty()) Fail("--url is required");
  return std::make_unique<HttpChatBackend>(url, model, cancel);
}

}  // namespace ppdeploy::cli
