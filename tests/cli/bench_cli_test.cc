// `ppdeploy sim` and `ppdeploy bench` as processes (the built binary, PPDEPLOY_BINARY), on 127.0.0.1.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "client/http.h"
#include "subprocess_util.h"

namespace ppdeploy {
namespace {

using testing::Child;
using testing::ReadAll;
using testing::SimUrl;

std::string TempPath(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("ppdeploy-cli-test-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

TEST(BenchCli, SigintLeavesCompleteJsonlAndExits130) {
  Child sim({PPDEPLOY_BINARY, "sim", "--port", "0", "--ttft-ms", "20", "--itl-ms", "20"}, TempPath("sim1.out"),
            TempPath("sim1.err"));
  std::string url = SimUrl(sim.WaitForOutput("listening on", 10));
  ASSERT_FALSE(url.empty()) << sim.Err();
  std::string jsonl = TempPath("bench1.jsonl");
  // 1000 requests x 20 tokens x 20 ms at concurrency 4 would take ~100 s: SIGINT after ~1 s cuts it short.
  Child bench({PPDEPLOY_BINARY, "bench", "--url", url, "--concurrency", "4", "--requests", "1000", "--input-len", "16",
               "--output-len", "20", "--warmup", "0", "--out-jsonl", jsonl, "--format", "json"},
              TempPath("bench1.out"), TempPath("bench1.err"));
  // Interrupt once a few measured requests have finished (bounded wait), i.e. mid-run.
  for (int i = 0; i < 1000; ++i) {
    std::string so_far = ReadAll(jsonl);
    if (std::count(so_far.begin(), so_far.end(), '\n') >= 8) break;  // 4 warm-up + 4 measured
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  bench.Signal(SIGINT);
  int rc = bench.Wait(15);
  EXPECT_EQ(rc, 130) << bench.Err();  // ExitCode::kInterrupted
  // Every line is a complete JSON record; finished ones are ok, the in-flight ones are "cancelled".
  std::istringstream lines(ReadAll(jsonl));
  std::string line;
  int n = 0, ok = 0, cancelled = 0, measured_ok = 0;
  while (std::getline(lines, line)) {
    auto j = nlohmann::json::parse(line);  // throws (fails the test) on a torn line
    ++n;
    ok += j["ok"].get<bool>() ? 1 : 0;
    measured_ok += j["ok"].get<bool>() && !j["warmup"].get<bool>() ? 1 : 0;
    cancelled += j.value("error_kind", "") == "cancelled" ? 1 : 0;
  }
  EXPECT_GE(ok, 8);         // at least the 8 seen before the signal (warm-up records included)
  EXPECT_LE(cancelled, 4);  // at most the in-flight ones
  EXPECT_EQ(n, ok + cancelled);
  auto summary = nlohmann::json::parse(bench.Out());
  EXPECT_EQ(summary["schema"], "ppdeploy.bench/2");
  EXPECT_EQ(summary["interrupted"], true);
  EXPECT_EQ(summary["levels"][0]["requests"]["ok"].get<int>(), measured_ok);
  sim.Signal(SIGTERM);
  EXPECT_EQ(sim.Wait(10), 0);
}

TEST(BenchCli, FaultsCountedAndOverflowReportedNotCrashed) {
  Child sim({PPDEPLOY_BINARY, "sim", "--port", "0", "--fault-rate", "0.1", "--fault-kinds", "500,429,disconnect",
             "--max-model-len", "100", "--seed", "5"},
            TempPath("sim2.out"), TempPath("sim2.err"));
  std::string url = SimUrl(sim.WaitForOutput("listening on", 10));
  ASSERT_FALSE(url.empty()) << sim.Err();
  Child bench({PPDEPLOY_BINARY, "bench", "--url", url, "--concurrency", "1,8", "--requests", "40", "--input-len", "20",
               "--output-len", "8", "--out-jsonl", "none", "--format", "json"},
              TempPath("bench2.out"), TempPath("bench2.err"));
  ASSERT_EQ(bench.Wait(30), 0) << bench.Err();
  auto j = nlohmann::json::parse(bench.Out());
  ASSERT_EQ(j["levels"].size(), 2u);
  for (const auto& L : j["levels"]) {
    EXPECT_EQ(L["requests"]["total"], 40);
    EXPECT_EQ(L["requests"]["ok"].get<int>() + L["requests"]["failed"].get<int>(), 40);
    EXPECT_EQ(L["input_tokens"]["mismatched"], 0);   // exact via /tokenize
    EXPECT_EQ(L["output_tokens"]["mismatched"], 0);  // max_tokens = min_tokens with ignore_eos
    EXPECT_EQ(L["input_tokens"]["mean_achieved"], 20.0);
  }
  int failed = j["levels"][0]["requests"]["failed"].get<int>() + j["levels"][1]["requests"]["failed"].get<int>();
  EXPECT_GT(failed, 0);  // ~10% of 82 requests (incl. warm-up draws)

  // prompt + max_tokens > max_model_len: every request is an HTTP 400 client error, the run still completes.
  Child over({PPDEPLOY_BINARY, "bench", "--url", url, "--requests", "3", "--warmup", "0", "--input-len", "20",
              "--output-len", "200", "--out-jsonl", "none", "--format", "json"},
             TempPath("bench3.out"), TempPath("bench3.err"));
  ASSERT_EQ(over.Wait(30), 0) << over.Err();
  auto o = nlohmann::json::parse(over.Out());
  EXPECT_EQ(o["levels"][0]["errors"]["http_400"], 3);
  sim.Signal(SIGINT);
  EXPECT_EQ(sim.Wait(10), 0);
}

TEST(BenchCli, GarbageUrlsGiveClearErrors) {
  Child a({PPDEPLOY_BINARY, "bench", "--url", "not a url", "--out-jsonl", "none"}, TempPath("g1.out"),
          TempPath("g1.err"));
  EXPECT_EQ(a.Wait(10), 1);
  EXPECT_NE(a.Err().find("ppdeploy: error: --url"), std::string::npos) << a.Err();
  Child b({PPDEPLOY_BINARY, "bench", "--url", "http://127.0.0.1:1", "--out-jsonl", "none"}, TempPath("g2.out"),
          TempPath("g2.err"));
  EXPECT_EQ(b.Wait(20), 1);
  EXPECT_NE(b.Err().find("ppdeploy: error: http://127.0.0.1:1/v1/models: connect"), std::string::npos) << b.Err();
}

TEST(SimCli, AcceptsVllmFlagsRecordsArgvAndWritesStartupLog) {
  std::string argv_file = TempPath("argv.json"), log_file = TempPath("sim.log");
  std::filesystem::remove(log_file);
  Child sim({PPDEPLOY_BINARY,
             "sim",
             "--accept-vllm-flags",
             "serve",
             "/models/glm-5",
             "--tensor-parallel-size",
             "8",
             "--enable-expert-parallel",
             "--port",
             "0",
             "--max-model-len",
             "524288",
             "--kv-cache-tokens",
             "729280",
             "--record-argv",
             argv_file,
             "--log-file",
             log_file,
             "--startup-delay-s",
             "0.2"},
            TempPath("sim3.out"), TempPath("sim3.err"));
  std::string url = SimUrl(sim.WaitForOutput("listening on", 10));
  ASSERT_FALSE(url.empty()) << sim.Err();
  auto rec = nlohmann::json::parse(ReadAll(argv_file));
  EXPECT_EQ(rec["argv"][3], "serve");
  EXPECT_EQ(rec["argv"][5], "--tensor-parallel-size");
  EXPECT_TRUE(rec["env"].contains("PATH"));
  std::string log = ReadAll(log_file);
  EXPECT_NE(log.find("Maximum concurrency for 524,288 tokens per request: 1.39x"), std::string::npos) << log;
  EXPECT_NE(log.find("] GPU KV cache size: 729,280 tokens"), std::string::npos);
  auto http = client::MakeCurlHttpClient();
  EXPECT_EQ(http->Get(url + "/health").status, 503);                                          // --startup-delay-s 0.2
  EXPECT_EQ(http->Get(url + "/v1/models").Json("models")["data"][0]["id"], "/models/glm-5");  // from `serve <path>`
  sim.Signal(SIGTERM);
  EXPECT_EQ(sim.Wait(10), 0);
  // the model name comes from `serve <path>`
  Child bad({PPDEPLOY_BINARY, "sim", "--tensor-parallel-size", "8", "--port", "0"}, TempPath("sim4.out"),
            TempPath("sim4.err"));
  EXPECT_EQ(bad.Wait(10), 1);
  EXPECT_NE(bad.Err().find("--accept-vllm-flags"), std::string::npos) << bad.Err();
}

}  // namespace
}  // namespace ppdeploy
