#include "layout/deployment_file.h"

#include "core/error.h"
#include "core/json_fields.h"

namespace ppdeploy {

DeploymentFile ParseDeploymentFile(const nlohmann::json& j, const std::string& source) {
  JsonContext c{source, ""};
  RequireObject(j, c);
  DeploymentFile f;
  f.name = OptString(j, "name", c).value_or("");
  f.description = OptString(j, "description", c).value_or("");
  f.model = ReqString(j, "model", c);
  f.gpu = ReqString(j, "gpu", c);
  f.gpus_per_node = static_cast<int>(OptInt(j, "gpus_per_node", c, 1).value_or(8));
  f.nodes = static_cast<int>(OptInt(j, "nodes", c, 1).value_or(1));
  f.vllm = OptString(j, "vllm", c).value_or("");
  f.gpu_memory_utilization = OptNumber(j, "gpu_memory_utilization", c, 0.01);
  if (f.gpu_memory_utilization && *f.gpu_memory_utilization > 1.0)
    Fail("{}: expected a fraction <= 1, got {}", c.Where("gpu_memory_utilization"), *f.gpu_memory_utilization);
  f.kv_cache_dtype = OptString(j, "kv_cache_dtype", c).value_or("auto");
  f.num_speculative_tokens = static_cast<int>(OptInt(j, "num_speculative_tokens", c).value_or(0));
  f.max_model_len = OptInt(j, "max_model_len", c, 1).value_or(0);
  f.calibration = OptString(j, "calibration", c).value_or("");
  if (auto it = j.find("layouts"); it != j.end() && !it->is_null()) {
    if (!it->is_array()) Fail("{}: expected a list", c.Where("layouts"));
    int idx = 0;
    for (const auto& l : *it) {
      JsonContext lc = c.Child(fmt::format("layouts[{}]", idx++));
      RequireObject(l, lc);
      LayoutSpec s;
      s.tensor_parallel_size = static_cast<int>(ReqInt(l, "tensor_parallel_size", lc));
      s.pipeline_parallel_size = static_cast<int>(ReqInt(l, "pipeline_parallel_size", lc));
      s.data_parallel_size = static_cast<int>(OptInt(l, "data_parallel_size", lc, 1).value_or(1));
      if (auto p = l.find("layer_partition"); p != l.end() && !p->is_null()) {
        if (!p->is_array()) Fail("{}: expected a list of integers", lc.Where("layer_partition"));
        for (const auto& v : *p) {
          if (!v.is_number_integer()) Fail("{}: expected integers, got {}", lc.Where("layer_partition"), ShortJson(v));
          s.layer_partition.push_back(v.get<int>());
        }
      }
      f.layouts.push_back(std::move(s));
    }
  }
  return f;
}

}  // namespace ppdeploy
