#include "probes/verdict.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/units.h"
#include "report/probe_report.h"

namespace ppdeploy::probes {
namespace {

const VerdictRow& Row(const Verdict& v, const std::string& metric) {
  for (const auto& r : v.rows)
    if (r.metric == metric) return r;
  throw std::runtime_error("no row " + metric);
}

// Two arms shaped like the seed's 39,39 (A, degenerating before Fix B) vs 41,37 (B) numbers.
VerifyResult ArmA() {
  VerifyResult a;
  a.label = "PP2 39,39";
  a.kv_pool_predicted_tokens = 597760;
  a.kv_pool_logged_tokens = 597760;
  a.ranks = {{0, 72430 * kMiB, 9490 * kMiB, 81920 * kMiB},
             {1, 80118 * kMiB, 1802 * kMiB, 81920 * kMiB}};  // docs/seed.md §6 nvidia-smi, 81,920 MiB GPUs
  for (int i = 0; i < 20; ++i) a.step_ms.push_back(34.15 + 0.01 * (i % 5));
  for (int i = 0; i < 10; ++i) a.single_stream_tok_s.push_back(71.2 + 0.1 * (i % 3));
  a.degeneration = DegenerationSection{100, 21, {}, 84};
  a.needle = std::vector<NeedleCell>{};
  for (std::int64_t len : {300000, 500000}) {
    NeedleCell c;
    c.length_tokens = len;
    c.status = "pass";
    a.needle->push_back(c);
  }
  a.quality = PassCount{12, 12};
  a.ready_s = 540;
  return a;
}

VerifyResult ArmB() {
  VerifyResult b = ArmA();
  b.label = "PP2 41,37";
  b.kv_pool_predicted_tokens = 729400;
  b.kv_pool_logged_tokens = 729280;
  b.ranks = {{0, 79441 * kMiB, 2479 * kMiB, 81920 * kMiB}, {1, 79343 * kMiB, 2577 * kMiB, 81920 * kMiB}};
  b.step_ms.clear();
  for (int i = 0; i < 20; ++i) b.step_ms.push_back(33.70 + 0.01 * (i % 5));
  b.degeneration = DegenerationSection{100, 0, {}, 37};
  return b;
}

TEST(VerdictTest, DegenerationTwentyOneOfHundredVsZeroIsSignificant) {
  const Verdict v = Compare(ArmA(), ArmB());
  const VerdictRow& d = Row(v, "degeneration rate");
  EXPECT_EQ(d.a, "21/100 (21.0%)");
  EXPECT_EQ(d.b, "0/100 (0.0%)");
  EXPECT_EQ(d.better, "B");
  ASSERT_TRUE(d.significant);
  EXPECT_TRUE(*d.significant);
  EXPECT_EQ(d.test, "Fisher exact, two-sided");
  EXPECT_NEAR(*d.p, 2.9526107357401764e-07, 1e-15);                               // exact fractions in Python
  EXPECT_NE(d.note.find("one-sided p = 1.48e-07"), std::string::npos) << d.note;  // Python: 1.4763e-07
  const VerdictRow& kv = Row(v, "KV pool, logged (tokens)");
  EXPECT_EQ(kv.better, "B");
  EXPECT_FALSE(kv.significant.has_value());                 // a single measurement gets no test
  EXPECT_EQ(Row(v, "tightest headroom (MiB)").a, "1,802");  // docs/seed.md §6: tightest headroom 1,802 -> 2,479 MiB
  EXPECT_EQ(Row(v, "tightest headroom (MiB)").b, "2,479");
  EXPECT_EQ(Row(v, "tightest headroom (MiB)").better, "B");
  EXPECT_EQ(Row(v, "peak memory per rank (MiB)").better, "B");  // 80,118 -> 79,441
}

// Issue 23 item 8: with the control degenerating 16/40 and the candidate 2/40 the result line said "B is worse
// than A" while the row said B is better. Fewer degenerate answers on B never make it worse; the result lists the
// row where B is significantly better.
TEST(VerdictTest, Issue23ControlDegenerating16Of40AndCandidate2Of40IsNotWorseAndTheResultAgreesWithTheRow) {
  VerifyResult a = ArmA(), b = ArmB();
  a.degeneration = DegenerationSection{40, 16, {}, 84};
  b.degeneration = DegenerationSection{40, 2, {}, 37};
  const Verdict v = Compare(a, b);
  const VerdictRow& d = Row(v, "degeneration rate");
  EXPECT_EQ(d.better, "B");
  ASSERT_TRUE(d.significant.has_value());
  EXPECT_TRUE(*d.significant);  // Fisher exact two-sided, 16/40 vs 2/40: p = 2.97e-4 (exact fractions in Python)
  const NewArmJudgement j = JudgeNewArm(a, b, v);
  EXPECT_FALSE(j.worse);
  EXPECT_TRUE(j.reasons.empty());
  std::string better;
  for (const auto& line : j.better) better += line + "\n";
  EXPECT_NE(better.find("degeneration rate: B 2/40 (5.0%) vs A 16/40 (40.0%)"), std::string::npos) << better;
  EXPECT_EQ(ResultSentence(v, j), "B (PP2 41,37) is not worse than A (PP2 39,39).");
  // More degenerate answers on B than on a control that had none is still worse (docs/seed.md §12).
  a.degeneration = DegenerationSection{40, 0, {}, 84};
  const Verdict v2 = Compare(a, b);
  const NewArmJudgement j2 = JudgeNewArm(a, b, v2);
  EXPECT_TRUE(j2.worse);
  EXPECT_EQ(ResultSentence(v2, j2), "B (PP2 41,37) is worse than A (PP2 39,39):");
}

// Issue 23 item 8: request errors (50% HTTP 500) never entered the verdict. They are a row (Fisher exact on
// failed/total) and make the candidate worse when the control had none.
TEST(VerdictTest, Issue23CandidateWithHalfItsRequestsFailingIsWorse) {
  VerifyResult a = ArmA(), b = ArmB();
  a.requests["bench"] = {0, 16};
  a.requests["degeneration"] = {0, 40};
  b.requests["bench"] = {8, 16};
  b.requests["degeneration"] = {20, 40};
  NeedleCell failed_request;  // a cell whose request failed (HTTP 500): a request error, not a missed needle
  failed_request.length_tokens = 300000;
  failed_request.depth_pct = 90;
  failed_request.status = "error";
  b.needle->push_back(failed_request);
  const Verdict v = Compare(a, b);
  EXPECT_EQ(Row(v, "needle recall").b, "2/2 (100.0%)");
  const VerdictRow& r = Row(v, "request errors");
  EXPECT_EQ(r.a, "0/56 (0.0%)");
  EXPECT_EQ(r.b, "28/56 (50.0%)");
  EXPECT_EQ(r.better, "A");
  EXPECT_TRUE(r.significant.value_or(false));
  const NewArmJudgement j = JudgeNewArm(a, b, v);
  EXPECT_TRUE(j.worse);
  ASSERT_FALSE(j.reasons.empty());
  EXPECT_NE(j.reasons.back().find("request errors: B 28/56 (50.0%) vs A 0/56 (0.0%)"), std::string::npos)
      << j.reasons.back();
  // The section round-trips through the verify file.
  const VerifyResult back = VerifyResultFromJson(ToJson(b), "b.json");
  ASSERT_EQ(back.requests.size(), 2u);
  EXPECT_EQ(back.requests.at("bench").failed, 8);
  EXPECT_EQ(back.requests.at("degeneration").total, 40);
  nlohmann::json bad = ToJson(b);
  bad["requests"]["bench"]["failed"] = 17;
  try {
    VerifyResultFromJson(bad, "b.json");
    ADD_FAILURE() << "failed > total accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("failed 17 > total 16"), std::string::npos) << e.what();
  }
}

TEST(VerdictTest, SamplesUseMannWhitneyAndEqualCountsAreNotSignificant) {
  const Verdict v = Compare(ArmA(), ArmB());
  const VerdictRow& step = Row(v, "step time (ms)");
  EXPECT_EQ(step.better, "B");
  EXPECT_EQ(step.test, "Mann-Whitney U, two-sided");
  ASSERT_TRUE(step.significant);
  EXPECT_TRUE(*step.significant);
  EXPECT_NE(step.note.find("bootstrap"), std::string::npos);
  const VerdictRow& q = Row(v, "quality probes");
  EXPECT_EQ(q.better, "tie");
  EXPECT_FALSE(*q.significant);
  EXPECT_DOUBLE_EQ(*q.p, 1.0);
}

TEST(VerdictTest, MissingSectionsGiveRowsThatSaySo) {
  VerifyResult a = ArmA();
  VerifyResult b;
  b.label = "bare";
  const Verdict v = Compare(a, b);
  EXPECT_TRUE(v.partial);
  const VerdictRow& d = Row(v, "degeneration rate");
  EXPECT_EQ(d.a, "present");
  EXPECT_EQ(d.b, "missing");
  EXPECT_EQ(d.better, "-");
  EXPECT_EQ(d.note, "B lacks it (ppdeploy degen)");
  EXPECT_EQ(Row(v, "concurrent throughput (tok/s)").note, "both arms lack it (ppdeploy bench --concurrency N)");
  const std::string md = report::VerdictMarkdown(v);
  EXPECT_NE(md.find("| degeneration rate | present | missing | - | - | - | - | B lacks it (ppdeploy degen) |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("Partial verdict"), std::string::npos);
}

TEST(VerdictTest, VerifyResultRoundTripsAndKeepsUnknownSections) {
  VerifyResult a = ArmA();
  a.concurrent_tok_s[16] = {18.9, 19.2};
  a.responses = PassCount{10, 10};
  a.unknown["future_section"] = {{"x", 1}};
  const nlohmann::json j = ToJson(a);
  EXPECT_EQ(j["schema"], "ppdeploy.verify/1");
  const VerifyResult back = VerifyResultFromJson(j, "a.json");
  EXPECT_EQ(ToJson(back), j);
  EXPECT_EQ(back.ranks[1].headroom_bytes, 1802 * kMiB);
  // Sections may be missing; a wrong schema or wrong-typed field is an error naming file and field.
  const VerifyResult empty = VerifyResultFromJson({{"schema", "ppdeploy.verify/1"}}, "e.json");
  EXPECT_FALSE(empty.degeneration);
  try {
    VerifyResultFromJson({{"schema", "ppdeploy.verify/1"}, {"degeneration", {{"completed", "100"}, {"degenerate", 1}}}},
                         "x.json");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "x.json: degeneration.completed: expected an integer, got \"100\"");
  }
  EXPECT_THROW(VerifyResultFromJson({{"schema", "ppdeploy.bench/1"}}, "b.json"), Error);
}

TEST(VerdictTest, JsonRendering) {
  const nlohmann::json j = ToJson(Compare(ArmA(), ArmB()));
  EXPECT_EQ(j["schema"], "ppdeploy.verdict/1");
  EXPECT_EQ(j["a"], "PP2 39,39");
  bool found = false;
  for (const auto& r : j["rows"])
    if (r["metric"] == "degeneration rate") {
      found = true;
      EXPECT_EQ(r["significant"], true);
    }
  EXPECT_TRUE(found);
}

TEST(VerdictTest, TwentyThousandSamplesPerArm) {
  // Issue 15: "20,000 samples per arm take 4-5 s". Two arms of 20,000 step times and 20,000
  // degeneration trials each. Before: a sort per bootstrap resample (2,000 x 2 sorts of 20,000)
  // and a Boost pmf call, O(N) each, per Fisher table (20,001 tables here) - tens of seconds, and
  // minutes in a sanitizer build. Its time is measured by bench/stats_bench.cc, not asserted here.
  VerifyResult a, b;
  a.label = "A";
  b.label = "B";
  for (int i = 0; i < 20000; ++i) {
    a.step_ms.push_back(34.0 + 0.001 * (i % 997));
    b.step_ms.push_back(34.2 + 0.001 * (i % 991));
  }
  a.degeneration = DegenerationSection{20000, 10000, {}, std::nullopt};
  b.degeneration = DegenerationSection{20000, 9800, {}, std::nullopt};
  const Verdict v = Compare(a, b);
  const VerdictRow& d = Row(v, "degeneration rate");
  // Exact value from rational arithmetic (python3 math.comb / fractions): 0.046578622722542817.
  ASSERT_TRUE(d.p);
  EXPECT_NEAR(*d.p, 0.046578622722542817, 1e-12);
  EXPECT_TRUE(*d.significant);
  const VerdictRow& step = Row(v, "step time (ms)");
  EXPECT_EQ(step.better, "A");
  EXPECT_TRUE(*step.significant);
  EXPECT_EQ(step.a, "median 34.50 ms (n=20000)");
}

TEST(VerdictTest, SectionsFillFromRunResults) {
  DegenSummary d;
  d.completed = 100;
  d.degenerate = 21;
  d.normal_output_tokens = {80, 84, 90};
  d.median_normal_tokens = 84;
  ProbeSummary p;
  p.quality_passed = 11;
  p.quality_total = 12;
  NeedleResult n;
  n.cells.resize(3);
  VerifyResult r;
  SetDegeneration(r, d);
  SetProbes(r, p);
  SetNeedle(r, n);
  EXPECT_EQ(r.degeneration->degenerate, 21);
  EXPECT_EQ(r.degeneration->normal_output_tokens.size(), 3u);
  EXPECT_EQ(r.quality->passed, 11);
  EXPECT_FALSE(r.tools);  // not run -> missing, not 0/0
  EXPECT_EQ(r.needle->size(), 3u);
}

// The built binary: `ppdeploy verdict A.json B.json --format json` on files.
TEST(VerdictCommandTest, RunsOnFiles) {
  const auto dir = std::filesystem::temp_directory_path() / ("ppdeploy_verdict_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "a.json") << ToJson(ArmA()).dump();
  std::ofstream(dir / "b.json") << ToJson(ArmB()).dump();
  const std::string out = (dir / "out.json").string();
  const std::string cmd = std::string(PPDEPLOY_BINARY) + " verdict " + (dir / "a.json").string() + " " +
                          (dir / "b.json").string() + " --format json > " + out;
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  std::ifstream in(out);
  const auto j = nlohmann::json::parse(in);
  EXPECT_EQ(j["b"], "PP2 41,37");
  const std::string md_cmd = std::string(PPDEPLOY_BINARY) + " verdict " + (dir / "a.json").string() + " " +
                             (dir / "missing.json").string() + " 2>/dev/null >/dev/null";
  const int rc = std::system(md_cmd.c_str());
  EXPECT_EQ(WEXITSTATUS(rc), 1);  // unreadable input: error exit
  std::filesystem::remove_all(dir);
}

TEST(ProbeCommandsTest, UrlCommandsExitOneWhenTheServerIsUnreachable) {
  // Port 1 refuses connections: no result -> exit 1 (an error, not a finding).
  const auto out =
      std::filesystem::temp_directory_path() / ("ppdeploy_verify_unreachable_" + std::to_string(::getpid()) + ".json");
  for (const std::string& sub : {std::string("degen --trials 2"), std::string("needle --lengths 1K"),
                                 std::string("probe"), "verify --out " + out.string()}) {
    const std::string cmd = std::string(PPDEPLOY_BINARY) + " " + sub + " --url http://127.0.0.1:1 >/dev/null 2>&1";
    const int rc = std::system(cmd.c_str());
    EXPECT_EQ(WEXITSTATUS(rc), 1) << sub;
  }
  std::filesystem::remove(out);
}

}  // namespace
}  // namespace ppdeploy::probes
