// `ppdeploy sim` as vLLM for the server facts (issue 14): /metrics in vLLM's format (vllm:cache_config_info,
// the inter-token-latency histogram, KV usage) and a vLLM-style per-rank boot log for a planned layout
// (--boot-plan) that ppdeploy's own log reader reads back to the planned pool.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "client/http.h"
#include "client/openai_client.h"
#include "probes/server_facts.h"
#include "sim/sim_engine.h"
#include "sim/sim_server.h"
#include "vllm/log_parser.h"
#include "vllm/metrics.h"

namespace ppdeploy {
namespace {

TEST(SimMetricsTest, CacheConfigInfoAndStepTimeHistogramInVllmsFormat) {
  sim::SimOptions o;
  o.kv_cache_tokens = 729'280;  // the seed's 41,37 pool = 11,395 blocks of 64 (docs/seed.md §6)
  o.block_size = 64;
  o.kv_cache_dtype = "fp8_ds_mla";
  o.gpu_memory_utilization = 0.95;
  o.itl_ms = 2;
  sim::SimServer server(o, "127.0.0.1", 0, 1);
  client::OpenAiClient c({server.url(), "", 10.0});
  client::ChatRequest q;
  q.model = o.model;
  q.messages = nlohmann::json::array({{{"role", "user"}, {"content", "hello"}}});
  q.max_tokens = 8;
  q.min_tokens = 8;
  q.ignore_eos = true;
  q.timeout_s = 30;
  int ok = 0;
  const std::vector<client::ChatRequest> requests = {q, q};
  c.RunConcurrent(requests, 2, [&](RequestResult&& r) { ok += r.ok() ? 1 : 0; });
  ASSERT_EQ(ok, 2);
  const auto http = client::MakeCurlHttpClient();
  const auto resp = http->Get(server.url() + "/metrics", 10);
  ASSERT_TRUE(resp.ok()) << resp.error;
  const auto samples = ParsePrometheusText(resp.body, "/metrics");
  const auto cc = CacheConfigInfo(samples);
  ASSERT_TRUE(cc.has_value()) << resp.body;
  EXPECT_EQ(cc->at("num_gpu_blocks"), "11395");
  EXPECT_EQ(cc->at("block_size"), "64");
  EXPECT_EQ(cc->at("cache_dtype"), "fp8_ds_mla");
  EXPECT_EQ(cc->at("gpu_memory_utilization"), "0.95");
  // vLLM 0.11 writes the step time under both names, same observations: 7 gaps per 8-token answer.
  const auto itl = FindHistogram(samples, kInterTokenLatency, "/metrics");
  const auto tpot = FindHistogram(samples, kTimePerOutputToken, "/metrics");
  ASSERT_TRUE(itl && tpot);
  EXPECT_EQ(itl->count, 14);
  EXPECT_EQ(itl->Counts(), tpot->Counts());
  EXPECT_EQ(itl->upper_bounds.front(), 0.01);  // vLLM's buckets start at 10 ms
  const auto facts = probes::MetricsFacts(samples, server.url() + "/metrics");
  EXPECT_EQ(facts.facts["kv_pool_tokens"], 729'280);
  EXPECT_EQ(facts.facts["kv_cache_usage_perc"], 0.0);  // nothing held once the answers are done
  EXPECT_EQ(facts.facts["num_requests_running"], 0.0);
}

std::string RunText(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  std::size_t n = 0;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  pclose(p);
  return out;
}

TEST(SimBootLogTest, TheBootLogOfAPlannedLayoutReadsBackToThePlannedPoolAndStages) {
  // The planner's 41,37 layout of the seed's deployment.
  const std::string text = RunText("PP_LAYER_PARTITION=41,37 " + std::string(PPDEPLOY_BINARY) +
                                   " plan --no-enumerate --no-optimize --format json 2>/dev/null");
  const nlohmann::json plan = nlohmann::json::parse(text);
  const nlohmann::json& layout = plan["detailed"][0];
  sim::BootLayout b = sim::BootLayoutFromPlanJson(plan, "plan.json");
  EXPECT_EQ(b.partition, (std::vector<int>{41, 37}));
  sim::SimOptions o;
  o.kv_cache_tokens = b.kv_tokens;
  o.block_size = b.block_size;
  o.max_model_len = b.max_model_len;
  o.boot_layout = b;
  const sim::SimEngine engine(o);
  std::string log;
  for (const auto& line : engine.StartupLog(100, "12-01 10:00:00", "http://127.0.0.1:8000")) log += line + "\n";
  const BootLog parsed = ParseBootLog(log, LogParseOptions{"vllm.log", 0});
  const probes::FactGroup g = probes::BootLogFacts(parsed, "vllm.log");
  ASSERT_TRUE(g.unavailable.empty()) << g.unavailable;
  EXPECT_EQ(g.facts["kv_pool_tokens"], layout["kv_tokens"]);
  EXPECT_NEAR(static_cast<double>(layout["kv_tokens"].get<std::int64_t>()), 729'280.0,
              729'280 * 0.002);  // docs/seed.md §6
  EXPECT_EQ(g.facts["layer_partition"], nlohmann::json::array({41, 37}));
  EXPECT_EQ(g.facts["block_size"], layout["block_size"]);
  EXPECT_EQ(g.facts["num_gpu_blocks"], layout["num_gpu_blocks"]);
  EXPECT_EQ(g.facts["max_concurrency"]["tokens_per_request"], 524'288);
  EXPECT_NEAR(g.facts["max_concurrency"]["x"].get<double>(), 1.39, 0.005);
  ASSERT_EQ(g.facts["ranks"].size(), 2u);
  for (int pp = 0; pp < 2; ++pp) {
    const auto& rank = g.facts["ranks"][pp];
    EXPECT_EQ(rank["pp_rank"], pp);
    const double planned = layout["ranks"][pp]["available_kv"]["bytes"].get<double>() / (1024.0 * 1024 * 1024);
    EXPECT_NEAR(rank["available_kv_gib"].get<double>(), planned, 0.005) << pp;  // logged with 2 decimals
    const double graphs = layout["ranks"][pp]["cuda_graph_actual"]["bytes"].get<double>() / (1024.0 * 1024 * 1024);
    EXPECT_NEAR(rank["cuda_graph_gib"].get<double>(), graphs, 0.005) << pp;
  }
}

}  // namespace
}  // namespace ppdeploy
