// vLLM's Prometheus /metrics text (vllm/metrics.h): the series `verify` reads its facts from.
#include "vllm/metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/error.h"

namespace ppdeploy {
namespace {

using ::testing::HasSubstr;

// As vLLM's PrometheusStatLogger writes it (prometheus_client exposition 0.0.4), two engines (DP=2) for the
// gauges; the seed's 41,37 pool: 11,395 blocks of 64 tokens = 729,280 tokens (docs/seed.md §6).
const char* kText =
    "# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig\n"
    "# TYPE vllm:cache_config_info gauge\n"
    "vllm:cache_config_info{block_size=\"64\",cache_dtype=\"fp8_ds_mla\",num_gpu_blocks=\"11395\","
    "num_gpu_blocks_override=\"None\",engine=\"0\"} 1.0\n"
    "# TYPE vllm:num_requests_running gauge\n"
    "vllm:num_requests_running{engine=\"0\",model_name=\"a\\\"b\\\\c\"} 3.0\n"
    "vllm:num_requests_running{engine=\"1\",model_name=\"a\\\"b\\\\c\"} 2.0\n"
    "\n"
    "# TYPE vllm:inter_token_latency_seconds histogram\n"
    "vllm:inter_token_latency_seconds_bucket{engine=\"0\",le=\"0.01\",model_name=\"m\"} 1.0\n"
    "vllm:inter_token_latency_seconds_bucket{engine=\"0\",le=\"0.025\",model_name=\"m\"} 3.0\n"
    "vllm:inter_token_latency_seconds_bucket{engine=\"0\",le=\"0.05\",model_name=\"m\"} 10.0\n"
    "vllm:inter_token_latency_seconds_bucket{engine=\"0\",le=\"+Inf\",model_name=\"m\"} 10.0\n"
    "vllm:inter_token_latency_seconds_count{engine=\"0\",model_name=\"m\"} 10.0\n"
    "vllm:inter_token_latency_seconds_sum{engine=\"0\",model_name=\"m\"} 0.3\n"
    "vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"m\"} NaN 1700000000000\n";

TEST(PrometheusTextTest, ReadsSamplesLabelsAndSumsOverEngines) {
  const auto s = ParsePrometheusText(kText, "metrics");
  ASSERT_EQ(s.size(), 10u);
  EXPECT_EQ(s[1].name, "vllm:num_requests_running");
  EXPECT_EQ(s[1].Label("model_name"), "a\"b\\c");  // unescaped
  EXPECT_EQ(SumOf(s, "vllm:num_requests_running"), 5.0);
  EXPECT_FALSE(SumOf(s, "vllm:num_requests_waiting").has_value());
  EXPECT_TRUE(std::isnan(s.back().value));  // NaN with a timestamp after it
  const auto cc = CacheConfigInfo(s);
  ASSERT_TRUE(cc.has_value());
  EXPECT_EQ(cc->at("num_gpu_blocks"), "11395");
  EXPECT_EQ(cc->at("block_size"), "64");
  EXPECT_EQ(std::stoll(cc->at("num_gpu_blocks")) * std::stoll(cc->at("block_size")), 729'280);
}

TEST(PrometheusTextTest, HistogramMeanQuantileAndDeltaBetweenScrapes) {
  const auto after = ParsePrometheusText(kText, "after");
  const auto h = FindHistogram(after, kInterTokenLatency, "after");
  ASSERT_TRUE(h.has_value());
  EXPECT_EQ(h->Counts(), (std::vector<double>{1, 2, 7, 0}));
  EXPECT_DOUBLE_EQ(*h->Mean(), 0.03);  // 0.3 / 10
  // Prometheus histogram_quantile(0.5): rank 5 falls in (0.025, 0.05] holding ranks 4..10:
  // 0.025 + 0.025 * (5 - 3) / 7 = 0.0321428...
  EXPECT_NEAR(*h->Quantile(0.5), 0.025 + 0.025 * 2.0 / 7.0, 1e-12);
  EXPECT_DOUBLE_EQ(*h->Quantile(1.0), 0.05);  // the +Inf bucket is empty
  // The observations between two scrapes.
  const auto before = ParsePrometheusText(
      "vllm:inter_token_latency_seconds_bucket{le=\"0.01\"} 1\n"
      "vllm:inter_token_latency_seconds_bucket{le=\"0.025\"} 2\n"
      "vllm:inter_token_latency_seconds_bucket{le=\"0.05\"} 4\n"
      "vllm:inter_token_latency_seconds_bucket{le=\"+Inf\"} 4\n"
      "vllm:inter_token_latency_seconds_count 4\nvllm:inter_token_latency_seconds_sum 0.1\n",
      "before");
  const auto d = HistogramDelta(*h, *FindHistogram(before, kInterTokenLatency, "before"));
  EXPECT_EQ(d.Counts(), (std::vector<double>{0, 1, 5, 0}));
  EXPECT_DOUBLE_EQ(d.count, 6);
  EXPECT_NEAR(*d.Mean(), 0.2 / 6, 1e-12);
  // A server restarted between the scrapes: counts went down.
  EXPECT_THROW(HistogramDelta(*FindHistogram(before, kInterTokenLatency, "b"), *h), Error);
}

TEST(PrometheusTextTest, MalformedLinesNameTheSourceAndLine) {
  try {
    ParsePrometheusText("vllm:ok 1\nvllm:bad{le=\"1\" 2\n", "http://h/metrics");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("http://h/metrics: line 2:"));
  }
  EXPECT_THROW(ParsePrometheusText("vllm:x notanumber\n", "m"), Error);
  // Buckets that are not cumulative are refused.
  const auto bad = ParsePrometheusText("h_bucket{le=\"1\"} 5\nh_bucket{le=\"+Inf\"} 3\n", "m");
  EXPECT_THROW(FindHistogram(bad, "h", "m"), Error);
}

}  // namespace
}  // namespace ppdeploy
