// Where `verify` gets its server facts (probes/server_facts.h): the run state and boot log of a server
// ppdeploy started, GET /metrics, and nvidia-smi on this host (PPDEPLOY_NVIDIA_SMI names a stand-in).
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "cli/target.h"
#include "probes/server_facts.h"
#include "vllm/metrics.h"

namespace ppdeploy::cli {

/// The "boot_log" group: the boot log of the server ppdeploy started (unavailable, with the reason, otherwise).
probes::FactGroup CollectBootLogFacts(const ServerTarget& target);

/// The "run_state" group: ready_s (wait's ready time - the start time), predicted_kv_tokens and
/// predicted_num_gpu_blocks (the planner's, recorded by `start`), max_model_len, layer_partition.
probes::FactGroup CollectRunStateFacts(const ServerTarget& target);

/// One scrape of GET <url>/metrics.
struct MetricsScrape {
  std::vector<PromSample> samples;
  std::string url;    ///< <url>/metrics
  std::string error;  ///< why there are no samples ("" when the scrape worked)
  bool ok() const { return error.empty(); }
};
MetricsScrape ScrapeMetrics(const std::string& base_url, const std::atomic<bool>* cancel = nullptr);

/// The "metrics" group from a scrape (unavailable when the scrape failed).
probes::FactGroup MetricsGroup(const MetricsScrape& scrape);

/// The nvidia-smi binary: $PPDEPLOY_NVIDIA_SMI, else "nvidia-smi" (PATH).
std::string NvidiaSmiBinary();

/// The "nvidia_smi" group: per-GPU memory of the deployment's GPUs (the run state's GPUS setting; every GPU
/// listed otherwise); unavailable when the server is not on this host, nvidia-smi is missing or fails.
probes::FactGroup CollectNvidiaSmiFacts(const ServerTarget& target);

}  // namespace ppdeploy::cli
