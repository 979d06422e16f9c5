#include "probes/verify_result.h"

#include <cmath>
#include <limits>
#include <set>

#include "core/error.h"
#include "core/json_fields.h"

namespace ppdeploy::probes {

namespace {
constexpr const char* kSchema = "ppdeploy.verify/1";

std::vector<double> Samples(const nlohmann::json& obj, std::string_view key, const JsonContext& ctx) {
  std::vector<double> out;
  if (!obj.is_object() || !obj.contains(key) || obj[std::string(key)].is_null()) return out;
  const auto& arr = obj[std::string(key)];
  if (!arr.is_array()) Fail("{}: expected an array of numbers, got {}", ctx.Where(key), ShortJson(arr));
  for (const auto& v : arr) {
    if (!v.is_number()) Fail("{}: expected numbers, got {}", ctx.Where(key), ShortJson(v));
    out.push_back(v.get<double>());
  }
  return out;
}

std::optional<PassCount> Count(const nlohmann::json& obj, std::string_view key, const JsonContext& ctx) {
  if (!obj.is_object() || !obj.contains(key) || obj[std::string(key)].is_null()) return std::nullopt;
  const auto& c = obj[std::string(key)];
  const JsonContext cc = ctx.Child(key);
  RequireObject(c, cc);
  PassCount p{ReqInt(c, "passed", cc, 0), ReqInt(c, "total", cc, 0)};
  if (p.passed > p.total) Fail("{}: passed {} > total {}", cc.Where("passed"), p.passed, p.total);
  return p;
}

nlohmann::json CountJson(const PassCount& p) { return {{"passed", p.passed}, {"total", p.total}}; }
}  // namespace

nlohmann::json ToJson(const VerifyResult& r) {
  nlohmann::json j = r.unknown.is_object() ? r.unknown : nlohmann::json::object();
  j["schema"] = kSchema;
  j["label"] = r.label;
  if (r.kv_pool_predicted_tokens || r.kv_pool_logged_tokens) {
    nlohmann::json kv = nlohmann::json::object();
    if (r.kv_pool_predicted_tokens) kv["predicted_tokens"] = *r.kv_pool_predicted_tokens;
    if (!r.kv_pool_predicted_source.empty()) kv["predicted_source"] = r.kv_pool_predicted_source;
    if (r.kv_pool_logged_tokens) kv["logged_tokens"] = *r.kv_pool_logged_tokens;
    if (!r.kv_pool_logged_source.empty()) kv["logged_source"] = r.kv_pool_logged_source;
    j["kv_pool"] = kv;
  }
  if (r.max_model_len) {
    j["max_model_len"] = *r.max_model_len;
    if (!r.max_model_len_source.empty()) j["max_model_len_source"] = r.max_model_len_source;
  }
  if (!r.ranks.empty()) {
    nlohmann::json ranks = nlohmann::json::array();
    for (const auto& m : r.ranks) {
      nlohmann::json o = {{"rank", m.rank}};
      if (m.used_bytes) o["used_bytes"] = *m.used_bytes;
      if (m.total_bytes) o["total_bytes"] = *m.total_bytes;
      if (m.headroom_bytes) o["headroom_bytes"] = *m.headroom_bytes;
      ranks.push_back(o);
    }
    j["memory"] = {{"ranks", ranks}};
    if (!r.memory_source.empty()) j["memory"]["source"] = r.memory_source;
  }
  if (!r.step_ms.empty()) j["step_ms"] = r.step_ms;
  if (r.step_time) {
    const auto& h = *r.step_time;
    nlohmann::json bounds = nlohmann::json::array();
    for (double b : h.upper_bounds_ms) bounds.push_back(std::isfinite(b) ? nlohmann::json(b) : nlohmann::json());
    j["step_time_histogram"] = {{"upper_bounds_ms", bounds},
                                {"counts", h.counts},
                                {"mean_ms", h.mean_ms},
                                {"count", h.count},
                                {"source", h.source}};
  }
  if (!r.single_stream_tok_s.empty() || !r.concurrent_tok_s.empty()) {
    nlohmann::json t = nlohmann::json::object();
    if (!r.single_stream_tok_s.empty()) t["single_stream_tok_s"] = r.single_stream_tok_s;
    if (!r.concurrent_tok_s.empty()) {
      nlohmann::json c = nlohmann::json::object();
      for (const auto& [conc, v] : r.concurrent_tok_s) c[std::to_string(conc)] = v;
      t["concurrent_tok_s"] = c;
    }
    j["throughput"] = t;
  }
  if (r.degeneration) {
    const auto& d = *r.degeneration;
    j["degeneration"] = {
        {"completed", d.completed},
        {"degenerate", d.degenerate},
        {"normal_output_tokens", d.normal_output_tokens},
        {"median_normal_tokens", d.median_normal_tokens ? nlohmann::json(*d.median_normal_tokens) : nlohmann::json()}};
  }
  if (r.needle) {
    nlohmann::json cells = nlohmann::json::array();
    for (const auto& c : *r.needle) cells.push_back(ToJson(c));
    j["needle"] = {{"cells", cells}};
  }
  if (r.quality || r.responses || r.tools) {
    nlohmann::json p = nlohmann::json::object();
    if (r.quality) p["quality"] = CountJson(*r.quality);
    if (r.responses) p["responses"] = CountJson(*r.responses);
    if (r.tools) p["tools"] = CountJson(*r.tools);
    j["probes"] = p;
  }
  if (!r.requests.empty()) {
    nlohmann::json q = nlohmann::json::object();
    for (const auto& [step, c] : r.requests) q[step] = {{"failed", c.failed}, {"total", c.total}};
    j["requests"] = q;
  }
  if (r.ready_s) j["ready_s"] = *r.ready_s;
  if (!r.ready_source.empty()) j["ready_source"] = r.ready_source;
  if (!r.facts.is_null()) j["facts"] = r.facts;
  return j;
}

namespace {

// "step_time_histogram": bounds (null = +inf), counts, mean and count.
StepTimeHistogram StepTimeHistogramFromJson(const nlohmann::json& h, const JsonContext& c) {
  StepTimeHistogram s;
  if (!h.contains("upper_bounds_ms") || !h["upper_bounds_ms"].is_array())
    Fail("{}: expected an array of bounds (null = +inf)", c.Where("upper_bounds_ms"));
  for (const auto& b : h["upper_bounds_ms"]) {
    if (b.is_null())
      s.upper_bounds_ms.push_back(std::numeric_limits<double>::infinity());
    else if (b.is_number())
      s.upper_bounds_ms.push_back(b.get<double>());
    else
      Fail("{}: expected numbers or null, got {}", c.Where("upper_bounds_ms"), ShortJson(b));
  }
  s.counts = Samples(h, "counts", c);
  if (s.counts.size() != s.upper_bounds_ms.size())
    Fail("{}: {} counts for {} bounds", c.Where("counts"), s.counts.size(), s.upper_bounds_ms.size());
  s.mean_ms = ReqNumber(h, "mean_ms", c);
  s.count = ReqNumber(h, "count", c);
  s.source = OptString(h, "source", c).value_or("");
  return s;
}

// "throughput": single-stream samples and per-concurrency samples (keys are concurrencies >= 1).
void ReadThroughput(VerifyResult& r, const nlohmann::json& t, const JsonContext& c) {
  r.single_stream_tok_s = Samples(t, "single_stream_tok_s", c);
  if (t.contains("concurrent_tok_s") && !t["concurrent_tok_s"].is_null()) {
    const JsonContext cc = c.Child("concurrent_tok_s");
    RequireObject(t["concurrent_tok_s"], cc);
    for (const auto& [key, value] : t["concurrent_tok_s"].items()) {
      int conc = 0;
      try {
        std::size_t used = 0;
        conc = std::stoi(key, &used);
        if (used != key.size() || conc < 1) throw std::invalid_argument(key);
      } catch (const std::exception&) {
        Fail("{}: key must be a concurrency >= 1, got \"{}\"", cc.Where(key), key);
      }
      r.concurrent_tok_s[conc] = Samples(t["concurrent_tok_s"], key, cc);
    }
  }
}

// "needle": the grid's cells, each with a known status.
std::vector<NeedleCell> NeedleCellsFromJson(const nlohmann::json& n, const JsonContext& c) {
  std::vector<NeedleCell> cells;
  if (n.contains("cells")) {
    const auto& arr = n["cells"];
    if (!arr.is_array()) Fail("{}: expected an array", c.Where("cells"));
    for (std::size_t i = 0; i < arr.size(); ++i) {
      const JsonContext cc = c.Child(fmt::format("cells[{}]", i));
      RequireObject(arr[i], cc);
      const std::string status = ReqString(arr[i], "status", cc);
      if (status != "pass" && status != "fail" && status != "skipped" && status != "error")
        Fail("{}: expected pass, fail, skipped or error, got \"{}\"", cc.Where("status"), status);
      cells.push_back(NeedleCellFromJson(arr[i]));
    }
  }
  return cells;
}

}  // namespace

VerifyResult VerifyResultFromJson(const nlohmann::json& j, const std::string& source) {
  const JsonContext ctx{source, ""};
  RequireObject(j, ctx);
  const std::string schema = ReqString(j, "schema", ctx);
  if (schema != kSchema) Fail("{}: expected \"{}\", got \"{}\"", ctx.Where("schema"), kSchema, schema);
  VerifyResult r;
  r.label = OptString(j, "label", ctx).value_or("");
  static const std::set<std::string> known = {
      "schema", "label",   "kv_pool", "memory",       "step_ms",       "throughput",           "degeneration",
      "needle", "probes",  "ready_s", "ready_source", "max_model_len", "max_model_len_source", "step_time_histogram",
      "facts",  "requests"};
  for (const auto& [key, value] : j.items())
    if (!known.count(key)) r.unknown[key] = value;
  if (j.contains("kv_pool") && !j["kv_pool"].is_null()) {
    const JsonContext c = ctx.Child("kv_pool");
    RequireObject(j["kv_pool"], c);
    r.kv_pool_predicted_tokens = OptInt(j["kv_pool"], "predicted_tokens", c, 0);
    r.kv_pool_predicted_source = OptString(j["kv_pool"], "predicted_source", c).value_or("");
    r.kv_pool_logged_tokens = OptInt(j["kv_pool"], "logged_tokens", c, 0);
    r.kv_pool_logged_source = OptString(j["kv_pool"], "logged_source", c).value_or("");
  }
  r.max_model_len = OptInt(j, "max_model_len", ctx, 1);
  r.max_model_len_source = OptString(j, "max_model_len_source", ctx).value_or("");
  if (j.contains("memory") && !j["memory"].is_null()) {
    const JsonContext c = ctx.Child("memory");
    RequireObject(j["memory"], c);
    if (j["memory"].contains("ranks")) {
      const auto& ranks = j["memory"]["ranks"];
      if (!ranks.is_array()) Fail("{}: expected an array", c.Where("ranks"));
      for (std::size_t i = 0; i < ranks.size(); ++i) {
        const JsonContext rc = c.Child(fmt::format("ranks[{}]", i));
        RequireObject(ranks[i], rc);
        RankMemory m;
        m.rank = OptIntAs<int>(ranks[i], "rank", rc, 0).value_or(static_cast<int>(i));
        m.used_bytes = OptInt(ranks[i], "used_bytes", rc, 0);
        m.headroom_bytes = OptInt(ranks[i], "headroom_bytes", rc, INT64_MIN);
        m.total_bytes = OptInt(ranks[i], "total_bytes", rc, 0);
        r.ranks.push_back(m);
      }
    }
    r.memory_source = OptString(j["memory"], "source", c).value_or("");
  }
  r.step_ms = Samples(j, "step_ms", ctx);
  if (j.contains("step_time_histogram") && !j["step_time_histogram"].is_null()) {
    const JsonContext c = ctx.Child("step_time_histogram");
    const auto& h = j["step_time_histogram"];
    RequireObject(h, c);
    StepTimeHistogram s = StepTimeHistogramFromJson(h, c);
    r.step_time = s;
  }
  if (j.contains("throughput") && !j["throughput"].is_null()) {
    const JsonContext c = ctx.Child("throughput");
    const auto& t = j["throughput"];
    RequireObject(t, c);
    ReadThroughput(r, t, c);
  }
  if (j.contains("degeneration") && !j["degeneration"].is_null()) {
    const JsonContext c = ctx.Child("degeneration");
    const auto& d = j["degeneration"];
    RequireObject(d, c);
    DegenerationSection s;
    s.completed = ReqInt(d, "completed", c, 0);
    s.degenerate = ReqInt(d, "degenerate", c, 0);
    if (s.degenerate > s.completed)
      Fail("{}: degenerate {} > completed {}", c.Where("degenerate"), s.degenerate, s.completed);
    s.normal_output_tokens = Samples(d, "normal_output_tokens", c);
    s.median_normal_tokens = OptNumber(d, "median_normal_tokens", c);
    r.degeneration = s;
  }
  if (j.contains("needle") && !j["needle"].is_null()) {
    const JsonContext c = ctx.Child("needle");
    RequireObject(j["needle"], c);
    std::vector<NeedleCell> cells = NeedleCellsFromJson(j["needle"], c);
    r.needle = cells;
  }
  if (j.contains("probes") && !j["probes"].is_null()) {
    const JsonContext c = ctx.Child("probes");
    RequireObject(j["probes"], c);
    r.quality = Count(j["probes"], "quality", c);
    r.responses = Count(j["probes"], "responses", c);
    r.tools = Count(j["probes"], "tools", c);
  }
  if (j.contains("requests") && !j["requests"].is_null()) {
    const JsonContext c = ctx.Child("requests");
    RequireObject(j["requests"], c);
    for (const auto& [step, count] : j["requests"].items()) {
      const JsonContext cc = c.Child(step);
      RequireObject(count, cc);
      RequestCount n{ReqInt(count, "failed", cc, 0), ReqInt(count, "total", cc, 0)};
      if (n.failed > n.total) Fail("{}: failed {} > total {}", cc.Where("failed"), n.failed, n.total);
      r.requests[step] = n;
    }
  }
  r.ready_s = OptNumber(j, "ready_s", ctx);
  r.ready_source = OptString(j, "ready_source", ctx).value_or("");
  if (j.contains("facts") && !j["facts"].is_null()) {
    RequireObject(j["facts"], ctx.Child("facts"));
    r.facts = j["facts"];
  }
  return r;
}

void SetDegeneration(VerifyResult& result, const DegenSummary& summary) {
  DegenerationSection d;
  d.completed = summary.completed;
  d.degenerate = summary.degenerate;
  d.normal_output_tokens = summary.normal_output_tokens;
  d.median_normal_tokens = summary.median_normal_tokens;
  result.degeneration = d;
}

std::optional<std::pair<std::int64_t, std::int64_t>> RequestErrors(const VerifyResult& result) {
  if (result.requests.empty()) return std::nullopt;
  std::int64_t failed = 0, total = 0;
  for (const auto& [step, c] : result.requests) {
    failed += c.failed;
    total += c.total;
  }
  return std::make_pair(failed, total);
}

void SetNeedle(VerifyResult& result, const NeedleResult& needle) { result.needle = needle.cells; }

void SetProbes(VerifyResult& result, const ProbeSummary& probes) {
  if (probes.quality_total > 0) result.quality = PassCount{probes.quality_passed, probes.quality_total};
  if (probes.responses_total > 0) result.responses = PassCount{probes.responses_passed, probes.responses_total};
  if (probes.tools_total > 0) result.tools = PassCount{probes.tools_passed, probes.tools_total};
}

}  // namespace ppdeploy::probes
