// The planning front-end of the one deployment request: the flags `plan`, `preflight` and
// `calibrate` take (--model, --gpu, --tp, --pp, --partition, --mtp, ...). They fill the same
// settings as the launcher's flags and environment variables (deploy/settings.h), over the same
// layers (vLLM defaults < default deployment < profile file < environment < flags), and resolve
// through the same resolver, so `plan` and `cmd` describe one deployment.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <map>
#include <string>

#include "deploy/resolve.h"

namespace ppdeploy::cli {

struct DeploymentOptions {
  std::string profile, defaults;
  std::string model, gpu, vllm, kv_cache_dtype, calibration, fix = "profile", kv_cache_memory, hf_overrides;
  std::string dtype, quantization, spec_method, partition;
  std::string engine, stage_gpus;
  bool mla_disable = false;
  int gpus = 0, gpus_per_node = 0, nodes = 0;
  double gpu_memory_utilization = 0, gpu_total_gib = 0;
  int num_speculative_tokens = -1;
  std::int64_t max_model_len = -1, num_gpu_blocks_override = 0;
  int tp = 0, pp = 0, dp = 0, dcp = 0;
  int block_size = 0, max_num_seqs = 0, max_num_batched_tokens = 0;
  bool enforce_eager = false, enable_expert_parallel = false, no_calibration = false;
  bool with_layout = true;                  ///< declare --tp/--pp/--dp/--dcp/--partition
  CLI::Option* partition_option = nullptr;  ///< --partition, to tell `--partition ''` from no flag

  /// Declares the flags on `cmd`.
  void Add(CLI::App* cmd);
  /// The flags given, as settings (key -> value and the flag as typed).
  std::map<std::string, FlagValue> Flags() const;
  /// Resolves the deployment (settings, files, resolver); applies the --fix what-if.
  ResolvedDeployment Resolve() const;
};

}  // namespace ppdeploy::cli
