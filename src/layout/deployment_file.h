// Deployment files (schema ppdeploy.deployment/1, e.g. data/deployments/default.json): the
// inputs of a plan by name (model preset or path, GPU, vLLM profile, calibration) plus figures.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "layout/planner.h"

namespace ppdeploy {

struct DeploymentFile {
  std::string name, description;
  std::string model;  ///< preset name, config.json path or checkpoint directory
  std::string gpu;
  int gpus_per_node = 8;
  int nodes = 1;
  std::string vllm;
  std::optional<double> gpu_memory_utilization;  ///< default: the vLLM profile's
  std::string kv_cache_dtype = "auto";
  int num_speculative_tokens = 0;
  std::int64_t max_model_len = 0;
  std::string calibration;  ///< "" or a path (relative paths inside data/ for embedded files)
  std::vector<LayoutSpec> layouts;
};

/// Parses a deployment file; errors name `source` and the field.
DeploymentFile ParseDeploymentFile(const nlohmann::json& j, const std::string& source);

}  // namespace ppdeploy
