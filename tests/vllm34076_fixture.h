// The deployment of vllm#34076 (vLLM 0.15.2rc1, 2026-02-08): Qwen3-Coder-30B-A3B-FP8 (planned as qwen3-30b-a3b,
// the same attention shape: 48 layers, 4 KV heads x 128), PP2 with VLLM_PP_LAYER_PARTITION=16,32 on an RTX 5070 Ti
// (stage 0) + RTX 5090 D (stage 1), max_model_len 262,144, block-wise fp8 [128, 128] weights. Shared by the tests
// of the whole-model fit check (memory, calibration, the one limit).
#pragma once

#include <map>
#include <string>

namespace ppdeploy::testing {

inline std::map<std::string, std::string> Vllm34076Flags(const std::string& vllm_version = "0.15.2rc1") {
  return {{"model", "qwen3-30b-a3b"},
          {"gpu", "rtx-5090"},
          {"stage_gpus", "rtx-5070-ti,rtx-5090"},
          {"tp_size", "1"},
          {"pp_size", "2"},
          {"pp_layer_partition", "16,32"},
          {"gpus_per_node", "2"},
          {"gpus", "all"},
          {"vllm_version", vllm_version},
          {"max_model_len", "262144"},
          {"gpu_memory_utilization", "0.9"},
          {"spec_method", "none"},
          {"kv_cache_dtype", "auto"},
          {"calibration", ""},
          {"hf_overrides", R"({"quantization_config": {"quant_method": "fp8", "weight_block_size": [128, 128]}})"}};
}

}  // namespace ppdeploy::testing
