#include "cli/deployment_options.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"
#include "io/deployment_inputs.h"

namespace ppdeploy::cli {

void DeploymentOptions::Add(CLI::App* cmd) {
  cmd->add_option(
      "--profile,--deployment", profile,
      "Deployment profile (TOML, the launcher's setting keys; env PPDEPLOY_PROFILE; default ./ppdeploy.toml "
      "when it exists)");
  cmd->add_option("--defaults", defaults, "Replace the built-in default deployment (data/deployments/default.toml)");
  cmd->add_option("--model", model,
                  "Model: preset name, config.json path or checkpoint directory (default: glm-5.3-w4a16)");
  cmd->add_option("--gpu", gpu, "GPU type from data/gpus.json (default: a100-80gb)");
  cmd->add_option("--gpu-total-gib", gpu_total_gib, "Override the GPU's torch-visible total memory in GiB");
  cmd->add_option("--stage-gpus", stage_gpus, "GPU type of each PP stage, comma-separated (mixed GPU types)");
  cmd->add_option("--gpus", gpus, "Total number of GPUs (default: 8)")->check(CLI::PositiveNumber);
  cmd->add_option("--gpus-per-node", gpus_per_node, "GPUs per node")->check(CLI::PositiveNumber);
  cmd->add_option("--nodes", nodes, "Number of nodes")->check(CLI::PositiveNumber);
  cmd->add_option("--vllm", vllm,
                  "vLLM version: 0.30, v0.19.0, 0.30-custom ... (rows of data/vllm/versions.json; "
                  "default 0.30-custom)");
  cmd->add_option("--engine", engine, "v0 or v1 where the vLLM release ships both (0.7-0.10); default: its own")
      ->check(CLI::IsMember({"v0", "v1"}));
  cmd->add_flag("--mla-disable", mla_disable, "VLLM_MLA_DISABLE=1: DeepSeek-family attention cached as MHA");
  cmd->add_option("--gpu-memory-utilization", gpu_memory_utilization, "Fraction of GPU memory vLLM may use");
  cmd->add_option("--kv-cache-dtype", kv_cache_dtype, "auto, bfloat16, float16, fp8, fp8_e4m3, fp8_e5m2, fp8_ds_mla");
  cmd->add_option("--num-speculative-tokens,--mtp", num_speculative_tokens, "MTP speculative tokens k (0 = off)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--spec-method", spec_method, "auto, mtp, ngram or none (default auto: MTP where the layout allows)");
  cmd->add_option("--max-model-len", max_model_len, "Context length per request (0 = the model's)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--block-size", block_size, "KV block size (default: vLLM's for the backend)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--num-gpu-blocks-override", num_gpu_blocks_override, "vLLM --num-gpu-blocks-override")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--kv-cache-memory-bytes", kv_cache_memory, "vLLM --kv-cache-memory-bytes (e.g. 20G, 1.5g)");
  cmd->add_option("--max-num-seqs", max_num_seqs, "vLLM --max-num-seqs (default: vLLM's for the GPU)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--max-num-batched-tokens", max_num_batched_tokens, "vLLM --max-num-batched-tokens")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--dtype", dtype, "vLLM --dtype: auto, half, float16, bfloat16, float, float32");
  cmd->add_option("--quantization", quantization, "vLLM --quantization (e.g. fp8 for online fp8)");
  cmd->add_option("--hf-overrides", hf_overrides, "vLLM --hf-overrides JSON object, applied to the model's config");
  cmd->add_flag("--enforce-eager", enforce_eager, "No CUDA graphs");
  cmd->add_flag("--enable-expert-parallel", enable_expert_parallel, "Experts split over TP x DP ranks");
  cmd->add_option("--calibration", calibration, "Calibration JSON from `ppdeploy calibrate` (replaces estimates)");
  cmd->add_flag("--no-calibration", no_calibration, "Ignore the deployment's calibration; use estimates");
  cmd->add_option("--fix", fix, "Index-share fix to assume: profile, none, pattern, all-full")
      ->check(CLI::IsMember({"profile", "none", "pattern", "all-full"}));
  if (with_layout) {
    cmd->add_option("--tp", tp, "Tensor parallel size of the layout to show in detail")->check(CLI::PositiveNumber);
    cmd->add_option("--pp", pp, "Pipeline parallel size of that layout")->check(CLI::PositiveNumber);
    cmd->add_option("--dp", dp, "Data parallel size of that layout")->check(CLI::PositiveNumber);
    cmd->add_option("--dcp", dcp, "Decode context parallel size (divides TP)")->check(CLI::PositiveNumber);
    partition_option = cmd->add_option("--partition", partition,
                                       "Layer split, VLLM_PP_LAYER_PARTITION syntax (e.g. 41,37; '' = vLLM's split)");
  }
}

std::map<std::string, FlagValue> DeploymentOptions::Flags() const {
  std::map<std::string, FlagValue> f;
  auto set = [&](const char* key, std::string value, const char* flag) { f[key] = FlagValue{std::move(value), flag}; };
  if (!model.empty()) set("model", model, "--model");
  if (!gpu.empty()) set("gpu", gpu, "--gpu");
  if (gpu_total_gib > 0) set("gpu_total_gib", fmt::format("{}", gpu_total_gib), "--gpu-total-gib");
  if (gpus_per_node > 0) set("gpus_per_node", std::to_string(gpus_per_node), "--gpus-per-node");
  if (nodes > 0) set("nodes", std::to_string(nodes), "--nodes");
  if (gpus > 0) {
    // --gpus is a total: over --nodes, or over nodes of --gpus-per-node (8 by default).
    int per_node = 0, n = 0;
    if (nodes > 0) {
      if (gpus % nodes != 0) Fail("--gpus {} is not a multiple of --nodes {}", gpus, nodes);
      per_node = gpus / nodes, n = nodes;
    } else if (gpus_per_node > 0) {
      if (gpus % gpus_per_node != 0) Fail("--gpus {} is not a multiple of --gpus-per-node {}", gpus, gpus_per_node);
      per_node = gpus_per_node, n = gpus / gpus_per_node;
    } else {
      per_node = std::min(gpus, 8), n = gpus / per_node;
      if (gpus % per_node != 0) Fail("--gpus {}: give --gpus-per-node (not a multiple of 8)", gpus);
    }
    set("gpus", "all", "--gpus");
    set("gpus_per_node", std::to_string(per_node), "--gpus");
    set("nodes", std::to_string(n), "--gpus");
  }
  if (!vllm.empty()) set("vllm_version", vllm, "--vllm");
  if (!engine.empty()) set("engine", engine, "--engine");
  if (mla_disable) set("mla_disable", "1", "--mla-disable");
  if (!stage_gpus.empty()) set("stage_gpus", stage_gpus, "--stage-gpus");
  if (gpu_memory_utilization > 0) {
    if (gpu_memory_utilization > 1.0)
      Fail("--gpu-memory-utilization: expected a fraction <= 1, got {}", gpu_memory_utilization);
    set("gpu_memory_utilization", fmt::format("{}", gpu_memory_utilization), "--gpu-memory-utilization");
  }
  if (!kv_cache_dtype.empty()) set("kv_cache_dtype", kv_cache_dtype, "--kv-cache-dtype");
  if (num_speculative_tokens == 0) set("spec_method", "none", "--num-speculative-tokens");
  if (num_speculative_tokens > 0) {
    set("spec_method", "mtp", "--num-speculative-tokens");
    set("num_spec_tokens", std::to_string(num_speculative_tokens), "--num-speculative-tokens");
  }
  if (!spec_method.empty()) set("spec_method", spec_method, "--spec-method");
  if (max_model_len >= 0) set("max_model_len", std::to_string(max_model_len), "--max-model-len");
  if (block_size > 0) set("block_size", std::to_string(block_size), "--block-size");
  if (num_gpu_blocks_override > 0)
    set("num_gpu_blocks_override", std::to_string(num_gpu_blocks_override), "--num-gpu-blocks-override");
  if (!kv_cache_memory.empty()) set("kv_cache_memory_bytes", kv_cache_memory, "--kv-cache-memory-bytes");
  if (max_num_seqs > 0) set("max_num_seqs", std::to_string(max_num_seqs), "--max-num-seqs");
  if (max_num_batched_tokens > 0)
    set("max_num_batched_tokens", std::to_string(max_num_batched_tokens), "--max-num-batched-tokens");
  if (!dtype.empty()) set("dtype", dtype, "--dtype");
  if (!quantization.empty()) set("quantization", quantization, "--quantization");
  if (!hf_overrides.empty()) set("hf_overrides", hf_overrides, "--hf-overrides");
  if (enforce_eager) set("enforce_eager", "1", "--enforce-eager");
  if (enable_expert_parallel) set("enable_expert_parallel", "1", "--enable-expert-parallel");
  if (!calibration.empty()) set("calibration", calibration, "--calibration");
  if (no_calibration) set("calibration", "", "--no-calibration");
  if (tp > 0) set("tp_size", std::to_string(tp), "--tp");
  if (pp > 0) set("pp_size", std::to_string(pp), "--pp");
  if (dp > 0) set("dp_size", std::to_string(dp), "--dp");
  if (dcp > 0) set("dcp_size", std::to_string(dcp), "--dcp");
  if (!partition.empty() || (partition_option && partition_option->count() > 0))
    set("pp_layer_partition", partition, "--partition");
  if (!partition.empty() && pp <= 0)  // the split gives the stage count
    set("pp_size", std::to_string(std::count(partition.begin(), partition.end(), ',') + 1), "--partition");
  return f;
}

ResolvedDeployment DeploymentOptions::Resolve() const {
  ResolvedDeployment r = ResolveDeploymentFrom(ProcessSettingInputs(profile, defaults, Flags()));
  if (fix == "none")
    r.planner.index_fix = IndexFix::kNone;
  else if (fix == "pattern")
    r.planner.index_fix = IndexFix::kPattern;
  else if (fix == "all-full")
    r.planner.index_fix = IndexFix::kAllFull;
  return r;
}

}  // namespace ppdeploy::cli
