// The simulator's start-up log (SimEngine::StartupLog): the lines a vLLM boot prints, with the figures of a
// ppdeploy plan when one is given (BootLayoutFromPlanJson), in vLLM's formats (docs/vllm-rules.md §2).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/json_fields.h"
#include "sim/sim_engine.h"

namespace ppdeploy::sim {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::string Grouped(std::int64_t v) {
  std::string s = std::to_string(v < 0 ? -v : v), out;
  int c = 0;
  for (auto it = s.rbegin(); it != s.rend(); ++it) {
    if (c > 0 && c % 3 == 0) out.insert(out.begin(), ',');
    out.insert(out.begin(), *it);
    ++c;
  }
  return v < 0 ? "-" + out : out;
}

double Gib(const nlohmann::json& figure, const JsonContext& ctx, std::string_view key) {
  const JsonContext c = ctx.Child(key);
  if (!figure.contains(std::string(key))) Fail("{}: missing", ctx.Where(key));
  const auto& f = figure.at(std::string(key));
  RequireObject(f, c);
  return static_cast<double>(ReqInt(f, "bytes", c, 0)) / kGiB;
}

}  // namespace

BootLayout BootLayoutFromPlanJson(const nlohmann::json& doc, const std::string& source) {
  const JsonContext top{source, ""};
  RequireObject(doc, top);
  const nlohmann::json* layout = nullptr;
  JsonContext ctx = top;
  if (doc.contains("plan") && doc["plan"].is_object()) {  // ppdeploy cmd --format json
    layout = &doc["plan"];
    ctx = top.Child("plan");
  } else {
    const std::string schema = OptString(doc, "schema", top).value_or("");
    if (schema != "ppdeploy.plan/2" && schema != "ppdeploy.plan/3")
      Fail(
          "{}: expected `ppdeploy plan --format json` (schema ppdeploy.plan/3) or `ppdeploy cmd --format json`, got "
          "schema \"{}\"",
          source, schema);
    if (!doc.contains("detailed") || !doc["detailed"].is_array() || doc["detailed"].empty())
      Fail("{}: no detailed layout (run `ppdeploy plan --tp T --pp P --format json`)", top.Where("detailed"));
    layout = &doc["detailed"][0];
    ctx = top.Child("detailed[0]");
  }
  const auto& L = *layout;
  RequireObject(L, ctx);
  BootLayout b;
  b.source = source;
  b.tensor_parallel_size = ReqIntAs<int>(L, "tensor_parallel_size", ctx, 1);
  b.pipeline_parallel_size = ReqIntAs<int>(L, "pipeline_parallel_size", ctx, 1);
  b.kv_tokens = ReqInt(L, "kv_tokens", ctx, 0);
  b.num_gpu_blocks = ReqInt(L, "num_gpu_blocks", ctx, 0);
  b.block_size = ReqIntAs<int>(L, "block_size", ctx, 1);
  b.max_model_len = ReqInt(L, "max_model_len", ctx, 1);
  b.partition = OptIntListAs<int>(L, "layer_partition", ctx, 0);
  if (!L.contains("ranks") || !L["ranks"].is_array() || L["ranks"].empty())
    Fail("{}: expected the per-stage memory of the layout", ctx.Where("ranks"));
  for (std::size_t i = 0; i < L["ranks"].size(); ++i) {
    const JsonContext rc = ctx.Child(fmt::format("ranks[{}]", i));
    const auto& r = L["ranks"][i];
    RequireObject(r, rc);
    BootStage s;
    s.pp_rank = ReqIntAs<int>(r, "pp_rank", rc, 0);
    s.weights_gib = Gib(r, rc, "weights");
    s.non_torch_gib = Gib(r, rc, "non_torch");
    s.activation_gib = Gib(r, rc, "activation");
    s.cuda_graph_estimate_gib = Gib(r, rc, "cuda_graph_estimate");
    s.cuda_graph_gib = Gib(r, rc, "cuda_graph_actual");
    s.available_kv_gib = Gib(r, rc, "available_kv");
    s.cuda_context_gib = Gib(r, rc, "cuda_context");
    s.kv_allocated_gib = static_cast<double>(ReqInt(r, "kv_allocated_bytes", rc, 0)) / kGiB;
    s.requested_gib = static_cast<double>(ReqInt(r, "requested_bytes", rc, 0)) / kGiB;
    s.num_blocks = ReqInt(r, "num_blocks", rc, 0);
    b.stages.push_back(s);
  }
  if (static_cast<int>(b.stages.size()) != b.pipeline_parallel_size)
    Fail("{}: {} stages for pipeline_parallel_size {}", ctx.Where("ranks"), b.stages.size(), b.pipeline_parallel_size);
  if (doc.contains("deployment") && doc["deployment"].is_object()) {
    const JsonContext dc = top.Child("deployment");
    const auto& d = doc["deployment"];
    b.gpu_total_gib = OptNumber(d, "gpu_total_gib", dc).value_or(0.0);
    b.gpu_memory_utilization = OptNumber(d, "gpu_memory_utilization", dc).value_or(0.9);
    b.kv_cache_dtype = OptString(d, "kv_cache_dtype", dc).value_or("auto");
  }
  if (!(b.gpu_total_gib > 0))  // cmd's JSON has no deployment block: the requested memory over the utilisation
    b.gpu_total_gib = b.stages.front().requested_gib / b.gpu_memory_utilization;
  return b;
}

std::int64_t SimEngine::NumGpuBlocks() const { return options_.kv_cache_tokens / std::max(1, options_.block_size); }

std::vector<std::string> SimEngine::StartupLog(int pid, const std::string& stamp, const std::string& url) const {
  const SimOptions& o = options_;
  std::string api = fmt::format("(APIServer pid={}) INFO {} ", pid, stamp);
  std::string core = fmt::format("(EngineCore_DP0 pid={}) INFO {} ", pid, stamp);
  double concurrency = static_cast<double>(o.kv_cache_tokens) / static_cast<double>(o.max_model_len);
  if (!o.boot_layout) {
    return {
        api + fmt::format("[api_server.py:1839] vLLM API server version {}", o.vllm_version),
        api + fmt::format("[utils.py:233] non-default args: {{'model': '{}', 'max_model_len': {}, 'max_num_seqs': {}}}",
                          o.model, o.max_model_len, o.max_num_seqs),
        core + fmt::format(
                   "[core.py:93] Initializing a V1 LLM engine (v{}) with config: model='{}', max_seq_len={}, seed={}",
                   o.vllm_version, o.model, o.max_model_len, o.seed),
        core + fmt::format("[gpu_model_runner.py:2653] Model loading took {:.2f} GiB memory and {:g} seconds",
                           o.model_load_gib, o.model_load_s),
        core + fmt::format("[gpu_worker.py:349] Available KV cache memory: {:.2f} GiB", o.available_kv_gib),
        core + fmt::format("[kv_cache_utils.py:1229] GPU KV cache size: {} tokens", Grouped(o.kv_cache_tokens)),
        core + fmt::format("[kv_cache_utils.py:1234] Maximum concurrency for {} tokens per request: {:.2f}x",
                           Grouped(o.max_model_len), concurrency),
        core + fmt::format("[core.py:218] init engine (profile, create kv cache, warmup model) took {:.2f} seconds",
                           o.init_engine_s),
        api + fmt::format("[api_server.py:1910] Starting vLLM API server 0 on {}", url),
    };
  }
  const BootLayout& b = *o.boot_layout;
  std::vector<std::string> lines;
  lines.push_back(api + fmt::format("[api_server.py:1839] vLLM API server version {}", o.vllm_version));
  lines.push_back(api + fmt::format("[utils.py:233] non-default args: {{'model': '{}', 'max_model_len': {}, "
                                    "'tensor_parallel_size': {}, 'pipeline_parallel_size': {}, 'block_size': {}, "
                                    "'kv_cache_dtype': '{}', 'gpu_memory_utilization': {}}}",
                                    o.model, o.max_model_len, b.tensor_parallel_size, b.pipeline_parallel_size,
                                    o.block_size, o.kv_cache_dtype, o.gpu_memory_utilization));
  lines.push_back(core + fmt::format("[core.py:93] Initializing a V1 LLM engine (v{}) with config: model='{}', "
                                     "max_seq_len={}, tensor_parallel_size={}, pipeline_parallel_size={}, seed={}",
                                     o.vllm_version, o.model, o.max_model_len, b.tensor_parallel_size,
                                     b.pipeline_parallel_size, o.seed));
  // vLLM 0.11 attention backends that need a block size set it and say so (docs/vllm-rules.md §2 "Block size").
  lines.push_back(
      core +
      fmt::format("[interface.py:470] Setting kv cache block size to {} for FLASHMLA_SPARSE backend.", o.block_size));
  if (b.pipeline_parallel_size > 1 && !b.partition.empty()) {
    std::string split;
    for (std::size_t i = 0; i < b.partition.size(); ++i) split += (i ? "," : "") + std::to_string(b.partition[i]);
    lines.push_back(core + fmt::format("[utils.py:101] Hidden layers were unevenly partitioned: [{}]. This can be "
                                       "manually overridden using the VLLM_PP_LAYER_PARTITION environment variable",
                                       split));
  }
  auto worker = [&](const BootStage& s) {
    return fmt::format("(Worker_PP{}_TP0 pid={}) INFO {} ", s.pp_rank, pid + 1 + s.pp_rank, stamp);
  };
  for (const auto& s : b.stages)
    lines.push_back(worker(s) + fmt::format("[gpu_model_runner.py:2653] Model loading took {:.4f} GiB memory and {:g} "
                                            "seconds",
                                            s.weights_gib, o.model_load_s));
  for (const auto& s : b.stages)
    lines.push_back(worker(s) +
                    fmt::format("[gpu_worker.py:349] Available KV cache memory: {:.2f} GiB", s.available_kv_gib));
  lines.push_back(core +
                  fmt::format("[kv_cache_utils.py:1229] GPU KV cache size: {} tokens", Grouped(o.kv_cache_tokens)));
  lines.push_back(core + fmt::format("[kv_cache_utils.py:1234] Maximum concurrency for {} tokens per request: {:.2f}x",
                                     Grouped(o.max_model_len), concurrency));
  for (const auto& s : b.stages) {
    lines.push_back(worker(s) + fmt::format("[gpu_model_runner.py:3480] Graph capturing finished in 25 secs, took "
                                            "{:.2f} GiB",
                                            s.cuda_graph_gib));
    // N-era summary: "peak activation" includes the CUDA-graph estimate; CUDAGraph memory is the actual pool.
    lines.push_back(worker(s) +
                    fmt::format("[gpu_worker.py:789] Free memory on device ({:.2f}/{:.2f} GiB) on startup. Desired "
                                "GPU memory utilization is ({}, {:.2f} GiB). Actual usage is {:.2f} GiB for "
                                "consumed memory (weights + non-torch), {:.2f} GiB for peak activation, and {:.2f} "
                                "GiB for CUDAGraph memory. Current kv cache memory in use is {:.2f} GiB.",
                                b.gpu_total_gib - s.cuda_context_gib, b.gpu_total_gib, o.gpu_memory_utilization,
                                s.requested_gib, s.weights_gib + s.non_torch_gib,
                                s.activation_gib + s.cuda_graph_estimate_gib, s.cuda_graph_gib, s.kv_allocated_gib));
  }
  lines.push_back(core + fmt::format("[core.py:218] init engine (profile, create kv cache, warmup model) took {:.2f} "
                                     "seconds",
                                     o.init_engine_s));
  lines.push_back(api + fmt::format("[api_server.py:1910] Starting vLLM API server 0 on {}", url));
  return lines;
}

}  // namespace ppdeploy::sim
