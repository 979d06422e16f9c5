#include "report/probe_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "core/escape.h"

namespace ppdeploy::report {

namespace {
// A Markdown table cell: line breaks become spaces, other non-printable bytes are escaped by the one
// convention (core/escape.h), and '|' is escaped for Markdown.
std::string Escape(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  std::replace(s.begin(), s.end(), '\r', ' ');
  std::string out;
  for (char c : EscapeForMessage(s, 0)) {
    if (c == '|') out += '\\';
    out.push_back(c);
  }
  return out;
}
}  // namespace

std::string FormatP(double p) {
  if (p < 0.001) return fmt::format("{:.2e}", p);
  if (p < 0.1) return fmt::format("{:.4f}", p);
  return fmt::format("{:.2f}", p);
}

std::string VerdictMarkdown(const probes::Verdict& v) {
  std::string s =
      fmt::format("## Verdict: A = {} vs B = {} (alpha {})\n\n", Escape(v.label_a), Escape(v.label_b), v.alpha);
  s += "| metric | A | B | better | significant | test | p | note |\n";
  s += "|---|---|---|---|---|---|---|---|\n";
  for (const auto& r : v.rows) {
    const std::string sig = !r.significant ? "-" : *r.significant ? "yes" : "no";
    s += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} |\n", Escape(r.metric), Escape(r.a), Escape(r.b),
                     r.better, sig, r.test.empty() ? "-" : Escape(r.test), r.p ? FormatP(*r.p) : "-", Escape(r.note));
  }
  if (v.partial) s += "\nPartial verdict: some metrics are missing in an arm (see the notes).\n";
  return s;
}

std::string DegenMarkdown(const probes::DegenSummary& d, const std::optional<probes::BaselineComparison>& base) {
  std::string s = "## Degeneration\n\n";
  s += "| trials | completed | errors | degenerate | rate | 95% CI (Clopper-Pearson) | hit cap | median normal length "
       "(tokens) |\n";
  s += "|---|---|---|---|---|---|---|---|\n";
  s += fmt::format("| {} | {} | {} | {} | {:.1f}% | [{:.1f}%, {:.1f}%] | {} | {} |\n", d.trials, d.completed, d.errors,
                   d.degenerate, 100 * d.rate, 100 * d.ci95.lower, 100 * d.ci95.upper, d.hit_cap,
                   d.median_normal_tokens ? fmt::format("{:.0f}", *d.median_normal_tokens) : "-");
  bool any = false;
  for (const auto& t : d.records) {
    if (!t.degenerate) continue;
    if (!any)
      s += "\nDegenerate trials:\n\n| trial | prompt | tokens | period | repeats | tail |\n|---|---|---|---|---|---|\n";
    any = true;
    s += fmt::format("| {} | {} | {} | {} {} | {} | {} |\n", t.index, t.prompt_id, t.output_tokens, t.period, t.unit,
                     t.repeats, Escape(t.tail.size() > 60 ? t.tail.substr(t.tail.size() - 60) : t.tail));
  }
  if (base) {
    s += fmt::format(
        "\nBaseline: {}/{} degenerate; this run {}/{}. Fisher exact one-sided (this run worse) p = {}, two-sided p "
        "= {}.\n",
        base->baseline_degenerate, base->baseline_completed, base->degenerate, base->completed,
        FormatP(base->fisher.greater), FormatP(base->fisher.two_sided));
    if (base->median_ratio)
      s += fmt::format("Median normal length ratio (this / baseline): x{:.2f}", *base->median_ratio);
    if (base->lengths_test)
      s += fmt::format(" (Mann-Whitney two-sided p = {})", FormatP(base->lengths_test->p_two_sided));
    if (base->median_ratio) s += ".\n";
  }
  return s;
}

std::string NeedleMarkdown(const probes::NeedleResult& r) {
  std::set<double> depths;
  std::vector<std::int64_t> lengths;
  std::map<std::pair<std::int64_t, double>, std::string> cell;
  for (const auto& c : r.cells) {
    depths.insert(c.depth_pct);
    if (std::find(lengths.begin(), lengths.end(), c.length_tokens) == lengths.end()) lengths.push_back(c.length_tokens);
    const std::string mark = c.status == "pass"      ? "pass"
                             : c.status == "fail"    ? "FAIL"
                             : c.status == "skipped" ? "skip"
                                                     : "err";
    cell[{c.length_tokens, c.depth_pct}] = mark;
  }
  std::string s = "## Needle in a haystack (K = 1,000 tokens)\n\n| length |";
  for (double d : depths) s += fmt::format(" depth {}% |", d);
  s += "\n|---|";
  for (std::size_t i = 0; i < depths.size(); ++i) s += "---|";
  s += "\n";
  for (auto len : lengths) {
    s += fmt::format("| {} |", probes::FormatLength(len));
    for (double d : depths) s += " " + cell[{len, d}] + " |";
    s += "\n";
  }
  s += fmt::format("\npassed {}, failed {}, skipped {}, errors {}", r.passed, r.failed, r.skipped, r.errors);
  if (r.max_model_len) s += fmt::format("; max_model_len {}", *r.max_model_len);
  s += "\n";
  for (const auto& c : r.cells)
    if (!c.note.empty() || c.status == "fail")
      s += fmt::format("- {} at {}%: {}{}\n", probes::FormatLength(c.length_tokens), c.depth_pct, c.status,
                       c.note.empty()
                           ? fmt::format(" (expected {}, got \"{}\")", c.expected, Escape(c.answer.substr(0, 60)))
                           : ": " + c.note);
  return s;
}

std::string ProbesMarkdown(const probes::ProbeSummary& p) {
  std::string s = "## Probes\n\n| kind | passed | total |\n|---|---|---|\n";
  if (p.quality_total) s += fmt::format("| quality | {} | {} |\n", p.quality_passed, p.quality_total);
  if (p.responses_total) s += fmt::format("| Responses API | {} | {} |\n", p.responses_passed, p.responses_total);
  if (p.tools_total) s += fmt::format("| tool round trips | {} | {} |\n", p.tools_passed, p.tools_total);
  for (const auto& r : p.records)
    if (!r.pass) s += fmt::format("- {} {}: {}{}\n", r.kind, r.name, r.error ? "error: " : "", Escape(r.detail));
  return s;
}

}  // namespace ppdeploy::report
