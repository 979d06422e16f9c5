#include "layout/plan_report.h"

#include <fmt/format.h>

#include "core/error.h"
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
  // DCP: what this version, backend and model allow (planner.h DcpRefusal), at the TP of the
  // best layout (DCP reuses the TP ranks; D = TP).
  std::string dcp_verdict;
  {
    int tp = d.gpus_per_node;
    if (r.best >= 0) tp = r.layouts[r.best].spec.tensor_parallel_size;
    EffectiveKv kv = ResolveKvDtype(EffectiveModel(d), d.kv_cache_dtype, d.vllm, d.gpu);
    std::string why = tp > 1 ? DcpRefusal(d, EffectiveModel(d), kv, tp, tp) : "needs tensor_parallel_size > 1";
    if (why.empty())
      dcp_verdict = fmt::format(
          "supported here (TP{} x DCP{}): each DCP rank keeps 1/D of every request's tokens, so the per-request need "
          "is cdiv(cdiv(L, D), B) blocks and the logged capacity is x D; no extra GPUs (DCP reuses the TP ranks); "
          "the per-GPU block count is unchanged",
          tp, tp);
    else
      dcp_verdict = why;
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
                           const DeploymentForLayout& deployment_for,
                           const std::vector<std::string>& deployment_notes) {
  PlanReport r;
  r.deployment = d;
  auto for_layout = [&](const LayoutSpec& spec) { return deployment_for ? deployment_for(spec) : d; };
  if (enumerate) {
    for (const auto& spec : EnumerateLayouts(d)) {
      try {
        r.layouts.push_back(PlanLayout(for_layout(spec), spec));
      } catch (const Error& e) {  // a layout vLLM would refuse to build (e.g. state heads not divisible by TP)
        r.notes.push_back(fmt::format("TP{}/PP{} not plannable: {}", spec.tensor_parallel_size,
                                      spec.pipeline_parallel_size, e.what()));
      }
    }
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
  r.notes.insert(r.notes.end(), deployment_notes.begin(), deployment_notes.end());
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
