#include "probes/degen_run.h"

#include <algorithm>
#include <mutex>

#include "core/error.h"
#include "core/json_fields.h"

namespace ppdeploy::probes {

std::vector<DegenPrompt> DegenPromptSet(std::string_view name) {
  const DegenPrompt identity{"p5_identity", "Who are you? Introduce yourself briefly."};
  if (name == "identity") return {identity};
  if (name == "rotation")
    return {
        {"p1_story", "Write a short story about a lighthouse keeper in about 150 words."},
        {"p2_explain", "Explain how a hash table works, in a few short paragraphs."},
        {"p3_code", "Write a Python function that checks whether a string is a palindrome, and explain it briefly."},
        {"p4_list", "List five tips for writing clear technical documentation."},
        identity};
  Fail("degen: unknown prompt set \"{}\" (expected identity or rotation)", name);
}

std::vector<ChatRequest> BuildDegenRequests(const DegenConfig& config) {
  if (config.trials < 1) Fail("degen: trials must be >= 1, got {}", config.trials);
  if (config.max_tokens < 1) Fail("degen: max_tokens must be >= 1, got {}", config.max_tokens);
  const auto prompts = DegenPromptSet(config.prompt_set);
  std::vector<ChatRequest> out;
  out.reserve(static_cast<std::size_t>(config.trials));
  for (int i = 0; i < config.trials; ++i) {
    const auto& p = prompts[static_cast<std::size_t>(i) % prompts.size()];
    ChatRequest r;
    r.messages = nlohmann::json::array({{{"role", "user"}, {"content", p.text}}});
    r.max_tokens = config.max_tokens;
    r.temperature = config.temperature;
    r.top_p = config.top_p;
    if (config.seed) r.seed = *config.seed + i;
    if (config.request_token_ids) r.extra["return_token_ids"] = true;
    r.tag = p.id;
    out.push_back(std::move(r));
  }
  return out;
}

DegenTrial ClassifyTrial(int index, const ChatRequest& request, const ChatResult& result,
                         const DegenerationParams& params) {
  DegenTrial t;
  t.index = index;
  t.prompt_id = request.tag;
  t.ok = result.ok;
  t.cancelled = result.cancelled;
  t.error = result.error;
  t.finish_reason = result.finish_reason;
  t.e2e_ms = result.e2e_ms;
  if (result.completion_tokens >= 0) {
    t.output_tokens = result.completion_tokens;
  } else if (result.token_ids) {
    t.output_tokens = static_cast<std::int64_t>(result.token_ids->size());
  }
  if (!result.ok) return t;
  const DegenerationCheck c = CheckDegeneration(result, params);
  t.degenerate = c.degenerate;
  t.unit = c.unit;
  t.period = c.period;
  t.repeats = c.repeats;
  t.head = result.text.substr(0, 160);
  t.tail = result.text.size() > 160 ? result.text.substr(result.text.size() - 160) : result.text;
  return t;
}

DegenSummary Summarize(std::vector<DegenTrial> trials) {
  std::sort(trials.begin(), trials.end(), [](const auto& a, const auto& b) { return a.index < b.index; });
  DegenSummary s;
  s.trials = static_cast<int>(trials.size());
  for (const auto& t : trials) {
    if (!t.ok) {
      ++s.errors;
      continue;
    }
    ++s.completed;
    if (t.finish_reason == "length") ++s.hit_cap;
    if (t.degenerate) {
      ++s.degenerate;
    } else if (t.output_tokens >= 0) {
      s.normal_output_tokens.push_back(static_cast<double>(t.output_tokens));
    }
  }
  s.rate = s.completed > 0 ? static_cast<double>(s.degenerate) / s.completed : 0.0;
  s.ci95 = stats::ClopperPearson(s.degenerate, s.completed);
  if (!s.normal_output_tokens.empty()) s.median_normal_tokens = stats::Median(s.normal_output_tokens);
  s.records = std::move(trials);
  return s;
}

DegenSummary RunDegen(ChatBackend& backend, const DegenConfig& config,
                      const std::function<void(const DegenTrial&)>& on_trial) {
  const auto requests = BuildDegenRequests(config);
  std::vector<DegenTrial> trials(requests.size());
  RunMany(backend, requests, config.concurrency, [&](std::size_t i, const ChatResult& r) {
    trials[i] = ClassifyTrial(static_cast<int>(i), requests[i], r, config.params);
    if (on_trial && !trials[i].cancelled) on_trial(trials[i]);
  });
  // An interrupted run summarises the trials that finished; the cut ones are counted apart.
  const auto cut =
      std::stable_partition(trials.begin(), trials.end(), [](const DegenTrial& t) { return !t.cancelled; });
  const int cancelled = static_cast<int>(trials.end() - cut);
  trials.erase(cut, trials.end());
  DegenSummary s = Summarize(std::move(trials));
  s.cancelled = cancelled;
  return s;
}

BaselineComparison CompareWithBaseline(const DegenSummary& current, const DegenSummary& baseline) {
  BaselineComparison c;
  c.degenerate = current.degenerate;
  c.completed = current.completed;
  c.baseline_degenerate = baseline.degenerate;
  c.baseline_completed = baseline.completed;
  c.fisher = stats::FisherExact(current.degenerate, current.completed, baseline.degenerate, baseline.completed);
  if (current.median_normal_tokens && baseline.median_normal_tokens && *baseline.median_normal_tokens > 0)
    c.median_ratio = *current.median_normal_tokens / *baseline.median_normal_tokens;
  if (!current.normal_output_tokens.empty() && !baseline.normal_output_tokens.empty())
    c.lengths_test = stats::MannWhitney(current.normal_output_tokens, baseline.normal_output_tokens);
  return c;
}

ExitCode DegenExitCode(const DegenSummary& s) {
  if (s.degenerate > 0) return ExitCode::kCheckFailed;
  if (s.completed == 0) return ExitCode::kError;
  return ExitCode::kOk;
}

nlohmann::json ToJson(const DegenTrial& t) {
  return {{"trial", t.index},
          {"prompt_id", t.prompt_id},
          {"ok", t.ok},
          {"error", t.error},
          {"finish_reason", t.finish_reason},
          {"output_tokens", t.output_tokens},
          {"degenerate", t.degenerate},
          {"unit", t.unit},
          {"period", t.period},
          {"repeats", t.repeats},
          {"e2e_ms", t.e2e_ms},
          {"head", t.head},
          {"tail", t.tail}};
}

DegenTrial DegenTrialFromJson(const nlohmann::json& j, const std::string& source) {
  const JsonContext ctx{source, ""};
  RequireObject(j, ctx);
  DegenTrial t;
  t.index = ReqIntAs<int>(j, "trial", ctx, 0);
  t.prompt_id = OptString(j, "prompt_id", ctx).value_or("");
  t.ok = OptBool(j, "ok", ctx).value_or(false);
  t.error = OptString(j, "error", ctx).value_or("");
  t.finish_reason = OptString(j, "finish_reason", ctx).value_or("");
  t.output_tokens = OptInt(j, "output_tokens", ctx, -1).value_or(-1);
  t.degenerate = OptBool(j, "degenerate", ctx).value_or(false);
  t.unit = OptString(j, "unit", ctx).value_or("");
  t.period = OptIntAs<int>(j, "period", ctx, 0).value_or(0);
  t.repeats = OptInt(j, "repeats", ctx, 0).value_or(0);
  if (j.contains("e2e_ms") && j["e2e_ms"].is_number()) t.e2e_ms = j["e2e_ms"].get<double>();
  t.head = OptString(j, "head", ctx).value_or("");
  t.tail = OptString(j, "tail", ctx).value_or("");
  return t;
}

nlohmann::json ToJson(const DegenSummary& s, bool with_records) {
  nlohmann::json j = {
      {"schema", "ppdeploy.degen/1"},
      {"trials", s.trials},
      {"completed", s.completed},
      {"errors", s.errors},
      {"degenerate", s.degenerate},
      {"hit_cap", s.hit_cap},
      {"rate", s.rate},
      {"ci95", {s.ci95.lower, s.ci95.upper}},
      {"median_normal_tokens", s.median_normal_tokens ? nlohmann::json(*s.median_normal_tokens) : nlohmann::json()},
      {"normal_output_tokens", s.normal_output_tokens}};
  if (with_records) {
    nlohmann::json records = nlohmann::json::array();
    for (const auto& t : s.records) records.push_back(ToJson(t));
    j["records"] = records;
  }
  return j;
}

nlohmann::json ToJson(const BaselineComparison& c) {
  nlohmann::json j = {{"degenerate", c.degenerate},
                      {"completed", c.completed},
                      {"baseline_degenerate", c.baseline_degenerate},
                      {"baseline_completed", c.baseline_completed},
                      {"fisher_p_greater", c.fisher.greater},
                      {"fisher_p_two_sided", c.fisher.two_sided},
                      {"median_ratio", c.median_ratio ? nlohmann::json(*c.median_ratio) : nlohmann::json()}};
  if (c.lengths_test) j["lengths_mann_whitney_p"] = c.lengths_test->p_two_sided;
  return j;
}

namespace {
// A summary from counts only (no records): the rate's inputs and the normal lengths.
DegenSummary SummaryFromCounts(const nlohmann::json& j, const JsonContext& ctx) {
  DegenSummary s;
  s.completed = ReqIntAs<int>(j, "completed", ctx, 0);
  s.degenerate = ReqIntAs<int>(j, "degenerate", ctx, 0);
  if (s.degenerate > s.completed)
    Fail("{}: degenerate {} > completed {}", ctx.Where("degenerate"), s.degenerate, s.completed);
  s.trials = OptIntAs<int>(j, "trials", ctx, 0).value_or(s.completed);
  s.errors = OptIntAs<int>(j, "errors", ctx, 0).value_or(0);
  s.hit_cap = OptIntAs<int>(j, "hit_cap", ctx, 0).value_or(0);
  if (j.contains("normal_output_tokens") && j["normal_output_tokens"].is_array())
    for (const auto& v : j["normal_output_tokens"])
      if (v.is_number()) s.normal_output_tokens.push_back(v.get<double>());
  s.rate = s.completed > 0 ? static_cast<double>(s.degenerate) / s.completed : 0.0;
  s.ci95 = stats::ClopperPearson(s.degenerate, s.completed);
  if (!s.normal_output_tokens.empty()) {
    s.median_normal_tokens = stats::Median(s.normal_output_tokens);
  } else if (auto m = OptNumber(j, "median_normal_tokens", ctx)) {
    s.median_normal_tokens = *m;
  }
  return s;
}
}  // namespace

DegenSummary ParseDegenBaseline(std::string_view text, const std::string& source) {
  auto whole = nlohmann::json::parse(text.begin(), text.end(), nullptr, false);
  if (!whole.is_discarded() && whole.is_object()) {
    const std::string schema = whole.value("schema", "");
    const JsonContext ctx{source, ""};
    if (schema == "ppdeploy.degen/1") {
      if (whole.contains("records") && whole["records"].is_array() && !whole["records"].empty()) {
        std::vector<DegenTrial> trials;
        for (const auto& r : whole["records"]) trials.push_back(DegenTrialFromJson(r, source));
        return Summarize(std::move(trials));
      }
      return SummaryFromCounts(whole, ctx);
    }
    if (schema == "ppdeploy.verify/1") {
      if (!whole.contains("degeneration") || !whole["degeneration"].is_object())
        Fail("{}: verify result has no degeneration section", source);
      return SummaryFromCounts(whole["degeneration"], ctx.Child("degeneration"));
    }
    if (whole.contains("trial")) return Summarize({DegenTrialFromJson(whole, source)});  // one-line JSONL
    Fail("{}: expected a ppdeploy.degen/1 or ppdeploy.verify/1 object, or JSONL trial records (schema \"{}\")", source,
         schema);
  }
  std::vector<DegenTrial> trials;
  std::size_t start = 0, line_no = 0;
  while (start < text.size()) {
    auto end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    ++line_no;
    const std::string_view line = text.substr(start, end - start);
    start = end + 1;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    const std::string where = fmt::format("{}:{}", source, line_no);
    trials.push_back(DegenTrialFromJson(ParseJsonText(line, where), where));
  }
  if (trials.empty()) Fail("{}: no trial records", source);
  return Summarize(std::move(trials));
}

}  // namespace ppdeploy::probes
