// The deployment flags shared by plan / preflight / calibrate: start from the embedded default
// deployment (data/deployments/default.json) and override it with flags.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "layout/planner.h"

namespace ppdeploy::cli {

struct DeploymentOptions {
  std::string deployment_file;  ///< "" = the embedded default
  std::string model, gpu, vllm, kv_cache_dtype, calibration, fix = "profile", kv_cache_memory;
  int gpus = 0, gpus_per_node = 0, nodes = 0;
  double gpu_memory_utilization = 0, gpu_total_gib = 0;
  int num_speculative_tokens = -1;
  std::int64_t max_model_len = 0, num_gpu_blocks_override = 0;
  int block_size = 0, max_num_seqs = 0, max_num_batched_tokens = 0;
  bool enforce_eager = false, enable_expert_parallel = false, no_calibration = false;

  /// Declares the flags on `cmd`.
  void Add(CLI::App* cmd);
  /// Builds the deployment; `file_layouts` receives the deployment file's explicit layouts when
  /// the model and GPU were not overridden.
  Deployment Build(std::vector<LayoutSpec>* file_layouts = nullptr) const;
};

/// Parses vLLM's human-readable integers: "1k" = 1000, "1K" = 1024, "25.6G" (g = 10^9, G = 2^30).
std::int64_t ParseHumanReadableInt(const std::string& text, const std::string& flag);

/// Parses `--partition` (VLLM_PP_LAYER_PARTITION syntax, vLLM's errors) for `pp` stages.
std::vector<int> ParsePartitionFlag(const std::string& text, int pp, int num_hidden_layers);

}  // namespace ppdeploy::cli
