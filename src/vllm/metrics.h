// Reader of vLLM's Prometheus `/metrics` text (the exposition format 0.0.4 that prometheus_client writes) and
// the series `verify` takes facts from. Pure: the caller fetches the text.
//
// Series names and shapes from vLLM's PrometheusStatLogger (vllm/v1/metrics/loggers.py, v0.9-v0.11 and later):
//   vllm:cache_config_info{block_size="64",num_gpu_blocks="11395",cache_dtype="fp8_ds_mla",...,engine="0"} 1.0
//       (an "info" gauge: CacheConfig.metrics_info() as labels, every value str()-ed, "None" when unset)
//   vllm:num_requests_running / vllm:num_requests_waiting / vllm:kv_cache_usage_perc{model_name,engine} gauges
//   vllm:time_to_first_token_seconds, vllm:e2e_request_latency_seconds histograms;
//   vllm:inter_token_latency_seconds (since v0.11; the per-step inter-token gap, i.e. the decode step time),
//       which replaced vllm:time_per_output_token_seconds (same observations and buckets, deprecated in v0.11).
// Several engines (DP) give one series per `engine` label: gauges and histograms are summed over label sets.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ppdeploy {

/// One sample line: `name{labels} value`.
struct PromSample {
  std::string name;
  std::vector<std::pair<std::string, std::string>> labels;  ///< in the order written, values unescaped
  double value = 0;
  /// The value of label `key`, or nullopt.
  std::optional<std::string> Label(std::string_view key) const;
};

/// Parses the exposition text: `# HELP` / `# TYPE` / other comments and blank lines are skipped; a sample is
/// `name[{k="v",...}] value [timestamp]` with label values escaped as \\ \" \n and values that may be NaN, +Inf,
/// -Inf. Throws Error "<source>: line N: <what>: <the line, escaped>" for a malformed line.
std::vector<PromSample> ParsePrometheusText(std::string_view text, const std::string& source);

/// The sum of every sample named `name` (over label sets), or nullopt when there is none.
std::optional<double> SumOf(const std::vector<PromSample>& samples, std::string_view name);

/// A histogram from `name_bucket{le=...}`, `name_sum`, `name_count` (summed over the other labels).
struct PromHistogram {
  std::string name;
  std::vector<double> upper_bounds;  ///< the `le` bounds in increasing order, the last one +Inf
  std::vector<double> cumulative;    ///< observations <= each bound
  double sum = 0;
  double count = 0;
  /// Observations in bucket i (non-cumulative).
  std::vector<double> Counts() const;
  /// sum / count; nullopt when count is 0.
  std::optional<double> Mean() const;
  /// Prometheus' histogram_quantile: linear interpolation inside the bucket holding rank q * count (the first
  /// bucket from 0; a rank in the +Inf bucket gives the largest finite bound). nullopt when count is 0.
  std::optional<double> Quantile(double q) const;
};

/// The histogram `name`, or nullopt when it has no `_bucket` series. Throws Error (naming `source`) when its
/// buckets are not cumulative or have no +Inf bound.
std::optional<PromHistogram> FindHistogram(const std::vector<PromSample>& samples, std::string_view name,
                                           const std::string& source);

/// `after` - `before` (the observations made between two scrapes). Throws Error when the buckets differ or a
/// count went down (the server restarted between the scrapes).
PromHistogram HistogramDelta(const PromHistogram& after, const PromHistogram& before);

/// vLLM's step-time histogram: vllm:inter_token_latency_seconds, else vllm:time_per_output_token_seconds.
inline constexpr std::string_view kInterTokenLatency = "vllm:inter_token_latency_seconds";
inline constexpr std::string_view kTimePerOutputToken = "vllm:time_per_output_token_seconds";

/// The labels of vllm:cache_config_info (the first series), or nullopt.
std::optional<std::map<std::string, std::string>> CacheConfigInfo(const std::vector<PromSample>& samples);

}  // namespace ppdeploy
