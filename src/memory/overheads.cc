#include "memory/overheads.h"

#include <algorithm>

#include "core/error.h"
#include "core/json_fields.h"
#include "core/units.h"

namespace ppdeploy {

std::int64_t DsaWorkspaceBytes(const ModelConfig& m, std::int64_t max_model_len) {
  if (!m.dsa) return 0;
  std::int64_t row = m.index_head_dim + 4 * (m.index_head_dim / 128);
  return 40 * max_model_len * row + kMiB;
}

std::pair<int, int> DefaultBatchLimits(const GpuSpec& gpu, const VllmProfile& vllm) {
  if (gpu.total_gib >= 160.0 && vllm.large_gpu_batch_defaults) return {16384, 1024};
  if (gpu.large_batch_defaults()) return {8192, 1024};
  return {2048, 256};
}

Overheads EstimateOverheads(const ModelConfig& m, const GpuSpec& gpu, const VllmProfile& vllm,
                            const OverheadInputs& in) {
  Overheads o;
  o.provenance = Provenance::kEstimated;
  const double tp = in.tensor_parallel_size;
  // Non-torch base [fit n=42 H100 / guess A100-PCIe], memory-overheads.md §7.
  double non_torch_gib;
  if (in.tensor_parallel_size == 1) {
    non_torch_gib = in.pipeline_parallel_size == 1 ? 0.27 : 0.07;
  } else {
    bool nvls = gpu.nvswitch && (gpu.arch == "sm90" || gpu.arch == "sm100" || gpu.arch == "sm103");
    non_torch_gib = nvls ? 2.1 : 0.6;
  }
  if (vllm.available_kv == "v1_absolute") non_torch_gib += 0.5;  // CUDA context counted (V1 <= v0.9.0)
  if (vllm.nccl_in_non_torch && in.tensor_parallel_size * in.pipeline_parallel_size > 1)
    non_torch_gib += 1.2;  // NCCL init before the snapshot (pre #25359)
  // Persistent workspaces: the largest of the MoE workspace and the DSA indexer block (shared manager).
  const double mbt = in.max_num_batched_tokens;
  double moe_ws = 0;
  if (m.n_routed_experts > 0) {
    double H = m.hidden_size, Ie = m.moe_intermediate_size;
    moe_ws = 2.0 * mbt * m.num_experts_per_tok * (std::max(Ie / tp, H) + std::max(2 * Ie / tp, H));
  }
  double dsa_ws = static_cast<double>(DsaWorkspaceBytes(m, in.max_model_len));
  double workspace = std::max(moe_ws, dsa_ws);
  o.non_torch_bytes = GiBToBytes(non_torch_gib) + static_cast<std::int64_t>(workspace);
  if (!in.first_stage) o.non_torch_bytes += static_cast<std::int64_t>(4.0 * mbt * m.hidden_size);  // PP recv buffers

  // Transient activation [fit n=42]: max(S, F) + 0.1 GiB (+ 0.5 GiB DSA dummy logits).
  double S = 0;
  if (in.last_stage) {
    S = 15.0 * std::min<double>(in.max_num_seqs, mbt) * m.vocab_size;
    if (in.mtp_on) S *= 1.5;
  }
  double I = m.intermediate_size > 0 ? m.intermediate_size : m.moe_intermediate_size;
  double F = 2.0 * mbt * (3.0 * I / tp + 4.0 * m.hidden_size);
  double act = std::max(S, F) + 0.1 * kGiB;
  if (m.dsa) act += 0.5 * kGiB;
  o.activation_bytes = static_cast<std::int64_t>(act);

  // CUDA graphs [fit]: dense 0.31 + 0.0167 x local layers; MoE/MLA ~1.3 GiB; x2 on the last
  // stage with the MTP drafter (seed: 0.76 -> 1.49).
  double cg = 0;
  if (!in.enforce_eager) {
    cg = (m.n_routed_experts > 0 || m.attention == AttentionKind::kMla) ? 1.3 : 0.31 + 0.0167 * in.local_layers;
    if (in.last_stage && in.mtp_on) cg *= 2.0;
  }
  o.cuda_graph_actual_bytes = GiBToBytes(cg);
  o.cuda_graph_estimate_bytes = vllm.subtracts_cuda_graph_estimate ? o.cuda_graph_actual_bytes : 0;
  o.cuda_context_bytes = GiBToBytes(in.tensor_parallel_size * in.pipeline_parallel_size == 1 ? 0.51 : 1.45);
  o.note = "memory-overheads.md §7 estimator";
  return o;
}

Calibration ParseCalibration(const nlohmann::json& j, const std::string& source) {
  JsonContext ctx{source, ""};
  RequireObject(j, ctx);
  if (auto schema = OptString(j, "schema", ctx); schema && *schema != "ppdeploy.calibration/1")
    Fail("{}: unsupported schema \"{}\" (expected ppdeploy.calibration/1)", ctx.Where("schema"), *schema);
  Calibration c;
  c.source = OptString(j, "source", ctx).value_or(source);
  c.model = OptString(j, "model", ctx).value_or("");
  c.gpu = OptString(j, "gpu", ctx).value_or("");
  c.vllm = OptString(j, "vllm", ctx).value_or("");
  c.tensor_parallel_size = static_cast<int>(ReqInt(j, "tensor_parallel_size", ctx));
  c.pipeline_parallel_size = static_cast<int>(ReqInt(j, "pipeline_parallel_size", ctx));
  if (auto it = j.find("layer_partition"); it != j.end() && !it->is_null()) {
    if (!it->is_array()) Fail("{}: expected a list of integers", ctx.Where("layer_partition"));
    for (const auto& v : *it) {
      if (!v.is_number_integer() || v.get<int>() < 0)
        Fail("{}: expected non-negative integers, got {}", ctx.Where("layer_partition"), ShortJson(v));
      c.layer_partition.push_back(v.get<int>());
    }
    if (static_cast<int>(c.layer_partition.size()) != c.pipeline_parallel_size)
      Fail("{}: {} entries for pipeline_parallel_size={}", ctx.Where("layer_partition"), c.layer_partition.size(),
           c.pipeline_parallel_size);
  }
  c.gpu_memory_utilization = ReqNumber(j, "gpu_memory_utilization", ctx, 0.01);
  if (c.gpu_memory_utilization > 1.0)
    Fail("{}: expected a fraction <= 1, got {}", ctx.Where("gpu_memory_utilization"), c.gpu_memory_utilization);
  c.max_model_len = ReqInt(j, "max_model_len", ctx);
  c.kv_cache_dtype = OptString(j, "kv_cache_dtype", ctx).value_or("auto");
  c.num_speculative_tokens = static_cast<int>(OptInt(j, "num_speculative_tokens", ctx).value_or(0));
  c.total_gib = ReqNumber(j, "total_gib", ctx, 1.0);
  c.cuda_context_gib = OptNumber(j, "cuda_context_gib", ctx);
  c.logged_kv_tokens = OptInt(j, "logged_kv_tokens", ctx);
  auto ranks = j.find("ranks");
  if (ranks == j.end() || !ranks->is_array() || ranks->empty())
    Fail("{}: expected a non-empty list", ctx.Where("ranks"));
  int idx = 0;
  for (const auto& r : *ranks) {
    JsonContext rc = ctx.Child(fmt::format("ranks[{}]", idx++));
    RequireObject(r, rc);
    CalibrationRank cr;
    cr.pp_rank = static_cast<int>(ReqInt(r, "pp_rank", rc, 0));
    if (cr.pp_rank >= c.pipeline_parallel_size)
      Fail("{}: {} is not below pipeline_parallel_size={}", rc.Where("pp_rank"), cr.pp_rank, c.pipeline_parallel_size);
    cr.available_kv_gib = ReqNumber(r, "available_kv_gib", rc, -1e6);
    cr.model_loading_gib = OptNumber(r, "model_loading_gib", rc);
    cr.weights_plus_non_torch_gib = OptNumber(r, "weights_plus_non_torch_gib", rc);
    cr.peak_activation_gib = OptNumber(r, "peak_activation_gib", rc);
    cr.cuda_graph_gib = OptNumber(r, "cuda_graph_gib", rc);
    cr.nvidia_smi_mib = OptNumber(r, "nvidia_smi_mib", rc);
    c.ranks.push_back(cr);
  }
  std::sort(c.ranks.begin(), c.ranks.end(), [](const auto& a, const auto& b) { return a.pp_rank < b.pp_rank; });
  return c;
}

nlohmann::json CalibrationToJson(const Calibration& c) {
  nlohmann::json j;
  j["schema"] = "ppdeploy.calibration/1";
  j["source"] = c.source;
  j["model"] = c.model;
  j["gpu"] = c.gpu;
  j["vllm"] = c.vllm;
  j["tensor_parallel_size"] = c.tensor_parallel_size;
  j["pipeline_parallel_size"] = c.pipeline_parallel_size;
  if (!c.layer_partition.empty()) j["layer_partition"] = c.layer_partition;
  j["gpu_memory_utilization"] = c.gpu_memory_utilization;
  j["max_model_len"] = c.max_model_len;
  j["kv_cache_dtype"] = c.kv_cache_dtype;
  j["num_speculative_tokens"] = c.num_speculative_tokens;
  j["total_gib"] = c.total_gib;
  if (c.cuda_context_gib) j["cuda_context_gib"] = *c.cuda_context_gib;
  if (c.logged_kv_tokens) j["logged_kv_tokens"] = *c.logged_kv_tokens;
  j["ranks"] = nlohmann::json::array();
  for (const auto& r : c.ranks) {
    nlohmann::json jr;
    jr["pp_rank"] = r.pp_rank;
    jr["available_kv_gib"] = r.available_kv_gib;
    if (r.model_loading_gib) jr["model_loading_gib"] = *r.model_loading_gib;
    if (r.weights_plus_non_torch_gib) jr["weights_plus_non_torch_gib"] = *r.weights_plus_non_torch_gib;
    if (r.peak_activation_gib) jr["peak_activation_gib"] = *r.peak_activation_gib;
    if (r.cuda_graph_gib) jr["cuda_graph_gib"] = *r.cuda_graph_gib;
    if (r.nvidia_smi_mib) jr["nvidia_smi_mib"] = *r.nvidia_smi_mib;
    j["ranks"].push_back(jr);
  }
  return j;
}

}  // namespace ppdeploy
