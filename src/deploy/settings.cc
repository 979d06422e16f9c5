#include "deploy/settings.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/escape.h"

namespace ppdeploy {
namespace {

using T = SettingType;

// Every setting that changes memory or the launch. model_specific: the default deployment's value
// belongs to its model and is dropped when another model is asked for.
constexpr SettingSpec kSpecs[] = {
    // --- what to serve ---
    {"model", "PPDEPLOY_MODEL", "", T::kString, "", true,
     "model the planner reads: preset name, config.json or checkpoint directory"},
    {"model_path", "MODEL_PATH", "", T::kString, "", true,
     "model directory or HF id given to `vllm serve` (\"\" = the model setting)"},
    {"served_model_name", "SERVED_MODEL_NAME", "", T::kString, "", true, "--served-model-name (\"\" = not passed)"},
    {"trust_remote_code", "PPDEPLOY_TRUST_REMOTE_CODE", "", T::kBool, "", true, "pass --trust-remote-code (0/1)"},
    {"dtype", "DTYPE", "", T::kEnum, "auto|half|float16|bfloat16|float|float32", true,
     "--dtype of the weights and activations"},
    {"quantization", "QUANTIZATION", "", T::kString, "", true,
     "--quantization (\"\" = the checkpoint's own, e.g. fp8 for online fp8)"},
    {"hf_overrides", "HF_OVERRIDES", "", T::kJson, "", true,
     "--hf-overrides JSON object, applied to the model's config (\"\" = not passed)"},
    // --- where ---
    {"gpu", "PPDEPLOY_GPU", "", T::kString, "", false, "GPU type from data/gpus.json"},
    {"gpu_total_gib", "PPDEPLOY_GPU_TOTAL_GIB", "", T::kFloat, "", false,
     "torch-visible total memory per GPU in GiB (0 = data/gpus.json)"},
    {"stage_gpus", "PPDEPLOY_STAGE_GPUS", "", T::kString, "", false,
     "GPU type of each PP stage, comma-separated, for mixed GPU types (\"\" = gpu on every stage)"},
    {"gpus", "GPUS", "CUDA_VISIBLE_DEVICES", T::kString, "", false, "GPU ids used on each node, e.g. 0,1,2,3, or all"},
    {"gpus_per_node", "PPDEPLOY_GPUS_PER_NODE", "", T::kInt, "", false, "GPUs per node"},
    {"nodes", "NODES", "", T::kString, "", false, "node host names, first = head, or a node count (\"\" = one node)"},
    {"host", "HOST", "", T::kString, "", false, "--host of the server"},
    {"port", "PORT", "", T::kInt, "", false, "--port of the server"},
    // --- which vLLM ---
    {"vllm_version", "VLLM_VERSION", "", T::kString, "", false,
     "vLLM version (a row of data/vllm/versions.json: 0.30, v0.19.0, 0.30-custom)"},
    {"engine", "VLLM_ENGINE", "", T::kEnum, "|v0|v1", false,
     "vLLM engine where a release ships both (0.7-0.10): \"\" = the release's default; sets env VLLM_USE_V1"},
    {"mla_disable", "VLLM_MLA_DISABLE", "", T::kBool, "", false,
     "env VLLM_MLA_DISABLE=1: DeepSeek-family attention cached as MHA, the pre-MLA layout (0/1)"},
    {"runtime", "RUNTIME", "", T::kEnum, "docker|bare", false, "docker | bare"},
    {"image", "IMAGE", "", T::kString, "", false, "container image (runtime docker)"},
    {"docker_bin", "PPDEPLOY_DOCKER_BIN", "", T::kString, "", false, "docker executable (runtime docker)"},
    {"vllm_bin", "VLLM_BIN", "", T::kString, "", false, "vllm executable (runtime bare; a stand-in in tests)"},
    {"container_name", "PPDEPLOY_CONTAINER_NAME", "", T::kString, "", false, "docker --name"},
    {"shm_size", "PPDEPLOY_SHM_SIZE", "", T::kString, "", false, "docker --shm-size"},
    {"volumes", "PPDEPLOY_VOLUMES", "", T::kString, "", false, "docker -v specs separated by ';'"},
    {"ray_port", "PPDEPLOY_RAY_PORT", "", T::kInt, "", false, "Ray head port (multi-node without native flags)"},
    // --- multi-node ---
    {"executor", "PPDEPLOY_EXECUTOR", "", T::kEnum, "auto|ray|native", false,
     "multi-node executor: auto (vLLM's native --nnodes mode where the version has it, else Ray) | ray | native"},
    {"remote_shell", "PPDEPLOY_REMOTE_SHELL", "", T::kString, "", false,
     "argv prefix that runs a command on a node, {host} = the node (words split on blanks, or a JSON list)"},
    {"ray_bin", "RAY_BIN", "", T::kString, "", false, "Ray executable on the nodes (multi-node Ray)"},
    {"master_port", "PPDEPLOY_MASTER_PORT", "", T::kInt, "", false,
     "--master-port of vLLM's native multi-node mode (on the head)"},
    {"nccl_socket_ifname", "NCCL_SOCKET_IFNAME", "", T::kString, "", false,
     "network interface(s) NCCL uses between nodes, passed to every node (required for multi-node)"},
    {"gloo_socket_ifname", "GLOO_SOCKET_IFNAME", "", T::kString, "", false,
     "network interface(s) Gloo uses between nodes, passed to every node (required for multi-node)"},
    {"allow_cross_node_tp", "ALLOW_CROSS_NODE_TP", "", T::kBool, "", false,
     "let a TP group that spans nodes pass the gate with a warning (0/1)"},
    // --- parallel layout ---
    {"tp_size", "TP_SIZE", "", T::kInt, "", true, "--tensor-parallel-size"},
    {"pp_size", "PP_SIZE", "", T::kInt, "", true, "--pipeline-parallel-size (passed only when != 1)"},
    {"dp_size", "DP_SIZE", "", T::kInt, "", true, "--data-parallel-size (passed only when != 1)"},
    {"dcp_size", "DCP_SIZE", "", T::kInt, "", true,
     "--decode-context-parallel-size (passed only when != 1; divides TP)"},
    {"enable_expert_parallel", "ENABLE_EXPERT_PARALLEL", "", T::kBool, "", true, "--enable-expert-parallel (0/1)"},
    {"pp_layer_partition", "PP_LAYER_PARTITION", "", T::kString, "", true,
     "layers per PP stage -> env VLLM_PP_LAYER_PARTITION (\"\" = vLLM's split)"},
    {"disable_custom_all_reduce", "DISABLE_CUSTOM_ALL_REDUCE", "", T::kBool, "", false,
     "--disable-custom-all-reduce (0/1)"},
    {"allow_unverified_pp", "ALLOW_UNVERIFIED_PP", "", T::kBool, "", false,
     "let PP > 2 on a DSA model pass the gate (0/1)"},
    {"allow_unchecked_indexer", "ALLOW_UNCHECKED_INDEXER", "", T::kBool, "", false,
     "let the index_topk_pattern fix pass without the checkpoint check (0/1)"},
    {"force_v2_runner", "FORCE_V2_RUNNER", "", T::kEnum, "|0|1", false,
     "env VLLM_USE_V2_MODEL_RUNNER: \"\" auto (1 when PP > 1), 0 or 1"},
    // --- KV cache, context and batch ---
    {"max_model_len", "MAX_MODEL_LEN", "", T::kInt, "", true,
     "--max-model-len in tokens (0 = the model's max_position_embeddings)"},
    {"kv_cache_dtype", "KV_CACHE_DTYPE", "", T::kString, "", true,
     "--kv-cache-dtype (auto, bfloat16, fp8, fp8_e4m3, fp8_e5m2, fp8_ds_mla)"},
    {"block_size", "BLOCK_SIZE", "", T::kInt, "", true, "--block-size in tokens (0 = vLLM's for the backend)"},
    {"gpu_memory_utilization", "GPU_MEMORY_UTILIZATION", "", T::kFloat, "", true,
     "--gpu-memory-utilization in (0, 1] (0 = the version's default)"},
    {"kv_cache_memory_bytes", "KV_CACHE_MEMORY_BYTES", "", T::kString, "", true,
     "--kv-cache-memory-bytes, e.g. 20G or 1.5g (0 = not passed)"},
    {"num_gpu_blocks_override", "NUM_GPU_BLOCKS_OVERRIDE", "", T::kInt, "", true,
     "--num-gpu-blocks-override (0 = not passed)"},
    {"max_num_seqs", "MAX_NUM_SEQS", "", T::kInt, "", true, "--max-num-seqs (0 = vLLM's default for the GPU)"},
    {"max_num_batched_tokens", "MAX_NUM_BATCHED_TOKENS", "", T::kInt, "", true,
     "--max-num-batched-tokens (0 = vLLM's default)"},
    {"enforce_eager", "ENFORCE_EAGER", "", T::kBool, "", true, "--enforce-eager: no CUDA graphs (0/1)"},
    // --- speculative decoding ---
    {"spec_method", "SPEC_METHOD", "", T::kEnum, "auto|mtp|ngram|none", true,
     "speculative decoding: auto (MTP when the model has it and the layout allows) | mtp | ngram | none"},
    {"num_spec_tokens", "NUM_SPEC_TOKENS", "", T::kInt, "", true, "num_speculative_tokens"},
    // --- pass-through and planner inputs ---
    {"extra_vllm_args", "VLLM_EXTRA_ARGS", "", T::kJson, "", false,
     "further `vllm serve` arguments as a JSON list of strings, passed as given"},
    {"calibration", "PPDEPLOY_CALIBRATION", "", T::kString, "", true,
     "calibration JSON from `ppdeploy calibrate` (used when its model, GPU and vLLM match; \"\" = none)"},
};

std::string KnownKeys() {
  std::vector<std::string_view> keys;
  for (const auto& s : kSpecs) keys.push_back(s.key);
  return fmt::format("{}", fmt::join(keys, ", "));
}

std::string Shortest(double v) { return fmt::format("{}", v); }

}  // namespace

std::string_view SourceName(SettingSource source) {
  switch (source) {
    case SettingSource::kVllmDefault:
      return "vllm-default";
    case SettingSource::kDefault:
      return "default";
    case SettingSource::kFile:
      return "file";
    case SettingSource::kEnv:
      return "env";
    case SettingSource::kFlag:
      return "flag";
    case SettingSource::kState:
      return "state";
  }
  return "?";
}

std::span<const SettingSpec> SettingSpecs() { return kSpecs; }

const SettingSpec* FindSettingSpec(std::string_view key) {
  for (const auto& s : kSpecs)
    if (s.key == key) return &s;
  return nullptr;
}

std::string FlagName(std::string_view key) {
  std::string out = "--";
  for (char c : key) out += c == '_' ? '-' : c;
  return out;
}

bool IsValidUtf8(std::string_view s) { return !FindInvalidUtf8(s).has_value(); }

std::map<std::string, std::string> ParseSettingsToml(std::string_view text, const std::string& source) {
  if (!IsValidUtf8(text)) Fail("{}: not valid UTF-8 text", source);
  toml::table table;
  try {
    table = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    Fail("{}: line {}: malformed TOML: {}", source, e.source().begin.line, EscapeForMessage(e.description()));
  }
  std::map<std::string, std::string> out;
  for (auto&& entry : table) {  // not a structured binding: clang 14 cannot capture one in a lambda
    const toml::node& node = entry.second;
    std::string key(entry.first.str());
    const SettingSpec* spec = FindSettingSpec(key);
    auto where = [&] { return fmt::format("{}: line {}: {}", source, node.source().begin.line, key); };
    if (!spec)
      Fail("{}: line {}: unknown setting '{}' (known: {})", source, node.source().begin.line, EscapeForMessage(key),
           KnownKeys());
    std::string value;
    switch (spec->type) {
      case T::kInt:
        if (auto i = node.as_integer())
          value = fmt::format("{}", i->get());
        else if (auto s = node.as_string())
          value = s->get();
        else
          Fail("{}: expected an integer", where());
        break;
      case T::kFloat:
        if (auto f = node.as_floating_point())
          value = Shortest(f->get());
        else if (auto i = node.as_integer())
          value = fmt::format("{}", i->get());
        else if (auto s = node.as_string())
          value = s->get();
        else
          Fail("{}: expected a number", where());
        break;
      case T::kBool:
        // assign(1, char): GCC 12 -O3 reports a false -Wrestrict for `value = cond ? "1" : "0"`.
        if (auto b = node.as_boolean())
          value.assign(1, b->get() ? '1' : '0');
        else if (auto i = node.as_integer(); i && (i->get() == 0 || i->get() == 1))
          value.assign(1, i->get() ? '1' : '0');
        else if (auto s = node.as_string())
          value = s->get();
        else
          Fail("{}: expected true or false", where());
        break;
      case T::kJson:
        if (auto s = node.as_string())
          value = s->get();
        else
          Fail("{}: expected a string holding JSON", where());
        break;
      case T::kString:
      case T::kEnum:
        if (auto s = node.as_string())
          value = s->get();
        else
          Fail("{}: expected a string", where());
        break;
    }
    if (value.find('\0') != std::string::npos) Fail("{}: value contains a NUL byte", where());
    out[key] = std::move(value);
  }
  return out;
}

ResolvedSettings ResolveSettings(const SettingInputs& in) {
  auto vllm = ParseSettingsToml(in.vllm_defaults_text, in.vllm_defaults_source);
  auto defaults = ParseSettingsToml(in.defaults_text, in.defaults_source);
  std::map<std::string, std::string> file;
  if (in.file_text) file = ParseSettingsToml(*in.file_text, in.file_source);
  for (const auto& [key, value] : in.flags)
    if (!FindSettingSpec(key)) Fail("unknown setting '{}' on the command line (known: {})", key, KnownKeys());

  auto env_of = [&](const SettingSpec& spec) -> std::optional<std::pair<std::string, std::string>> {
    if (!in.getenv) return std::nullopt;
    if (auto v = in.getenv(spec.env)) return std::make_pair(std::string(spec.env), *v);
    if (!spec.alt_env.empty())
      if (auto v = in.getenv(spec.alt_env)) return std::make_pair(std::string(spec.alt_env), *v);
    return std::nullopt;
  };
  // One setting through every layer; `with_defaults` = whether the default deployment applies.
  auto resolve = [&](const SettingSpec& spec, bool with_defaults) {
    std::string key(spec.key);
    SettingValue v{key, "", SettingSource::kVllmDefault, "vLLM default"};
    auto d = vllm.find(key);
    if (d == vllm.end()) Fail("{}: setting '{}' has no default", in.vllm_defaults_source, key);
    v.value = d->second;
    if (auto f = defaults.find(key); f != defaults.end() && with_defaults)
      v = {key, f->second, SettingSource::kDefault, "default"};
    if (auto f = file.find(key); f != file.end()) v = {key, f->second, SettingSource::kFile, "file " + in.file_source};
    if (auto e = env_of(spec)) v = {key, e->second, SettingSource::kEnv, "env " + e->first};
    if (auto fl = in.flags.find(key); fl != in.flags.end())
      v = {key, fl->second.value, SettingSource::kFlag,
           "flag " + (fl->second.flag.empty() ? FlagName(key) : fl->second.flag)};
    return v;
  };
  const SettingValue model = resolve(*FindSettingSpec("model"), true);
  bool default_model = model.source == SettingSource::kDefault;
  if (!default_model) {
    auto d = defaults.find("model");
    if (d != defaults.end())
      default_model = in.same_model ? in.same_model(model.value, d->second) : model.value == d->second;
  }
  ResolvedSettings out;
  for (const auto& spec : kSpecs) out.push_back(resolve(spec, default_model || !spec.model_specific));
  return out;
}

const SettingValue& Get(const ResolvedSettings& settings, std::string_view key) {
  for (const auto& s : settings)
    if (s.key == key) return s;
  Fail("internal: setting '{}' was not resolved", key);
}

}  // namespace ppdeploy
