// Server facts of a verify result (probes/server_facts.h): each group with its source, a fact that could not
// be had with the reason, and the typed sections of the result filled from them.
#include "probes/server_facts.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/error.h"
#include "stats/samples.h"

namespace ppdeploy::probes {
namespace {

using ::testing::HasSubstr;

constexpr std::int64_t kMiB = 1 << 20;

// The seed's 39,39 arm on 8 x A100-80GB (docs/seed.md §6): GPUs 0-3 72,430 MiB, 4-7 80,118 MiB used of 81,920.
const char* kSmi3939 =
    "index, memory.used [MiB], memory.total [MiB]\n"
    "0, 72430 MiB, 81920 MiB\n1, 72430 MiB, 81920 MiB\n2, 72430 MiB, 81920 MiB\n3, 72430 MiB, 81920 MiB\n"
    "4, 80118 MiB, 81920 MiB\n5, 80118 MiB, 81920 MiB\n6, 80118 MiB, 81920 MiB\n7, 80118 MiB, 81920 MiB\n";

TEST(NvidiaSmiFactsTest, ParsesTheCsvAndFindsTheTightestHeadroom) {
  const auto readings = ParseNvidiaSmiMemoryCsv(kSmi3939, "nvidia-smi");
  ASSERT_EQ(readings.size(), 8u);
  EXPECT_EQ(readings[4].used_mib, 80118);
  EXPECT_EQ(readings[4].total_mib, 81920);
  const FactGroup g = NvidiaSmiFacts(readings, {0, 1, 2, 3, 4, 5, 6, 7}, "nvidia-smi");
  EXPECT_EQ(g.source, "nvidia-smi");
  EXPECT_EQ(g.facts["tightest_headroom_mib"], 1802);  // docs/seed.md §6: tightest headroom 1,802 MiB
  EXPECT_EQ(g.facts["tightest_gpu"], 4);
  // Only the deployment's GPUs count; one it names that is not listed is a missing fact with the reason.
  const FactGroup some = NvidiaSmiFacts(readings, {0, 9}, "nvidia-smi");
  EXPECT_EQ(some.facts["gpus"].size(), 1u);
  EXPECT_EQ(some.facts["tightest_headroom_mib"], 9490);
  EXPECT_THAT(some.missing.at("gpus"), HasSubstr("does not list GPU 9"));
  // noheader,nounits rows are accepted.
  EXPECT_EQ(ParseNvidiaSmiMemoryCsv("3, 100, 200\n", "s")[0].index, 3);
}

TEST(NvidiaSmiFactsTest, BadOutputNamesTheSourceAndLine) {
  try {
    ParseNvidiaSmiMemoryCsv("index, memory.used [MiB], memory.total [MiB]\n0, lots, 81920 MiB\n", "/usr/bin/smi");
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("/usr/bin/smi: line 2: memory.used"));
  }
  EXPECT_THROW(ParseNvidiaSmiMemoryCsv("", "s"), Error);                        // no GPU listed
  EXPECT_THROW(ParseNvidiaSmiMemoryCsv("index, name\n0, A100\n", "s"), Error);  // another query
}

TEST(ServerFactsTest, MetricsGiveThePoolFromCacheConfigInfo) {
  const auto samples = ParsePrometheusText(
      "vllm:cache_config_info{block_size=\"64\",num_gpu_blocks=\"11395\",engine=\"0\"} 1.0\n"
      "vllm:num_requests_running{engine=\"0\"} 0\n",
      "m");
  const FactGroup g = MetricsFacts(samples, "http://127.0.0.1:8000/metrics");
  EXPECT_EQ(g.source, "http://127.0.0.1:8000/metrics");
  EXPECT_EQ(g.facts["kv_pool_tokens"], 729'280);  // 11,395 x 64, the seed's 41,37 pool
  EXPECT_EQ(g.facts["num_requests_running"], 0.0);
  EXPECT_THAT(g.missing.at("kv_cache_usage_perc"), HasSubstr("no vllm:kv_cache_usage_perc series"));
  EXPECT_THAT(g.missing.at("num_requests_waiting"), HasSubstr("no vllm:num_requests_waiting"));
}

TEST(ServerFactsTest, ApplyFactsPrefersTheBootLogAndKeepsEverySource) {
  ServerFacts facts;
  FactGroup boot;
  boot.source = "boot log vllm.log:1-18 (boot 1 of 1, complete)";
  boot.facts["kv_pool_tokens"] = 597'760;
  facts["boot_log"] = boot;
  const auto samples =
      ParsePrometheusText("vllm:cache_config_info{block_size=\"64\",num_gpu_blocks=\"9340\"} 1\n", "m");
  facts["metrics"] = MetricsFacts(samples, "http://h/metrics");
  facts["nvidia_smi"] = NvidiaSmiFacts(ParseNvidiaSmiMemoryCsv(kSmi3939, "smi"), {}, "smi");
  FactGroup state;
  state.source = ".ppdeploy/run/state.json";
  state.facts = {{"predicted_kv_tokens", 597'632}, {"ready_s", 540.5}, {"max_model_len", 524'288}};
  facts["run_state"] = state;
  VerifyResult r;
  ApplyFacts(r, facts);
  EXPECT_EQ(r.kv_pool_logged_tokens, 597'760);
  EXPECT_THAT(r.kv_pool_logged_source, HasSubstr("boot log vllm.log"));
  EXPECT_EQ(r.kv_pool_predicted_tokens, 597'632);
  EXPECT_THAT(r.kv_pool_predicted_source, HasSubstr(".ppdeploy/run/state.json"));
  EXPECT_EQ(r.ready_s, 540.5);
  EXPECT_EQ(r.max_model_len, 524'288);
  ASSERT_EQ(r.ranks.size(), 8u);
  EXPECT_EQ(r.ranks[4].used_bytes, 80118 * kMiB);
  EXPECT_EQ(r.ranks[4].headroom_bytes, 1802 * kMiB);
  EXPECT_EQ(r.memory_source, "smi");
  // Without the boot log, /metrics gives the pool (9,340 x 64 = 597,760, the seed's 39,39 pool).
  facts["boot_log"] = FactGroup::Unavailable("--url names a server ppdeploy did not start");
  VerifyResult m;
  ApplyFacts(m, facts);
  EXPECT_EQ(m.kv_pool_logged_tokens, 597'760);
  EXPECT_THAT(m.kv_pool_logged_source, HasSubstr("http://h/metrics: vllm:cache_config_info"));
  // The JSON keeps each group's source and the reasons, and reads back.
  const nlohmann::json j = ToJson(facts);
  EXPECT_EQ(j["boot_log"]["unavailable"], "--url names a server ppdeploy did not start");
  EXPECT_EQ(j["nvidia_smi"]["source"], "smi");
  const ServerFacts back = ServerFactsFromJson(j, "verify.json");
  EXPECT_EQ(back.at("boot_log").unavailable, "--url names a server ppdeploy did not start");
  EXPECT_EQ(back.at("metrics").facts["kv_pool_tokens"], 597'760);
  EXPECT_EQ(ToJson(back), j);
  // And the verify result round-trips them.
  const VerifyResult rt = VerifyResultFromJson(ToJson(m), "verify.json");
  EXPECT_EQ(rt.kv_pool_logged_source, m.kv_pool_logged_source);
  EXPECT_EQ(rt.ranks[4].total_bytes, 81920 * kMiB);
  EXPECT_EQ(rt.facts, m.facts);
}

TEST(MannWhitneyGroupedTest, EqualsTheTestOnTheExpandedSamples) {
  // Bucket i holds counts[i] observations of value i: the grouped test must equal the plain one on them.
  const std::vector<double> ca = {3, 10, 4, 0, 1}, cb = {0, 4, 9, 6, 2};
  std::vector<double> a, b;
  for (std::size_t i = 0; i < ca.size(); ++i) {
    a.insert(a.end(), static_cast<std::size_t>(ca[i]), static_cast<double>(i));
    b.insert(b.end(), static_cast<std::size_t>(cb[i]), static_cast<double>(i));
  }
  const auto g = stats::MannWhitneyGrouped(ca, cb);
  const auto p = stats::MannWhitney(a, b);
  EXPECT_EQ(g.n_a, 18);
  EXPECT_EQ(g.n_b, 21);
  EXPECT_NEAR(g.u_a, p.u_a, 1e-9);
  EXPECT_NEAR(g.z, p.z, 1e-9);
  EXPECT_NEAR(g.p_two_sided, p.p_two_sided, 1e-12);
  EXPECT_LT(g.p_two_sided, 0.05);  // b sits clearly higher
  EXPECT_THROW(stats::MannWhitneyGrouped(std::vector<double>{1, 2}, std::vector<double>{1}), Error);
  EXPECT_THROW(stats::MannWhitneyGrouped(std::vector<double>{1.5}, std::vector<double>{1}), Error);
}

}  // namespace
}  // namespace ppdeploy::probes

namespace ppdeploy::probes {
namespace {

// Issue 24: a negative or absurd count on /metrics is refused by name, never a pool of -320 tokens
// (num_gpu_blocks="-5" x block_size 64) in verify.json. vLLM's CacheConfig.num_gpu_blocks is a count (>= 0).
TEST(ServerFactsTest, NegativeOrHugeMetricsCountsAreRefusedByName) {
  const auto samples =
      ParsePrometheusText("vllm:cache_config_info{block_size=\"64\",num_gpu_blocks=\"-5\",engine=\"0\"} 1.0\n", "m");
  const FactGroup g = MetricsFacts(samples, "http://127.0.0.1:8000/metrics");
  EXPECT_FALSE(g.facts.contains("kv_pool_tokens"));
  EXPECT_FALSE(g.facts.contains("num_gpu_blocks"));
  EXPECT_EQ(g.missing.at("num_gpu_blocks"),
            "vllm:cache_config_info num_gpu_blocks=\"-5\" is refused: expected an integer from 0 to 1099511627776");
  const auto huge =
      ParsePrometheusText("vllm:cache_config_info{block_size=\"0\",num_gpu_blocks=\"9223372036854775807\"} 1.0\n", "m");
  const FactGroup h = MetricsFacts(huge, "u");
  EXPECT_FALSE(h.facts.contains("kv_pool_tokens"));
  EXPECT_THAT(h.missing.at("block_size"), HasSubstr("block_size=\"0\" is refused"));
  EXPECT_THAT(h.missing.at("num_gpu_blocks"), HasSubstr("num_gpu_blocks=\"9223372036854775807\" is refused"));
}

}  // namespace
}  // namespace ppdeploy::probes
