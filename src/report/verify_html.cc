#include "report/verify_html.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/units.h"
#include "report/html_page.h"
#include "report/probe_report.h"
#include "report/svg.h"
#include "report/table.h"

namespace ppdeploy {
namespace {

std::string Esc(const std::string& s) { return XmlEscape(s); }

std::string Thousands(double v) {
  std::string s = fmt::format("{:.0f}", std::fabs(v));
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i > 0 && (s.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(s[i]);
  }
  return v < 0 ? "-" + out : out;
}

constexpr const char* kExtraCss = R"CSS(
p.judgement { font-size: 15px; font-weight: bold; padding: 6px 10px; border-left: 5px solid #009e73; background: #eef8f3; }
p.judgement.worse { border-color: #d55e00; background: #fbefe7; }
table.verdict td.better-A, table.verdict td.better-B { font-weight: bold; }
table.verdict tr.significant td { background: #fff7e0; }
table.facts td { white-space: pre-wrap; overflow-wrap: anywhere; text-align: left; max-width: 48em; }
)CSS";

struct Arm {
  std::string label;
  const probes::VerifyResult* result;
};

void PageHead(const std::string& title, const std::string& generator, std::ostream& out) {
  out << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n"
      << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n"
      << "<meta name=\"generator\" content=\"" << Esc(generator) << "\"/>\n"
      << "<title>" << Esc(title) << "</title>\n"
      << "<style>" << HtmlPageCss() << kExtraCss << "</style>\n</head>\n<body>\n";
}

double NiceCeil(double v) {
  if (!(v > 0)) return 1;
  const double mag = std::pow(10.0, std::floor(std::log10(v)));
  for (double m : {1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0})
    if (v <= m * mag) return m * mag;
  return 10 * mag;
}

// Memory per GPU per arm (nvidia-smi): grouped bars, each drawn inside the outline of its GPU's total.
std::string MemorySvg(const std::vector<Arm>& arms) {
  std::set<int> gpus;
  double ymax = 0;
  for (const auto& arm : arms)
    for (const auto& m : arm.result->ranks) {
      if (!m.used_bytes) continue;
      gpus.insert(m.rank);
      ymax = std::max({ymax, ToMiB(*m.used_bytes), m.total_bytes ? ToMiB(*m.total_bytes) : 0.0});
    }
  if (gpus.empty()) return "";
  ymax = NiceCeil(ymax * 1.05);
  const double W = 1160, H = 380, left = 80, right = 30, top = 40, bottom = 60;
  const double pw = W - left - right, ph = H - top - bottom;
  const double group_w = pw / static_cast<double>(gpus.size());
  const double bar_w = std::min(60.0, group_w * 0.8 / static_cast<double>(arms.size()));
  SvgWriter w(W, H, "memory",
              {{"class", "chart memory-chart"},
               {"role", "img"},
               {"aria-label", "memory used per GPU and arm (nvidia-smi)"},
               {"font-family", kSvgFont},
               {"font-size", "12"}});
  w.Title("Memory used per GPU and arm (nvidia-smi)");
  w.Text(left, 22, "Memory used per GPU (MiB, nvidia-smi); the outline is the GPU's total", {{"font-weight", "bold"}});
  auto Y = [&](double mib) { return top + (1 - mib / ymax) * ph; };
  w.Open("g", {{"class", "axes"}});
  for (int i = 0; i <= 5; ++i) {
    const double v = ymax * i / 5;
    w.Line(left, Y(v), left + pw, Y(v), {{"stroke", "#e3e3e3"}});
    w.Text(left - 6, Y(v) + 4, Thousands(v), {{"text-anchor", "end"}});
  }
  w.Rect(left, top, pw, ph, {{"fill", "none"}, {"stroke", "#888"}});
  w.Close();
  std::size_t g = 0;
  for (int gpu : gpus) {
    const double gx = left + group_w * static_cast<double>(g++);
    const double x0 = gx + (group_w - bar_w * static_cast<double>(arms.size())) / 2;
    for (std::size_t a = 0; a < arms.size(); ++a) {
      const auto& ranks = arms[a].result->ranks;
      auto it = std::find_if(ranks.begin(), ranks.end(), [&](const probes::RankMemory& m) { return m.rank == gpu; });
      if (it == ranks.end() || !it->used_bytes) continue;
      const double used = ToMiB(*it->used_bytes);
      const double total = it->total_bytes ? ToMiB(*it->total_bytes) : used;
      const double headroom = it->headroom_bytes ? ToMiB(*it->headroom_bytes) : total - used;
      const double x = x0 + bar_w * static_cast<double>(a);
      w.Open("g", {{"class", "gpu-arm"}});
      w.Title(fmt::format("GPU {}, {}: {} of {} MiB used, headroom {} MiB", gpu, arms[a].label, Thousands(used),
                          Thousands(total), Thousands(headroom)));
      w.Rect(x + 2, Y(total), bar_w - 4, Y(0) - Y(total),
             {{"class", "bar-total"}, {"fill", "#f4f4f4"}, {"stroke", "#999"}});
      w.Rect(x + 2, Y(used), bar_w - 4, Y(0) - Y(used),
             {{"class", "bar-used"},
              {"fill", SeriesColour(a)},
              {"data-gpu", std::to_string(gpu)},
              {"data-arm", std::to_string(a)},
              {"data-label", arms[a].label},
              {"data-used-mib", SvgNumber(used)},
              {"data-total-mib", SvgNumber(total)},
              {"data-headroom-mib", SvgNumber(headroom)}});
      w.Text(x + bar_w / 2, Y(total) - 4, Thousands(headroom), {{"text-anchor", "middle"}, {"font-size", "10"}});
      w.Close();
    }
    w.Text(gx + group_w / 2, top + ph + 16, fmt::format("GPU {}", gpu), {{"text-anchor", "middle"}});
  }
  for (std::size_t a = 0; a < arms.size(); ++a) {
    const double lx = left + 160.0 * static_cast<double>(a);
    w.Rect(lx, H - 22, 14, 10, {{"fill", SeriesColour(a)}});
    w.Text(lx + 20, H - 13, arms[a].label);
  }
  w.Text(left + pw, H - 13, "numbers above the bars: headroom (MiB)", {{"text-anchor", "end"}, {"fill", "#555"}});
  return w.Finish();
}

// KV pool per arm: the planner's prediction and the measured pool.
std::string PoolSvg(const std::vector<Arm>& arms) {
  double xmax = 0;
  bool any = false;
  for (const auto& arm : arms)
    for (auto v : {arm.result->kv_pool_predicted_tokens, arm.result->kv_pool_logged_tokens})
      if (v) {
        any = true;
        xmax = std::max(xmax, static_cast<double>(*v));
      }
  if (!any) return "";
  xmax = NiceCeil(xmax * 1.05);
  const double W = 1160, row_h = 26, left = 260, right = 40, top = 36;
  const double H = top + row_h * 2 * static_cast<double>(arms.size()) + 30;
  const double pw = W - left - right;
  SvgWriter w(W, H, "pool",
              {{"class", "chart pool-chart"},
               {"role", "img"},
               {"aria-label", "KV pool per arm: predicted and measured"},
               {"font-family", kSvgFont},
               {"font-size", "12"}});
  w.Title("KV pool per arm: the planner's prediction and the measured pool (tokens)");
  w.Text(10, 22, "KV pool (tokens): planner's prediction and measured", {{"font-weight", "bold"}});
  double y = top;
  for (std::size_t a = 0; a < arms.size(); ++a) {
    for (const auto& [kind, value] : std::vector<std::pair<std::string, std::optional<std::int64_t>>>{
             {"predicted", arms[a].result->kv_pool_predicted_tokens},
             {"measured", arms[a].result->kv_pool_logged_tokens}}) {
      w.Text(left - 8, y + 16, arms[a].label + ", " + kind, {{"text-anchor", "end"}});
      if (value) {
        const double len = static_cast<double>(*value) / xmax * pw;
        w.Rect(left, y + 4, len, row_h - 8,
               {{"class", "bar-pool"},
                {"fill", SeriesColour(a)},
                {"fill-opacity", kind == "predicted" ? "0.45" : "1"},
                {"data-arm", std::to_string(a)},
                {"data-kind", kind},
                {"data-tokens", std::to_string(*value)}});
        w.Text(left + len + 6, y + 16, Thousands(static_cast<double>(*value)));
      } else {
        w.Text(left + 6, y + 16, "missing", {{"fill", "#8a4b00"}});
      }
      y += row_h;
    }
  }
  return w.Finish();
}

std::string FactScalar(const nlohmann::json& v) {
  if (v.is_number_integer()) return Thousands(static_cast<double>(v.get<std::int64_t>()));
  if (v.is_number_float()) return fmt::format("{:.4g}", v.get<double>());
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    return s.size() > 200 ? s.substr(0, 200) + "..." : s;
  }
  return v.dump();  // true, false, null
}

bool AllScalars(const nlohmann::json& a) {
  return a.is_array() && std::all_of(a.begin(), a.end(), [](const nlohmann::json& x) { return x.is_primitive(); });
}
std::string JoinScalars(const nlohmann::json& a) {
  std::string joined;
  for (const auto& e : a) joined += (joined.empty() ? "" : ", ") + FactScalar(e);
  return joined.size() > 200 ? joined.substr(0, 200) + "..." : joined;
}

// An object or array fact as "key: value" lines (nested keys dotted, array items indexed: "ranks[1].pp_rank: 1";
// an array of scalars on one line), so a cell wraps instead of holding a line of raw JSON (issue 23 item 9).
void FactLines(const nlohmann::json& v, const std::string& prefix, std::vector<std::string>& lines) {
  constexpr std::size_t kMaxLines = 40;
  auto add = [&](const std::string& key, const nlohmann::json& x) {
    if (lines.size() == kMaxLines) lines.push_back("...");
    if (lines.size() > kMaxLines) return;
    if (x.is_primitive()) {
      lines.push_back(key + ": " + FactScalar(x));
    } else if (AllScalars(x)) {
      lines.push_back(key + ": " + JoinScalars(x));
    } else {
      FactLines(x, key, lines);
    }
  };
  if (v.is_object()) {
    for (const auto& [k, x] : v.items()) add(prefix.empty() ? k : prefix + "." + k, x);
  } else if (v.is_array()) {
    for (std::size_t i = 0; i < v.size(); ++i) add(fmt::format("{}[{}]", prefix, i), v[i]);
  }
}

std::string FactValue(const nlohmann::json& v) {
  if (v.is_primitive()) return FactScalar(v);
  if (AllScalars(v)) return JoinScalars(v);
  std::vector<std::string> lines;
  FactLines(v, "", lines);
  std::string out;
  for (const auto& l : lines) out += (out.empty() ? "" : "\n") + l;
  return out.empty() ? "(empty)" : out;
}

// Every fact of an arm: group, fact, value, source (or why it could not be had).
Table FactsTable(const probes::VerifyResult& r, const std::string& arm) {
  Table t;
  t.headers = {"arm", "group", "fact", "value", "source / why not"};
  if (!r.facts.is_object()) {
    t.AddRow({arm, "-", "-", "-", "no server facts in this result"});
    return t;
  }
  for (const auto& [group, g] : r.facts.items()) {
    if (!g.is_object()) continue;
    if (g.contains("unavailable") && g["unavailable"].is_string()) {
      t.AddRow({arm, group, "(all)", "unavailable", g["unavailable"].get<std::string>()});
      continue;
    }
    const std::string source = g.value("source", "");
    for (const auto& [k, v] : g.items()) {
      if (k == "source" || k == "unavailable") continue;
      t.AddRow({arm, group, k, FactValue(v), source});
    }
    if (g.contains("unavailable") && g["unavailable"].is_object())
      for (const auto& [k, v] : g["unavailable"].items())
        t.AddRow({arm, group, k, "unavailable", v.is_string() ? v.get<std::string>() : v.dump()});
  }
  return t;
}

Table StepsTable(const probes::VerifyResult& r) {
  Table t;
  t.headers = {"step", "status", "note"};
  if (!r.unknown.contains("verify") || !r.unknown["verify"].is_object() || !r.unknown["verify"].contains("steps"))
    return t;
  for (const auto& [name, st] : r.unknown["verify"]["steps"].items())
    t.AddRow({name, st.value("status", ""), st.value("note", "")});
  return t;
}

void MemorySection(const std::vector<Arm>& arms, std::ostream& out) {
  out << "<section id=\"memory\">\n<h2>Memory per GPU</h2>\n";
  const std::string svg = MemorySvg(arms);
  if (!svg.empty()) {
    out << "<figure>\n"
        << svg << "<figcaption>"
        << Esc("nvidia-smi memory.used of each GPU the deployment uses, per arm, inside the GPU's memory.total; the "
               "number above each bar is the headroom (total - used).")
        << "</figcaption>\n</figure>\n";
  } else {
    out << "<p class=\"warning\">No per-GPU memory in ";
    bool first = true;
    for (const auto& arm : arms) {
      std::string why = "no nvidia-smi facts";
      if (arm.result->facts.is_object() && arm.result->facts.contains("nvidia_smi") &&
          arm.result->facts["nvidia_smi"].contains("unavailable") &&
          arm.result->facts["nvidia_smi"]["unavailable"].is_string())
        why = arm.result->facts["nvidia_smi"]["unavailable"].get<std::string>();
      out << (first ? "" : "; ") << Esc(arm.label + ": " + why);
      first = false;
    }
    out << ".</p>\n";
  }
  out << "</section>\n";
}

void PoolSection(const std::vector<Arm>& arms, std::ostream& out) {
  out << "<section id=\"pool\">\n<h2>KV pool</h2>\n";
  const std::string svg = PoolSvg(arms);
  if (!svg.empty())
    out << "<figure>\n"
        << svg << "<figcaption>"
        << Esc("The planner's predicted pool (pale) beside the measured one (boot log 'GPU KV cache size', else "
               "/metrics num_gpu_blocks x block_size).")
        << "</figcaption>\n</figure>\n";
  else
    out << "<p class=\"warning\">No KV pool figure in either arm.</p>\n";
  out << "</section>\n";
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// The bench step's figures (issue 23 item 9: the page had none): per level the output token throughput and the
// request throughput over the level's wall time, then each request's decode speed (median).
void ThroughputRows(const probes::VerifyResult& r, Table& m) {
  const nlohmann::json levels = r.unknown.contains("bench") && r.unknown.at("bench").is_object()
                                    ? r.unknown.at("bench").value("levels", nlohmann::json::array())
                                    : nlohmann::json::array();
  for (const auto& l : levels) {
    if (!l.is_object() || !l.contains("output_tok_s") || !l["output_tok_s"].is_number()) continue;
    m.AddRow({fmt::format("bench throughput, concurrency {}", l.value("concurrency", 0)),
              fmt::format("output {:.1f} tok/s, {:.2f} requests/s ({} requests, {} failed, {:.1f} s)",
                          l["output_tok_s"].get<double>(), l.value("request_throughput_rps", 0.0),
                          l.value("requests", 0), l.value("failed", 0), l.value("duration_s", 0.0))});
  }
  if (!r.single_stream_tok_s.empty())
    m.AddRow({"single-stream decode per request",
              fmt::format("median {:.1f} tok/s (n={})", Median(r.single_stream_tok_s), r.single_stream_tok_s.size())});
  for (const auto& [c, samples] : r.concurrent_tok_s)
    if (!samples.empty())
      m.AddRow({fmt::format("concurrency {} decode per request", c),
                fmt::format("median {:.1f} tok/s (n={})", Median(samples), samples.size())});
  if (const auto e = probes::RequestErrors(r))
    m.AddRow({"request errors", fmt::format("{}/{} failed", e->first, e->second)});
}

}  // namespace

void RenderVerifyHtml(const probes::VerifyResult& r, std::ostream& out) {
  const std::string label = r.label.empty() ? "arm" : r.label;
  PageHead("ppdeploy verify: " + label, "ppdeploy verify --format html", out);
  out << "<header>\n<h1>" << Esc("ppdeploy verify: " + label) << "</h1>\n";
  if (r.unknown.contains("server") && r.unknown["server"].is_object()) {
    const auto& s = r.unknown["server"];
    out << "<p class=\"run\">"
        << Esc(fmt::format("model {}{}", s.value("model", "?"),
                           s.contains("version") ? ", vLLM " + FactValue(s["version"]) : ""))
        << "</p>\n";
  }
  out << "<nav><ul><li><a href=\"#steps\">Steps</a></li><li><a href=\"#memory\">Memory per GPU</a></li><li><a "
         "href=\"#pool\">KV pool</a></li><li><a href=\"#facts\">Server facts</a></li></ul></nav>\n</header>\n";
  out << "<section id=\"steps\">\n<h2>Steps</h2>\n<div class=\"table-wrap\">\n";
  WriteHtmlTable(StepsTable(r), "steps", out);
  out << "</div>\n";
  Table m;
  m.headers = {"measurement", "value"};
  if (r.degeneration)
    m.AddRow({"degeneration", fmt::format("{}/{} degenerate", r.degeneration->degenerate, r.degeneration->completed)});
  if (r.needle) {
    int pass = 0, total = 0;
    for (const auto& c : *r.needle)
      if (c.status != "skipped") {
        ++total;
        pass += c.status == "pass" ? 1 : 0;
      }
    m.AddRow({"needle", fmt::format("{}/{} found", pass, total)});
  }
  ThroughputRows(r, m);
  for (const auto& [name, c] : std::vector<std::pair<std::string, std::optional<probes::PassCount>>>{
           {"quality probes", r.quality}, {"Responses API", r.responses}, {"tool round trips", r.tools}})
    if (c) m.AddRow({name, fmt::format("{}/{}", c->passed, c->total)});
  if (r.step_time) m.AddRow({"step time (mean, /metrics)", fmt::format("{:.2f} ms", r.step_time->mean_ms)});
  if (r.ready_s) m.AddRow({"ready time", fmt::format("{:.0f} s", *r.ready_s)});
  if (!m.rows.empty()) WriteHtmlTable(m, "measurements", out);
  out << "</section>\n";
  const std::vector<Arm> arms = {{label, &r}};
  MemorySection(arms, out);
  PoolSection(arms, out);
  out << "<section id=\"facts\">\n<h2>Server facts</h2>\n<div class=\"table-wrap\">\n";
  WriteHtmlTable(FactsTable(r, label), "facts", out);
  out << "</div>\n</section>\n</body>\n</html>\n";
}

void RenderVerdictHtml(const probes::Verdict& v, const probes::VerifyResult& a, const probes::VerifyResult& b,
                       const std::optional<probes::NewArmJudgement>& judgement, std::ostream& out) {
  PageHead(fmt::format("ppdeploy verdict: A = {} vs B = {}", v.label_a, v.label_b), "ppdeploy verdict --format html",
           out);
  out << "<header>\n<h1>" << Esc(fmt::format("Verdict: A = {} vs B = {}", v.label_a, v.label_b)) << "</h1>\n";
  out << "<p class=\"muted\">"
      << Esc(fmt::format("alpha {}; tests: Fisher exact (counts), Mann-Whitney U (samples); single measurements get "
                         "no test.",
                         v.alpha))
      << "</p>\n";
  if (judgement) {
    out << "<p class=\"judgement" << (judgement->worse ? " worse" : "") << "\">"
        << Esc(probes::ResultSentence(v, *judgement)) << " ";
    for (std::size_t i = 0; i < judgement->reasons.size(); ++i) out << (i ? "; " : "") << Esc(judgement->reasons[i]);
    if (!judgement->better.empty())
      out << (judgement->reasons.empty() ? "" : " ") << Esc(probes::kBetterHeading) << " ";
    for (std::size_t i = 0; i < judgement->better.size(); ++i) out << (i ? "; " : "") << Esc(judgement->better[i]);
    out << "</p>\n";
  }
  out << "<nav><ul><li><a href=\"#verdict\">A/B table</a></li><li><a href=\"#memory\">Memory per GPU</a></li><li><a "
         "href=\"#pool\">KV pool</a></li><li><a href=\"#facts\">Server facts</a></li></ul></nav>\n</header>\n";
  out << "<section id=\"verdict\">\n<h2>A/B table</h2>\n<div class=\"table-wrap\">\n<table class=\"verdict\">\n"
      << "<thead><tr><th>metric</th><th>" << Esc("A: " + v.label_a) << "</th><th>" << Esc("B: " + v.label_b)
      << "</th><th>better</th><th>significant</th><th>test</th><th>p</th><th>note</th></tr></thead>\n<tbody>\n";
  for (const auto& r : v.rows) {
    const std::string sig = !r.significant ? "-" : *r.significant ? "yes" : "no";
    out << "<tr data-metric=\"" << Esc(r.metric) << "\" data-better=\"" << Esc(r.better) << "\""
        << (r.significant.value_or(false) ? " class=\"significant\"" : "") << "><td>" << Esc(r.metric)
        << "</td><td class=\"num\">" << Esc(r.a) << "</td><td class=\"num\">" << Esc(r.b) << "</td><td class=\"better-"
        << Esc(r.better == "-" ? "none" : r.better) << "\">" << Esc(r.better) << "</td><td>" << sig << "</td><td>"
        << Esc(r.test.empty() ? "-" : r.test) << "</td><td class=\"num\">"
        << (r.p ? Esc(report::FormatP(*r.p)) : std::string("-")) << "</td><td>" << Esc(r.note) << "</td></tr>\n";
  }
  out << "</tbody>\n</table>\n</div>\n";
  if (v.partial)
    out << "<p class=\"warning\">Partial verdict: some metrics are missing in an arm (see the notes).</p>\n";
  out << "</section>\n";
  const std::vector<Arm> arms = {{"A: " + v.label_a, &a}, {"B: " + v.label_b, &b}};
  MemorySection(arms, out);
  PoolSection(arms, out);
  out << "<section id=\"facts\">\n<h2>Server facts</h2>\n<div class=\"table-wrap\">\n";
  Table facts = FactsTable(a, "A");
  for (auto& row : FactsTable(b, "B").rows) facts.AddRow(row);
  WriteHtmlTable(facts, "facts", out);
  out << "</div>\n</section>\n</body>\n</html>\n";
}

}  // namespace ppdeploy
