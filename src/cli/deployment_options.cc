#include "cli/deployment_options.h"

#include <cmath>

#include "core/embedded_data.h"
#include "core/error.h"
#include "core/units.h"
#include "core/json_fields.h"
#include "io/files.h"
#include "io/model_input.h"
#include "layout/deployment_file.h"
#include "model/presets.h"

namespace ppdeploy::cli {

void DeploymentOptions::Add(CLI::App* cmd) {
  cmd->add_option("--deployment", deployment_file, "Deployment file (schema ppdeploy.deployment/1); default: the embedded seed deployment");
  cmd->add_option("--model", model, "Model: preset name, config.json path or checkpoint directory (default: glm-5.3-w4a16)");
  cmd->add_option("--gpu", gpu, "GPU type from data/gpus.json (default: a100-80gb)");
  cmd->add_option("--gpu-total-gib", gpu_total_gib, "Override the GPU's torch-visible total memory in GiB");
  cmd->add_option("--gpus", gpus, "Total number of GPUs (default: 8)");
  cmd->add_option("--gpus-per-node", gpus_per_node, "GPUs per node");
  cmd->add_option("--nodes", nodes, "Number of nodes");
  cmd->add_option("--vllm", vllm, "vLLM version profile from data/vllm/versions.json (default: 0.30-custom)");
  cmd->add_option("--gpu-memory-utilization", gpu_memory_utilization, "Fraction of GPU memory vLLM may use");
  cmd->add_option("--kv-cache-dtype", kv_cache_dtype, "auto, bfloat16, float16, fp8, fp8_e4m3, fp8_e5m2, fp8_ds_mla");
  cmd->add_option("--num-speculative-tokens,--mtp", num_speculative_tokens, "MTP speculative tokens k (0 = off)");
  cmd->add_option("--max-model-len", max_model_len, "Context length per request (default: deployment / model)");
  cmd->add_option("--block-size", block_size, "KV block size (default: vLLM's for the backend)");
  cmd->add_option("--num-gpu-blocks-override", num_gpu_blocks_override, "vLLM --num-gpu-blocks-override");
  cmd->add_option("--kv-cache-memory-bytes", kv_cache_memory, "vLLM --kv-cache-memory-bytes (e.g. 20G, 1.5g)");
  cmd->add_option("--max-num-seqs", max_num_seqs, "vLLM --max-num-seqs (default: vLLM's for the GPU)");
  cmd->add_option("--max-num-batched-tokens", max_num_batched_tokens, "vLLM --max-num-batched-tokens");
  cmd->add_flag("--enforce-eager", enforce_eager, "No CUDA graphs");
  cmd->add_flag("--enable-expert-parallel", enable_expert_parallel, "Experts split over TP x DP ranks");
  cmd->add_option("--calibration", calibration, "Calibration JSON from `ppdeploy calibrate` (replaces estimates)");
  cmd->add_flag("--no-calibration", no_calibration, "Ignore the deployment's calibration; use estimates");
  cmd->add_option("--fix", fix, "Index-share fix to assume: profile, none, pattern, all-full")
      ->check(CLI::IsMember({"profile", "none", "pattern", "all-full"}));
}

std::int64_t ParseHumanReadableInt(const std::string& text, const std::string& flag) {
  if (text.empty()) Fail("{}: empty value", flag);
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
  std::string number = text.substr(0, i), unit = text.substr(i);
  double v = 0;
  try {
    size_t used = 0;
    v = std::stod(number, &used);
    if (used != number.size()) throw std::invalid_argument("x");
  } catch (const std::exception&) {
    Fail("{}: expected a number with an optional unit (k, K, m, M, g, G, t, T), got \"{}\"", flag, text);
  }
  double mult = 1;
  if (unit == "k") mult = 1e3;
  else if (unit == "K") mult = 1024.0;
  else if (unit == "m") mult = 1e6;
  else if (unit == "M") mult = 1024.0 * 1024;
  else if (unit == "g") mult = 1e9;
  else if (unit == "G") mult = 1024.0 * 1024 * 1024;
  else if (unit == "t") mult = 1e12;
  else if (unit == "T") mult = 1024.0 * 1024 * 1024 * 1024;
  else if (!unit.empty()) Fail("{}: unknown unit \"{}\" in \"{}\" (k, K, m, M, g, G, t, T)", flag, unit, text);
  double bytes = v * mult;
  if (!std::isfinite(bytes) || bytes > 9.0e18) Fail("{}: value {} is too large", flag, text);
  return static_cast<std::int64_t>(bytes);
}

std::vector<int> ParsePartitionFlag(const std::string& text, int pp, int num_hidden_layers) {
  auto parts = ParsePartition(text, pp, num_hidden_layers);
  ValidatePartitionForPlanning(parts);
  return parts;
}

Deployment DeploymentOptions::Build(std::vector<LayoutSpec>* file_layouts) const {
  DeploymentFile f;
  if (deployment_file.empty()) {
    auto text = FindEmbedded("deployments/default.json");
    if (!text) Fail("data/deployments/default.json is not embedded in this binary");
    f = ParseDeploymentFile(ParseJsonText(*text, "data/deployments/default.json"), "data/deployments/default.json");
  } else {
    f = ParseDeploymentFile(ParseJsonText(ReadFileText(deployment_file, 16 << 20), deployment_file), deployment_file);
  }
  bool model_changed = !model.empty() && (FindModelPreset(model) == nullptr || FindModelPreset(model) != FindModelPreset(f.model));
  bool gpu_changed = !gpu.empty() && &FindGpu(gpu) != &FindGpu(f.gpu);
  bool context_of_file = !model_changed && !gpu_changed;

  Deployment d;
  ResolvedModel rm = ResolveModel(model.empty() ? f.model : model);
  d.model_name = rm.name;
  d.model = rm.config;
  d.weights = rm.weights;
  if (rm.measured.is_object() && rm.measured.contains("checkpoint_gib") && rm.measured["checkpoint_gib"].is_number()) {
    double measured = rm.measured["checkpoint_gib"].get<double>();
    d.notes.push_back(fmt::format("weights check: estimate {:.2f} GiB vs measured checkpoint {:.2f} GiB ({:+.2f}%, {})",
                                  ToGiB(d.weights.total_bytes), measured,
                                  100.0 * (ToGiB(d.weights.total_bytes) - measured) / measured,
                                  rm.measured.value("source", std::string("preset"))));
  }
  d.gpu = FindGpu(gpu.empty() ? f.gpu : gpu);
  if (gpu_total_gib > 0) d.gpu.total_gib = gpu_total_gib;
  d.vllm = vllm.empty() ? (f.vllm.empty() ? DefaultVllmProfile() : FindVllmProfile(f.vllm)) : FindVllmProfile(vllm);
  d.gpus_per_node = gpus_per_node > 0 ? gpus_per_node : f.gpus_per_node;
  d.nodes = nodes > 0 ? nodes : f.nodes;
  if (gpus > 0) {
    if (nodes > 0 && gpus % nodes != 0) Fail("--gpus {} is not a multiple of --nodes {}", gpus, nodes);
    if (nodes > 0) d.gpus_per_node = gpus / nodes;
    else if (gpus_per_node > 0) {
      if (gpus % gpus_per_node != 0) Fail("--gpus {} is not a multiple of --gpus-per-node {}", gpus, gpus_per_node);
      d.nodes = gpus / gpus_per_node;
    } else {
      d.gpus_per_node = std::min(gpus, 8);
      if (gpus % d.gpus_per_node != 0) Fail("--gpus {}: give --gpus-per-node (not a multiple of 8)", gpus);
      d.nodes = gpus / d.gpus_per_node;
    }
  }
  if (gpu_memory_utilization > 0) {
    if (gpu_memory_utilization > 1.0) Fail("--gpu-memory-utilization: expected a fraction <= 1, got {}", gpu_memory_utilization);
    d.gpu_memory_utilization = gpu_memory_utilization;
  } else if (f.gpu_memory_utilization && context_of_file) {
    d.gpu_memory_utilization = *f.gpu_memory_utilization;
  } else {
    d.gpu_memory_utilization = d.vllm.default_gpu_memory_utilization;
  }
  std::string kv = !kv_cache_dtype.empty() ? kv_cache_dtype : (context_of_file ? f.kv_cache_dtype : "auto");
  d.kv_cache_dtype = ParseKvCacheDtype(kv);
  if (num_speculative_tokens >= 0) d.num_speculative_tokens = num_speculative_tokens;
  else d.num_speculative_tokens = context_of_file || (!model_changed) ? f.num_speculative_tokens : 0;
  if (d.num_speculative_tokens > 0 && d.model.num_nextn_predict_layers == 0)
    Fail("--num-speculative-tokens {}: {} has no MTP layers (num_nextn_predict_layers = 0)", d.num_speculative_tokens,
         d.model_name);
  d.max_model_len = max_model_len > 0 ? max_model_len : (!model_changed ? f.max_model_len : 0);
  d.block_size = block_size;
  if (block_size < 0) Fail("--block-size: expected a positive integer, got {}", block_size);
  if (num_gpu_blocks_override > 0) d.num_gpu_blocks_override = num_gpu_blocks_override;
  if (!kv_cache_memory.empty()) {
    if (!d.vllm.kv_cache_memory_bytes) Fail("--kv-cache-memory-bytes: vLLM {} has no such flag (since 0.11)", d.vllm.name);
    d.kv_cache_memory_bytes = ParseHumanReadableInt(kv_cache_memory, "--kv-cache-memory-bytes");
  }
  d.max_num_seqs = max_num_seqs;
  d.max_num_batched_tokens = max_num_batched_tokens;
  d.enforce_eager = enforce_eager;
  d.enable_expert_parallel = enable_expert_parallel;
  if (fix == "none") d.index_fix = IndexFix::kNone;
  else if (fix == "pattern") d.index_fix = IndexFix::kPattern;
  else if (fix == "all-full") d.index_fix = IndexFix::kAllFull;
  if (!calibration.empty()) d.calibration = LoadCalibration(calibration);
  else if (!no_calibration && context_of_file && !f.calibration.empty() && vllm.empty()) d.calibration = LoadCalibration(f.calibration);
  if (file_layouts && context_of_file) *file_layouts = f.layouts;
  return d;
}

}  // namespace ppdeploy::cli
