// Facts about the server a `verify` measured, each group with the source it came from, and for a fact that
// could not be had, why (issue 14):
//   "boot_log"   the vLLM boot log of a server ppdeploy started (pool, blocks, block size, concurrency at
//                max_model_len, per rank: available KV, weights, peak activation, CUDA graph pool);
//   "metrics"    the server's Prometheus /metrics (vllm:cache_config_info, KV usage, requests running/waiting,
//                step time from the inter-token-latency histogram over the verify's bench);
//   "nvidia_smi" `nvidia-smi --query-gpu=index,memory.used,memory.total --format=csv` on the host (per GPU used
//                and total, the tightest headroom);
//   "run_state"  what `ppdeploy start`/`wait` recorded (ready time, the planner's predicted pool).
// JSON: {"<group>": {"source": "...", "<fact>": value, ..., "unavailable": {"<fact>": "why"}}} or
// {"<group>": {"unavailable": "why the whole group could not be had"}}. Pure: callers pass the texts.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "probes/verify_result.h"
#include "vllm/log_parser.h"
#include "vllm/metrics.h"

namespace ppdeploy::probes {

/// One group of facts from one source.
struct FactGroup {
  std::string source;                               ///< where the facts came from
  std::string unavailable;                          ///< why the whole group could not be had ("" when it could)
  nlohmann::json facts = nlohmann::json::object();  ///< name -> value
  std::map<std::string, std::string> missing;       ///< name -> why that fact could not be had
  /// A group that could not be had at all.
  static FactGroup Unavailable(std::string why);
  /// The fact `name`, or nullptr.
  const nlohmann::json* Find(std::string_view name) const;
};

/// Groups by name ("boot_log", "metrics", "nvidia_smi", "run_state").
using ServerFacts = std::map<std::string, FactGroup>;

nlohmann::json ToJson(const ServerFacts& facts);
/// Reads ToJson's shape back; `source` names the file. Throws Error for a group that is not an object.
ServerFacts ServerFactsFromJson(const nlohmann::json& j, const std::string& source);

/// The boot log's facts (the boot ParseBootLog chose): kv_pool_tokens (the minimum of the `GPU KV cache size`
/// lines, as vLLM's pool is the tightest rank's), num_gpu_blocks (logged, else kv_pool_tokens / block_size),
/// block_size, max_concurrency {tokens_per_request, x}, ranks [{process, pp_rank, tp_rank, available_kv_gib,
/// weights_gib, activation_gib, cuda_graph_gib, model_loading_s}] and init_engine_s. `path` names the log.
FactGroup BootLogFacts(const BootLog& log, const std::string& path);

/// /metrics facts: cache_config (the labels of vllm:cache_config_info), num_gpu_blocks, block_size,
/// kv_pool_tokens (= num_gpu_blocks x block_size), kv_cache_usage_perc, num_requests_running,
/// num_requests_waiting, and ttft_ms {mean, p50, p99, count} over the server's life.
FactGroup MetricsFacts(const std::vector<PromSample>& samples, const std::string& url);

/// Adds step_time_ms {mean, p50, p90, count, upper_bounds_ms, counts, window, series} from the step-time
/// histogram (vllm:inter_token_latency_seconds, else vllm:time_per_output_token_seconds) between two scrapes;
/// `window` says what ran between them ("the verify bench step"). A missing histogram or a server restart
/// between the scrapes goes to `missing`.
void AddStepTime(FactGroup& metrics, const std::vector<PromSample>& before, const std::vector<PromSample>& after,
                 const std::string& window, const std::string& url);

/// One GPU as nvidia-smi reports it.
struct GpuMemoryReading {
  int index = 0;
  std::int64_t used_mib = 0;
  std::int64_t total_mib = 0;
};
/// Parses `nvidia-smi --query-gpu=index,memory.used,memory.total --format=csv` output: the header
/// "index, memory.used [MiB], memory.total [MiB]" then one "0, 72430 MiB, 81920 MiB" line per GPU
/// (`--format=csv,noheader,nounits` rows are accepted too). Throws Error "<source>: line N: ..." otherwise.
std::vector<GpuMemoryReading> ParseNvidiaSmiMemoryCsv(std::string_view text, const std::string& source);

/// nvidia-smi facts: gpus [{index, used_mib, total_mib, headroom_mib}] for `gpus` (the deployment's GPU ids;
/// empty = every GPU listed), tightest_headroom_mib and tightest_gpu (min of total - used).
FactGroup NvidiaSmiFacts(const std::vector<GpuMemoryReading>& readings, const std::vector<int>& gpus,
                         const std::string& source);

/// Fills the typed sections of `result` from the facts: kv_pool logged (boot log, else /metrics) and predicted
/// (run state), max_model_len, memory per GPU (nvidia-smi), step-time histogram (/metrics), ready_s (run state).
/// Fields the facts do not give are left as they were (e.g. a --plan-json prediction).
void ApplyFacts(VerifyResult& result, const ServerFacts& facts);

/// The minimum available KV (GiB) per PP stage from the boot-log facts' ranks (stage -> GiB; empty without).
std::map<int, double> StageAvailableKvGib(const ServerFacts& facts);

}  // namespace ppdeploy::probes
