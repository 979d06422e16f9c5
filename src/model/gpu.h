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
  std::string arch;                 ///< "sm80", "sm90", "sm100", ...
  bool nvswitch = false;            ///< all-to-all NVLink (affects non-torch at TP >= 2)
  std::string source;               ///< where total_gib comes from
  bool total_estimated = false;     ///< total_gib is a guess (no labelled vLLM / torch log of this GPU)
  std::int64_t total_bytes() const;
  /// vLLM's default max_num_batched_tokens / max_num_seqs class: >= 70 GiB and not A100
  /// (EngineArgs.get_batch_defaults since 2025-05-11, docs/memory-overheads.md §4).
  bool large_batch_defaults() const;
};

const std::vector<GpuSpec>& GpuSpecs();
/// By name or alias, case-insensitive; Error listing the known names otherwise.
const GpuSpec& FindGpu(const std::string& name);

}  // namespace ppdeploy
