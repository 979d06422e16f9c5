#include "deploy/resolve.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>

#include "core/error.h"
#include "core/escape.h"
#include "deploy/layers.h"
#include "model/presets.h"

namespace ppdeploy {
namespace {

std::vector<std::string_view> SplitComma(std::string_view text) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    size_t pos = text.find(',', start);
    out.push_back(text.substr(start, pos == std::string_view::npos ? std::string_view::npos : pos - start));
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
  return out;
}

// PP_SIZE=1: the split is not passed (vLLM reads it only with pipeline parallelism), but text that is no
// split at all ("41 37", "41;37", a full-width comma, blanks) is refused by the rule --pp 2 gives it, so a
// typo never passes unseen: the one parser (ParsePartition) over as many fields as the text has.
PartitionDecision DecideSingleStage(std::string_view text, int pp_size, int num_hidden_layers,
                                    std::string_view origin) {
  PartitionDecision c;
  c.check.name = "layer-partition";
  c.partition = {num_hidden_layers};
  if (text.empty()) {
    c.check.messages.push_back(fmt::format("PP_SIZE={}: no layer split", pp_size));
    return c;
  }
  try {
    ValidatePartitionForPlanning(ParsePartition(text, static_cast<int>(SplitComma(text).size()), num_hidden_layers));
  } catch (const Error& e) {
    c.check.status = CheckStatus::kFail;
    c.check.messages.push_back(fmt::format("pp_layer_partition ({}): {}", origin, e.what()));
    c.partition.clear();
    return c;
  }
  c.check.status = CheckStatus::kWarn;
  c.check.messages.push_back(fmt::format(
      "PP_LAYER_PARTITION={} is ignored with PP_SIZE={} (vLLM reads it only with pipeline parallelism); not passed",
      EscapeForMessage(text), pp_size));
  c.warnings.push_back(fmt::format("pp_layer_partition ({}): {}", origin, c.check.messages.back()));
  return c;
}

// A stage of 0 layers: vLLM's get_pp_indices checks only the count and the sum, so it starts a rank that
// holds no decoder layer (only forwards the hidden states); said by name, since it is rarely meant.
void WarnEmptyStages(PartitionDecision& c) {
  for (std::size_t i = 0; i < c.partition.size(); ++i) {
    if (c.partition[i] != 0) continue;
    c.check.status = CheckStatus::kWarn;
    c.check.messages.push_back(fmt::format(
        "segment {} is 0: PP rank {} holds no layer (vLLM's get_pp_indices accepts it; that stage's GPUs only pass "
        "the hidden states on)",
        i + 1, i));
    c.warnings.push_back("layer split: " + c.check.messages.back());
  }
}

}  // namespace

std::string_view CheckStatusName(CheckStatus status) {
  switch (status) {
    case CheckStatus::kPass:
      return "pass";
    case CheckStatus::kWarn:
      return "warn";
    case CheckStatus::kFail:
      return "FAIL";
  }
  return "?";
}

PartitionDecision DecidePartition(std::string_view text, int pp_size, int num_hidden_layers, std::string_view origin,
                                  const VllmProfile* vllm) {
  auto default_split = [&](int layers, int pp) {
    return vllm ? DefaultSplit(*vllm, layers, pp) : DefaultPartition(layers, pp);
  };
  PartitionDecision c;
  c.check.name = "layer-partition";
  const std::string shown = EscapeForMessage(text);
  if (pp_size <= 1) return DecideSingleStage(text, pp_size, num_hidden_layers, origin);
  if (pp_size > num_hidden_layers) {
    c.check.status = CheckStatus::kFail;
    c.check.messages.push_back(fmt::format(
        "PP_SIZE={} is larger than num_hidden_layers={}: a stage would hold no layer", pp_size, num_hidden_layers));
    return c;
  }
  if (text.empty()) {
    c.partition = default_split(num_hidden_layers, pp_size);
    c.check.messages.push_back(
        fmt::format("PP_LAYER_PARTITION unset: vLLM's default split {} (get_pp_indices)", fmt::join(c.partition, ",")));
    return c;
  }
  try {
    c.partition = ParsePartition(text, pp_size, num_hidden_layers);
    ValidatePartitionForPlanning(c.partition);
  } catch (const Error& e) {
    c.check.status = CheckStatus::kFail;
    c.check.messages.push_back(fmt::format("pp_layer_partition ({}): {}", origin, e.what()));
    if (SplitComma(text).size() != static_cast<size_t>(pp_size))
      c.check.messages.push_back(fmt::format(
          "  give {} segments (vLLM's default split for PP_SIZE={} is {}), or PP_LAYER_PARTITION= to let vLLM split",
          pp_size, pp_size, fmt::join(default_split(num_hidden_layers, pp_size), ",")));
    c.partition.clear();
    return c;
  }
  auto fields = SplitComma(text);
  for (size_t i = 0; i < fields.size() && i < c.partition.size(); ++i) {
    if (fields[i] != std::to_string(c.partition[i])) {
      c.check.status = CheckStatus::kWarn;
      c.check.messages.push_back(fmt::format("segment {} '{}' is read by vLLM (Python int()) as {}", i + 1,
                                             EscapeForMessage(fields[i]), c.partition[i]));
    }
  }
  WarnEmptyStages(c);
  std::vector<std::string> ranges;
  int start = 0;
  for (int p : c.partition) {
    ranges.push_back(fmt::format("[{},{})", start, start + p));
    start += p;
  }
  c.check.messages.push_back(
      fmt::format("PP_LAYER_PARTITION={}: stages {} of {} layers", shown, fmt::join(ranges, " "), num_hidden_layers));
  c.pass_env = true;
  return c;
}

RunnerDecision DecideV2Runner(std::string_view force_v2_runner, int pp_size, const VllmProfile& vllm) {
  RunnerDecision d;
  d.check.name = "v2-runner";
  if (force_v2_runner.empty()) {  // vLLM's own default: nothing passed
    d.check.messages.push_back(
        vllm.v2_model_runner_env
            ? "FORCE_V2_RUNNER unset: VLLM_USE_V2_MODEL_RUNNER not passed (vLLM's default runner)"
            : fmt::format("FORCE_V2_RUNNER unset: vLLM {} has no V2 model runner; nothing pinned", vllm.name));
    return d;
  }
  if (force_v2_runner == "auto") {
    if (pp_size <= 1) {
      d.check.messages.push_back("FORCE_V2_RUNNER auto, PP_SIZE=1: model runner left to vLLM");
    } else if (!vllm.v2_model_runner_env) {
      d.check.messages.push_back(
          fmt::format("FORCE_V2_RUNNER auto: vLLM {} has no V2 model runner; nothing pinned", vllm.name));
    } else {
      d.v2_env = 1;
      d.check.messages.push_back(
          fmt::format("PP_SIZE={} > 1: VLLM_USE_V2_MODEL_RUNNER=1 pinned (V2 silently falls back to V1 for unsupported "
                      "methods, and "
                      "V1's PP + speculation is the broken path)",
                      pp_size));
    }
    return d;
  }
  if (force_v2_runner == "1") {
    if (!vllm.v2_model_runner_env) {
      d.check.status = CheckStatus::kFail;
      d.check.messages.push_back(
          fmt::format("FORCE_V2_RUNNER=1: vLLM {} has no V2 model runner (VLLM_USE_V2_MODEL_RUNNER)", vllm.name));
      return d;
    }
    d.v2_env = 1;
    d.check.messages.push_back("FORCE_V2_RUNNER=1: VLLM_USE_V2_MODEL_RUNNER=1");
    return d;
  }
  if (vllm.v2_model_runner_env) d.v2_env = 0;
  if (pp_size > 1) {
    d.check.status = CheckStatus::kWarn;
    d.check.messages.push_back(fmt::format(
        "FORCE_V2_RUNNER=0 with PP_SIZE={}: the V1 model runner's PP + speculation is the broken path (seed §8)",
        pp_size));
  } else {
    d.check.messages.push_back("FORCE_V2_RUNNER=0: VLLM_USE_V2_MODEL_RUNNER=0");
  }
  return d;
}

SpeculationDecision DecideSpeculation(std::string_view requested, int pp_size, int mtp_layers, bool v2_runner_on,
                                      const VllmProfile& vllm) {
  SpeculationDecision d;
  d.check.name = "speculation";
  const bool pp_blocked = pp_size > 1 && !vllm.pp_speculation;
  if (requested == "auto") {
    if (mtp_layers <= 0) {
      d.method = "none";
      d.check.messages.push_back("SPEC_METHOD=auto -> none: the model has no MTP layers");
    } else if (pp_blocked) {
      d.method = "none";
      d.check.messages.push_back(
          fmt::format("notice: SPEC_METHOD=auto chose MTP, downgraded to none: vLLM {} lacks PP + speculative decoding "
                      "(PP_SIZE={})",
                      vllm.name, pp_size));
    } else {
      d.method = "mtp";
      d.check.messages.push_back(fmt::format("SPEC_METHOD=auto -> mtp (the model has {} MTP layer{})", mtp_layers,
                                             mtp_layers == 1 ? "" : "s"));
    }
    return d;
  }
  d.method = std::string(requested);
  if (requested == "none") {
    d.check.messages.push_back("SPEC_METHOD=none: no speculative decoding");
    return d;
  }
  if (requested != "mtp" && requested != "ngram") {
    d.check.status = CheckStatus::kFail;
    d.method = "none";
    d.check.messages.push_back(
        fmt::format("SPEC_METHOD={}: expected auto, mtp, ngram or none", EscapeForMessage(requested)));
    return d;
  }
  if (requested == "mtp" && mtp_layers <= 0) {
    d.check.status = CheckStatus::kFail;
    d.check.messages.push_back("SPEC_METHOD=mtp: the model has no MTP layers (num_nextn_predict_layers = 0)");
    return d;
  }
  if (pp_blocked) {
    d.check.status = CheckStatus::kFail;
    d.check.messages.push_back(fmt::format(
        "SPEC_METHOD={} with PP_SIZE={}: vLLM {} does not support PP + speculative decoding (DeepSeekMTP lost "
        "SupportsPP "
        "on 2026-01-12, #32150; vllm-rules §1.11). Use SPEC_METHOD=none or auto, PP_SIZE=1, or a version whose row has "
        "pp_speculation (0.30, 0.30-custom)",
        requested, pp_size, vllm.name));
    return d;
  }
  if (requested == "ngram" && v2_runner_on && !vllm.ngram_under_v2) {
    d.check.status = CheckStatus::kFail;
    d.check.messages.push_back(
        fmt::format("SPEC_METHOD=ngram is not supported by the V2 model runner of vLLM {} (pinned because PP > 1 or "
                    "FORCE_V2_RUNNER=1); use SPEC_METHOD=mtp or none",
                    vllm.name));
    return d;
  }
  d.check.messages.push_back(fmt::format("SPEC_METHOD={}", requested));
  return d;
}

AllReduceDecision DecideCustomAllReduce(int tp_size, bool disable_custom_all_reduce, const VllmProfile& vllm) {
  AllReduceDecision d;
  d.check.name = "custom-all-reduce";
  d.disable_custom_all_reduce = disable_custom_all_reduce;
  if (tp_size == 2 && !disable_custom_all_reduce) {
    d.disable_custom_all_reduce = true;
    d.check.messages.push_back(
        "notice: TP_SIZE=2: --disable-custom-all-reduce added (without it CUDA-graph profiling crashes in "
        "custom_all_reduce 'invalid argument', seed §8)");
  } else if (d.disable_custom_all_reduce) {
    d.check.messages.push_back("--disable-custom-all-reduce");
  } else {
    d.check.messages.push_back(fmt::format("TP_SIZE={}: custom all-reduce kept", tp_size));
  }
  if (d.disable_custom_all_reduce && !vllm.disable_custom_all_reduce) {
    d.check.status = CheckStatus::kFail;
    d.check.messages.push_back(fmt::format("vLLM {} has no --disable-custom-all-reduce", vllm.name));
  }
  return d;
}

SpeculationDecision SpeculationFor(const DeploymentRequest& request, const Deployment& d, int pp_size) {
  return DecideSpeculation(request.spec_method, pp_size, d.model.num_nextn_predict_layers,
                           UsesV2ModelRunner(d, pp_size), d.vllm);
}

Deployment DeploymentFor(const ResolvedDeployment& r, const LayoutSpec& layout, SpeculationDecision* speculation) {
  Deployment d = r.planner;
  SpeculationDecision s = SpeculationFor(r.request, d, layout.pipeline_parallel_size);
  d.num_speculative_tokens = s.method == "mtp" ? r.request.num_spec_tokens : 0;
  if (speculation) *speculation = std::move(s);
  return d;
}

bool CalibrationMatches(const Calibration& c, const Deployment& d, std::string* why_not) {
  std::vector<std::string> diffs;
  if (!c.model.empty() && !SameModel(c.model, d.model_name))
    diffs.push_back(fmt::format("model {} vs {}", c.model, d.model_name));
  if (!c.gpu.empty() && &FindGpu(c.gpu) != &FindGpu(d.gpu.name))
    diffs.push_back(fmt::format("GPU {} vs {}", c.gpu, d.gpu.name));
  if (!c.vllm.empty()) {
    auto m = TryResolveVllmVersion(c.vllm);
    if (!m || m->profile->name != d.vllm.name) diffs.push_back(fmt::format("vLLM {} vs {}", c.vllm, d.vllm.name));
  }
  if (why_not) *why_not = fmt::format("{}", fmt::join(diffs, ", "));
  return diffs.empty();
}

namespace {

// The planner's facts that come straight from the request and the inputs (model, weights in the serving
// precision, GPU, memory settings).
void ResolvePlannerInputs(const DeploymentRequest& request, const DeploymentInputs& in, ResolvedDeployment& r) {
  const VllmProfile& vllm = *r.version.profile;
  Deployment& d = r.planner;
  d.model_name = in.model_name;
  d.model = in.model;
  d.weights = in.weights;
  ApplyServingPrecision(d.model, d.weights, request.dtype, request.quantization, &r.notes);
  d.gpu = FindGpu(request.gpu);
  if (request.gpu_total_gib > 0) {  // nvidia-smi's total moves with it (the driver's reserve between them stays)
    d.gpu.nvidia_smi_mib += std::llround((request.gpu_total_gib - d.gpu.total_gib) * 1024.0);
    d.gpu.total_gib = request.gpu_total_gib;
  }
  d.gpus_per_node = request.GpusUsedPerNode();
  d.nodes = request.num_nodes;
  d.vllm = vllm;
  d.gpu_memory_utilization =
      request.gpu_memory_utilization > 0 ? request.gpu_memory_utilization : vllm.default_gpu_memory_utilization;
  d.kv_cache_dtype = ParseKvCacheDtype(request.kv_cache_dtype);
  d.max_model_len = request.max_model_len;
  if (request.block_size > 0) d.block_size = request.block_size;
  if (request.num_gpu_blocks_override > 0) d.num_gpu_blocks_override = request.num_gpu_blocks_override;
  if (request.kv_cache_memory_bytes > 0) d.kv_cache_memory_bytes = request.kv_cache_memory_bytes;
  d.max_num_seqs = request.max_num_seqs;
  d.max_num_batched_tokens = request.max_num_batched_tokens;
  d.enforce_eager = request.enforce_eager;
  d.force_v2_runner = request.force_v2_runner;
  d.enable_expert_parallel = request.enable_expert_parallel;
  d.decode_context_parallel_size = request.dcp_size;
}

// The engine: the release's default, or the one asked for where the release ships both.
void ResolveEngine(const DeploymentRequest& request, ResolvedDeployment& r) {
  const VllmProfile& vllm = *r.version.profile;
  Deployment& d = r.planner;
  d.engine = vllm.engines.front();
  if (!request.engine.empty()) {
    Engine want = request.engine == "v0" ? Engine::kV0 : Engine::kV1;
    if (std::find(vllm.engines.begin(), vllm.engines.end(), want) == vllm.engines.end())
      Fail("engine ({}): vLLM {} ships only the {} engine", request.Setting("engine").origin, vllm.name,
           vllm.engines.front() == Engine::kV0 ? "V0" : "V1");
    d.engine = want;
  }
  if (vllm.engines.size() > 1)
    r.notes.push_back(fmt::format("engine {} ({}; vLLM {} ships V0 and V1)", d.engine == Engine::kV0 ? "V0" : "V1",
                                  request.engine.empty() ? "the release's default" : request.Setting("engine").origin,
                                  vllm.name));
}

// The MLA latent cache, or the pre-MLA MHA layout (< 0.7.1, VLLM_MLA_DISABLE=1).
void ResolveMlaKv(const DeploymentRequest& request, ResolvedDeployment& r) {
  const VllmProfile& vllm = *r.version.profile;
  Deployment& d = r.planner;
  if (d.model.attention != AttentionKind::kMla) return;
  if (vllm.mla_kv_from_patch < 0) {
    d.mla_kv = false;
  } else if (vllm.mla_kv_from_patch > 0) {
    if (r.version.patch) {
      d.mla_kv = *r.version.patch >= vllm.mla_kv_from_patch;
    } else {
      d.mla_kv = true;
      r.notes.push_back(
          fmt::format("vLLM {} caches MLA latents from {}.{} on; {} names no patch release, so "
                      "the plan uses the latent layout (give {}.0 for the earlier MHA layout)",
                      vllm.name, vllm.name, vllm.mla_kv_from_patch, QuoteForMessage(request.vllm_version), vllm.name));
    }
  }
  if (!d.mla_kv)
    r.notes.push_back(
        fmt::format("vLLM {} has no MLA KV cache: {} is cached as MHA, 2 x {} heads x {} per layer (pre-MLA layout)",
                    request.vllm_version, d.model.architecture, d.model.num_attention_heads,
                    vllm.pre_mla_head_256 ? 256 : d.model.qk_nope_head_dim + d.model.qk_rope_head_dim));
  if (request.mla_disable && d.mla_kv) {
    d.mla_kv = false;
    r.notes.push_back(fmt::format("mla_disable ({}): VLLM_MLA_DISABLE=1 caches {} as MHA, 2 x {} heads x {} per layer",
                                  request.Setting("mla_disable").origin, d.model.architecture,
                                  d.model.num_attention_heads, d.model.qk_nope_head_dim + d.model.qk_rope_head_dim));
  }
}

// --dtype: the model (and KV under kv_cache_dtype auto) runs in it; "auto" keeps the config's,
// except float32 configs, which vLLM serves in bfloat16 (float16 on GPUs without bf16).
void ResolveServingDtype(const DeploymentRequest& request, ResolvedDeployment& r) {
  Deployment& d = r.planner;
  std::string dt = request.dtype;
  const bool bf16_gpu = d.gpu.arch.rfind("sm", 0) != 0 || std::atoi(d.gpu.arch.c_str() + 2) >= 80;
  if (dt == "auto" && d.model.dtype_bytes == 4) {
    dt = bf16_gpu ? "bfloat16" : "float16";
    r.notes.push_back(fmt::format("dtype auto: the {} config is served in {} (vLLM casts float32 checkpoints down)",
                                  d.model.torch_dtype, dt));
  }
  if (dt == "auto") return;
  std::string canonical = dt == "half" ? "float16" : dt == "float" ? "float32" : dt;
  if (canonical != d.model.torch_dtype) {
    d.model.torch_dtype = canonical;
    d.model.dtype_bytes = canonical == "float32" ? 4 : 2;
  }
}

// Mixed GPU types across PP stages; the DCP size that must divide TP.
void ResolveStageGpus(const DeploymentRequest& request, ResolvedDeployment& r) {
  if (!request.stage_gpus.empty()) {
    if (static_cast<int>(request.stage_gpus.size()) != request.pp_size)
      Fail("stage_gpus ({}): {} GPU types for pp_size {}; give one per PP stage", request.Setting("stage_gpus").origin,
           request.stage_gpus.size(), request.pp_size);
    for (const auto& g : request.stage_gpus) r.planner.stage_gpus.push_back(FindGpu(g));
    r.notes.push_back(fmt::format("PP stages on {}", fmt::join(request.stage_gpus, ", ")));
  }
  if (request.dcp_size > 1 && request.tp_size % request.dcp_size != 0)
    Fail(
        "dcp_size ({}): decode_context_parallel_size {} must divide tensor_parallel_size {} (vLLM "
        "ParallelConfig: DCP reuses the TP ranks)",
        request.Setting("dcp_size").origin, request.dcp_size, request.tp_size);
}

// The multi-node executor, decided once.
void ResolveExecutor(const DeploymentRequest& request, ResolvedDeployment& r) {
  const VllmProfile& vllm = *r.version.profile;
  if (request.num_nodes <= 1) {
    r.executor = "mp";
  } else if (request.executor == "auto") {
    r.executor = vllm.native_multinode ? "native" : "ray";
    r.notes.push_back(fmt::format("executor auto: {} ({} nodes; vLLM {} {} the native --nnodes mode)", r.executor,
                                  request.num_nodes, vllm.name, vllm.native_multinode ? "has" : "lacks"));
  } else {
    r.executor = request.executor;
  }
}

// The layout and the split.
void ResolveLayout(const DeploymentRequest& request, ResolvedDeployment& r) {
  const VllmProfile& vllm = *r.version.profile;
  const int layers = r.planner.model.num_hidden_layers;
  r.layout.tensor_parallel_size = request.tp_size;
  r.layout.pipeline_parallel_size = request.pp_size;
  r.layout.data_parallel_size = request.dp_size;
  r.layout_explicit = request.IsSet("tp_size") || request.IsSet("pp_size") || request.IsSet("pp_layer_partition");
  // A split set at a lower precedence than the stage count it does not fit belongs to another
  // layout (e.g. the default deployment's 41,37 under PP_SIZE=4): vLLM's default split instead.
  std::string split_text = request.pp_layer_partition;
  const SettingValue& split_setting = request.Setting("pp_layer_partition");
  const SettingValue& pp_setting = request.Setting("pp_size");
  if (!split_text.empty() && split_setting.source < pp_setting.source &&
      (request.pp_size == 1 || std::count(split_text.begin(), split_text.end(), ',') + 1 != request.pp_size)) {
    r.notes.push_back(fmt::format("pp_layer_partition {} ({}) does not fit pp_size {} ({}): vLLM's default split used",
                                  EscapeForMessage(split_text), split_setting.origin, request.pp_size,
                                  pp_setting.origin));
    split_text.clear();
    r.request.pp_layer_partition.clear();
  }
  PartitionDecision split = DecidePartition(split_text, request.pp_size, layers, split_setting.origin, &vllm);
  r.partition_check = std::move(split.check);
  r.partition = split.partition;
  if (r.partition.empty() && request.pp_size <= layers)  // an invalid split: plan vLLM's
    r.partition = DefaultSplit(vllm, layers, request.pp_size);
  r.pass_partition_env = split.pass_env;
  for (const auto& w : split.warnings) r.notes.push_back("warning: " + w);
  // An empty split the user gave (--partition '', PP_LAYER_PARTITION=, partition = "" in a profile) is read
  // as unset, as the seed's deploy.sh does: VLLM_PP_LAYER_PARTITION is not passed and vLLM splits by its
  // default rule. Not silent: a warning in the check and in the notes every subcommand shows.
  if (r.request.pp_layer_partition.empty() && split_setting.source >= SettingSource::kFile && request.pp_size > 1 &&
      !r.partition_check.Failed()) {
    std::string msg = fmt::format(
        "pp_layer_partition ({}) is empty: read as unset, so VLLM_PP_LAYER_PARTITION is not passed and vLLM uses "
        "its default split {} (get_pp_indices)",
        split_setting.origin, fmt::join(r.partition, ","));
    r.partition_check.status = CheckStatus::kWarn;
    r.partition_check.messages = {msg};  // instead of "unset": the user set it, to ""
    r.notes.push_back("warning: " + msg);
  }
  if (split.pass_env) r.layout.layer_partition = split.partition;
}

// The decisions, in the seed's order (resolve_defaults): the V2 runner pin, the speculation (the planner
// models the MTP draft tokens of the method decided), the custom all-reduce.
void ResolveDecisions(const DeploymentRequest& request, ResolvedDeployment& r) {
  const VllmProfile& vllm = *r.version.profile;
  RunnerDecision runner = DecideV2Runner(request.force_v2_runner, request.pp_size, vllm);
  r.v2_runner_env = runner.v2_env;
  r.v2_runner_check = std::move(runner.check);
  SpeculationDecision spec;
  r.planner = DeploymentFor(r, r.layout, &spec);
  r.spec_method = spec.method;
  r.num_spec_tokens = spec.method == "none" ? 0 : request.num_spec_tokens;
  r.speculation_check = std::move(spec.check);
  AllReduceDecision ar = DecideCustomAllReduce(request.tp_size, request.disable_custom_all_reduce, vllm);
  r.disable_custom_all_reduce = ar.disable_custom_all_reduce;
  r.all_reduce_check = std::move(ar.check);
}

// The calibration applies only where it was taken.
void ResolveCalibration(const DeploymentRequest& request, const DeploymentInputs& in, ResolvedDeployment& r) {
  if (!in.calibration) return;
  std::string why;
  if (CalibrationMatches(*in.calibration, r.planner, &why)) {
    r.planner.calibration = in.calibration;
    r.notes.push_back(fmt::format("calibration: {} ({})", request.calibration, in.calibration->source));
  } else {
    r.notes.push_back(fmt::format("calibration {} not used: taken on another deployment ({}); estimates instead",
                                  request.calibration, why));
  }
}

// Extra `vllm serve` arguments pass as given, except the ones the planner models (they must be settings,
// so the plan and the gates see them).
void CheckExtraArgs(const DeploymentRequest& request, ResolvedDeployment& r) {
  for (const auto& a : request.extra_vllm_args)
    if (a.rfind("--", 0) == 0) {
      std::string flag = a.substr(0, a.find('='));
      if (const SettingSpec* spec = FindSettingByServeFlag(flag))
        Fail("extra_vllm_args ({}): {} is a ppdeploy setting ({}); set it as {} or {} so the plan and the gates see it",
             request.Setting("extra_vllm_args").origin, flag, spec->key, FlagName(spec->key), spec->env);
    }
  if (!request.extra_vllm_args.empty())
    r.notes.push_back(fmt::format("extra vLLM arguments passed as given, not modelled by the planner: {}",
                                  fmt::join(request.extra_vllm_args, " ")));
}

// The Hugging Face id a preset name or alias serves: the id that names it ("deepseek-r1" ->
// "deepseek-ai/DeepSeek-R1", in the hub's case), else the preset's first id, said in a note (an alias
// with no id of its own, e.g. "glm-5.1"); "" when the preset has none.
std::string PresetServedId(const ModelPreset& p, const std::string& named, std::vector<std::string>& notes) {
  const std::string* first = nullptr;
  for (const auto& a : p.aliases) {
    const size_t slash = a.find('/');
    if (slash == std::string::npos) continue;
    const std::string_view id = std::string_view(a).substr(slash + 1);
    if (id.size() == named.size() &&
        std::equal(id.begin(), id.end(), named.begin(),
                   [](unsigned char x, unsigned char y) { return std::tolower(x) == std::tolower(y); })) {
      notes.push_back(fmt::format("model_path: {} (the Hugging Face id of {})", a, named));
      return a;
    }
    if (!first) first = &a;
  }
  if (!first) return "";
  notes.push_back(fmt::format(
      "model_path: {} (the first Hugging Face id of preset {}; {} names no id of its own: give --model-path to serve "
      "another checkpoint)",
      *first, p.name, named));
  return *first;
}

// What `vllm serve` is given when model_path is not set: the checkpoint read, or the model's id.
void ResolveModelPath(const DeploymentRequest& request, const DeploymentInputs& in, ResolvedDeployment& r) {
  if (r.request.model_path.empty()) {
    if (!in.checkpoint_dir.empty()) {
      r.request.model_path = in.checkpoint_dir;
    } else if (request.model.find('/') != std::string::npos) {
      r.request.model_path = request.model;
    } else if (const ModelPreset* p = FindModelPreset(request.model)) {
      r.request.model_path = PresetServedId(*p, request.model, r.notes);
    }
  }
  r.checkpoint_dir = in.checkpoint_dir;
  r.checkpoint_tensors = in.tensors;
}

// The lowest layer's origins name the version row they are the defaults of ("vLLM 0.19 default").
DeploymentRequest WithRowOrigins(const DeploymentRequest& request, std::string_view row) {
  DeploymentRequest out = request;
  for (auto& s : out.settings) {
    const SettingSpec* spec = FindSettingSpec(s.key);
    // Only the label ResolveSettings gave (a stored state keeps the row it was launched with).
    if (spec && s.source == SettingSource::kVllmDefault && s.origin == LowestLayerOrigin(*spec, ""))
      s.origin = LowestLayerOrigin(*spec, row);
  }
  return out;
}

}  // namespace

ResolvedDeployment ResolveDeployment(const DeploymentRequest& given, const DeploymentInputs& in) {
  ResolvedDeployment r;
  r.version = ResolveVllmVersion(given.vllm_version);
  const DeploymentRequest request = WithRowOrigins(given, r.version.profile->name);
  r.request = request;
  if (!r.version.note.empty()) r.notes.push_back(r.version.note);
  r.notes.insert(r.notes.end(), in.notes.begin(), in.notes.end());
  // What the model's config reader accepted although vLLM would read it differently (model/config.h
  // `warnings`): shown with every subcommand's notes.
  for (const auto& w : in.model.warnings) r.notes.push_back("warning: model config: " + w);
  ResolvePlannerInputs(request, in, r);
  ResolveEngine(request, r);
  ResolveMlaKv(request, r);
  ResolveServingDtype(request, r);
  ResolveStageGpus(request, r);
  ResolveExecutor(request, r);
  ResolveLayout(request, r);
  ResolveDecisions(request, r);
  ResolveCalibration(request, in, r);
  CheckExtraArgs(request, r);
  ResolveModelPath(request, in, r);
  return r;
}

}  // namespace ppdeploy
