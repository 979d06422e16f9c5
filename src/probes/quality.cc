#include "probes/quality.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <exception>
#include <mutex>
#include <thread>

#include "core/error.h"

namespace ppdeploy::probes {

namespace {
std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool IsWordChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }

// `word` occurs in `text` delimited by non-word characters.
bool HasWord(std::string_view text, std::string_view word, bool case_sensitive = false) {
  const std::string t = case_sensitive ? std::string(text) : Lower(text);
  const std::string w = case_sensitive ? std::string(word) : Lower(word);
  for (std::size_t pos = t.find(w); pos != std::string::npos; pos = t.find(w, pos + 1)) {
    const bool left_ok = pos == 0 || !IsWordChar(t[pos - 1]);
    const bool right_ok = pos + w.size() >= t.size() || !IsWordChar(t[pos + w.size()]);
    if (left_ok && right_ok) return true;
  }
  return false;
}

// Numbers in reading order; "6,912" -> 6912, "3.5" -> 3.5, "-4" -> -4.
std::vector<double> Numbers(std::string_view text) {
  std::vector<double> out;
  std::size_t i = 0;
  while (i < text.size()) {
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) {
      ++i;
      continue;
    }
    const bool negative = i > 0 && text[i - 1] == '-' && (i < 2 || !IsWordChar(text[i - 2]));
    std::string digits;
    while (i < text.size()) {
      const char c = text[i];
      if (std::isdigit(static_cast<unsigned char>(c))) {
        digits.push_back(c);
      } else if ((c == ',' || c == '.') && i + 1 < text.size() &&
                 std::isdigit(static_cast<unsigned char>(text[i + 1]))) {
        if (c == '.') digits.push_back('.');
        // ',' between digits: a thousands separator, dropped
      } else {
        break;
      }
      ++i;
    }
    try {
      out.push_back((negative ? -1.0 : 1.0) * std::stod(digits));
    } catch (const std::exception&) {
      // "1.2.3": not a number we grade on
    }
  }
  return out;
}

bool HasNumber(std::string_view text, double value) {
  for (double v : Numbers(text))
    if (std::fabs(v - value) < 1e-9 * std::max(1.0, std::fabs(value))) return true;
  return false;
}

std::string Cut(std::string_view s, std::size_t n = 200) { return std::string(s.substr(0, n)); }

CheckOutcome ExpectNumber(const std::string& a, double v) {
  return {HasNumber(a, v), fmt::format("expected the number {}", v)};
}
CheckOutcome ExpectWord(const std::string& a, std::string_view w, bool case_sensitive = false) {
  return {HasWord(a, w, case_sensitive), fmt::format("expected the word \"{}\"", w)};
}

// Calls fn(i) for i in [0, n) on up to `concurrency` threads. The first exception thrown by fn
// (e.g. a JSONL write failing in a callback) stops new work and is rethrown after the join.
void ParallelFor(std::size_t n, int concurrency, const std::function<void(std::size_t)>& fn) {
  std::atomic<std::size_t> next{0};
  std::atomic<bool> stop{false};
  std::mutex error_mutex;
  std::exception_ptr error;
  auto worker = [&] {
    for (std::size_t i = next.fetch_add(1); i < n && !stop.load(); i = next.fetch_add(1)) {
      try {
        fn(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
        stop.store(true);
      }
    }
  };
  const std::size_t k = std::min<std::size_t>(n, static_cast<std::size_t>(std::max(1, concurrency)));
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < k; ++t) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  if (error) std::rethrow_exception(error);
}

nlohmann::json ParseArguments(const nlohmann::json& call) {
  if (!call.is_object() || !call.contains("function") || !call["function"].is_object()) return nlohmann::json();
  const nlohmann::json& fn = call["function"];
  const nlohmann::json args = fn.contains("arguments") ? fn["arguments"] : nlohmann::json();
  if (args.is_object()) return args;
  if (args.is_string()) {
    auto parsed = nlohmann::json::parse(args.get<std::string>(), nullptr, false);
    if (!parsed.is_discarded()) return parsed;
  }
  return nlohmann::json();
}

bool ArgMatches(const nlohmann::json& got, const nlohmann::json& want) {
  if (want.is_string()) return got.is_string() && Lower(got.get<std::string>()) == Lower(want.get<std::string>());
  if (want.is_number()) {
    if (got.is_number()) return got.get<double>() == want.get<double>();
    if (got.is_string()) return HasNumber(got.get<std::string>(), want.get<double>());
    return false;
  }
  return got == want;
}
}  // namespace

const std::vector<QualityProbe>& QualityProbes() {
  static const std::vector<QualityProbe> probes = {
      {"arithmetic", "What is 17 multiplied by 23? Reply with the number only.",
       [](const std::string& a) { return ExpectNumber(a, 391); }},
      {"word_count",
       "How many words are in this sentence: \"The quick brown fox jumps over the lazy dog\"? Reply with the number "
       "only.",
       [](const std::string& a) {
         return CheckOutcome{HasNumber(a, 9) || HasWord(a, "nine"), "expected 9 (or \"nine\")"};
       }},
      {"json_object",
       "Reply with only a JSON object that has two keys: \"name\" set to the string \"Ada\" and \"year\" set to the "
       "integer 1815. No other text.",
       [](const std::string& a) {
         const auto l = a.find('{'), r = a.rfind('}');
         if (l == std::string::npos || r == std::string::npos || r < l) return CheckOutcome{false, "no JSON object"};
         auto j = nlohmann::json::parse(a.substr(l, r - l + 1), nullptr, false);
         const bool ok =
             j.is_object() && j.value("name", nlohmann::json()) == "Ada" && j.value("year", nlohmann::json()) == 1815;
         return CheckOutcome{ok, "expected {\"name\": \"Ada\", \"year\": 1815}"};
       }},
      {"capital", "What is the capital city of Australia? Reply with the city name only.",
       [](const std::string& a) { return ExpectWord(a, "Canberra"); }},
      {"unit_conversion", "How many metres are in 3.5 kilometres? Reply with the number only.",
       [](const std::string& a) { return ExpectNumber(a, 3500); }},
      {"sort_list",
       "Sort these numbers in ascending order and reply with them comma-separated, nothing else: 42, 7, 19, 3, 25",
       [](const std::string& a) {
         const std::vector<double> want{3, 7, 19, 25, 42};
         const auto got = Numbers(a);
         const bool ok = std::search(got.begin(), got.end(), want.begin(), want.end()) != got.end();
         return CheckOutcome{ok, "expected 3, 7, 19, 25, 42 in this order"};
       }},
      {"reverse_word", "Write the word \"stressed\" backwards. Reply with the reversed word only.",
       [](const std::string& a) { return ExpectWord(a, "desserts"); }},
      {"maximum", "Which is the largest of these numbers: 14, 91, 37, 58? Reply with the number only.",
       [](const std::string& a) {
         const auto got = Numbers(a);
         return CheckOutcome{!got.empty() && got.front() == 91, "expected 91 as the first number"};
       }},
      {"weekday", "If today is Friday, what day of the week will it be in two days? Reply with the day only.",
       [](const std::string& a) { return ExpectWord(a, "Sunday"); }},
      {"uppercase", "Convert \"hello world\" to uppercase. Reply with the converted text only.",
       [](const std::string& a) {
         return CheckOutcome{a.find("HELLO WORLD") != std::string::npos, "expected \"HELLO WORLD\""};
       }},
      {"prime", "Is 97 a prime number? Reply with yes or no.",
       [](const std::string& a) {
         return CheckOutcome{HasWord(a, "yes") && !HasWord(a, "no"), "expected \"yes\" (and no \"no\")"};
       }},
      {"chemical_symbol", "What is the chemical symbol for gold? Reply with the symbol only.",
       [](const std::string& a) { return ExpectWord(a, "Au", /*case_sensitive=*/true); }},
  };
  return probes;
}

nlohmann::json ToolDeclarations(std::string_view first_function) {
  nlohmann::json tools = nlohmann::json::parse(R"([
    {"type": "function", "function": {"name": "get_weather",
      "description": "Current weather for a city.",
      "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City name"}},
                     "required": ["city"]}}},
    {"type": "function", "function": {"name": "add",
      "description": "Adds two integers exactly.",
      "parameters": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                     "required": ["a", "b"]}}}
  ])");
  if (tools[1]["function"]["name"] == first_function) std::swap(tools[0], tools[1]);
  return tools;
}

const std::vector<ToolProbe>& ToolProbes() {
  static const std::vector<ToolProbe> probes = [] {
    std::vector<ToolProbe> v;
    const std::vector<std::string> cities = {"Paris", "Tokyo",  "Nairobi", "Lima",   "Oslo",
                                             "Cairo", "Sydney", "Toronto", "Mumbai", "Reykjavik"};
    const std::vector<std::string> conditions = {"light rain", "clear", "overcast", "fog", "snow showers"};
    for (std::size_t i = 0; i < cities.size(); ++i) {
      const int temp = 11 + static_cast<int>(i) * 3;  // 11..38 C, distinct per city
      const std::string cond = conditions[i % conditions.size()];
      v.push_back({"weather-" + Lower(cities[i]),
                   fmt::format("What is the weather in {} right now? Use the get_weather tool.", cities[i]),
                   "get_weather",
                   {{"city", cities[i]}},
                   nlohmann::json{{"city", cities[i]}, {"temperature_c", temp}, {"condition", cond}}.dump(),
                   std::to_string(temp)});
    }
    const std::vector<std::pair<int, int>> pairs = {{1234, 5678}, {907, 4411},   {2718, 3141},  {65535, 1},
                                                    {4242, 1717}, {9001, 777},   {31337, 2600}, {1999, 2026},
                                                    {8080, 443},  {12345, 54321}};
    for (const auto& [a, b] : pairs) {
      v.push_back({fmt::format("add-{}-{}", a, b),
                   fmt::format("Use the add tool to compute {} + {}, then tell me the result.", a, b),
                   "add",
                   {{"a", a}, {"b", b}},
                   nlohmann::json{{"result", a + b}}.dump(),
                   std::to_string(a + b)});
    }
    return v;
  }();
  return probes;
}

nlohmann::json ResponsesRequest(const QualityProbe& probe, std::int64_t max_output_tokens) {
  return {{"input", probe.prompt}, {"max_output_tokens", max_output_tokens}, {"temperature", 0}};
}

std::string ResponsesText(const nlohmann::json& body) {
  if (body.is_object() && body.contains("output_text") && body["output_text"].is_string())
    return body["output_text"].get<std::string>();
  if (!body.is_object() || !body.contains("output") || !body["output"].is_array())
    Fail("responses: body has neither output_text nor an output array");
  std::string text;
  for (const auto& item : body["output"]) {
    if (!item.is_object() || !item.contains("content") || !item["content"].is_array()) continue;
    for (const auto& part : item["content"])
      if (part.is_object() && part.value("type", "") == "output_text" && part.contains("text") &&
          part["text"].is_string())
        text += part["text"].get<std::string>();
  }
  return text;
}

ProbeRecord RunToolProbe(ChatBackend& backend, const ToolProbe& probe, std::int64_t max_tokens, bool check_arguments) {
  ProbeRecord rec{"tools", probe.name, false, false, "", "", -1};
  ChatRequest req;
  req.messages = nlohmann::json::array({{{"role", "user"}, {"content", probe.prompt}}});
  req.tools = ToolDeclarations(probe.function);
  req.extra = {{"tool_choice", "auto"}};
  req.max_tokens = max_tokens;
  req.temperature = 0.0;
  req.tag = "tools-" + probe.name;
  const ChatResult first = backend.Chat(req);
  if (!first.ok) {
    rec.cancelled = first.cancelled;
    rec.error = true;
    rec.detail = "call 1: " + first.error;
    return rec;
  }
  if (!first.tool_calls.is_array() || first.tool_calls.empty()) {
    rec.detail = "call 1: expected a tool call, got none";
    rec.answer = Cut(AnswerText(first.text));
    return rec;
  }
  const auto& call = first.tool_calls[0];
  const std::string fn = call.is_object() && call.contains("function") && call["function"].is_object()
                             ? call["function"].value("name", std::string())
                             : std::string();
  if (fn != probe.function) {
    rec.detail = fmt::format("call 1: expected function {}, got \"{}\"", probe.function, fn);
    return rec;
  }
  const nlohmann::json args = ParseArguments(call);
  std::string arg_note;
  for (const auto& [key, want] : probe.expected_args.items()) {
    if (!args.is_object() || !args.contains(key) || !ArgMatches(args[key], want)) {
      arg_note = fmt::format("argument {} expected {}, got arguments {}", key, want.dump(),
                             args.is_null() ? "(unparseable)" : args.dump());
      if (check_arguments) {
        rec.detail = "call 1: " + arg_note;
        return rec;
      }
      break;
    }
  }
  const std::string call_id = call.value("id", std::string("call_0"));
  req.messages.push_back({{"role", "assistant"}, {"content", nullptr}, {"tool_calls", nlohmann::json::array({call})}});
  req.messages.push_back({{"role", "tool"}, {"tool_call_id", call_id}, {"content", probe.tool_result}});
  const ChatResult second = backend.Chat(req);
  rec.e2e_ms = (first.e2e_ms >= 0 && second.e2e_ms >= 0) ? first.e2e_ms + second.e2e_ms : -1;
  if (!second.ok) {
    rec.cancelled = second.cancelled;
    rec.error = true;
    rec.detail = "call 2: " + second.error;
    return rec;
  }
  const std::string answer = AnswerText(second.text);
  rec.answer = Cut(answer);
  std::string flat;  // drop thousands separators between digits: "6,912" -> "6912"
  for (std::size_t i = 0; i < answer.size(); ++i) {
    if (answer[i] == ',' && i > 0 && i + 1 < answer.size() && std::isdigit(static_cast<unsigned char>(answer[i - 1])) &&
        std::isdigit(static_cast<unsigned char>(answer[i + 1])))
      continue;
    flat.push_back(answer[i]);
  }
  rec.pass = flat.find(probe.must_contain) != std::string::npos;
  rec.detail =
      rec.pass ? "tool called, result used" : fmt::format("final answer lacks the tool result {}", probe.must_contain);
  if (!arg_note.empty()) rec.detail += " (not checked: " + arg_note + ")";
  return rec;
}

ProbeSummary RunProbes(ChatBackend& backend, const ProbeConfig& config,
                       const std::function<void(const ProbeRecord&)>& on_record) {
  ProbeSummary s;
  std::mutex mu;
  auto record = [&](ProbeRecord r) {
    std::lock_guard<std::mutex> lock(mu);
    if (r.cancelled) {
      ++s.cancelled;
      return;
    }
    s.records.push_back(std::move(r));
    if (on_record) on_record(s.records.back());
  };
  const auto& quality = QualityProbes();
  if (config.quality) {
    ParallelFor(quality.size(), config.concurrency, [&](std::size_t i) {
      const auto& p = quality[i];
      ChatRequest req;
      req.messages = nlohmann::json::array({{{"role", "user"}, {"content", p.prompt}}});
      req.max_tokens = config.max_tokens;
      req.temperature = 0.0;
      req.tag = "quality-" + p.name;
      ChatResult res;
      try {
        res = backend.Chat(req);
      } catch (const std::exception& e) {
        res.ok = false;
        res.error = e.what();
      }
      ProbeRecord r{"quality", p.name, false, !res.ok, res.error, "", res.e2e_ms, res.cancelled};
      if (res.ok) {
        const std::string answer = AnswerText(res.text);
        const CheckOutcome o = p.check(answer);
        r.pass = o.pass;
        r.detail = o.detail;
        r.answer = Cut(answer);
      }
      record(std::move(r));
    });
  }
  if (config.responses) {
    const std::size_t n = std::min<std::size_t>(10, quality.size());
    ParallelFor(n, config.concurrency, [&](std::size_t i) {
      const auto& p = quality[i];
      ProbeRecord r{"responses", p.name, false, false, "", "", -1};
      PostResult res;
      try {
        res = backend.Post("/v1/responses", ResponsesRequest(p, config.max_tokens));
      } catch (const std::exception& e) {
        res.ok = false;
        res.error = e.what();
      }
      r.e2e_ms = res.e2e_ms;
      r.cancelled = res.cancelled;
      if (!res.ok) {
        r.error = true;
        r.detail = res.error.empty() ? fmt::format("HTTP {}", res.http_status) : res.error;
      } else {
        try {
          const std::string answer = AnswerText(ResponsesText(res.body));
          const CheckOutcome o = p.check(answer);
          r.pass = o.pass;
          r.detail = o.detail;
          r.answer = Cut(answer);
        } catch (const Error& e) {
          r.detail = e.what();
        }
      }
      record(std::move(r));
    });
  }
  if (config.tools) {
    const auto& tools = ToolProbes();
    ParallelFor(tools.size(), config.concurrency, [&](std::size_t i) {
      ProbeRecord r;
      try {
        r = RunToolProbe(backend, tools[i], config.max_tokens, config.check_tool_arguments);
      } catch (const std::exception& e) {
        r = ProbeRecord{"tools", tools[i].name, false, true, e.what(), "", -1};
      }
      record(std::move(r));
    });
  }
  for (const auto& r : s.records) {
    int* passed = r.kind == "quality"     ? &s.quality_passed
                  : r.kind == "responses" ? &s.responses_passed
                                          : &s.tools_passed;
    int* total = r.kind == "quality" ? &s.quality_total : r.kind == "responses" ? &s.responses_total : &s.tools_total;
    ++*total;
    if (r.pass) ++*passed;
  }
  return s;
}

ExitCode ProbeExitCode(const ProbeSummary& s) {
  if (s.records.empty()) return ExitCode::kError;
  for (const auto& r : s.records)
    if (!r.pass) return ExitCode::kCheckFailed;
  return ExitCode::kOk;
}

nlohmann::json ToJson(const ProbeRecord& r) {
  return {{"kind", r.kind},     {"name", r.name},     {"pass", r.pass},    {"error", r.error},
          {"detail", r.detail}, {"answer", r.answer}, {"e2e_ms", r.e2e_ms}};
}

nlohmann::json ToJson(const ProbeSummary& s) {
  nlohmann::json records = nlohmann::json::array();
  for (const auto& r : s.records) records.push_back(ToJson(r));
  return {{"schema", "ppdeploy.probes/1"},
          {"quality", {{"passed", s.quality_passed}, {"total", s.quality_total}}},
          {"responses", {{"passed", s.responses_passed}, {"total", s.responses_total}}},
          {"tools", {{"passed", s.tools_passed}, {"total", s.tools_total}}},
          {"records", records}};
}

}  // namespace ppdeploy::probes
