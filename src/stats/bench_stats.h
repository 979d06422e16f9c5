// Summary statistics of a benchmark level (pure). Percentiles use linear interpolation between closest ranks
// (numpy.percentile's default, which vLLM's vllm/benchmarks/serve.py uses), so figures compare with vLLM bench.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "stats/request_result.h"

namespace ppdeploy {

/// count/mean/median/p90/p99/min/max of a sample; all 0 with count 0 for an empty sample.
struct Distribution {
  std::int64_t count = 0;
  double mean = 0, median = 0, p90 = 0, p99 = 0, min = 0, max = 0;
};

/// The q-th percentile (q in [0, 100]) of an ascending sample, linear interpolation; 0 for an empty sample.
double PercentileSorted(const std::vector<double>& sorted, double q);
Distribution Summarize(std::vector<double> values);

/// Token-length check of a level: what was asked vs what the server reported.
struct LengthCheck {
  std::int64_t requested = -1;      ///< -1 when there was no target
  double mean_achieved = 0;
  std::int64_t min_achieved = 0, max_achieved = 0;
  std::int64_t mismatched = 0;      ///< ok requests whose count differs from `requested`
  std::string source;               ///< TokenCountSourceName of the counts ("mixed" when they differ)
};

/// One concurrency level.
struct LevelResult {
  int concurrency = 0;
  std::int64_t total = 0, ok = 0, failed = 0, cancelled = 0;  ///< warm-up requests excluded
  double duration_s = 0;             ///< first send to last result
  double request_throughput = 0;     ///< ok requests / duration_s
  double output_throughput = 0;      ///< output tokens of ok requests / duration_s
  Distribution ttft_ms, tpot_ms, itl_ms, e2el_ms, connect_ms;
  Distribution decode_tok_s;         ///< per request (n - 1) / (E2EL - TTFT) in tok/s, n >= 2 (seed digest's per-stream figure)
  std::map<std::string, std::int64_t> errors;  ///< ErrorKey -> count
  LengthCheck input, output;
  std::vector<std::string> flags;    ///< human-readable warnings (length mismatches, fallbacks)
};

/// Summarises the results of one level (warm-up records are ignored). `duration_ms` is the level's wall time.
LevelResult SummarizeLevel(int concurrency, const std::vector<RequestResult>& results, double duration_ms);

}  // namespace ppdeploy
