#include "calibration/schema.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.h"
#include "core/escape.h"
#include "core/json_fields.h"

namespace ppdeploy {

Calibration ParseCalibration(const nlohmann::json& j, const std::string& source) {
  JsonContext ctx{source, ""};
  RequireObject(j, ctx);
  if (auto schema = OptString(j, "schema", ctx); schema && *schema != "ppdeploy.calibration/1")
    Fail("{}: unsupported schema {} (expected ppdeploy.calibration/1)", ctx.Where("schema"), QuoteForMessage(*schema));
  Calibration c;
  c.source = OptString(j, "source", ctx).value_or(source);
  c.model = OptString(j, "model", ctx).value_or("");
  c.gpu = OptString(j, "gpu", ctx).value_or("");
  c.vllm = OptString(j, "vllm", ctx).value_or("");
  c.tensor_parallel_size = ReqIntAs<int>(j, "tensor_parallel_size", ctx);
  c.pipeline_parallel_size = ReqIntAs<int>(j, "pipeline_parallel_size", ctx);
  c.layer_partition = OptIntListAs<int>(j, "layer_partition", ctx, 0);
  if (!c.layer_partition.empty()) {
    if (static_cast<int>(c.layer_partition.size()) != c.pipeline_parallel_size)
      Fail("{}: {} entries for pipeline_parallel_size={}", ctx.Where("layer_partition"), c.layer_partition.size(),
           c.pipeline_parallel_size);
  }
  c.gpu_memory_utilization = ReqNumber(j, "gpu_memory_utilization", ctx, 0.01);
  if (c.gpu_memory_utilization > 1.0)
    Fail("{}: expected a fraction <= 1, got {}", ctx.Where("gpu_memory_utilization"), c.gpu_memory_utilization);
  c.max_model_len = ReqInt(j, "max_model_len", ctx);
  c.kv_cache_dtype = OptString(j, "kv_cache_dtype", ctx).value_or("auto");
  c.num_speculative_tokens = OptIntAs<int>(j, "num_speculative_tokens", ctx).value_or(0);
  c.total_gib = ReqNumber(j, "total_gib", ctx, 1.0);
  c.cuda_context_gib = OptNumber(j, "cuda_context_gib", ctx);
  c.logged_kv_tokens = OptInt(j, "logged_kv_tokens", ctx);
  if (auto v = OptIntAs<int>(j, "max_num_seqs", ctx, 1)) c.max_num_seqs = *v;
  if (auto v = OptIntAs<int>(j, "max_num_batched_tokens", ctx, 1)) c.max_num_batched_tokens = *v;
  auto ranks = j.find("ranks");
  if (ranks == j.end() || !ranks->is_array() || ranks->empty())
    Fail("{}: expected a non-empty list", ctx.Where("ranks"));
  int idx = 0;
  for (const auto& r : *ranks) {
    JsonContext rc = ctx.Child(fmt::format("ranks[{}]", idx++));
    RequireObject(r, rc);
    CalibrationRank cr;
    cr.pp_rank = ReqIntAs<int>(r, "pp_rank", rc, 0);
    if (cr.pp_rank >= c.pipeline_parallel_size)
      Fail("{}: {} is not below pipeline_parallel_size={}", rc.Where("pp_rank"), cr.pp_rank, c.pipeline_parallel_size);
    cr.available_kv_gib = ReqNumber(r, "available_kv_gib", rc, -1e6);
    if (cr.available_kv_gib > c.total_gib)  // a KV pool larger than the GPU: a typo, and bytes that overflow
      Fail("{}: {} GiB is more than the GPU's total_gib {}", rc.Where("available_kv_gib"), cr.available_kv_gib,
           c.total_gib);
    cr.model_loading_gib = OptNumber(r, "model_loading_gib", rc);
    cr.weights_plus_non_torch_gib = OptNumber(r, "weights_plus_non_torch_gib", rc);
    cr.peak_activation_gib = OptNumber(r, "peak_activation_gib", rc);
    cr.cuda_graph_gib = OptNumber(r, "cuda_graph_gib", rc);
    cr.nvidia_smi_mib = OptNumber(r, "nvidia_smi_mib", rc);
    cr.non_torch_gib = OptNumber(r, "non_torch_gib", rc);
    c.ranks.push_back(cr);
  }
  std::sort(c.ranks.begin(), c.ranks.end(), [](const auto& a, const auto& b) { return a.pp_rank < b.pp_rank; });
  for (size_t i = 1; i < c.ranks.size(); ++i)
    if (c.ranks[i].pp_rank == c.ranks[i - 1].pp_rank)
      Fail("{}: pp_rank {} appears twice", ctx.Where("ranks"), c.ranks[i].pp_rank);
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
  if (c.max_num_seqs) j["max_num_seqs"] = *c.max_num_seqs;
  if (c.max_num_batched_tokens) j["max_num_batched_tokens"] = *c.max_num_batched_tokens;
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
    if (r.non_torch_gib) jr["non_torch_gib"] = *r.non_torch_gib;
    j["ranks"].push_back(jr);
  }
  return j;
}

}  // namespace ppdeploy
