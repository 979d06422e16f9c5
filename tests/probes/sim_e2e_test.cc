// End-to-end: the URL-based probes (`degen`, `needle`, `probe`, `verify`, then `verdict`) as
// processes of the built binary (PPDEPLOY_BINARY) against `ppdeploy sim` on 127.0.0.1 (--port 0),
// i.e. over the real HTTP backend (src/cli/backend_factory.cc over src/client).
// Expected values come from the simulator's documented rules (docs/client-sim-bench.md) and the
// probe conventions (docs/probes.md).
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "subprocess_util.h"
#include "test_util.h"

namespace ppdeploy {
namespace {

using testing::Child;
using testing::ReadAll;
using testing::SimUrl;

std::string TempPath(const std::string& name) { return testing::TempPath("ppdeploy-sim-e2e", name); }

/// A running `ppdeploy sim --port 0 --ttft-ms 0 --itl-ms 0 <extra>`; stopped with SIGTERM at the end.
class Sim {
 public:
  Sim(const std::string& name, const std::vector<std::string>& extra)
      : child_(Args(extra), TempPath(name + ".sim.out"), TempPath(name + ".sim.err")) {
    url_ = SimUrl(child_.WaitForOutput("listening on", 10));
  }
  ~Sim() {
    child_.Signal(SIGTERM);
    child_.Wait(10);
  }
  const std::string& url() const { return url_; }
  std::string Err() const { return child_.Err(); }

 private:
  static std::vector<std::string> Args(const std::vector<std::string>& extra) {
    std::vector<std::string> a = {PPDEPLOY_BINARY, "sim", "--port", "0", "--ttft-ms", "0", "--itl-ms", "0"};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
  Child child_;
  std::string url_;
};

struct CliRun {
  int rc = -1;
  std::string out, err;
  double wall_s = 0;
};

/// Runs `ppdeploy <args>` to completion (bounded by `timeout_s`).
CliRun Ppdeploy(const std::string& name, std::vector<std::string> args, double timeout_s = 60) {
  args.insert(args.begin(), PPDEPLOY_BINARY);
  const auto t0 = std::chrono::steady_clock::now();
  Child c(args, TempPath(name + ".out"), TempPath(name + ".err"));
  CliRun r;
  r.rc = c.Wait(timeout_s);
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.out = c.Out();
  r.err = c.Err();
  return r;
}

// (a) 100 trials at a 20% simulated loop rate: the sim loops a 3-6 word cycle to max_tokens (finish
// "length"), the detector sees the cycle on the returned token ids; exit 2 (docs/probes.md), and the
// Clopper-Pearson 95% interval of the measured rate contains the true 20%. --max-tokens 160: normal
// sim answers end by ~62 tokens, a loop then covers >= 98 tokens (>= the 64-token minimum).
TEST(SimE2E, DegenFindsTheSimulatedLoopRate) {
  Sim sim("degen20", {"--degenerate-rate", "0.2", "--seed", "7"});
  ASSERT_FALSE(sim.url().empty()) << sim.Err();
  CliRun r = Ppdeploy("degen20", {"degen", "--url", sim.url(), "--trials", "100", "--max-tokens", "160", "--seed", "1",
                                  "--format", "json"});
  ASSERT_EQ(r.rc, 2) << r.err << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["schema"], "ppdeploy.degen/1");
  EXPECT_EQ(j["completed"].get<int>(), 100);
  EXPECT_EQ(j["errors"].get<int>(), 0);
  const int degenerate = j["degenerate"].get<int>();
  EXPECT_GT(degenerate, 0);
  EXPECT_EQ(j["hit_cap"].get<int>(), degenerate);  // only the loops reach the cap
  EXPECT_LE(j["ci95"][0].get<double>(), 0.2) << degenerate;
  EXPECT_GE(j["ci95"][1].get<double>(), 0.2) << degenerate;
  for (const auto& rec : j["records"])
    if (rec["degenerate"].get<bool>()) {
      EXPECT_EQ(rec["unit"], "tokens");  // detected on choices[0].token_ids
      EXPECT_EQ(rec["finish_reason"], "length");
      EXPECT_EQ(rec["output_tokens"].get<int>(), 160);  // max_tokens honoured
    }
}

TEST(SimE2E, DegenZeroRateIsClean) {
  Sim sim("degen0", {"--degenerate-rate", "0", "--seed", "7"});
  ASSERT_FALSE(sim.url().empty()) << sim.Err();
  CliRun r = Ppdeploy("degen0", {"degen", "--url", sim.url(), "--trials", "100", "--max-tokens", "160", "--seed", "1",
                                 "--format", "json"});
  ASSERT_EQ(r.rc, 0) << r.err << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["completed"].get<int>(), 100);
  EXPECT_EQ(j["degenerate"].get<int>(), 0);
  EXPECT_EQ(j["hit_cap"].get<int>(), 0);
}

// (b) The seed's needle shape (docs/seed.md §7 "needle 300K 3/3 -> 500K"), scaled down 10x so the test costs
// seconds, not minutes, on a loaded CI machine (each length is bisected through /tokenize): a server
// whose recall ends at 30,000 tokens passes 12.8K and 30K and misses 50K; exit 2. Lengths are exact
// through the sim's /tokenize.
TEST(SimE2E, NeedlePassesWithinEffectiveContextAndFailsBeyond) {
  Sim sim("needle", {"--effective-context", "30000", "--max-model-len", "60000"});
  ASSERT_FALSE(sim.url().empty()) << sim.Err();
  CliRun r =
      Ppdeploy("needle",
               {"needle", "--url", sim.url(), "--lengths", "12800,30K,50K", "--depths", "50", "--format", "json"}, 300);
  ASSERT_EQ(r.rc, 2) << r.err << r.out;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["cells"].size(), 3u);
  const std::vector<std::string> expected = {"pass", "pass", "fail"};
  const std::vector<std::int64_t> lengths = {12800, 30000, 50000};
  for (std::size_t i = 0; i < 3; ++i) {
    const auto& c = j["cells"][i];
    EXPECT_EQ(c["length_tokens"].get<std::int64_t>(), lengths[i]);
    EXPECT_EQ(c["status"], expected[i]) << c.dump();
    EXPECT_FALSE(c["estimated"].get<bool>());
    EXPECT_LE(c["prompt_tokens"].get<std::int64_t>(), lengths[i]);
    EXPECT_GE(c["prompt_tokens"].get<std::int64_t>(), lengths[i] - 2) << c.dump();  // exact up to a word
  }
  EXPECT_EQ(j["max_model_len"].get<std::int64_t>(), 60000);
  std::cerr << "needle 12800,30K,50K against the sim took " << r.wall_s << " s\n";
}

// (c) The acceptance probes against the sim. The sim is not a model: its quality answers are seeded
// words, so quality and Responses grades may fail (exit 2), but every request must go through (no
// transport/format error), and the 20 tool round trips pass with --no-arg-check (the sim calls
// tools[0] with placeholder arguments and answers "The tool returned: <content>.").
TEST(SimE2E, ProbesRunCleanlyAndToolRoundTripsPass) {
  Sim sim("probe", {});
  ASSERT_FALSE(sim.url().empty()) << sim.Err();
  CliRun r =
      Ppdeploy("probe", {"probe", "--url", sim.url(), "--no-arg-check", "--max-tokens", "64", "--format", "json"});
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["schema"], "ppdeploy.probes/1");
  EXPECT_EQ(j["quality"]["total"].get<int>(), 12);
  EXPECT_EQ(j["responses"]["total"].get<int>(), 10);
  EXPECT_EQ(j["tools"]["total"].get<int>(), 20);
  EXPECT_EQ(j["tools"]["passed"].get<int>(), 20) << r.out;
  bool all_pass = true;
  for (const auto& rec : j["records"]) {
    EXPECT_FALSE(rec["error"].get<bool>()) << rec.dump();
    all_pass = all_pass && rec["pass"].get<bool>();
  }
  EXPECT_EQ(r.rc, all_pass ? 0 : 2) << r.err;
}

// `verify` against two sims that differ only in their loop rate, then `verdict`: the seed's A/B table
// (docs/seed.md §12 "a table comparing memory, pool, speed and degeneration of the two arms") with the
// degeneration row significant (Fisher exact two-sided; 21/100 vs 0/100 gives p = 2.95e-07).
TEST(SimE2E, VerifyTwoArmsThenVerdictFlagsDegeneration) {
  Sim a("arm-a", {"--degenerate-rate", "0.21", "--seed", "3"});
  Sim b("arm-b", {"--degenerate-rate", "0", "--seed", "3"});
  ASSERT_FALSE(a.url().empty()) << a.Err();
  ASSERT_FALSE(b.url().empty()) << b.Err();
  const std::vector<std::string> common = {
      "--trials",           "100", "--degen-max-tokens", "160", "--degen-seed",     "1",
      "--needle-lengths",   "1K",  "--needle-depths",    "50",  "--bench-requests", "4",
      "--bench-output-len", "16",  "--probe-max-tokens", "64",  "--no-arg-check"};
  const std::string fa = TempPath("arm-a.json"), fb = TempPath("arm-b.json");
  auto verify = [&](const std::string& name, const std::string& url, const std::string& out, const std::string& label) {
    std::vector<std::string> args = {"verify", "--url", url, "--out", out, "--label", label};
    args.insert(args.end(), common.begin(), common.end());
    return Ppdeploy(name, args);
  };
  CliRun ra = verify("verify-a", a.url(), fa, "loops");
  CliRun rb = verify("verify-b", b.url(), fb, "clean");
  EXPECT_EQ(ra.rc, 2) << ra.err << ra.out;  // degeneration found
  const auto ja = nlohmann::json::parse(ReadAll(fa));
  const auto jb = nlohmann::json::parse(ReadAll(fb));
  EXPECT_EQ(ja["schema"], "ppdeploy.verify/1");
  EXPECT_TRUE(ja["verify"]["missing"].empty()) << ja["verify"].dump();
  EXPECT_EQ(ja["verify"]["steps"]["degeneration"]["status"], "problem");
  EXPECT_EQ(jb["verify"]["steps"]["degeneration"]["status"], "ok");
  EXPECT_EQ(jb["verify"]["steps"]["smoke"]["status"], "ok");
  EXPECT_EQ(jb["verify"]["steps"]["needle"]["status"], "ok");
  EXPECT_EQ(jb["verify"]["steps"]["bench"]["status"], "ok");
  EXPECT_EQ(jb["degeneration"]["completed"].get<int>(), 100);
  EXPECT_EQ(jb["degeneration"]["degenerate"].get<int>(), 0);
  EXPECT_GT(ja["degeneration"]["degenerate"].get<int>(), 5);
  EXPECT_EQ(jb["throughput"]["single_stream_tok_s"].size(), 4u);
  EXPECT_EQ(jb["throughput"]["concurrent_tok_s"]["4"].size(), 4u);
  EXPECT_EQ(jb["server"]["model"], "ppdeploy-sim");
  EXPECT_EQ(jb["server"]["version"], "0.11.0");
  EXPECT_EQ(jb.at("probes").at("tools").at("passed").get<int>(), 20);
  // Issue 23 items 8 and 9: every step's requests (sent, failed) for the verdict's request-error row, and the
  // bench levels' throughput for the verify page.
  EXPECT_EQ(jb["requests"]["bench"]["total"], 8);
  EXPECT_EQ(jb["requests"]["bench"]["failed"], 0);
  EXPECT_EQ(jb["requests"]["degeneration"]["total"], 100);
  EXPECT_EQ(jb["requests"]["smoke"]["total"], 1);
  ASSERT_EQ(jb["bench"]["levels"].size(), 2u);
  EXPECT_EQ(jb["bench"]["levels"][1]["concurrency"], 4);
  EXPECT_EQ(jb["bench"]["levels"][1]["requests"], 4);
  EXPECT_EQ(jb["bench"]["levels"][1]["output_tokens"], 4 * 16);
  EXPECT_GT(jb["bench"]["levels"][1]["output_tok_s"].get<double>(), 0.0);
  EXPECT_GT(jb["bench"]["levels"][1]["request_throughput_rps"].get<double>(), 0.0);

  CliRun v = Ppdeploy("verdict", {"verdict", fa, fb, "--format", "md"});
  ASSERT_EQ(v.rc, 0) << v.err;
  EXPECT_NE(v.out.find("## Verdict: A = loops vs B = clean"), std::string::npos) << v.out;
  EXPECT_NE(v.out.find("| metric | A | B | better | significant | test | p | note |"), std::string::npos) << v.out;
  const auto row_at = v.out.find("| degeneration rate |");
  ASSERT_NE(row_at, std::string::npos) << v.out;
  const std::string row = v.out.substr(row_at, v.out.find('\n', row_at) - row_at);
  EXPECT_NE(row.find("| B | yes | Fisher exact"), std::string::npos) << row;
}

// A server that is not there: exit 1, and the result file says which steps are missing.
TEST(SimE2E, VerifyWithoutServerLeavesPartialResult) {
  const std::string out = TempPath("dead.json");
  CliRun r = Ppdeploy("verify-dead", {"verify", "--url", "http://127.0.0.1:1", "--out", out});
  EXPECT_EQ(r.rc, 1) << r.err;
  const auto j = nlohmann::json::parse(ReadAll(out));
  EXPECT_EQ(j["schema"], "ppdeploy.verify/1");
  EXPECT_EQ(j["verify"]["steps"]["server"]["status"], "error");
  EXPECT_EQ(j["verify"]["missing"].size(), 6u);  // server (error), smoke, needle, degeneration, bench, probes
  EXPECT_FALSE(j.contains("degeneration"));
}

}  // namespace
}  // namespace ppdeploy
