// Level statistics. Expected percentiles are numpy.percentile's default (linear) values, which vLLM's
// benchmarks/serve.py reports: np.percentile([1,2,3,4], 50) = 2.5, 90 -> 3.7, 99 -> 3.97.
#include <gtest/gtest.h>

#include "report/bench_report.h"
#include "stats/bench_stats.h"

namespace ppdeploy {
namespace {

TEST(BenchStats, PercentilesMatchNumpyLinear) {
  Distribution d = Summarize({4, 1, 3, 2});
  EXPECT_DOUBLE_EQ(d.median, 2.5);
  EXPECT_NEAR(d.p90, 3.7, 1e-12);
  EXPECT_NEAR(d.p99, 3.97, 1e-12);
  EXPECT_DOUBLE_EQ(d.mean, 2.5);
  EXPECT_EQ(Summarize({}).count, 0);
}

RequestResult Ok(double ttft, double e2el, std::int64_t n) {
  RequestResult r;
  r.ttft_ms = ttft;
  r.e2el_ms = e2el;
  r.output_tokens = n;
  r.output_tokens_source = TokenCountSource::kUsage;
  r.requested_output_tokens = 11;
  r.tpot_ms = (e2el - ttft) / static_cast<double>(n - 1);
  for (std::int64_t i = 1; i < n; ++i) r.itl_ms.push_back(r.tpot_ms);
  return r;
}

TEST(BenchStats, LevelThroughputDecodeAndErrors) {
  std::vector<RequestResult> rs = {Ok(100, 200, 11), Ok(100, 300, 11), Ok(100, 150, 11)};
  RequestResult bad;
  bad.error_kind = RequestErrorKind::kHttp;
  bad.http_status = 429;
  rs.push_back(bad);
  RequestResult warm = Ok(1, 2, 11);
  warm.warmup = true;
  rs.push_back(warm);
  LevelResult L = SummarizeLevel(4, rs, 2000);
  EXPECT_EQ(L.total, 4);  // warm-up excluded
  EXPECT_EQ(L.ok, 3);
  EXPECT_EQ(L.errors.at("http_429"), 1);
  EXPECT_DOUBLE_EQ(L.request_throughput, 1.5);   // 3 ok / 2 s
  EXPECT_DOUBLE_EQ(L.output_throughput, 16.5);   // 33 tokens / 2 s
  // per-stream decode = (n-1)/(E2EL-TTFT): 10/0.1 s = 100, 10/0.2 s = 50, 10/0.05 s = 200 -> median 100 tok/s
  EXPECT_DOUBLE_EQ(L.decode_tok_s.median, 100);
  EXPECT_EQ(L.output.mismatched, 0);
  auto j = RenderBenchJson(BenchResult{"u", "m", "chat", "tokenize", {}, {L}, false, "", "", {}});
  EXPECT_EQ(j["schema"], "ppdeploy.bench/1");
  EXPECT_EQ(j["levels"][0]["errors"]["http_429"], 1);
  EXPECT_NE(RenderBenchTable(BenchResult{"u", "m", "chat", "tokenize", {}, {L}, false, "", "", {}}).find("TPOT: (E2EL - TTFT)"),
            std::string::npos);
  EXPECT_NE(RenderBenchCsv(BenchResult{}).find("ttft_ms_median"), std::string::npos);
}

}  // namespace
}  // namespace ppdeploy
