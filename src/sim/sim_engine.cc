#include "sim/sim_engine.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/embedded_data.h"
#include "core/error.h"
#include "core/json_fields.h"

namespace ppdeploy::sim {
namespace {

std::uint64_t Mix(std::uint64_t x) {  // splitmix64 finaliser
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::uint64_t Fnv(std::string_view s, std::uint64_t h = 1469598103934665603ULL) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

bool IsWordByte(unsigned char c) { return std::isalnum(c) != 0 || c == '_' || c >= 0x80; }

// A uniform double in [0, 1) from a hash.
double Unit(std::uint64_t h) { return static_cast<double>(h >> 11) * (1.0 / 9007199254740992.0); }

double Gaussian(std::mt19937_64& rng, double mean, double std) {
  if (std <= 0) return std::max(0.0, mean);
  std::normal_distribution<double> dist(mean, std);
  return std::max(0.0, dist(rng));
}

std::string ContentText(const nlohmann::json& content) {
  if (content.is_string()) return content.get<std::string>();
  std::string out;
  if (content.is_array()) {
    for (const auto& part : content) {
      if (part.is_object() && part.contains("text") && part["text"].is_string()) out += part["text"].get<std::string>();
    }
  }
  return out;
}

std::optional<std::int64_t> IntField(const nlohmann::json& body, const char* key) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (it->is_number_integer()) return it->get<std::int64_t>();
  if (it->is_number_float()) return static_cast<std::int64_t>(it->get<double>());
  return std::nullopt;
}

bool BoolField(const nlohmann::json& body, const char* key) {
  auto it = body.find(key);
  return it != body.end() && it->is_boolean() && it->get<bool>();
}

// The needle convention: "The value of key K is V." somewhere, and the question "What is the value of key K?".
std::optional<std::pair<std::string, std::string>> FindNeedle(const std::string& prompt) {
  static const std::string kQuestion = "What is the value of key ";
  std::size_t q = prompt.rfind(kQuestion);
  if (q == std::string::npos) return std::nullopt;
  std::size_t kstart = q + kQuestion.size();
  std::size_t qend = prompt.find('?', kstart);
  if (qend == std::string::npos || qend - kstart > 200) return std::nullopt;
  std::string key = prompt.substr(kstart, qend - kstart);
  std::string statement = "The value of key " + key + " is ";
  std::size_t s = prompt.find(statement);
  if (s == std::string::npos) return std::nullopt;
  std::size_t vstart = s + statement.size();
  std::size_t vend = prompt.find('.', vstart);
  if (vend == std::string::npos || vend == vstart || vend - vstart > 200) return std::nullopt;
  return std::make_pair(key, prompt.substr(vstart, vend - vstart));
}

std::string WrongValue(const std::string& value, std::uint64_t h) {
  std::string out = value;
  bool changed = false;
  for (std::size_t i = 0; i < out.size(); ++i) {
    char& c = out[i];
    std::uint64_t r = Mix(h + i);
    if (std::isdigit(static_cast<unsigned char>(c))) {
      char n = static_cast<char>('0' + (c - '0' + 1 + r % 9) % 10);
      changed |= n != c;
      c = n;
    } else if (std::isalpha(static_cast<unsigned char>(c))) {
      bool upper = std::isupper(static_cast<unsigned char>(c)) != 0;
      char base = upper ? 'A' : 'a';
      char n = static_cast<char>(base + (c - base + 1 + r % 25) % 26);
      changed |= n != c;
      c = n;
    }
  }
  if (!changed) out += "7";
  return out;
}

nlohmann::json ArgumentValue(const nlohmann::json& schema, const std::string& name) {
  std::string type = schema.is_object() && schema.contains("type") && schema["type"].is_string()
                         ? schema["type"].get<std::string>()
                         : "string";
  if (schema.is_object() && schema.contains("enum") && schema["enum"].is_array() && !schema["enum"].empty())
    return schema["enum"][0];
  if (type == "integer") return 1;
  if (type == "number") return 1.5;
  if (type == "boolean") return true;
  if (type == "array") return nlohmann::json::array();
  if (type == "object") return nlohmann::json::object();
  return "sim-" + name;
}

std::string Upper1(std::string w) {
  if (!w.empty() && w[0] >= 'a' && w[0] <= 'z') w[0] = static_cast<char>(w[0] - 'a' + 'A');
  return w;
}

// Appends sentence pieces to `out` until it holds at least `target` tokens and (when `end_on_sentence`)
// the last piece closes a sentence.
void AppendSentences(std::vector<std::string>& out, std::size_t target, const std::vector<std::string>& words,
                     std::mt19937_64& rng) {
  bool sentence_start = out.empty() || out.back() == ".";
  std::size_t in_sentence = 0;
  std::size_t sentence_len = 6 + rng() % 8;
  while (out.size() < target || !(out.back() == ".")) {
    std::string w = words[rng() % words.size()];
    if (sentence_start) w = Upper1(w);
    out.push_back(out.empty() ? w : " " + w);
    sentence_start = false;
    if (++in_sentence >= sentence_len) {
      out.push_back(".");
      sentence_start = true;
      in_sentence = 0;
      sentence_len = 6 + rng() % 8;
    } else if (in_sentence == 4 && rng() % 3 == 0) {
      out.push_back(",");
    }
    if (out.size() > target + 64) break;  // never far past the target
  }
}

std::string Sse(const nlohmann::json& j) {
  return "data: " + j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n\n";
}
std::string SseEventNamed(const std::string& type, const nlohmann::json& j) {
  return "event: " + type + "\ndata: " + j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n\n";
}

}  // namespace

void ValidateOptions(const SimOptions& o) {
  auto nonneg = [](double v, const char* flag) {
    if (!(v >= 0) || !std::isfinite(v)) Fail("{}: expected a non-negative number, got {}", flag, v);
  };
  nonneg(o.ttft_ms, "--ttft-ms");
  nonneg(o.ttft_std_ms, "--ttft-std-ms");
  nonneg(o.itl_ms, "--itl-ms");
  nonneg(o.itl_std_ms, "--itl-std-ms");
  nonneg(o.prefill_ms_per_token, "--prefill-ms-per-token");
  nonneg(o.stall_ms, "--stall-ms");
  nonneg(o.startup_delay_s, "--startup-delay-s");
  if (o.prefix_cache_blocks < 0) Fail("--prefix-cache-blocks: expected >= 0, got {}", o.prefix_cache_blocks);
  if (o.block_size < 1) Fail("--block-size: expected >= 1, got {}", o.block_size);
  if (o.kv_cache_tokens < 0) Fail("--kv-cache-tokens: expected >= 0, got {}", o.kv_cache_tokens);
  if (!(o.gpu_memory_utilization > 0 && o.gpu_memory_utilization <= 1))
    Fail("--gpu-memory-utilization: expected a share in (0, 1], got {}", o.gpu_memory_utilization);
  if (o.max_num_seqs < 1) Fail("--max-num-seqs: expected >= 1, got {}", o.max_num_seqs);
  if (o.max_model_len < 1) Fail("--max-model-len: expected >= 1, got {}", o.max_model_len);
  if (o.tokens_per_chunk < 1) Fail("--tokens-per-chunk: expected >= 1, got {}", o.tokens_per_chunk);
  if (!(o.fault_rate >= 0 && o.fault_rate <= 1)) Fail("--fault-rate: expected a share in [0, 1], got {}", o.fault_rate);
  if (!(o.degenerate_rate >= 0 && o.degenerate_rate <= 1))
    Fail("--degenerate-rate: expected a share in [0, 1], got {}", o.degenerate_rate);
  if (o.effective_context < 0) Fail("--effective-context: expected >= 0, got {}", o.effective_context);
  for (const auto& k : o.fault_kinds) ParseFaultKind(k);
  if (o.fault_rate > 0 && o.fault_kinds.empty()) Fail("--fault-kinds: empty while --fault-rate is {}", o.fault_rate);
}

FaultKind ParseFaultKind(std::string_view kind) {
  if (kind == "500") return FaultKind::kHttp500;
  if (kind == "429") return FaultKind::kHttp429;
  if (kind == "disconnect") return FaultKind::kDisconnect;
  if (kind == "stall") return FaultKind::kStall;
  Fail("--fault-kinds: unknown kind \"{}\" (expected 500, 429, disconnect or stall)", kind);
}

const char* FaultKindName(FaultKind kind) {
  switch (kind) {
    case FaultKind::kNone:
      return "none";
    case FaultKind::kHttp500:
      return "500";
    case FaultKind::kHttp429:
      return "429";
    case FaultKind::kDisconnect:
      return "disconnect";
    case FaultKind::kStall:
      return "stall";
  }
  return "none";
}

std::vector<std::string> Tokenize(std::string_view text) {
  std::vector<std::string> out;
  std::size_t i = 0, n = text.size();
  while (i < n) {
    auto c = static_cast<unsigned char>(text[i]);
    std::size_t start = i;
    if (c == ' ' && i + 1 < n && IsWordByte(static_cast<unsigned char>(text[i + 1]))) ++i;
    if (IsWordByte(static_cast<unsigned char>(text[i]))) {
      while (i < n && IsWordByte(static_cast<unsigned char>(text[i]))) ++i;
    } else {
      ++i;
    }
    out.emplace_back(text.substr(start, i - start));
  }
  return out;
}

std::vector<std::uint64_t> PrefixBlockHashes(const std::vector<std::string>& tokens) {
  std::vector<std::uint64_t> out;
  std::uint64_t h = 1469598103934665603ULL;
  for (std::size_t i = 0; i + kPrefixBlockTokens <= tokens.size(); i += kPrefixBlockTokens) {
    for (std::size_t j = i; j < i + kPrefixBlockTokens; ++j) {
      h = Fnv(tokens[j], h);
      h = Fnv(std::string_view("\x1f", 1), h);  // a separator: "ab"+"c" and "a"+"bc" differ
    }
    out.push_back(h);
  }
  return out;
}

std::int64_t TokenId(std::string_view piece) { return 100 + static_cast<std::int64_t>(Fnv(piece) % 50000); }

std::string RenderChat(const nlohmann::json& messages) {
  std::string out;
  if (messages.is_array()) {
    for (const auto& m : messages) {
      if (!m.is_object()) continue;
      std::string role = m.contains("role") && m["role"].is_string() ? m["role"].get<std::string>() : "user";
      out += "<|" + role + "|>";
      if (m.contains("content")) out += ContentText(m["content"]);
      out += "\n";
    }
  }
  out += "<|assistant|>";
  return out;
}

std::string Plan::Text() const {
  std::string s;
  for (const auto& t : tokens) s += t;
  return s;
}

SimEngine::SimEngine(SimOptions options) : options_(std::move(options)) {
  ValidateOptions(options_);
  if (auto data = FindEmbedded("sim/words.txt")) {
    std::string_view d = *data;
    std::size_t pos = 0;
    while (pos < d.size()) {
      std::size_t end = d.find('\n', pos);
      if (end == std::string_view::npos) end = d.size();
      std::string_view line = d.substr(pos, end - pos);
      if (!line.empty() && line[0] != '#') words_.emplace_back(line);
      pos = end + 1;
    }
  }
  if (words_.empty()) words_ = {"the", "model", "answers", "with", "simulated", "tokens"};
}

nlohmann::json SimEngine::ErrorBody(const std::string& message, const std::string& type, int code) {
  return {{"object", "error"}, {"message", message}, {"type", type}, {"param", nullptr}, {"code", code}};
}

Plan SimEngine::MakePlan(Api api, const nlohmann::json& body, std::uint64_t request_number, std::int64_t now_s) const {
  Plan p;
  p.api = api;
  p.created = now_s;
  p.model = options_.model;
  auto bad = [&](const std::string& msg) {
    p.error = true;
    p.status = 400;
    p.error_body = ErrorBody(msg, "BadRequestError", 400);
    return p;
  };
  if (!body.is_object()) return bad("request body must be a JSON object");
  if (auto m = body.find("model"); m != body.end() && m->is_string() && m->get<std::string>() != options_.model) {
    p.error = true;
    p.status = 404;
    p.error_body = ErrorBody("The model `" + m->get<std::string>() + "` does not exist.", "NotFoundError", 404);
    return p;
  }
  p.stream = BoolField(body, "stream");
  if (auto so = body.find("stream_options"); so != body.end() && so->is_object()) {
    p.include_usage = BoolField(*so, "include_usage") && !options_.no_usage;
    p.continuous_usage = BoolField(*so, "continuous_usage_stats") && !options_.no_usage;
  }
  if (api == Api::kResponses) p.include_usage = !options_.no_usage;
  p.usage = !options_.no_usage;
  p.logprobs = BoolField(body, "logprobs") || IntField(body, "logprobs").value_or(0) > 0;

  // The prompt as the sim sees it.
  std::string prompt;
  nlohmann::json messages = nlohmann::json::array();
  if (api == Api::kChat) {
    if (!body.contains("messages") || !body["messages"].is_array()) return bad("'messages' must be an array");
    messages = body["messages"];
    prompt = RenderChat(messages);
  } else if (api == Api::kCompletions) {
    auto pr = body.find("prompt");
    if (pr == body.end()) return bad("'prompt' is required");
    if (pr->is_string()) {
      prompt = pr->get<std::string>();
    } else if (pr->is_array() && !pr->empty() && (*pr)[0].is_string()) {
      prompt = (*pr)[0].get<std::string>();
    } else {
      return bad("'prompt' must be a string");
    }
  } else {  // responses
    if (auto ins = body.find("instructions"); ins != body.end() && ins->is_string())
      messages.push_back({{"role", "system"}, {"content", *ins}});
    auto in = body.find("input");
    if (in == body.end()) return bad("'input' is required");
    if (in->is_string()) {
      messages.push_back({{"role", "user"}, {"content", *in}});
    } else if (in->is_array()) {
      for (const auto& m : *in)
        if (m.is_object()) messages.push_back(m);
    } else {
      return bad("'input' must be a string or an array");
    }
    prompt = RenderChat(messages);
  }
  {
    std::vector<std::string> prompt_pieces = Tokenize(prompt);
    p.prompt_tokens = static_cast<std::int64_t>(prompt_pieces.size());
    if (options_.prefix_cache_blocks > 0) p.prompt_block_hashes = PrefixBlockHashes(prompt_pieces);
  }

  std::optional<std::int64_t> max_tokens = IntField(body, "max_tokens");
  if (!max_tokens) max_tokens = IntField(body, "max_completion_tokens");
  if (!max_tokens) max_tokens = IntField(body, "max_output_tokens");
  std::int64_t min_tokens = std::max<std::int64_t>(0, IntField(body, "min_tokens").value_or(0));
  bool ignore_eos = BoolField(body, "ignore_eos");
  std::int64_t len = options_.max_model_len;
  if (max_tokens && *max_tokens < 1) return bad(fmt::format("max_tokens must be at least 1, got {}.", *max_tokens));
  // vLLM serving_engine.py _validate_input (0.6-0.11): the messages and the completion must fit max_model_len.
  if (p.prompt_tokens >= len && !max_tokens) {
    return bad(
        fmt::format("This model's maximum context length is {} tokens. However, your request has {} input "
                    "tokens. Please reduce the length of the input messages.",
                    len, p.prompt_tokens));
  }
  std::int64_t max_out = max_tokens.value_or(len - p.prompt_tokens);
  if (p.prompt_tokens + max_out > len) {
    return bad(
        fmt::format("This model's maximum context length is {} tokens. However, you requested {} tokens ({} in "
                    "the messages, {} in the completion). Please reduce the length of the messages or "
                    "completion.",
                    len, p.prompt_tokens + max_out, p.prompt_tokens, max_out));
  }
  min_tokens = std::min(min_tokens, max_out);

  std::uint64_t content_seed =
      Mix(options_.seed ^ Fnv(prompt) ^ Mix(static_cast<std::uint64_t>(IntField(body, "seed").value_or(0))));
  std::uint64_t draw_seed = Mix(options_.seed * 0x100000001b3ULL + request_number);
  std::mt19937_64 rng(content_seed);
  std::mt19937_64 draw(draw_seed);
  const char* prefix = api == Api::kChat ? "chatcmpl-" : api == Api::kCompletions ? "cmpl-" : "resp_";
  p.id = fmt::format("{}{:016x}", prefix, Mix(draw_seed ^ 0x5eed));

  // Fault and degeneration draws (per arrival).
  if (options_.fault_rate > 0 && Unit(draw()) < options_.fault_rate) {
    p.fault = ParseFaultKind(options_.fault_kinds[draw() % options_.fault_kinds.size()]);
    if (p.fault == FaultKind::kHttp500) {
      p.error = true;
      p.status = 500;
      p.error_body =
          ErrorBody("simulated internal server error (ppdeploy sim --fault-kinds 500)", "InternalServerError", 500);
      return p;
    }
    if (p.fault == FaultKind::kHttp429) {
      p.error = true;
      p.status = 429;
      p.error_body = ErrorBody("simulated rate limit (ppdeploy sim --fault-kinds 429)", "RateLimitError", 429);
      return p;
    }
  }
  p.degenerate = options_.degenerate_rate > 0 && Unit(draw()) < options_.degenerate_rate;

  // The answer.
  const nlohmann::json* tools =
      body.contains("tools") && body["tools"].is_array() && !body["tools"].empty() ? &body["tools"] : nullptr;
  const nlohmann::json* tool_msg = nullptr;
  for (const auto& m : messages) {
    if (m.is_object() && m.contains("role") && m["role"] == "tool") tool_msg = &m;
  }
  std::vector<std::string> tokens;
  bool natural_stop = true;
  if (tools != nullptr && tool_msg == nullptr && api == Api::kChat) {
    const auto& tool = (*tools)[0];
    const nlohmann::json& fn = tool.contains("function") ? tool["function"] : tool;
    std::string name = fn.contains("name") && fn["name"].is_string() ? fn["name"].get<std::string>() : "tool";
    nlohmann::json args = nlohmann::json::object();
    if (fn.contains("parameters") && fn["parameters"].is_object() && fn["parameters"].contains("properties") &&
        fn["parameters"]["properties"].is_object()) {
      for (auto it = fn["parameters"]["properties"].begin(); it != fn["parameters"]["properties"].end(); ++it)
        args[it.key()] = ArgumentValue(it.value(), it.key());
    }
    std::string arguments = args.dump();
    p.tool_calls = nlohmann::json::array({{{"id", fmt::format("call_{:012x}", content_seed & 0xffffffffffffULL)},
                                           {"type", "function"},
                                           {"function", {{"name", name}, {"arguments", arguments}}}}});
    tokens = Tokenize(arguments);
    p.finish_reason = "tool_calls";
    if (static_cast<std::int64_t>(tokens.size()) > max_out) {
      tokens.resize(static_cast<std::size_t>(max_out));
      p.finish_reason = "length";
    }
    p.tokens = std::move(tokens);
  } else {
    if (tool_msg != nullptr) {
      tokens = Tokenize("The tool returned: " + ContentText((*tool_msg)["content"]) + ".");
    } else if (auto needle = FindNeedle(prompt)) {
      // The recall limit counts the messages' own tokens, not the chat template around them: that is the
      // length `ppdeploy needle` measures with /tokenize (docs/probes.md "Chat-template tokens are not counted").
      std::int64_t context_tokens = p.prompt_tokens;
      if (api != Api::kCompletions) {
        context_tokens = 0;
        for (const auto& m : messages)
          if (m.is_object() && m.contains("content"))
            context_tokens += static_cast<std::int64_t>(Tokenize(ContentText(m["content"])).size());
      }
      bool recalled = options_.effective_context == 0 || context_tokens <= options_.effective_context;
      std::string value = recalled ? needle->second : WrongValue(needle->second, content_seed);
      tokens = Tokenize("The value of key " + needle->first + " is " + value + ".");
    } else {
      AppendSentences(tokens, 8 + rng() % 40, words_, rng);
    }
    if (p.degenerate) {
      std::vector<std::string> cycle;
      std::size_t cycle_len = 3 + rng() % 4;
      for (std::size_t i = 0; i < cycle_len; ++i) cycle.push_back(" " + words_[rng() % words_.size()]);
      for (std::size_t i = 0; static_cast<std::int64_t>(tokens.size()) < max_out; ++i)
        tokens.push_back(cycle[i % cycle_len]);
      natural_stop = false;
    } else if (ignore_eos) {
      if (static_cast<std::int64_t>(tokens.size()) < max_out)
        AppendSentences(tokens, static_cast<std::size_t>(max_out), words_, rng);
      natural_stop = false;
    } else if (static_cast<std::int64_t>(tokens.size()) < min_tokens) {
      AppendSentences(tokens, static_cast<std::size_t>(min_tokens), words_, rng);
      if (static_cast<std::int64_t>(tokens.size()) > max_out) natural_stop = false;
    }
    if (static_cast<std::int64_t>(tokens.size()) >= max_out) {
      bool exact = static_cast<std::int64_t>(tokens.size()) == max_out && natural_stop;
      tokens.resize(static_cast<std::size_t>(max_out));
      p.finish_reason = exact ? "stop" : "length";
    } else {
      p.finish_reason = "stop";
    }
    p.tokens = std::move(tokens);
  }
  if (p.tokens.empty()) p.tokens.push_back(".");

  // Latency schedule.
  p.ttft_ms = Gaussian(draw, options_.ttft_ms, options_.ttft_std_ms) +
              options_.prefill_ms_per_token * static_cast<double>(p.prompt_tokens);
  p.itl_ms.assign(p.tokens.size(), 0.0);
  for (std::size_t i = 1; i < p.tokens.size(); ++i) p.itl_ms[i] = Gaussian(draw, options_.itl_ms, options_.itl_std_ms);
  if (p.fault == FaultKind::kDisconnect || p.fault == FaultKind::kStall)
    p.fault_after_tokens = std::max<std::size_t>(1, p.tokens.size() / 2);
  return p;
}

namespace {

nlohmann::json Usage(const Plan& p, std::size_t completion) {
  return {{"prompt_tokens", p.prompt_tokens},
          {"total_tokens", p.prompt_tokens + static_cast<std::int64_t>(completion)},
          {"completion_tokens", static_cast<std::int64_t>(completion)}};
}

nlohmann::json ChatLogprobs(const std::vector<std::string>& pieces) {
  nlohmann::json content = nlohmann::json::array();
  for (const auto& t : pieces)
    content.push_back({{"token", t},
                       {"logprob", -0.0625},
                       {"bytes", std::vector<unsigned char>(t.begin(), t.end())},
                       {"top_logprobs", nlohmann::json::array()}});
  return {{"content", content}};
}

nlohmann::json ResponseObject(const Plan& p, const std::string& status, bool with_output) {
  std::string msg_id = "msg_" + p.id.substr(5);
  nlohmann::json output = nlohmann::json::array();
  if (with_output) {
    output.push_back(
        {{"id", msg_id},
         {"type", "message"},
         {"status", "completed"},
         {"role", "assistant"},
         {"content", {{{"type", "output_text"}, {"text", p.Text()}, {"annotations", nlohmann::json::array()}}}}});
  }
  nlohmann::json r = {{"id", p.id},
                      {"object", "response"},
                      {"created_at", p.created},
                      {"status", status},
                      {"error", nullptr},
                      {"incomplete_details", nullptr},
                      {"instructions", nullptr},
                      {"model", p.model},
                      {"output", output},
                      {"parallel_tool_calls", true},
                      {"tool_choice", "auto"},
                      {"tools", nlohmann::json::array()},
                      {"usage", nullptr}};
  if (status == "completed" && p.finish_reason == "length") {
    r["status"] = "incomplete";
    r["incomplete_details"] = {{"reason", "max_output_tokens"}};
  }
  if (with_output && p.usage) {
    auto n = static_cast<std::int64_t>(p.tokens.size());
    r["usage"] = {{"input_tokens", p.prompt_tokens},
                  {"input_tokens_details", {{"cached_tokens", 0}}},
                  {"output_tokens", n},
                  {"output_tokens_details", {{"reasoning_tokens", 0}}},
                  {"total_tokens", p.prompt_tokens + n}};
  }
  return r;
}

}  // namespace

nlohmann::json SimEngine::ResponseBody(const Plan& p) const {
  std::size_t n = p.tokens.size();
  if (p.api == Api::kResponses) return ResponseObject(p, "completed", true);
  nlohmann::json choice = {
      {"index", 0}, {"finish_reason", p.finish_reason}, {"stop_reason", nullptr}, {"logprobs", nullptr}};
  if (p.api == Api::kChat) {
    nlohmann::json message = {{"role", "assistant"},
                              {"content", p.tool_calls.is_null() ? nlohmann::json(p.Text()) : nlohmann::json(nullptr)}};
    if (!p.tool_calls.is_null()) message["tool_calls"] = p.tool_calls;
    choice["message"] = message;
    if (p.logprobs) choice["logprobs"] = ChatLogprobs(p.tokens);
  } else {
    choice["text"] = p.Text();
  }
  nlohmann::json ids = nlohmann::json::array();
  for (const auto& t : p.tokens) ids.push_back(TokenId(t));
  choice["token_ids"] = ids;
  nlohmann::json body = {{"id", p.id},
                         {"object", p.api == Api::kChat ? "chat.completion" : "text_completion"},
                         {"created", p.created},
                         {"model", p.model},
                         {"choices", nlohmann::json::array({choice})}};
  if (p.usage) body["usage"] = Usage(p, n);
  return body;
}

std::vector<StreamPart> SimEngine::StreamParts(const Plan& p) const {
  std::vector<StreamPart> parts;
  std::size_t n = p.tokens.size();
  std::size_t limit = (p.fault == FaultKind::kDisconnect || p.fault == FaultKind::kStall) ? p.fault_after_tokens : n;
  std::size_t k = static_cast<std::size_t>(options_.tokens_per_chunk);
  std::vector<double> at(n);
  for (std::size_t i = 0; i < n; ++i) at[i] = (i == 0 ? p.ttft_ms : at[i - 1] + p.itl_ms[i]);

  if (p.api == Api::kResponses) {
    std::string msg_id = "msg_" + p.id.substr(5);
    int seq = 0;
    auto ev = [&](double t, const std::string& type, nlohmann::json j) {
      j["type"] = type;
      j["sequence_number"] = seq++;
      parts.push_back({t, SseEventNamed(type, j)});
    };
    ev(0, "response.created", {{"response", ResponseObject(p, "in_progress", false)}});
    ev(0, "response.in_progress", {{"response", ResponseObject(p, "in_progress", false)}});
    nlohmann::json item = {{"id", msg_id},
                           {"type", "message"},
                           {"status", "in_progress"},
                           {"role", "assistant"},
                           {"content", nlohmann::json::array()}};
    ev(p.ttft_ms, "response.output_item.added", {{"output_index", 0}, {"item", item}});
    ev(p.ttft_ms, "response.content_part.added",
       {{"item_id", msg_id},
        {"output_index", 0},
        {"content_index", 0},
        {"part", {{"type", "output_text"}, {"text", ""}, {"annotations", nlohmann::json::array()}}}});
    for (std::size_t i = 0; i < limit;) {
      std::size_t end = i == 0 ? 1 : std::min(limit, i + k);
      std::string delta;
      for (std::size_t j = i; j < end; ++j) delta += p.tokens[j];
      ev(at[end - 1], "response.output_text.delta",
         {{"item_id", msg_id},
          {"output_index", 0},
          {"content_index", 0},
          {"delta", delta},
          {"logprobs", nlohmann::json::array()}});
      i = end;
    }
    if (limit < n) return parts;
    double t_end = at[n - 1];
    std::string text = p.Text();
    ev(t_end, "response.output_text.done",
       {{"item_id", msg_id},
        {"output_index", 0},
        {"content_index", 0},
        {"text", text},
        {"logprobs", nlohmann::json::array()}});
    nlohmann::json part = {{"type", "output_text"}, {"text", text}, {"annotations", nlohmann::json::array()}};
    ev(t_end, "response.content_part.done",
       {{"item_id", msg_id}, {"output_index", 0}, {"content_index", 0}, {"part", part}});
    item["status"] = "completed";
    item["content"] = nlohmann::json::array({part});
    ev(t_end, "response.output_item.done", {{"output_index", 0}, {"item", item}});
    nlohmann::json final_response = ResponseObject(p, "completed", true);
    ev(t_end, final_response["status"] == "incomplete" ? "response.incomplete" : "response.completed",
       {{"response", final_response}});
    return parts;
  }

  bool chat = p.api == Api::kChat;
  const char* object = chat ? "chat.completion.chunk" : "text_completion";
  auto chunk = [&](nlohmann::json choice, std::size_t completed) {
    nlohmann::json j = {{"id", p.id},
                        {"object", object},
                        {"created", p.created},
                        {"model", p.model},
                        {"choices", nlohmann::json::array({std::move(choice)})}};
    if (p.continuous_usage) j["usage"] = Usage(p, completed);
    return Sse(j);
  };
  for (std::size_t i = 0; i < limit;) {
    std::size_t end = i == 0 ? 1 : std::min(limit, i + k);
    std::string text;
    nlohmann::json ids = nlohmann::json::array();
    for (std::size_t j = i; j < end; ++j) {
      text += p.tokens[j];
      ids.push_back(TokenId(p.tokens[j]));
    }
    bool last = end == n;
    nlohmann::json finish = last ? nlohmann::json(p.finish_reason) : nlohmann::json(nullptr);
    std::string bytes;
    if (chat) {
      nlohmann::json delta;
      if (i == 0) {  // vLLM serving_chat.py: the first chunk carries the role with empty content
        nlohmann::json role = {{"role", "assistant"}, {"content", ""}};
        bytes += chunk({{"index", 0}, {"delta", role}, {"logprobs", nullptr}, {"finish_reason", nullptr}}, 0);
      }
      if (p.tool_calls.is_null()) {
        delta = {{"content", text}};
      } else {
        nlohmann::json call = {{"index", 0}, {"function", {{"arguments", text}}}};
        if (i == 0) {
          call["id"] = p.tool_calls[0]["id"];
          call["type"] = "function";
          call["function"]["name"] = p.tool_calls[0]["function"]["name"];
        }
        delta = {{"tool_calls", nlohmann::json::array({call})}};
      }
      nlohmann::json choice = {
          {"index", 0}, {"delta", delta}, {"logprobs", nullptr}, {"finish_reason", finish}, {"token_ids", ids}};
      if (p.logprobs)
        choice["logprobs"] = ChatLogprobs(std::vector<std::string>(
            p.tokens.begin() + static_cast<std::ptrdiff_t>(i), p.tokens.begin() + static_cast<std::ptrdiff_t>(end)));
      bytes += chunk(choice, end);
    } else {
      bytes += chunk(
          {{"index", 0}, {"text", text}, {"logprobs", nullptr}, {"finish_reason", finish}, {"token_ids", ids}}, end);
    }
    parts.push_back({at[end - 1], std::move(bytes)});
    i = end;
  }
  if (limit < n) return parts;
  std::string tail;
  if (p.include_usage) {
    nlohmann::json j = {{"id", p.id},
                        {"object", object},
                        {"created", p.created},
                        {"model", p.model},
                        {"choices", nlohmann::json::array()},
                        {"usage", Usage(p, n)}};
    tail += Sse(j);
  }
  tail += "data: [DONE]\n\n";
  parts.push_back({at[n - 1], std::move(tail)});
  return parts;
}

nlohmann::json SimEngine::TokenizeBody(const nlohmann::json& body) const {
  std::string text;
  if (body.is_object() && body.contains("messages")) {
    text = RenderChat(body["messages"]);
  } else if (body.is_object() && body.contains("prompt") && body["prompt"].is_string()) {
    text = body["prompt"].get<std::string>();
  } else {
    Fail("/tokenize: expected \"prompt\" (string) or \"messages\" (array)");
  }
  auto pieces = Tokenize(text);
  nlohmann::json ids = nlohmann::json::array();
  for (const auto& t : pieces) ids.push_back(TokenId(t));
  nlohmann::json out = {{"count", pieces.size()}, {"max_model_len", options_.max_model_len}, {"tokens", ids}};
  if (BoolField(body, "return_token_strs")) out["token_strs"] = pieces;
  return out;
}

nlohmann::json SimEngine::ModelsBody(std::int64_t now_s) const {
  nlohmann::json model = {{"id", options_.model},
                          {"object", "model"},
                          {"created", now_s},
                          {"owned_by", "vllm"},
                          {"root", options_.model},
                          {"parent", nullptr},
                          {"max_model_len", options_.max_model_len}};
  return {{"object", "list"}, {"data", nlohmann::json::array({model})}};
}

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::string Grouped(std::int64_t v) {
  std::string s = std::to_string(v < 0 ? -v : v), out;
  int c = 0;
  for (auto it = s.rbegin(); it != s.rend(); ++it) {
    if (c > 0 && c % 3 == 0) out.insert(out.begin(), ',');
    out.insert(out.begin(), *it);
    ++c;
  }
  return v < 0 ? "-" + out : out;
}

double Gib(const nlohmann::json& figure, const JsonContext& ctx, std::string_view key) {
  const JsonContext c = ctx.Child(key);
  if (!figure.contains(std::string(key))) Fail("{}: missing", ctx.Where(key));
  const auto& f = figure.at(std::string(key));
  RequireObject(f, c);
  return static_cast<double>(ReqInt(f, "bytes", c, 0)) / kGiB;
}

}  // namespace

BootLayout BootLayoutFromPlanJson(const nlohmann::json& doc, const std::string& source) {
  const JsonContext top{source, ""};
  RequireObject(doc, top);
  const nlohmann::json* layout = nullptr;
  JsonContext ctx = top;
  if (doc.contains("plan") && doc["plan"].is_object()) {  // ppdeploy cmd --format json
    layout = &doc["plan"];
    ctx = top.Child("plan");
  } else {
    const std::string schema = OptString(doc, "schema", top).value_or("");
    if (schema != "ppdeploy.plan/2" && schema != "ppdeploy.plan/3")
      Fail(
          "{}: expected `ppdeploy plan --format json` (schema ppdeploy.plan/3) or `ppdeploy cmd --format json`, got "
          "schema \"{}\"",
          source, schema);
    if (!doc.contains("detailed") || !doc["detailed"].is_array() || doc["detailed"].empty())
      Fail("{}: no detailed layout (run `ppdeploy plan --tp T --pp P --format json`)", top.Where("detailed"));
    layout = &doc["detailed"][0];
    ctx = top.Child("detailed[0]");
  }
  const auto& L = *layout;
  RequireObject(L, ctx);
  BootLayout b;
  b.source = source;
  b.tensor_parallel_size = ReqIntAs<int>(L, "tensor_parallel_size", ctx, 1);
  b.pipeline_parallel_size = ReqIntAs<int>(L, "pipeline_parallel_size", ctx, 1);
  b.kv_tokens = ReqInt(L, "kv_tokens", ctx, 0);
  b.num_gpu_blocks = ReqInt(L, "num_gpu_blocks", ctx, 0);
  b.block_size = ReqIntAs<int>(L, "block_size", ctx, 1);
  b.max_model_len = ReqInt(L, "max_model_len", ctx, 1);
  b.partition = OptIntListAs<int>(L, "layer_partition", ctx, 0);
  if (!L.contains("ranks") || !L["ranks"].is_array() || L["ranks"].empty())
    Fail("{}: expected the per-stage memory of the layout", ctx.Where("ranks"));
  for (std::size_t i = 0; i < L["ranks"].size(); ++i) {
    const JsonContext rc = ctx.Child(fmt::format("ranks[{}]", i));
    const auto& r = L["ranks"][i];
    RequireObject(r, rc);
    BootStage s;
    s.pp_rank = ReqIntAs<int>(r, "pp_rank", rc, 0);
    s.weights_gib = Gib(r, rc, "weights");
    s.non_torch_gib = Gib(r, rc, "non_torch");
    s.activation_gib = Gib(r, rc, "activation");
    s.cuda_graph_estimate_gib = Gib(r, rc, "cuda_graph_estimate");
    s.cuda_graph_gib = Gib(r, rc, "cuda_graph_actual");
    s.available_kv_gib = Gib(r, rc, "available_kv");
    s.cuda_context_gib = Gib(r, rc, "cuda_context");
    s.kv_allocated_gib = static_cast<double>(ReqInt(r, "kv_allocated_bytes", rc, 0)) / kGiB;
    s.requested_gib = static_cast<double>(ReqInt(r, "requested_bytes", rc, 0)) / kGiB;
    s.num_blocks = ReqInt(r, "num_blocks", rc, 0);
    b.stages.push_back(s);
  }
  if (static_cast<int>(b.stages.size()) != b.pipeline_parallel_size)
    Fail("{}: {} stages for pipeline_parallel_size {}", ctx.Where("ranks"), b.stages.size(), b.pipeline_parallel_size);
  if (doc.contains("deployment") && doc["deployment"].is_object()) {
    const JsonContext dc = top.Child("deployment");
    const auto& d = doc["deployment"];
    b.gpu_total_gib = OptNumber(d, "gpu_total_gib", dc).value_or(0.0);
    b.gpu_memory_utilization = OptNumber(d, "gpu_memory_utilization", dc).value_or(0.9);
    b.kv_cache_dtype = OptString(d, "kv_cache_dtype", dc).value_or("auto");
  }
  if (!(b.gpu_total_gib > 0))  // cmd's JSON has no deployment block: the requested memory over the utilisation
    b.gpu_total_gib = b.stages.front().requested_gib / b.gpu_memory_utilization;
  return b;
}

std::int64_t SimEngine::NumGpuBlocks() const { return options_.kv_cache_tokens / std::max(1, options_.block_size); }

std::vector<std::string> SimEngine::StartupLog(int pid, const std::string& stamp, const std::string& url) const {
  const SimOptions& o = options_;
  std::string api = fmt::format("(APIServer pid={}) INFO {} ", pid, stamp);
  std::string core = fmt::format("(EngineCore_DP0 pid={}) INFO {} ", pid, stamp);
  double concurrency = static_cast<double>(o.kv_cache_tokens) / static_cast<double>(o.max_model_len);
  if (!o.boot_layout) {
    return {
        api + fmt::format("[api_server.py:1839] vLLM API server version {}", o.vllm_version),
        api + fmt::format("[utils.py:233] non-default args: {{'model': '{}', 'max_model_len': {}, 'max_num_seqs': {}}}",
                          o.model, o.max_model_len, o.max_num_seqs),
        core + fmt::format(
                   "[core.py:93] Initializing a V1 LLM engine (v{}) with config: model='{}', max_seq_len={}, seed={}",
                   o.vllm_version, o.model, o.max_model_len, o.seed),
        core + fmt::format("[gpu_model_runner.py:2653] Model loading took {:.2f} GiB memory and {:g} seconds",
                           o.model_load_gib, o.model_load_s),
        core + fmt::format("[gpu_worker.py:349] Available KV cache memory: {:.2f} GiB", o.available_kv_gib),
        core + fmt::format("[kv_cache_utils.py:1229] GPU KV cache size: {} tokens", Grouped(o.kv_cache_tokens)),
        core + fmt::format("[kv_cache_utils.py:1234] Maximum concurrency for {} tokens per request: {:.2f}x",
                           Grouped(o.max_model_len), concurrency),
        core + fmt::format("[core.py:218] init engine (profile, create kv cache, warmup model) took {:.2f} seconds",
                           o.init_engine_s),
        api + fmt::format("[api_server.py:1910] Starting vLLM API server 0 on {}", url),
    };
  }
  const BootLayout& b = *o.boot_layout;
  std::vector<std::string> lines;
  lines.push_back(api + fmt::format("[api_server.py:1839] vLLM API server version {}", o.vllm_version));
  lines.push_back(api + fmt::format("[utils.py:233] non-default args: {{'model': '{}', 'max_model_len': {}, "
                                    "'tensor_parallel_size': {}, 'pipeline_parallel_size': {}, 'block_size': {}, "
                                    "'kv_cache_dtype': '{}', 'gpu_memory_utilization': {}}}",
                                    o.model, o.max_model_len, b.tensor_parallel_size, b.pipeline_parallel_size,
                                    o.block_size, o.kv_cache_dtype, o.gpu_memory_utilization));
  lines.push_back(core + fmt::format("[core.py:93] Initializing a V1 LLM engine (v{}) with config: model='{}', "
                                     "max_seq_len={}, tensor_parallel_size={}, pipeline_parallel_size={}, seed={}",
                                     o.vllm_version, o.model, o.max_model_len, b.tensor_parallel_size,
                                     b.pipeline_parallel_size, o.seed));
  // vLLM 0.11 attention backends that need a block size set it and say so (vllm-rules.md §2 "Block size").
  lines.push_back(
      core +
      fmt::format("[interface.py:470] Setting kv cache block size to {} for FLASHMLA_SPARSE backend.", o.block_size));
  if (b.pipeline_parallel_size > 1 && !b.partition.empty()) {
    std::string split;
    for (std::size_t i = 0; i < b.partition.size(); ++i) split += (i ? "," : "") + std::to_string(b.partition[i]);
    lines.push_back(core + fmt::format("[utils.py:101] Hidden layers were unevenly partitioned: [{}]. This can be "
                                       "manually overridden using the VLLM_PP_LAYER_PARTITION environment variable",
                                       split));
  }
  auto worker = [&](const BootStage& s) {
    return fmt::format("(Worker_PP{}_TP0 pid={}) INFO {} ", s.pp_rank, pid + 1 + s.pp_rank, stamp);
  };
  for (const auto& s : b.stages)
    lines.push_back(worker(s) + fmt::format("[gpu_model_runner.py:2653] Model loading took {:.4f} GiB memory and {:g} "
                                            "seconds",
                                            s.weights_gib, o.model_load_s));
  for (const auto& s : b.stages)
    lines.push_back(worker(s) +
                    fmt::format("[gpu_worker.py:349] Available KV cache memory: {:.2f} GiB", s.available_kv_gib));
  lines.push_back(core +
                  fmt::format("[kv_cache_utils.py:1229] GPU KV cache size: {} tokens", Grouped(o.kv_cache_tokens)));
  lines.push_back(core + fmt::format("[kv_cache_utils.py:1234] Maximum concurrency for {} tokens per request: {:.2f}x",
                                     Grouped(o.max_model_len), concurrency));
  for (const auto& s : b.stages) {
    lines.push_back(worker(s) + fmt::format("[gpu_model_runner.py:3480] Graph capturing finished in 25 secs, took "
                                            "{:.2f} GiB",
                                            s.cuda_graph_gib));
    // N-era summary: "peak activation" includes the CUDA-graph estimate; CUDAGraph memory is the actual pool.
    lines.push_back(worker(s) +
                    fmt::format("[gpu_worker.py:789] Free memory on device ({:.2f}/{:.2f} GiB) on startup. Desired "
                                "GPU memory utilization is ({}, {:.2f} GiB). Actual usage is {:.2f} GiB for "
                                "consumed memory (weights + non-torch), {:.2f} GiB for peak activation, and {:.2f} "
                                "GiB for CUDAGraph memory. Current kv cache memory in use is {:.2f} GiB.",
                                b.gpu_total_gib - s.cuda_context_gib, b.gpu_total_gib, o.gpu_memory_utilization,
                                s.requested_gib, s.weights_gib + s.non_torch_gib,
                                s.activation_gib + s.cuda_graph_estimate_gib, s.cuda_graph_gib, s.kv_allocated_gib));
  }
  lines.push_back(core + fmt::format("[core.py:218] init engine (profile, create kv cache, warmup model) took {:.2f} "
                                     "seconds",
                                     o.init_engine_s));
  lines.push_back(api + fmt::format("[api_server.py:1910] Starting vLLM API server 0 on {}", url));
  return lines;
}

}  // namespace ppdeploy::sim
