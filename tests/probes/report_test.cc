#include "report/probe_report.h"

#include <gtest/gtest.h>

namespace ppdeploy::report {
namespace {

TEST(ProbeReportTest, DegenMarkdownShowsRateIntervalAndBaseline) {
  std::vector<probes::DegenTrial> trials;
  for (int i = 0; i < 100; ++i) {
    probes::DegenTrial t;
    t.index = i;
    t.ok = true;
    t.degenerate = i < 21;
    t.finish_reason = t.degenerate ? "length" : "stop";
    t.output_tokens = t.degenerate ? 3000 : 84;
    t.unit = "tokens";
    t.period = 3;
    t.repeats = 990;
    t.tail = "I am GLM. I am GLM.";
    t.prompt_id = "p5_identity";
    trials.push_back(t);
  }
  const auto s = probes::Summarize(trials);
  probes::DegenSummary base;
  base.completed = 120;
  base.normal_output_tokens.assign(120, 37);
  base.median_normal_tokens = 37;
  const std::string md = DegenMarkdown(s, probes::CompareWithBaseline(s, base));
  // 21/100: Clopper-Pearson [13.5%, 30.3%]; Fisher one-sided vs 0/120 = 1.80e-08; 84 / 37 = x2.27 (docs/seed.md §7).
  EXPECT_NE(md.find("| 100 | 100 | 0 | 21 | 21.0% | [13.5%, 30.3%] | 21 | 84 |"), std::string::npos) << md;
  EXPECT_NE(md.find("p = 1.80e-08"), std::string::npos) << md;
  EXPECT_NE(md.find("x2.27"), std::string::npos) << md;
  EXPECT_NE(md.find("| 0 | p5_identity | 3000 | 3 tokens | 990 | I am GLM. I am GLM. |"), std::string::npos) << md;
}

TEST(ProbeReportTest, NeedleGridAndProbes) {
  probes::NeedleResult r;
  r.max_model_len = 524288;
  for (std::int64_t len : {300000, 500000, 1000000})
    for (double d : {10.0, 90.0}) {
      probes::NeedleCell c;
      c.length_tokens = len;
      c.depth_pct = d;
      c.status = len == 1000000 ? "skipped" : len == 500000 && d == 90.0 ? "fail" : "pass";
      if (c.status == "skipped") c.note = "1M + 256 answer tokens > max_model_len 524288";
      c.expected = "1234-QUARTZ-5678";
      c.answer = "I do not know";
      r.cells.push_back(c);
    }
  const std::string md = NeedleMarkdown(r);
  EXPECT_NE(md.find("| length | depth 10% | depth 90% |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 500K | pass | FAIL |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 1M | skip | skip |"), std::string::npos) << md;
  EXPECT_NE(md.find("- 500K at 90%: fail (expected 1234-QUARTZ-5678, got \"I do not know\")"), std::string::npos) << md;

  probes::ProbeSummary p;
  p.quality_passed = 11;
  p.quality_total = 12;
  p.records.push_back({"quality", "capital", false, false, "expected the word \"Canberra\"", "Sydney", 5});
  const std::string pm = ProbesMarkdown(p);
  EXPECT_NE(pm.find("| quality | 11 | 12 |"), std::string::npos) << pm;
  EXPECT_NE(pm.find("- quality capital: expected the word \"Canberra\""), std::string::npos) << pm;
  EXPECT_EQ(FormatP(0.00988), "0.0099");
  EXPECT_EQ(FormatP(1.8011713e-08), "1.80e-08");
  EXPECT_EQ(FormatP(0.43), "0.43");
}

}  // namespace
}  // namespace ppdeploy::report
