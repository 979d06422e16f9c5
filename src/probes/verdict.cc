#include "probes/verdict.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "core/json_fields.h"
#include "core/units.h"
#include "stats/binomial.h"
#include "stats/samples.h"

namespace ppdeploy::probes {

namespace {
constexpr std::uint64_t kBootstrapSeed = 20261129;

enum class Direction { kHigher, kLower };

// Fixed-point with thousands separators: 729280 -> "729,280", 71.25 -> "71.25".
std::string Num(double v, int digits = 1) {
  std::string s = fmt::format("{:.{}f}", std::fabs(v), digits);
  const auto dot = s.find('.');
  const std::size_t int_len = dot == std::string::npos ? s.size() : dot;
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i > 0 && i < int_len && (int_len - i) % 3 == 0) out.push_back(',');
    out.push_back(s[i]);
  }
  return v < 0 ? "-" + out : out;
}

std::string Better(double a, double b, Direction dir) {
  if (a == b) return "tie";
  const bool a_wins = dir == Direction::kHigher ? a > b : a < b;
  return a_wins ? "A" : "B";
}

// "-" for `better`. Assigning the one-character literal itself makes GCC 12 at -O2/-O3 warn with
// a false -Wrestrict inside the inlined std::string::_M_replace (GCC bug 105329, "Bogus restrict
// warning when assigning 1-char string literal to std::string"); moving a string in does not.
std::string NotComparable() { return std::string(1, '-'); }

VerdictRow Missing(const std::string& metric, bool has_a, bool has_b, const std::string& how) {
  const char* who = !has_a && !has_b ? "both arms lack it" : !has_a ? "A lacks it" : "B lacks it";
  VerdictRow r;
  r.metric = metric;
  r.a = has_a ? "present" : "missing";
  r.b = has_b ? "present" : "missing";
  r.better = NotComparable();
  r.note = fmt::format("{} ({})", who, how);
  return r;
}

// A row for one measured value per arm (no test).
void SingleValueRow(Verdict& v, const std::string& metric, std::optional<double> a, std::optional<double> b,
                    Direction dir, const std::string& how, int digits, const std::string& unit,
                    const std::string& test_note = "single measurement, no test") {
  if (!a || !b) {
    v.rows.push_back(Missing(metric, a.has_value(), b.has_value(), how));
    v.partial = true;
    return;
  }
  VerdictRow r;
  r.metric = metric;
  r.a = Num(*a, digits) + unit;
  r.b = Num(*b, digits) + unit;
  r.better = Better(*a, *b, dir);
  if (*a != 0)
    r.note = fmt::format("B/A = {:.3f}; {}", *b / *a, test_note);
  else
    r.note = test_note;
  v.rows.push_back(r);
}

// A row comparing per-request samples.
void SamplesRow(Verdict& v, const std::string& metric, const std::vector<double>& a, const std::vector<double>& b,
                Direction dir, const std::string& how, const std::string& unit) {
  if (a.empty() || b.empty()) {
    v.rows.push_back(Missing(metric, !a.empty(), !b.empty(), how));
    v.partial = true;
    return;
  }
  VerdictRow r;
  r.metric = metric;
  const double ma = stats::Median(a), mb = stats::Median(b);
  r.a = fmt::format("median {}{} (n={})", Num(ma, 2), unit, a.size());
  r.b = fmt::format("median {}{} (n={})", Num(mb, 2), unit, b.size());
  r.better = Better(ma, mb, dir);
  if (a.size() >= 2 && b.size() >= 2) {
    const auto mw = stats::MannWhitney(a, b);
    r.test = "Mann-Whitney U, two-sided";
    r.p = mw.p_two_sided;
    r.significant = mw.p_two_sided < v.alpha;
    const auto ci = stats::BootstrapMedianDiff(a, b, kBootstrapSeed);
    r.note =
        fmt::format("median B-A {} [{}, {}] (bootstrap 95%)", Num(ci.estimate, 2), Num(ci.lower, 2), Num(ci.upper, 2));
    if (a.size() < 8 || b.size() < 8) r.note += "; few samples, normal approximation is rough";
  } else {
    r.note = "one sample in an arm, no test";
  }
  if (r.significant == false && r.better != "tie") r.note += "; difference not significant";
  v.rows.push_back(r);
}

// A row comparing event counts (lower event rate is better) with Fisher exact two-sided.
void CountsRow(Verdict& v, const std::string& metric, std::optional<std::pair<std::int64_t, std::int64_t>> a,
               std::optional<std::pair<std::int64_t, std::int64_t>> b, bool events_are_good, const std::string& how) {
  if (!a || !b) {
    v.rows.push_back(Missing(metric, a.has_value(), b.has_value(), how));
    v.partial = true;
    return;
  }
  auto show = [](std::pair<std::int64_t, std::int64_t> c) {
    return c.second > 0 ? fmt::format("{}/{} ({:.1f}%)", c.first, c.second, 100.0 * c.first / c.second)
                        : fmt::format("{}/{}", c.first, c.second);
  };
  VerdictRow r;
  r.metric = metric;
  r.a = show(*a);
  r.b = show(*b);
  if (a->second == 0 || b->second == 0) {
    r.better = NotComparable();
    r.note = "an arm has no trials";
    v.rows.push_back(r);
    v.partial = true;
    return;
  }
  const double ra = static_cast<double>(a->first) / static_cast<double>(a->second);
  const double rb = static_cast<double>(b->first) / static_cast<double>(b->second);
  r.better = Better(ra, rb, events_are_good ? Direction::kHigher : Direction::kLower);
  const auto f = stats::FisherExact(a->first, a->second, b->first, b->second);
  r.test = "Fisher exact, two-sided";
  r.p = f.two_sided;
  r.significant = f.two_sided < v.alpha;
  const auto ca = stats::ClopperPearson(a->first, a->second), cb = stats::ClopperPearson(b->first, b->second);
  r.note = fmt::format("95% CI A [{:.1f}%, {:.1f}%], B [{:.1f}%, {:.1f}%] (Clopper-Pearson)", 100 * ca.lower,
                       100 * ca.upper, 100 * cb.lower, 100 * cb.upper);
  // The seed quotes the one-sided p in the direction of the observed difference (docs/seed.md §7).
  if (ra != rb) {
    r.note += fmt::format("; one-sided p = {:.3g}", ra > rb ? f.greater : f.less);
    const bool a_worse = events_are_good ? ra < rb : ra > rb;
    r.note += fmt::format("; worse: {} ({})", a_worse ? "A" : "B", a_worse ? v.label_a : v.label_b);
  }
  v.rows.push_back(r);
}

// A row shown for information: both values, no better arm (more memory used can mean a larger pool).
void InfoRow(Verdict& v, const std::string& metric, std::optional<double> a, std::optional<double> b, int digits,
             const std::string& how, const std::string& note) {
  VerdictRow r;
  r.metric = metric;
  r.a = a ? Num(*a, digits) : "missing";
  r.b = b ? Num(*b, digits) : "missing";
  r.better.assign(1, '-');  // not = "-": GCC 12 -O3 warns falsely (-Wrestrict, PR 105329)
  r.note = !a || !b ? fmt::format("{} ({})",
                                  !a && !b ? "both arms lack it"
                                  : !a     ? "A lacks it"
                                           : "B lacks it",
                                  how)
                    : note;
  if (!a || !b) v.partial = true;
  v.rows.push_back(r);
}

// Step time from /metrics histograms (no per-step samples): the means, Mann-Whitney on the bucketed data.
void HistogramRow(Verdict& v, const std::string& metric, const std::optional<StepTimeHistogram>& a,
                  const std::optional<StepTimeHistogram>& b, const std::string& how) {
  if (!a || !b) {
    v.rows.push_back(Missing(metric, a.has_value(), b.has_value(), how));
    v.partial = true;
    return;
  }
  VerdictRow r;
  r.metric = metric;
  r.a = fmt::format("mean {} ms (n={}, /metrics)", Num(a->mean_ms, 2), Num(a->count, 0));
  r.b = fmt::format("mean {} ms (n={}, /metrics)", Num(b->mean_ms, 2), Num(b->count, 0));
  r.better = Better(a->mean_ms, b->mean_ms, Direction::kLower);
  if (a->upper_bounds_ms == b->upper_bounds_ms && a->counts.size() == b->counts.size()) {
    const auto mw = stats::MannWhitneyGrouped(a->counts, b->counts);
    r.test = "Mann-Whitney U on histogram buckets, two-sided";
    r.p = mw.p_two_sided;
    r.significant = mw.p_two_sided < v.alpha;
    r.note = fmt::format("mean B-A {} ms; observations in one bucket tie (the test sees the buckets only)",
                         Num(b->mean_ms - a->mean_ms, 2));
  } else {
    r.note = "the arms' histograms have different buckets, no test";
  }
  if (r.significant == false && r.better != "tie") r.note += "; difference not significant";
  v.rows.push_back(r);
}

// Concurrency at max_model_len: pool / max_model_len (the boot log's own line when the length is unknown).
std::optional<std::pair<double, std::int64_t>> ConcurrencyAtMaxLen(const VerifyResult& r) {
  if (r.kv_pool_logged_tokens && r.max_model_len && *r.max_model_len > 0)
    return std::make_pair(static_cast<double>(*r.kv_pool_logged_tokens) / static_cast<double>(*r.max_model_len),
                          *r.max_model_len);
  if (r.facts.is_object() && r.facts.contains("boot_log") && r.facts["boot_log"].is_object()) {
    const auto& boot = r.facts["boot_log"];
    if (boot.contains("max_concurrency") && boot["max_concurrency"].is_object()) {
      const auto& m = boot["max_concurrency"];
      if (m.contains("x") && m["x"].is_number() && m.contains("tokens_per_request") &&
          m["tokens_per_request"].is_number_integer())
        return std::make_pair(m["x"].get<double>(), m["tokens_per_request"].get<std::int64_t>());
    }
  }
  return std::nullopt;
}

std::map<int, double> StageKv(const VerifyResult& r) {
  std::map<int, double> out;
  if (!r.facts.is_object() || !r.facts.contains("boot_log")) return out;
  const auto& boot = r.facts["boot_log"];
  if (!boot.is_object() || !boot.contains("ranks") || !boot["ranks"].is_array()) return out;
  for (std::size_t i = 0; i < boot["ranks"].size(); ++i) {
    const auto& rank = boot["ranks"][i];
    if (!rank.is_object() || !rank.contains("available_kv_gib") || !rank["available_kv_gib"].is_number()) continue;
    const int pp =
        OptIntAs<int>(rank, "pp_rank", JsonContext{r.label, fmt::format("facts.boot_log.ranks[{}]", i)}).value_or(0);
    const double kv = rank["available_kv_gib"].get<double>();
    auto [it, inserted] = out.emplace(pp, kv);
    if (!inserted) it->second = std::min(it->second, kv);
  }
  return out;
}

std::string PlanDiff(std::int64_t measured, std::int64_t predicted) {
  return fmt::format("{:+.2f}%", 100.0 * (static_cast<double>(predicted) / static_cast<double>(measured) - 1.0));
}

std::optional<double> OptD(const std::optional<std::int64_t>& v) {
  return v ? std::optional<double>(static_cast<double>(*v)) : std::nullopt;
}

std::optional<double> MaxUsed(const VerifyResult& r) {
  std::optional<double> m;
  for (const auto& rank : r.ranks)
    if (rank.used_bytes) m = std::max(m.value_or(0.0), ToMiB(*rank.used_bytes));
  return m;
}
std::optional<double> MinHeadroom(const VerifyResult& r) {
  std::optional<double> m;
  for (const auto& rank : r.ranks)
    if (rank.headroom_bytes) m = m ? std::min(*m, ToMiB(*rank.headroom_bytes)) : ToMiB(*rank.headroom_bytes);
  return m;
}

std::optional<std::pair<std::int64_t, std::int64_t>> NeedleCounts(const VerifyResult& r) {
  if (!r.needle) return std::nullopt;
  std::int64_t passed = 0, total = 0;
  for (const auto& c : *r.needle) {
    // A cell whose request failed found nothing either way: it is a request error (that row), not a miss.
    if (c.status == "skipped" || c.status == "error") continue;
    ++total;
    if (c.status == "pass") ++passed;
  }
  return std::make_pair(passed, total);
}

std::optional<std::int64_t> LongestAllPass(const VerifyResult& r) {
  if (!r.needle) return std::nullopt;
  std::map<std::int64_t, bool> all_pass;
  for (const auto& c : *r.needle) {
    if (c.status == "skipped") continue;
    auto [it, inserted] = all_pass.emplace(c.length_tokens, true);
    it->second = it->second && c.status == "pass";
  }
  std::int64_t best = 0;
  for (const auto& [len, ok] : all_pass)
    if (ok) best = std::max(best, len);
  return best;
}

std::optional<std::pair<std::int64_t, std::int64_t>> Counts(const std::optional<PassCount>& c) {
  return c ? std::optional(std::make_pair(c->passed, c->total)) : std::nullopt;
}
}  // namespace

namespace {

// The planner's prediction beside the measured pool of each arm, and where each measurement came from.
void AnnotatePool(Verdict& v, const VerifyResult& a, const VerifyResult& b) {
  VerdictRow& pool = v.rows.back();
  std::vector<std::string> extra;
  for (const auto* arm : {&a, &b}) {
    const bool is_a = arm == &a;
    std::string& cell = is_a ? pool.a : pool.b;
    if (!arm->kv_pool_logged_tokens) continue;
    if (arm->kv_pool_predicted_tokens) {
      cell += fmt::format(" (plan {})", Num(static_cast<double>(*arm->kv_pool_predicted_tokens), 0));
      extra.push_back(fmt::format("plan vs measured {} {}", is_a ? "A" : "B",
                                  PlanDiff(*arm->kv_pool_logged_tokens, *arm->kv_pool_predicted_tokens)));
    }
    if (!arm->kv_pool_logged_source.empty())
      extra.push_back(fmt::format("{}: {}", is_a ? "A" : "B", arm->kv_pool_logged_source));
  }
  for (const auto& e : extra) pool.note += "; " + e;
}

// Concurrency at max_model_len: pool / max_model_len of each arm (comparable only at the same max_model_len).
void ConcurrencyRow(Verdict& v, const VerifyResult& a, const VerifyResult& b) {
  const auto ca = ConcurrencyAtMaxLen(a), cb = ConcurrencyAtMaxLen(b);
  if (!ca || !cb) {
    v.rows.push_back(Missing("concurrency at max_model_len (x)", ca.has_value(), cb.has_value(),
                             "pool / max_model_len: the pool and /v1/models max_model_len, or the boot log"));
    v.partial = true;
  } else {
    VerdictRow r;
    r.metric = "concurrency at max_model_len (x)";
    r.a = fmt::format("{:.2f}x at {}", ca->first, Num(static_cast<double>(ca->second), 0));
    r.b = fmt::format("{:.2f}x at {}", cb->first, Num(static_cast<double>(cb->second), 0));
    r.better = ca->second == cb->second ? Better(ca->first, cb->first, Direction::kHigher) : "-";
    r.note = ca->second == cb->second ? "pool / max_model_len (vLLM's 'Maximum concurrency'); deterministic, no test"
                                      : "different max_model_len: not comparable";
    v.rows.push_back(r);
  }
}

// Available KV per PP stage and nvidia-smi memory per GPU (information rows, no test).
void MemoryRows(Verdict& v, const VerifyResult& a, const VerifyResult& b) {
  {
    const auto ka = StageKv(a), kb = StageKv(b);
    std::set<int> stages;
    for (const auto& [s, kv] : ka) stages.insert(s);
    for (const auto& [s, kv] : kb) stages.insert(s);
    for (int s : stages) {
      auto ia = ka.find(s), ib = kb.find(s);
      InfoRow(v, fmt::format("available KV, PP{} (GiB)", s),
              ia == ka.end() ? std::nullopt : std::optional<double>(ia->second),
              ib == kb.end() ? std::nullopt : std::optional<double>(ib->second), 2,
              "boot log 'Available KV cache memory'",
              "boot log 'Available KV cache memory' (min over the stage's ranks); the pool is set by the tightest "
              "stage");
    }
  }
  {
    std::set<int> gpus;
    for (const auto* arm : {&a, &b})
      for (const auto& m : arm->ranks)
        if (m.used_bytes) gpus.insert(m.rank);
    auto used = [](const VerifyResult& r, int gpu) -> std::optional<double> {
      for (const auto& m : r.ranks)
        if (m.rank == gpu && m.used_bytes) return ToMiB(*m.used_bytes);
      return std::nullopt;
    };
    for (int g : gpus)
      InfoRow(v, fmt::format("GPU {} memory used (MiB)", g), used(a, g), used(b, g), 0, "nvidia-smi",
              "nvidia-smi memory.used");
  }
}

}  // namespace

Verdict Compare(const VerifyResult& a, const VerifyResult& b, double alpha) {
  Verdict v;
  v.label_a = a.label.empty() ? "A" : a.label;
  v.label_b = b.label.empty() ? "B" : b.label;
  v.alpha = alpha;
  SingleValueRow(v, "KV pool, predicted (tokens)", OptD(a.kv_pool_predicted_tokens), OptD(b.kv_pool_predicted_tokens),
                 Direction::kHigher, "ppdeploy plan", 0, "", "deterministic, no test");
  SingleValueRow(v, "KV pool, logged (tokens)", OptD(a.kv_pool_logged_tokens), OptD(b.kv_pool_logged_tokens),
                 Direction::kHigher, "vLLM start-up log 'GPU KV cache size' or /metrics vllm:cache_config_info", 0, "");
  AnnotatePool(v, a, b);
  ConcurrencyRow(v, a, b);
  MemoryRows(v, a, b);
  SingleValueRow(v, "peak memory per rank (MiB)", MaxUsed(a), MaxUsed(b), Direction::kLower, "nvidia-smi per rank", 0,
                 "");
  SingleValueRow(v, "tightest headroom (MiB)", MinHeadroom(a), MinHeadroom(b), Direction::kHigher,
                 "nvidia-smi per rank", 0, "");
  if ((a.step_ms.empty() || b.step_ms.empty()) && (a.step_time || b.step_time))
    HistogramRow(v, "step time (ms)", a.step_time, b.step_time,
                 "/metrics vllm:inter_token_latency_seconds over the verify bench");
  else
    SamplesRow(v, "step time (ms)", a.step_ms, b.step_ms, Direction::kLower, "step_ms samples", " ms");
  SamplesRow(v, "single-stream throughput (tok/s)", a.single_stream_tok_s, b.single_stream_tok_s, Direction::kHigher,
             "ppdeploy bench, concurrency 1", " tok/s");
  std::set<int> levels;
  for (const auto& [c, s] : a.concurrent_tok_s) levels.insert(c);
  for (const auto& [c, s] : b.concurrent_tok_s) levels.insert(c);
  if (levels.empty()) {
    v.rows.push_back(Missing("concurrent throughput (tok/s)", false, false, "ppdeploy bench --concurrency N"));
    v.partial = true;
  }
  static const std::vector<double> kNone;
  for (int c : levels) {
    auto ia = a.concurrent_tok_s.find(c);
    auto ib = b.concurrent_tok_s.find(c);
    SamplesRow(v, fmt::format("concurrency {} throughput per request (tok/s)", c),
               ia == a.concurrent_tok_s.end() ? kNone : ia->second, ib == b.concurrent_tok_s.end() ? kNone : ib->second,
               Direction::kHigher, fmt::format("ppdeploy bench --concurrency {}", c), " tok/s");
  }
  auto degen = [](const VerifyResult& r) {
    return r.degeneration ? std::optional(std::make_pair(r.degeneration->degenerate, r.degeneration->completed))
                          : std::nullopt;
  };
  CountsRow(v, "degeneration rate", degen(a), degen(b), false, "ppdeploy degen");
  if (a.degeneration && b.degeneration && !a.degeneration->normal_output_tokens.empty() &&
      !b.degeneration->normal_output_tokens.empty()) {
    SamplesRow(v, "normal answer length (tokens)", a.degeneration->normal_output_tokens,
               b.degeneration->normal_output_tokens, Direction::kLower, "ppdeploy degen", "");
  } else if (a.degeneration && b.degeneration && a.degeneration->median_normal_tokens &&
             b.degeneration->median_normal_tokens) {
    SingleValueRow(v, "normal answer length, median (tokens)", a.degeneration->median_normal_tokens,
                   b.degeneration->median_normal_tokens, Direction::kLower, "ppdeploy degen", 0, "",
                   "medians only, no test");
  }
  CountsRow(v, "needle recall", NeedleCounts(a), NeedleCounts(b), true, "ppdeploy needle");
  if (a.needle && b.needle)
    SingleValueRow(v, "longest all-pass needle length (tokens)", OptD(LongestAllPass(a)), OptD(LongestAllPass(b)),
                   Direction::kHigher, "ppdeploy needle", 0, "", "grid summary, no test");
  CountsRow(v, "quality probes", Counts(a.quality), Counts(b.quality), true, "ppdeploy probe");
  CountsRow(v, "Responses API round trips", Counts(a.responses), Counts(b.responses), true, "ppdeploy probe");
  CountsRow(v, "tool-call round trips", Counts(a.tools), Counts(b.tools), true, "ppdeploy probe");
  CountsRow(v, "request errors", RequestErrors(a), RequestErrors(b), false,
            "ppdeploy verify: failed requests of every step (HTTP errors, disconnects, timeouts)");
  SingleValueRow(v, "ready time (s)", a.ready_s, b.ready_s, Direction::kLower, "ppdeploy wait (run state)", 1, " s");
  return v;
}

nlohmann::json ToJson(const Verdict& v) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : v.rows) {
    rows.push_back({{"metric", r.metric},
                    {"a", r.a},
                    {"b", r.b},
                    {"better", r.better},
                    {"significant", r.significant ? nlohmann::json(*r.significant) : nlohmann::json()},
                    {"test", r.test},
                    {"p", r.p ? nlohmann::json(*r.p) : nlohmann::json()},
                    {"note", r.note}});
  }
  return {{"schema", "ppdeploy.verdict/1"}, {"a", v.label_a}, {"b", v.label_b}, {"alpha", v.alpha},
          {"partial", v.partial},           {"rows", rows}};
}

NewArmJudgement JudgeNewArm(const VerifyResult& a, const VerifyResult& b, const Verdict& v, double speed_tolerance) {
  NewArmJudgement j;
  auto worse = [&](std::string why) {
    j.worse = true;
    j.reasons.push_back(std::move(why));
  };
  auto row = [&](const std::string& metric) -> const VerdictRow* {
    for (const auto& r : v.rows)
      if (r.metric == metric) return &r;
    return nullptr;
  };
  // Events on B (degenerate answers, failed checks, failed requests) make it worse where A had none of them,
  // or where B's rate is significantly higher (the row's Fisher test): fewer events on B never do.
  struct Events {
    const char* metric;
    std::optional<std::pair<std::int64_t, std::int64_t>> a, b;  // events, total
  };
  auto failures = [](std::optional<std::pair<std::int64_t, std::int64_t>> c) {
    return c ? std::optional(std::make_pair(c->second - c->first, c->second)) : std::nullopt;
  };
  auto degen = [](const VerifyResult& r) {
    return r.degeneration ? std::optional(std::make_pair(r.degeneration->degenerate, r.degeneration->completed))
                          : std::nullopt;
  };
  const std::vector<Events> events = {
      {"degeneration rate", degen(a), degen(b)},
      {"needle recall", failures(NeedleCounts(a)), failures(NeedleCounts(b))},
      {"quality probes", failures(Counts(a.quality)), failures(Counts(b.quality))},
      {"Responses API round trips", failures(Counts(a.responses)), failures(Counts(b.responses))},
      {"tool-call round trips", failures(Counts(a.tools)), failures(Counts(b.tools))},
      {"request errors", RequestErrors(a), RequestErrors(b)}};
  for (const auto& e : events) {
    if (!e.b || e.b->second == 0 || e.b->first == 0) continue;
    const VerdictRow* r = row(e.metric);
    const bool significant = r && r->significant.value_or(false) && r->better == "A";
    // The degeneration probe's own rule (docs/seed.md §12: any degenerate answer is a problem) holds when the
    // control has no section to compare with.
    const bool a_none = !e.a ? std::string_view(e.metric) == "degeneration rate" : e.a->first == 0;
    const std::string_view name = e.metric == std::string_view("degeneration rate") ? "degeneration" : e.metric;
    if (a_none || significant)
      worse(fmt::format("{}: B {} vs A {}{}", name, r ? r->b : "?", r ? r->a : "missing",
                        r && r->p ? fmt::format(" (Fisher exact two-sided p = {:.3g})", *r->p) : ""));
  }
  if (a.kv_pool_logged_tokens && b.kv_pool_logged_tokens && *b.kv_pool_logged_tokens < *a.kv_pool_logged_tokens)
    worse(fmt::format("KV pool: B {} < A {} tokens", Num(static_cast<double>(*b.kv_pool_logged_tokens), 0),
                      Num(static_cast<double>(*a.kv_pool_logged_tokens), 0)));
  struct Speed {
    std::string metric;
    std::vector<double> a, b;
    Direction dir;
  };
  std::vector<Speed> speeds = {
      {"single-stream throughput (tok/s)", a.single_stream_tok_s, b.single_stream_tok_s, Direction::kHigher}};
  if (!a.step_ms.empty() && !b.step_ms.empty())
    speeds.push_back({"step time (ms)", a.step_ms, b.step_ms, Direction::kLower});
  for (const auto& [c, s] : b.concurrent_tok_s) {
    auto it = a.concurrent_tok_s.find(c);
    if (it != a.concurrent_tok_s.end())
      speeds.push_back(
          {fmt::format("concurrency {} throughput per request (tok/s)", c), it->second, s, Direction::kHigher});
  }
  for (const auto& s : speeds) {
    const VerdictRow* r = row(s.metric);
    if (r == nullptr || !r->significant.value_or(false) || r->better != "A" || s.a.empty() || s.b.empty()) continue;
    const double ma = stats::Median(s.a), mb = stats::Median(s.b);
    const double loss = s.dir == Direction::kHigher ? (ma - mb) / ma : (mb - ma) / ma;
    if (ma != 0 && loss > speed_tolerance)
      worse(fmt::format("{}: B median {} vs A {} ({:.1f}% worse, Mann-Whitney p = {:.3g})", s.metric, Num(mb, 2),
                        Num(ma, 2), 100 * loss, *r->p));
  }
  if (a.step_time && b.step_time && (a.step_ms.empty() || b.step_ms.empty())) {
    const VerdictRow* r = row("step time (ms)");
    const double loss =
        a.step_time->mean_ms > 0 ? (b.step_time->mean_ms - a.step_time->mean_ms) / a.step_time->mean_ms : 0;
    if (r && r->significant.value_or(false) && r->better == "A" && loss > speed_tolerance)
      worse(fmt::format("step time: B mean {} ms vs A {} ms ({:.1f}% slower, p = {:.3g})", Num(b.step_time->mean_ms, 2),
                        Num(a.step_time->mean_ms, 2), 100 * loss, *r->p));
  }
  for (const auto& r : v.rows)
    if (r.significant.value_or(false) && r.better == "B")
      j.better.push_back(fmt::format("{}: B {} vs A {} ({} p = {:.3g})", r.metric, r.b, r.a, r.test, *r.p));
  return j;
}

std::string ResultSentence(const Verdict& v, const NewArmJudgement& j) {
  std::string s = j.worse ? fmt::format("B ({}) is worse than A ({})", v.label_b, v.label_a)
                          : fmt::format("B ({}) is not worse than A ({})", v.label_b, v.label_a);
  s += j.reasons.empty() ? "." : ":";
  return s;
}

}  // namespace ppdeploy::probes
