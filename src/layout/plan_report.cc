#include "layout/plan_report.h"

#include <fmt/format.h>

#include "core/units.h"

namespace ppdeploy {
namespace {

std::vector<DimensionNote> Dimensions(const Deployment& d, const PlanReport& r) {
  const ModelConfig& m = d.model;
  std::vector<DimensionNote> out;
  if (m.attention == AttentionKind::kMla)
    out.push_back({"TP", "--tensor-parallel-size", "x1",
                   "MLA keeps one latent KV head, replicated on every TP rank: TP adds no KV capacity, it only "
                   "shrinks weights per GPU (seed §4; vLLM get_num_kv_heads returns 1)"});
  else
    out.push_back(
        {"TP", "--tensor-parallel-size", fmt::format("x{} at most", m.num_key_value_heads),
         fmt::format("GQA KV heads divide by TP until TP > {} KV heads, then replicate", m.num_key_value_heads)});
  out.push_back({"PP", "--pipeline-parallel-size + VLLM_PP_LAYER_PARTITION", "~xPP",
                 "each stage caches only its own layers; the pool is the minimum over stages, so the split decides "
                 "(seed §5-§6); the last stage also carries lm_head and the MTP layer"});
  bool dsa = m.dsa;
  std::string dcp_verdict;
  if (dsa) {
    bool blackwell = d.gpu.arch == "sm100" || d.gpu.arch == "sm103";
    if (blackwell && d.vllm.dcp_dsa_blackwell)
      dcp_verdict =
          "FLASHINFER_MLA_SPARSE returns the decode LSE since 2026-07-01 (#46076): DCP can work with fp8 (576 B) KV";
    else
      dcp_verdict =
          "the sparse MLA backend used here (FLASHMLA_SPARSE / the seed's Triton sparse path) cannot return "
          "the softmax LSE during decode: vLLM asserts at start-up (cp_utils.py check_attention_cp_compatibility)";
  } else {
    dcp_verdict =
        "needs tp % D == 0 and a backend that returns the decode LSE (FlashMLA, FlashInfer-MLA, Triton-MLA do)";
  }
  out.push_back({"DCP", "--decode-context-parallel-size D", "xD (logged)", dcp_verdict});
  out.push_back({"PCP", "--prefill-context-parallel-size", "x1",
                 "adds no KV shards (config/parallel.py), takes extra GPUs, and is blocked by MTP + full CUDA graphs"});
  std::string dp = fmt::format(
      "each replica holds the full model and its own pool: per-GPU capacity unchanged, "
      "throughput x DP; needs DP x TP x PP GPUs ({} here)",
      d.total_gpus());
  for (const auto& l : r.layouts)
    if (l.spec.data_parallel_size > 1 && !l.feasible) {
      dp += fmt::format("; TP{}/PP{} x DP{} is rejected: {}", l.spec.tensor_parallel_size,
                        l.spec.pipeline_parallel_size, l.spec.data_parallel_size, l.problems.front().message);
      break;
    }
  out.push_back({"DP", "--data-parallel-size", "x1 per GPU", dp});
  out.push_back(
      {"EP", "--enable-expert-parallel", "x1",
       m.n_routed_experts > 0
           ? "no effect on KV specs; experts are split over TP x DP ranks instead of sliced by TP, so weights "
             "per GPU only change when DP > 1 (seed: measured -1.5% throughput, needs the right --all2all-backend)"
           : "dense model: no experts to distribute"});
  out.push_back({"block size", "--block-size", "~x1",
                 fmt::format("changes only the tail waste (< one block per request); must be a multiple of {}",
                             m.dsa ? 64 : 16)});
  out.push_back({"override", "--num-gpu-blocks-override", "x1",
                 "makes no memory: above the computed block count vLLM allocates it anyway and OOMs"});
  out.push_back({"KV bytes", "--kv-cache-memory-bytes", "x1",
                 "pins the KV budget per GPU and skips profiling; still bounded by physical memory"});
  return out;
}

}  // namespace

PlanReport BuildPlanReport(const Deployment& d, const std::vector<LayoutSpec>& explicit_layouts, bool enumerate,
                           const DeploymentForLayout& deployment_for) {
  PlanReport r;
  r.deployment = d;
  auto for_layout = [&](const LayoutSpec& spec) { return deployment_for ? deployment_for(spec) : d; };
  if (enumerate) {
    for (const auto& spec : EnumerateLayouts(d)) r.layouts.push_back(PlanLayout(for_layout(spec), spec));
    std::int64_t best_tokens = -1;
    for (size_t i = 0; i < r.layouts.size(); ++i) {
      const auto& l = r.layouts[i];
      if (!l.feasible || !l.index_share_safe || l.pp_gated || l.spec.data_parallel_size != 1) continue;
      if (l.pool.kv_tokens > best_tokens) {
        best_tokens = l.pool.kv_tokens;
        r.best = static_cast<int>(i);
      }
    }
  }
  for (const auto& spec : explicit_layouts) r.detailed.push_back(PlanLayout(for_layout(spec), spec));
  r.dimensions = Dimensions(d, r);
  r.notes.insert(r.notes.end(), d.notes.begin(), d.notes.end());
  r.notes.push_back("weights: " + d.weights.source + fmt::format(" ({:.2f} GiB in all)", ToGiB(d.weights.total_bytes)));
  if (d.calibration)
    r.notes.push_back("non-torch, activation and CUDA graphs: calibrated on " + d.calibration->source);
  else
    r.notes.push_back(
        "non-torch, activation and CUDA graphs: estimated (memory-overheads.md §7); run "
        "`ppdeploy calibrate --log boot.log` on one real boot to replace them");
  return r;
}

}  // namespace ppdeploy
