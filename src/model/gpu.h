// GPU specs (data/gpus.json): the total memory vLLM/torch sees, which is what
// gpu_memory_utilization multiplies (docs/vllm-rules.md §1.7, docs/memory-overheads.md §2).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ppdeploy {

struct GpuSpec {
  std::string name;  ///< e.g. "a100-80gb"
  std::vector<std::string> aliases;
  double total_gib = 0;             ///< torch-visible total (mem_get_info), GiB
  std::int64_t nvidia_smi_mib = 0;  ///< nvidia-smi total, MiB
  std::string arch;                 ///< "sm80", "sm90", "sm100", ... ("gfx942" etc. on AMD)
  std::string vendor = "nvidia";    ///< "nvidia" or "amd" (ROCm: not planned, docs/vllm-rules.md §3.2)
  bool nvswitch = false;            ///< all-to-all NVLink (affects non-torch at TP >= 2)
  std::string source;               ///< where total_gib comes from
  bool total_estimated = false;     ///< total_gib is a guess (no labelled vLLM / torch log of this GPU)
  std::int64_t total_bytes() const;
  /// vLLM's default max_num_batched_tokens / max_num_seqs class: >= 70 GiB and not A100
  /// (EngineArgs.get_batch_defaults since 2025-05-11, docs/memory-overheads.md §4).
  bool large_batch_defaults() const;
};

/// Every row of data/gpus.json, AMD ones included.
const std::vector<GpuSpec>& GpuSpecs();
/// By name or alias, case-insensitive; Error listing the known names otherwise. An AMD GPU is refused with
/// the reason: vLLM's ROCm rules (KV layouts, block sizes, the indexer reservation, memory constants) are not
/// modelled, and CUDA's would give wrong numbers (docs/vllm-rules.md §3.2). The one place a GPU is resolved
/// for planning.
const GpuSpec& FindGpu(const std::string& name);

}  // namespace ppdeploy
