// Level statistics. Expected percentiles are numpy.percentile's default (linear) values, which vLLM's
// benchmarks/serve.py reports: np.percentile([1,2,3,4], 50) = 2.5, 90 -> 3.7, 99 -> 3.97; np.std -> 1.1180.
// Goodput follows vLLM's calculate_metrics (value <= SLO; TPOT 0 for one-token answers).
#include "stats/bench_stats.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "report/bench_report.h"
#include "stats/load_search.h"
#include "test_util.h"

namespace ppdeploy {
namespace {

TEST(BenchStats, PercentilesMatchNumpyLinear) {
  Distribution d = Summarize({4, 1, 3, 2});
  EXPECT_DOUBLE_EQ(d.median, 2.5);
  EXPECT_NEAR(d.p90, 3.7, 1e-12);
  EXPECT_NEAR(d.p99, 3.97, 1e-12);
  EXPECT_DOUBLE_EQ(d.mean, 2.5);
  EXPECT_NEAR(d.stddev, 1.118033988749895, 1e-12);  // np.std([1,2,3,4])
  EXPECT_EQ(d.method, "exact");
  EXPECT_EQ(Summarize(std::vector<double>{}).count, 0);
}

RequestResult Ok(double ttft, double last_token, std::int64_t n) {
  RequestResult r;
  r.ttft_ms = ttft;
  r.last_token_ms = last_token;
  r.e2el_ms = last_token + 1;
  r.output_tokens = n;
  r.output_tokens_source = TokenCountSource::kUsage;
  r.requested_output_tokens = 11;
  r.tpot_ms = (last_token - ttft) / static_cast<double>(n - 1);
  for (std::int64_t i = 1; i < n; ++i) {
    r.itl_ms.push_back(r.tpot_ms);
    r.chunk_itl_ms.push_back(r.tpot_ms);
  }
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
  EXPECT_EQ(L.warmup.total, 1);
  EXPECT_DOUBLE_EQ(L.request_throughput, 1.5);  // 3 ok / 2 s
  EXPECT_DOUBLE_EQ(L.output_throughput, 16.5);  // 33 tokens / 2 s
  // per-stream decode = (n-1)/(last token - TTFT): 10/0.1 s = 100, 10/0.2 s = 50, 10/0.05 s = 200 -> median 100
  EXPECT_DOUBLE_EQ(L.decode_tok_s.median, 100);
  EXPECT_EQ(L.output.mismatched, 0);
  EXPECT_EQ(L.output.requested, 11);
  BenchResult result;
  result.url = "u";
  result.levels = {L};
  auto j = RenderBenchJson(result);
  EXPECT_EQ(j["schema"], "ppdeploy.bench/2");
  EXPECT_EQ(j["levels"][0]["errors"]["http_429"], 1);
  EXPECT_EQ(j["levels"][0]["ttft_ms"]["percentiles"], "exact");
  EXPECT_EQ(j["levels"][0]["quantiles"]["ttft_ms"].size(), 101u);
  // The definitions travel with every format.
  EXPECT_NE(j["metric_definitions"]["TPOT"].get<std::string>().find("(last token-carrying chunk - TTFT)"),
            std::string::npos);
  EXPECT_NE(j["metric_definitions"]["E2EL"].get<std::string>().find("last byte"), std::string::npos);
  EXPECT_TRUE(j["metric_definitions"].contains("ITL per chunk"));
  EXPECT_NE(RenderBenchTable(result).find("TPOT: (last token-carrying chunk - TTFT)"), std::string::npos);
  EXPECT_NE(RenderBenchMarkdown(result).find("**ITL per token**"), std::string::npos);
  EXPECT_NE(RenderBenchCsv(BenchResult{}).find("itl_chunk_ms_median"), std::string::npos);
}

TEST(Goodput, ParsesVllmSyntaxAndNamesBadItems) {
  Slo s = ParseSlo({"ttft:150", "tpot:50"});
  EXPECT_DOUBLE_EQ(s.ttft_ms, 150);
  EXPECT_DOUBLE_EQ(s.tpot_ms, 50);
  EXPECT_LT(s.e2el_ms, 0);
  EXPECT_EQ(s.Text(), "ttft:150 tpot:50");
  EXPECT_DOUBLE_EQ(ParseSlo({"ttft:1,e2el:2000"}).e2el_ms, 2000);
  EXPECT_EQ(testing::ErrorOf([] { ParseSlo({"ttft=150"}); }),
            "--goodput: expected NAME:MS with NAME ttft, tpot or e2el (vLLM's syntax), got \"ttft=150\"");
  EXPECT_EQ(testing::ErrorOf([] { ParseSlo({"itl:5"}); }),
            "--goodput: unknown metric \"itl\" in \"itl:5\" (expected ttft, tpot or e2el)");
  EXPECT_EQ(testing::ErrorOf([] { ParseSlo({"ttft:abc"}); }),
            "--goodput: ttft: expected a number of milliseconds >= 0, got \"abc\"");
  EXPECT_THROW(ParseSlo({""}), Error);
}

TEST(Goodput, RequestIsGoodWhenEverySloHolds) {
  Slo slo = ParseSlo({"ttft:150", "tpot:20"});
  EXPECT_TRUE(MeetsSlo(Ok(150, 250, 11), slo));  // TTFT exactly at the bound counts (vLLM: s >= r)
  EXPECT_FALSE(MeetsSlo(Ok(151, 250, 11), slo));
  EXPECT_FALSE(MeetsSlo(Ok(100, 400, 11), slo));  // TPOT 30 ms
  RequestResult one = Ok(100, 100, 2);
  one.output_tokens = 1;
  one.tpot_ms = -1;
  EXPECT_TRUE(MeetsSlo(one, slo));  // one token: TPOT counts as 0
  RequestResult failed = Ok(10, 20, 11);
  failed.error_kind = RequestErrorKind::kTimeout;
  EXPECT_FALSE(MeetsSlo(failed, slo));
  // Level: 2 good of 4 measured (one failure) over 2 s -> goodput 1 req/s, attainment 50%.
  LoadSpec load;
  load.concurrency = 4;
  LevelAccumulator acc(load, slo);
  EXPECT_TRUE(acc.Add(Ok(100, 200, 11)));
  EXPECT_TRUE(acc.Add(Ok(140, 240, 11)));
  EXPECT_FALSE(acc.Add(Ok(200, 300, 11)));
  EXPECT_FALSE(acc.Add(failed));
  LevelResult L = acc.Finish(2000);
  EXPECT_EQ(L.good, 2);
  EXPECT_DOUBLE_EQ(L.goodput_rps, 1.0);
  EXPECT_DOUBLE_EQ(L.attainment, 0.5);
  // Wilson 95% for 2/4 (R: prop.test(2, 4, correct = FALSE)$conf.int = 0.1500, 0.8500).
  EXPECT_NEAR(L.attainment_ci.lower, 0.1500, 1e-4);
  EXPECT_NEAR(L.attainment_ci.upper, 0.8500, 1e-4);
}

TEST(LevelAccumulator, ArrivalsFromActualSendsOutOfOrder) {
  // Sends at 0, 100, 200, 300 ms (intended + lateness), finishing in reverse order: measured rate
  // 3 gaps / 0.3 s = 10 req/s, gaps all 100 ms -> CV 0.
  LoadSpec load;
  load.phase = "rate";
  load.rate = 10;
  load.arrival = "constant";
  LevelAccumulator acc(load);
  acc.SetFirstIndex(7);
  for (int i = 3; i >= 0; --i) {
    RequestResult r = Ok(10, 20, 3);
    r.index = 7 + i;
    r.send_offset_ms = 100.0 * i - 1;
    r.send_lateness_ms = 1;
    acc.Add(r);
  }
  LevelResult L = acc.Finish(500);
  EXPECT_NEAR(L.arrival_rate, 10.0, 1e-9);
  EXPECT_NEAR(L.arrival_cv, 0.0, 1e-9);
  EXPECT_DOUBLE_EQ(L.send_lateness_ms.max, 1);
  EXPECT_EQ(L.load.Label(), "rate 10 constant");
}

TEST(LevelAccumulator, FailedRequestsRecordWhenAndHowLongTheyStalled) {
  LevelAccumulator acc(LoadSpec{});
  RequestResult stalled;
  stalled.error_kind = RequestErrorKind::kTimeout;
  stalled.failed_at_ms = 1000;
  stalled.stalled_ms = 900;
  acc.Add(stalled);
  RequestResult warm_fail;  // a warm-up failure stays out of the level's figures
  warm_fail.warmup = true;
  warm_fail.error_kind = RequestErrorKind::kDisconnect;
  acc.Add(warm_fail);
  LevelResult L = acc.Finish(1000);
  EXPECT_EQ(L.failed, 1);
  EXPECT_EQ(L.errors.size(), 1u);
  EXPECT_EQ(L.errors.at("timeout"), 1);
  EXPECT_DOUBLE_EQ(L.stalled_ms.max, 900);
  EXPECT_DOUBLE_EQ(L.failed_at_ms.max, 1000);
  EXPECT_EQ(L.warmup.failed, 1);
  EXPECT_EQ(L.warmup.errors.at("disconnect"), 1);
}

TEST(LoadSearch, SweepRatesAreGuideLlmsLinspace) {
  // GuideLLM: np.linspace(sync, peak, sweep_size - 1)[1:] with sweep_size = N + 2.
  auto r = stats::SweepRates(2, 10, 4);
  ASSERT_EQ(r.size(), 4u);
  EXPECT_DOUBLE_EQ(r[0], 4);
  EXPECT_DOUBLE_EQ(r[1], 6);
  EXPECT_DOUBLE_EQ(r[2], 8);
  EXPECT_DOUBLE_EQ(r[3], 10);
}

TEST(LoadSearch, BisectionStopsByItsRule) {
  // A server whose attainment is >= 90% up to 37 req/s: sync 5 (met), peak 100.
  stats::GoodputSearch s(0.9, 0.05, 8);
  s.SetBaseline(5, true, 100);
  std::vector<double> probed;
  while (auto rate = s.NextRate()) {
    probed.push_back(*rate);
    s.Record(*rate, *rate <= 37 ? 0.95 : 0.5);
  }
  ASSERT_GE(probed.size(), 2u);
  EXPECT_DOUBLE_EQ(probed[0], 100);   // the peak first
  EXPECT_DOUBLE_EQ(probed[1], 52.5);  // (5 + 100) / 2
  EXPECT_LE(s.best(), 37);
  EXPECT_GE(s.best(), 37 * 0.95 - 1e-9);  // within the 5% bracket below the true edge
  EXPECT_LE(s.hi() - s.lo(), 0.05 * s.hi() + 1e-9);
  EXPECT_NE(s.Outcome().find("within 5%"), std::string::npos) << s.Outcome();
  // Even one request at a time misses the SLOs: no probe at all.
  stats::GoodputSearch none(0.9, 0.05, 8);
  none.SetBaseline(5, false, 100);
  EXPECT_FALSE(none.NextRate());
  EXPECT_LT(none.best(), 0);
  // The peak meets them: answer = the peak.
  stats::GoodputSearch easy(0.9, 0.05, 8);
  easy.SetBaseline(5, true, 100);
  easy.Record(*easy.NextRate(), 1.0);
  EXPECT_FALSE(easy.NextRate());
  EXPECT_DOUBLE_EQ(easy.best(), 100);
  // The probe limit stops it too (1 peak probe + 2 bisections).
  stats::GoodputSearch few(0.9, 0.001, 2);
  few.SetBaseline(5, true, 100);
  int n = 0;
  while (auto rate = few.NextRate()) {
    few.Record(*rate, 0.5);
    ++n;
  }
  EXPECT_EQ(n, 3);
  EXPECT_NE(few.Outcome().find("probe limit"), std::string::npos);
  EXPECT_THROW(stats::GoodputSearch(0, 0.05, 8), Error);
}

}  // namespace
}  // namespace ppdeploy
