// `ppdeploy bench` load profiles, goodput and prompts (issue 17 acceptance) against `ppdeploy sim`, both as
// processes (the built binary, PPDEPLOY_BINARY) on 127.0.0.1. Expected values come from the sim's configured
// behaviour (its latencies, its seeded fault draws, its prefix cache of 16-token blocks) and from the
// per-request JSONL the same run wrote. Wall-clock bounds are at least 10x their expected values.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "client/http.h"
#include "sim/sim_engine.h"
#include "subprocess_util.h"

namespace ppdeploy {
namespace {

using testing::Child;
using testing::ReadAll;
using testing::SimUrl;

std::string TempPath(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("ppdeploy-bench-load-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

struct Sim {
  std::unique_ptr<Child> child;
  std::string url;
  explicit Sim(const std::string& name, std::vector<std::string> args) {
    std::vector<std::string> argv = {PPDEPLOY_BINARY, "sim", "--port", "0"};
    argv.insert(argv.end(), args.begin(), args.end());
    child = std::make_unique<Child>(argv, TempPath(name + ".out"), TempPath(name + ".err"));
    url = SimUrl(child->WaitForOutput("listening on", 20));
  }
  ~Sim() {
    child->Signal(SIGTERM);
    child->Wait(10);
  }
  double Metric(const std::string& name) const {
    std::string text = client::MakeCurlHttpClient()->Get(url + "/metrics").body;
    std::size_t p = text.find("\n" + name + "{");
    if (p == std::string::npos) return -1;
    std::size_t sp = text.find("} ", p);
    return std::stod(text.substr(sp + 2, text.find('\n', sp) - sp - 2));
  }
};

struct BenchRun {
  int rc = -1;
  nlohmann::json out;
  std::vector<nlohmann::json> records;  // every JSONL line (warm-up included)
  std::string err;
  double wall_s = 0;
};

BenchRun Bench(const std::string& name, const std::string& url, std::vector<std::string> args, double timeout_s = 120) {
  std::string jsonl = TempPath(name + ".jsonl");
  std::vector<std::string> argv = {PPDEPLOY_BINARY, "bench", "--url", url, "--out-jsonl", jsonl, "--format", "json"};
  argv.insert(argv.end(), args.begin(), args.end());
  auto start = std::chrono::steady_clock::now();
  Child bench(argv, TempPath(name + ".out"), TempPath(name + ".err"));
  BenchRun r;
  r.rc = bench.Wait(timeout_s);
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.err = bench.Err();
  r.out = nlohmann::json::parse(bench.Out(), nullptr, false);
  std::istringstream lines(ReadAll(jsonl));
  std::string line;
  while (std::getline(lines, line)) r.records.push_back(nlohmann::json::parse(line));
  return r;
}

std::vector<nlohmann::json> Measured(const BenchRun& r) {
  std::vector<nlohmann::json> m;
  for (const auto& j : r.records)
    if (!j["warmup"].get<bool>()) m.push_back(j);
  return m;
}

// Issue 17: a Poisson run at 20 req/s over 2,000 requests (about 100 s) has a measured arrival rate within
// 5% of 20 and inter-arrival times whose coefficient of variation is within 10% of 1. Measured from the
// actual send times in the JSONL (scheduled arrival + the client's lateness), seed fixed.
TEST(BenchLoad, PoissonAt20RpsOver2000Requests) {
  Sim sim("poisson-sim", {"--ttft-ms", "100", "--itl-ms", "10"});
  ASSERT_FALSE(sim.url.empty());
  BenchRun r = Bench(
      "poisson", sim.url,
      {"--request-rate", "20", "--requests", "2000", "--seed", "1", "--input-len", "32", "--output-len", "4"}, 1200);
  ASSERT_EQ(r.rc, 0) << r.err;
  std::vector<double> sends;
  for (const auto& j : Measured(r)) {
    EXPECT_TRUE(j["ok"].get<bool>()) << j.dump();
    sends.push_back(j["send_offset_ms"].get<double>() + j["send_lateness_ms"].get<double>());
  }
  ASSERT_EQ(sends.size(), 2000u);
  std::sort(sends.begin(), sends.end());
  double rate = 1999.0 / ((sends.back() - sends.front()) / 1000.0);
  double mean = 0, var = 0;
  for (std::size_t i = 1; i < sends.size(); ++i) mean += sends[i] - sends[i - 1];
  mean /= 1999;
  for (std::size_t i = 1; i < sends.size(); ++i) var += std::pow(sends[i] - sends[i - 1] - mean, 2);
  double cv = std::sqrt(var / 1999) / mean;
  EXPECT_NEAR(rate, 20, 1.0);
  EXPECT_NEAR(cv, 1, 0.1);
  const auto& L = r.out["levels"][0];
  EXPECT_EQ(L["load"]["label"], "rate 20 poisson");
  EXPECT_NEAR(L["arrivals"]["measured_rate_rps"].get<double>(), rate, 1e-6 * rate);
  EXPECT_NEAR(L["arrivals"]["gap_cv"].get<double>(), cv, 1e-3);
}

// Issue 17: goodput with --goodput ttft:150 against a sim whose TTFT is 100 +- 40 ms (Gaussian) equals the
// share of requests with TTFT <= 150 ms computed from the JSONL.
TEST(BenchLoad, GoodputIsTheShareMeetingTheSloInTheJsonl) {
  Sim sim("goodput-sim", {"--ttft-ms", "100", "--ttft-std-ms", "40", "--itl-ms", "1", "--seed", "9"});
  ASSERT_FALSE(sim.url.empty());
  BenchRun r = Bench("goodput", sim.url,
                     {"--concurrency", "8", "--requests", "300", "--goodput", "ttft:150", "--output-len", "4"});
  ASSERT_EQ(r.rc, 0) << r.err;
  auto m = Measured(r);
  ASSERT_EQ(m.size(), 300u);
  int under = 0;
  for (const auto& j : m) {
    bool good = j["ok"].get<bool>() && j["ttft_ms"].get<double>() <= 150;
    under += good ? 1 : 0;
    EXPECT_EQ(j["good"].get<bool>(), good) << j.dump();
  }
  const auto& g = r.out["levels"][0]["goodput"];
  EXPECT_EQ(g["good"].get<int>(), under);
  EXPECT_DOUBLE_EQ(g["attainment"].get<double>(), under / 300.0);
  EXPECT_EQ(g["slo"], "ttft:150");
  double duration = r.out["levels"][0]["duration_s"].get<double>();
  EXPECT_NEAR(g["goodput_rps"].get<double>(), under / duration, 1e-9 * under / duration);
  // P(N(100, 40) <= 150) = Phi(1.25) = 0.894: a sanity band, wide for client overhead and sampling.
  EXPECT_GT(under, 150);
  EXPECT_LT(under, 300);
}

// Issue 17: no two requests of a default run share a cached prefix. The sim keeps vLLM-style 16-token prompt
// blocks; a default run hits none of them, while --shared-prefix-tokens 64 makes every later request hit the 4
// blocks inside the template (11 tokens) + 64 shared tokens.
TEST(BenchLoad, DefaultPromptsHitNoPrefixCacheSharedPrefixDoes) {
  Sim sim("prefix-sim", {});
  ASSERT_FALSE(sim.url.empty());
  BenchRun r =
      Bench("prefix", sim.url, {"--concurrency", "4", "--requests", "200", "--input-len", "128", "--output-len", "2"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(sim.Metric("vllm:prefix_cache_hits_total"), 0);
  EXPECT_GT(sim.Metric("vllm:prefix_cache_queries_total"), 200 * 128 - 1);
  Sim sim2("prefix-sim2", {});
  BenchRun s = Bench("shared", sim2.url,
                     {"--concurrency", "4", "--requests", "50", "--input-len", "128", "--output-len", "2",
                      "--shared-prefix-tokens", "64"});
  ASSERT_EQ(s.rc, 0) << s.err;
  double n = static_cast<double>(s.records.size());  // every request the run sent (warm-up included)
  EXPECT_EQ(sim2.Metric("vllm:prefix_cache_hits_total"), 64 * (n - 1));
}

// A warm-up request that stalls cannot delay the level or count in it (issue 17: one stall moved a level from
// 30 s to 60 s). The sim's seeded fault draws are replayed with its own engine to pick a seed whose only
// stall falls in the warm-up.
TEST(BenchLoad, StalledWarmupIsCancelledAndKeptOutOfTheLevel) {
  std::uint64_t seed = 0;
  bool found = false;
  for (std::uint64_t s = 0; s < 500 && !found; ++s) {
    sim::SimOptions o;
    o.seed = s;
    o.fault_rate = 0.2;
    o.fault_kinds = {"stall"};
    sim::SimEngine e(o);
    nlohmann::json body = {
        {"model", "ppdeploy-sim"}, {"messages", {{{"role", "user"}, {"content", "x"}}}}, {"stream", true}};
    bool warm_stall = false, later_stall = false;
    for (std::uint64_t n = 0; n < 14; ++n) {
      bool stall = e.MakePlan(sim::Api::kChat, body, n, 0).fault == sim::FaultKind::kStall;
      (n < 4 ? warm_stall : later_stall) |= stall;
    }
    if (warm_stall && !later_stall) {
      seed = s;
      found = true;
    }
  }
  ASSERT_TRUE(found);
  Sim sim("stall-sim",
          {"--fault-rate", "0.2", "--fault-kinds", "stall", "--stall-ms", "120000", "--seed", std::to_string(seed)});
  BenchRun r = Bench("stall", sim.url,
                     {"--concurrency", "4", "--requests", "10", "--warmup-timeout-s", "2", "--output-len", "8"});
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto& L = r.out["levels"][0];
  EXPECT_EQ(L["requests"]["ok"], 10);
  EXPECT_EQ(L["requests"]["failed"], 0);
  EXPECT_TRUE(L["errors"].empty());
  EXPECT_GE(L["warmup"]["cancelled"].get<int>(), 1);
  EXPECT_EQ(L["warmup"]["total"], 4);
  // A held warm-up would wait out the stall's 120 s: the cancelled warm-up above says it did not.
  // The cancelled warm-up records when it failed and how long nothing had arrived.
  int cancelled = 0;
  for (const auto& j : r.records)
    if (j["warmup"].get<bool>() && !j["ok"].get<bool>()) {
      ++cancelled;
      EXPECT_EQ(j["error_kind"], "cancelled");
      EXPECT_GE(j["failed_at_ms"].get<double>(), 1900);  // the phase deadline is 2 s after the warm-up began
      EXPECT_GT(j["stalled_ms"].get<double>(), 0);
    }
  EXPECT_GE(cancelled, 1);
}

// --continuous-usage auto: per-chunk usage only when the warm-up shows bundled chunks.
TEST(BenchLoad, ContinuousUsageAutoFollowsTheServer) {
  Sim one("cu-sim1", {});
  BenchRun a = Bench("cu1", one.url, {"--requests", "4", "--output-len", "9"});
  ASSERT_EQ(a.rc, 0) << a.err;
  EXPECT_EQ(a.out["continuous_usage"].get<std::string>().rfind("auto: off", 0), 0u) << a.out["continuous_usage"];
  Sim four("cu-sim4", {"--tokens-per-chunk", "4"});
  BenchRun b = Bench("cu4", four.url, {"--requests", "4", "--output-len", "9"});
  ASSERT_EQ(b.rc, 0) << b.err;
  EXPECT_EQ(b.out["continuous_usage"].get<std::string>().rfind("auto: on", 0), 0u) << b.out["continuous_usage"];
  for (const auto& j : Measured(b)) {
    EXPECT_TRUE(j["itl_exact"].get<bool>());
    EXPECT_EQ(j["itl_ms"].size(), 8u);        // per token
    EXPECT_EQ(j["chunk_itl_ms"].size(), 2u);  // per chunk: 1 + 4 + 4
  }
  BenchRun c = Bench("cu4off", four.url, {"--requests", "4", "--output-len", "9", "--continuous-usage", "off"});
  ASSERT_EQ(c.rc, 0) << c.err;
  bool flagged = false;
  for (const auto& f : c.out["levels"][0]["flags"])
    flagged |= f.get<std::string>().find("approximate") != std::string::npos;
  EXPECT_TRUE(flagged) << c.out["levels"][0]["flags"];
}

TEST(BenchLoad, SweepIsSyncPeakThenRatesUpToThePeak) {
  Sim sim("sweep-sim", {"--ttft-ms", "5", "--itl-ms", "1", "--max-num-seqs", "8"});
  BenchRun r =
      Bench("sweep", sim.url, {"--sweep", "3", "--requests", "24", "--output-len", "4", "--max-concurrency", "16"});
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto& levels = r.out["levels"];
  ASSERT_EQ(levels.size(), 5u);
  EXPECT_EQ(levels[0]["load"]["phase"], "synchronous");
  EXPECT_EQ(levels[1]["load"]["phase"], "throughput");
  EXPECT_EQ(levels[1]["load"]["concurrency"], 16);
  double sync = levels[0]["request_throughput_rps"].get<double>(),
         peak = levels[1]["request_throughput_rps"].get<double>();
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(levels[2 + i]["load"]["phase"], "sweep");
    EXPECT_NEAR(levels[2 + i]["load"]["request_rate"].get<double>(), sync + (peak - sync) * (i + 1) / 3.0, 1e-9 * peak);
    EXPECT_EQ(levels[2 + i]["requests"]["ok"], 24);
  }
  EXPECT_EQ(r.out["profile"], "sweep");
}

// The search's answer obeys its stop rule: a bracket within 5% of its top, or the probe limit.
TEST(BenchLoad, SearchMaxGoodputReportsABracketAndItsRule) {
  // 2 requests run at once; more queue, so TTFT grows with the rate and the 40 ms SLO fails at the peak.
  Sim sim("search-sim", {"--ttft-ms", "10", "--itl-ms", "1", "--max-num-seqs", "2"});
  BenchRun r = Bench("search", sim.url,
                     {"--search-max-goodput", "--goodput", "ttft:40", "--requests", "30", "--output-len", "4",
                      "--max-concurrency", "32"});
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto& s = r.out["goodput_search"];
  ASSERT_TRUE(s.is_object()) << r.out.dump();
  EXPECT_NE(s["stop_rule"].get<std::string>().find("within 5% of its top"), std::string::npos);
  double lo = s["bracket_rps"][0].get<double>(), hi = s["bracket_rps"][1].get<double>();
  int probes = static_cast<int>(s["probe_levels"].size());
  EXPECT_TRUE(hi - lo <= 0.05 * hi + 1e-9 || probes == 9 ||
              s["outcome"].get<std::string>().find("peak") != std::string::npos)
      << s.dump();
  for (const auto& i : s["probe_levels"]) {
    const auto& L = r.out["levels"][i.get<int>()];
    EXPECT_EQ(L["load"]["phase"], "search");
    EXPECT_EQ(L["load"]["arrival"], "poisson");
  }
  if (!s["best_rate_rps"].is_null()) {
    EXPECT_GE(s["best_rate_rps"].get<double>(), lo - 1e-9);
  }
}

// Ctrl-C in an open-loop level: exit 130, every JSONL line complete, the figures of what finished.
TEST(BenchLoad, SigintDuringARateLevelExits130WithCompleteJsonl) {
  Sim sim("sigint-sim", {"--ttft-ms", "20", "--itl-ms", "5"});
  std::string jsonl = TempPath("sigint.jsonl");
  Child bench({PPDEPLOY_BINARY, "bench", "--url", sim.url, "--request-rate", "50", "--requests", "100000",
               "--output-len", "8", "--out-jsonl", jsonl, "--format", "json"},
              TempPath("sigint.out"), TempPath("sigint.err"));
  for (int i = 0; i < 3000; ++i) {
    std::string so_far = ReadAll(jsonl);
    if (std::count(so_far.begin(), so_far.end(), '\n') >= 20) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  bench.Signal(SIGINT);
  ASSERT_EQ(bench.Wait(30), 130) << bench.Err();
  std::istringstream lines(ReadAll(jsonl));
  std::string line;
  int n = 0, measured_ok = 0;
  while (std::getline(lines, line)) {
    auto j = nlohmann::json::parse(line);  // throws (fails the test) on a torn line
    ++n;
    measured_ok += j["ok"].get<bool>() && !j["warmup"].get<bool>() ? 1 : 0;
  }
  EXPECT_GE(n, 20);
  auto out = nlohmann::json::parse(bench.Out());
  EXPECT_EQ(out["interrupted"], true);
  EXPECT_EQ(out["levels"][0]["requests"]["ok"].get<int>(), measured_ok);
}

// The server goes away mid-level: 20 consecutive connection failures stop the run at once (exit 1), even in
// an hour-long level.
TEST(BenchLoad, ServerGoneMidRunStopsTheLevel) {
  auto sim = std::make_unique<Sim>("gone-sim", std::vector<std::string>{"--ttft-ms", "5", "--itl-ms", "1"});
  std::string jsonl = TempPath("gone.jsonl");
  Child bench({PPDEPLOY_BINARY, "bench", "--url", sim->url, "--concurrency", "4", "--duration-s", "3600", "--requests",
               "0", "--output-len", "4", "--out-jsonl", jsonl, "--format", "json"},
              TempPath("gone.out"), TempPath("gone.err"));
  for (int i = 0; i < 3000; ++i) {
    std::string so_far = ReadAll(jsonl);
    if (std::count(so_far.begin(), so_far.end(), '\n') >= 20) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  sim.reset();                                   // SIGTERM: the sim stops listening
  EXPECT_EQ(bench.Wait(120), 1) << bench.Err();  // within the test's own limit, not an hour
  EXPECT_NE(bench.Err().find("consecutive connection failures"), std::string::npos) << bench.Err();
  auto out = nlohmann::json::parse(bench.Out());
  EXPECT_NE(out["aborted"].get<std::string>().find("server unreachable"), std::string::npos);
  EXPECT_GE(out["levels"][0]["requests"]["ok"].get<int>(), 1);
}

TEST(BenchLoad, RampAndDatasetsAndBadOptions) {
  Sim sim("misc-sim", {"--ttft-ms", "2", "--itl-ms", "1"});
  BenchRun ramp = Bench("ramp", sim.url,
                        {"--ramp-up", "linear", "--ramp-up-start-rps", "20", "--ramp-up-end-rps", "200", "--requests",
                         "100", "--output-len", "2"});
  ASSERT_EQ(ramp.rc, 0) << ramp.err;
  EXPECT_EQ(ramp.out["levels"][0]["load"]["label"], "ramp 20->200 linear");
  EXPECT_EQ(ramp.out["levels"][0]["requests"]["ok"], 100);

  std::string jsonl = TempPath("prompts.jsonl");
  std::ofstream(jsonl) << "{\"prompt\": \"one two three\", \"output_tokens\": 3}\n"
                          "{\"messages\": [{\"role\": \"user\", \"content\": \"four five\"}], \"output_tokens\": 5}\n";
  BenchRun ds = Bench("ds", sim.url, {"--dataset", "jsonl", "--dataset-path", jsonl, "--requests", "6"});
  ASSERT_EQ(ds.rc, 0) << ds.err;
  std::vector<int> outs;
  for (const auto& j : Measured(ds)) outs.push_back(j["output_tokens"].get<int>());
  EXPECT_EQ(std::count(outs.begin(), outs.end(), 3) + std::count(outs.begin(), outs.end(), 5), 6);

  auto error_of = [&](std::vector<std::string> args) {
    BenchRun b = Bench("bad", sim.url, std::move(args), 30);
    EXPECT_EQ(b.rc, 1);
    return b.err;
  };
  EXPECT_NE(error_of({"--request-rate", "0"})
                .find("ppdeploy: error: --request-rate: expected a rate in req/s > 0 or inf, got \"0\""),
            std::string::npos);
  EXPECT_NE(error_of({"--concurrency", "4", "--sweep", "2"}).find("different load profiles"), std::string::npos);
  EXPECT_NE(error_of({"--search-max-goodput"}).find("--search-max-goodput needs --goodput"), std::string::npos);
  EXPECT_NE(error_of({"--goodput", "ttft=5"}).find("--goodput: expected NAME:MS"), std::string::npos);
  EXPECT_NE(error_of({"--dataset", "jsonl"}).find("--dataset jsonl needs --dataset-path FILE"), std::string::npos);
  EXPECT_NE(error_of({"--burstiness", "0.5"}).find("--burstiness 0.5 needs --arrival gamma"), std::string::npos);
}

}  // namespace
}  // namespace ppdeploy
