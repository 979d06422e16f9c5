#include "probes/degen_run.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>

#include "core/error.h"
#include "io/files.h"
#include "io/jsonl.h"
#include "probes/fake_backend.h"

namespace ppdeploy::probes {
namespace {

using testing::LoopAnswer;
using testing::NormalAnswer;
using testing::ScriptedBackend;

// A fake server whose answer to call i is degenerate when `degenerate(i)`.
ScriptedBackend InjectingBackend(std::function<bool(int)> degenerate, bool with_ids = true) {
  return ScriptedBackend([degenerate, with_ids](const ChatRequest& req, int i) {
    EXPECT_EQ(req.max_tokens, 3000);
    return degenerate(i) ? LoopAnswer("I am GLM.", 3000, with_ids) : NormalAnswer(30 + i % 20, with_ids);
  });
}

TEST(DegenRunTest, RequestsFollowTheSeed) {
  DegenConfig cfg;
  cfg.trials = 7;
  cfg.prompt_set = "rotation";
  cfg.seed = 100;
  const auto reqs = BuildDegenRequests(cfg);
  ASSERT_EQ(reqs.size(), 7u);
  EXPECT_EQ(reqs[4].tag, "p5_identity");  // docs/seed.md §7 probe name
  EXPECT_EQ(reqs[4].messages[0]["content"], "Who are you? Introduce yourself briefly.");
  EXPECT_EQ(reqs[5].tag, "p1_story");
  EXPECT_DOUBLE_EQ(*reqs[0].temperature, 0.8);  // docs/seed.md §7
  EXPECT_DOUBLE_EQ(*reqs[0].top_p, 0.9);
  EXPECT_EQ(reqs[0].max_tokens, 3000);
  EXPECT_EQ(*reqs[6].seed, 106);
  EXPECT_EQ(reqs[0].extra["return_token_ids"], true);
  EXPECT_EQ(BuildDegenRequests(DegenConfig{}).size(), 40u);  // seed default AGENT_PROBE_TRIALS
  EXPECT_THROW(DegenPromptSet("nope"), Error);
}

TEST(DegenRunTest, TwentyPercentInjectedIsMeasuredAndExitsTwo) {
  auto backend = InjectingBackend([](int i) { return i % 5 == 0; });
  DegenConfig cfg;
  cfg.trials = 100;
  cfg.concurrency = 8;
  int seen = 0;
  const auto s = RunDegen(backend, cfg, [&](const DegenTrial&) { ++seen; });
  EXPECT_EQ(seen, 100);
  EXPECT_EQ(backend.calls(), 100);
  EXPECT_EQ(s.completed, 100);
  EXPECT_EQ(s.degenerate, 20);
  EXPECT_DOUBLE_EQ(s.rate, 0.2);
  EXPECT_LE(s.ci95.lower, 0.2);
  EXPECT_GE(s.ci95.upper, 0.2);
  EXPECT_NEAR(s.ci95.lower, 0.12665555210195584, 1e-9);  // Clopper-Pearson 20/100
  EXPECT_EQ(s.hit_cap, 20);
  EXPECT_EQ(s.normal_output_tokens.size(), 80u);
  EXPECT_EQ(DegenExitCode(s), ExitCode::kCheckFailed);
  for (const auto& t : s.records)
    if (t.degenerate) {
      EXPECT_EQ(t.period, 3);
      EXPECT_EQ(t.unit, "tokens");
    }
}

TEST(DegenRunTest, RandomTwentyPercentOnTextOnly) {
  // Bernoulli(0.2) injection (seeded), detection on text (no token ids): the 95% interval covers 20%.
  std::mt19937_64 rng(7);
  std::bernoulli_distribution coin(0.2);
  std::vector<bool> plan(100);
  for (auto&& p : plan) p = coin(rng);
  const int injected = static_cast<int>(std::count(plan.begin(), plan.end(), true));
  auto backend = InjectingBackend([plan](int i) { return plan[static_cast<std::size_t>(i)]; }, false);
  DegenConfig cfg;
  cfg.trials = 100;
  const auto s = RunDegen(backend, cfg);
  EXPECT_EQ(s.degenerate, injected);
  EXPECT_LE(s.ci95.lower, 0.2);
  EXPECT_GE(s.ci95.upper, 0.2);
  EXPECT_EQ(DegenExitCode(s), ExitCode::kCheckFailed);
}

TEST(DegenRunTest, ZeroPercentExitsZero) {
  auto backend = InjectingBackend([](int) { return false; });
  DegenConfig cfg;
  cfg.trials = 100;
  const auto s = RunDegen(backend, cfg);
  EXPECT_EQ(s.degenerate, 0);
  EXPECT_EQ(s.completed, 100);
  EXPECT_DOUBLE_EQ(s.ci95.lower, 0.0);
  EXPECT_NEAR(s.ci95.upper, 0.0362, 1e-4);  // 1 - 0.025^(1/100)
  EXPECT_EQ(DegenExitCode(s), ExitCode::kOk);
}

TEST(DegenRunTest, ErrorsAreNotInTheRate) {
  ScriptedBackend backend([](const ChatRequest&, int i) {
    if (i % 2) throw std::runtime_error("connection reset");
    ChatResult r;
    r.ok = false;
    r.error = "HTTP 503";
    return r;
  });
  DegenConfig cfg;
  cfg.trials = 10;
  const auto s = RunDegen(backend, cfg);
  EXPECT_EQ(s.errors, 10);
  EXPECT_EQ(s.completed, 0);
  EXPECT_EQ(DegenExitCode(s), ExitCode::kError);  // nothing measured is an error, not a pass
}

TEST(DegenRunTest, BaselineComparisonLikeTheSeed) {
  // docs/seed.md §7: PP2 21/100 with normal median 84 tokens vs PP1 0/120 with median 37 -> p = 1.80e-08, x2.27.
  std::vector<DegenTrial> cur, base;
  for (int i = 0; i < 100; ++i) {
    DegenTrial t;
    t.index = i;
    t.ok = true;
    t.degenerate = i < 21;
    t.finish_reason = t.degenerate ? "length" : "stop";
    t.output_tokens = t.degenerate ? 3000 : 84 + i % 5 - 2;  // 82..86, median 84
    cur.push_back(t);
  }
  for (int i = 0; i < 120; ++i) {
    DegenTrial t;
    t.index = i;
    t.ok = true;
    t.finish_reason = "stop";
    t.output_tokens = 37 + i % 5 - 2;  // 35..39, median 37
    base.push_back(t);
  }
  const auto c = CompareWithBaseline(Summarize(cur), Summarize(base));
  EXPECT_EQ(fmt::format("{:.2e}", c.fisher.greater), "1.80e-08");
  ASSERT_TRUE(c.median_ratio);
  EXPECT_NEAR(*c.median_ratio, 84.0 / 37.0, 1e-12);
  ASSERT_TRUE(c.lengths_test);
  EXPECT_LT(c.lengths_test->p_two_sided, 1e-6);
}

TEST(DegenRunTest, JsonlIsCompleteAfterEveryTrialAndParsesAsBaseline) {
  const auto dir = std::filesystem::temp_directory_path() / ("ppdeploy_degen_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "trials.jsonl").string();
  auto backend = InjectingBackend([](int i) { return i == 3; });
  DegenConfig cfg;
  cfg.trials = 12;
  cfg.concurrency = 3;
  {
    JsonlWriter out(path);
    int written = 0;
    RunDegen(backend, cfg, [&](const DegenTrial& t) {
      out.Write(ToJson(t));
      ++written;
      // Flushed: the file already holds `written` complete lines (what a crash would leave).
      const std::string text = ReadFileText(path);
      EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), written);
    });
  }
  const auto s = ParseDegenBaseline(ReadFileText(path), path);
  EXPECT_EQ(s.completed, 12);
  EXPECT_EQ(s.degenerate, 1);
  // The summary JSON parses back too (counts and lengths).
  auto summary_json = ToJson(s, /*with_records=*/false);
  const auto s2 = ParseDegenBaseline(summary_json.dump(), "summary.json");
  EXPECT_EQ(s2.degenerate, 1);
  EXPECT_EQ(s2.normal_output_tokens.size(), 11u);
  EXPECT_THROW(ParseDegenBaseline("{\"schema\": \"other/1\"}", "x.json"), Error);
  EXPECT_THROW(ParseDegenBaseline("{\"trial\": 0}\nnot json\n", "bad.jsonl"), Error);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ppdeploy::probes
