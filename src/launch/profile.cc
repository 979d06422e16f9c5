#include "launch/profile.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>
#include <toml++/toml.h>

#include "core/error.h"

namespace ppdeploy::launch {
namespace {

constexpr SettingSpec kSpecs[] = {
    {"model", "PPDEPLOY_MODEL", "", "planner model preset name (model facts come from it)"},
    {"model_path", "MODEL_PATH", "", "model directory or HF id given to `vllm serve`"},
    {"served_model_name", "SERVED_MODEL_NAME", "", "--served-model-name (\"\" = not passed)"},
    {"trust_remote_code", "PPDEPLOY_TRUST_REMOTE_CODE", "", "pass --trust-remote-code (0/1)"},
    {"gpu", "PPDEPLOY_GPU", "", "planner GPU name"},
    {"gpus", "GPUS", "CUDA_VISIBLE_DEVICES", "GPU ids, e.g. 0,1,2,3, or all"},
    {"gpus_per_node", "PPDEPLOY_GPUS_PER_NODE", "", "GPUs per node (TP x PP above it means multi-node)"},
    {"nodes", "NODES", "", "comma-separated node host names, first = head (\"\" = one node)"},
    {"host", "HOST", "", "--host of the server"},
    {"port", "PORT", "", "--port of the server"},
    {"vllm_version", "VLLM_VERSION", "", "vLLM capability profile (data/vllm/capabilities.json)"},
    {"runtime", "RUNTIME", "", "docker | bare"},
    {"image", "IMAGE", "", "container image (runtime docker)"},
    {"docker_bin", "PPDEPLOY_DOCKER_BIN", "", "docker executable (runtime docker)"},
    {"vllm_bin", "VLLM_BIN", "", "vllm executable (runtime bare; a stand-in in tests)"},
    {"container_name", "PPDEPLOY_CONTAINER_NAME", "", "docker --name"},
    {"shm_size", "PPDEPLOY_SHM_SIZE", "", "docker --shm-size"},
    {"volumes", "PPDEPLOY_VOLUMES", "", "docker -v specs separated by ';'"},
    {"ray_port", "PPDEPLOY_RAY_PORT", "", "Ray head port (multi-node without native flags)"},
    {"tp_size", "TP_SIZE", "", "--tensor-parallel-size"},
    {"pp_size", "PP_SIZE", "", "--pipeline-parallel-size (passed only when != 1)"},
    {"pp_layer_partition", "PP_LAYER_PARTITION", "", "layers per PP stage -> env VLLM_PP_LAYER_PARTITION"},
    {"disable_custom_all_reduce", "DISABLE_CUSTOM_ALL_REDUCE", "", "--disable-custom-all-reduce (0/1)"},
    {"allow_unverified_pp", "ALLOW_UNVERIFIED_PP", "", "let PP > 2 on a DSA model pass the gate (0/1)"},
    {"allow_unchecked_indexer", "ALLOW_UNCHECKED_INDEXER", "", "let the index_topk_pattern fix pass without the checkpoint check (0/1)"},
    {"force_v2_runner", "FORCE_V2_RUNNER", "", "env VLLM_USE_V2_MODEL_RUNNER: \"\" auto (1 when PP > 1), 0 or 1"},
    {"max_model_len", "MAX_MODEL_LEN", "", "--max-model-len (tokens)"},
    {"kv_cache_dtype", "KV_CACHE_DTYPE", "", "--kv-cache-dtype"},
    {"gpu_memory_utilization", "GPU_MEMORY_UTILIZATION", "", "--gpu-memory-utilization (0, 1]"},
    {"kv_cache_memory_bytes", "KV_CACHE_MEMORY_BYTES", "", "--kv-cache-memory-bytes (0 = not passed)"},
    {"spec_method", "SPEC_METHOD", "", "speculative decoding: auto | mtp | ngram | none"},
    {"num_spec_tokens", "NUM_SPEC_TOKENS", "", "num_speculative_tokens"},
    {"hf_overrides", "HF_OVERRIDES", "", "--hf-overrides JSON object (\"\" = not passed)"},
};

std::string KnownKeys() {
  std::vector<std::string_view> keys;
  for (const auto& s : kSpecs) keys.push_back(s.key);
  return fmt::format("{}", fmt::join(keys, ", "));
}

std::string Quoted(std::string_view s) { return nlohmann::json(std::string(s)).dump(); }

[[noreturn]] void BadValue(const SettingValue& v, std::string_view expected) {
  Fail("{} ({}): expected {}, got {}", v.key, v.origin, expected, Quoted(v.value));
}

std::int64_t ParseInt(const SettingValue& v, std::int64_t min, std::int64_t max) {
  std::int64_t out = 0;
  const char* first = v.value.data();
  const char* last = first + v.value.size();
  auto [ptr, ec] = std::from_chars(first, last, out);
  if (v.value.empty() || ec != std::errc() || ptr != last || out < min || out > max) {
    if (max == INT64_MAX) BadValue(v, fmt::format("an integer >= {}", min));
    BadValue(v, fmt::format("an integer in [{}, {}]", min, max));
  }
  return out;
}

bool ParseBool(const SettingValue& v) {
  std::string s = v.value;
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  if (s == "1" || s == "true" || s == "yes" || s == "on") return true;
  if (s == "0" || s == "false" || s == "no" || s == "off" || s.empty()) return false;
  BadValue(v, "0 or 1");
}

std::vector<std::string> SplitList(const std::string& s, char sep) {
  std::vector<std::string> out;
  if (s.empty()) return out;
  size_t start = 0;
  while (true) {
    size_t pos = s.find(sep, start);
    std::string item = s.substr(start, pos == std::string::npos ? std::string::npos : pos - start);
    if (!item.empty()) out.push_back(item);
    if (pos == std::string::npos) break;
    start = pos + 1;
  }
  return out;
}

}  // namespace

std::string_view SourceName(SettingSource source) {
  switch (source) {
    case SettingSource::kDefault: return "default";
    case SettingSource::kFile: return "file";
    case SettingSource::kEnv: return "env";
    case SettingSource::kFlag: return "flag";
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

std::map<std::string, std::string> ParseSettingsToml(std::string_view text, const std::string& source) {
  toml::table table;
  try {
    table = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    Fail("{}: malformed TOML at line {}: {}", source, e.source().begin.line, e.description());
  }
  std::map<std::string, std::string> out;
  for (auto&& [k, node] : table) {
    std::string key(k.str());
    if (!FindSettingSpec(key)) Fail("{}: unknown setting '{}' (known: {})", source, key, KnownKeys());
    if (auto s = node.as_string()) {
      out[key] = s->get();
    } else if (auto i = node.as_integer()) {
      out[key] = fmt::format("{}", i->get());
    } else if (auto f = node.as_floating_point()) {
      out[key] = fmt::format("{}", f->get());
    } else if (auto b = node.as_boolean()) {
      out[key] = b->get() ? "1" : "0";
    } else {
      Fail("{}: {}: expected a string, number or boolean", source, key);
    }
    if (out[key].find('\0') != std::string::npos) Fail("{}: {}: value contains a NUL byte", source, key);
  }
  return out;
}

ResolvedSettings ResolveSettings(const SettingInputs& in) {
  auto defaults = ParseSettingsToml(in.defaults_text, in.defaults_source);
  std::map<std::string, std::string> file;
  if (in.file_text) file = ParseSettingsToml(*in.file_text, in.file_source);
  for (const auto& [key, value] : in.flags) {
    if (!FindSettingSpec(key)) Fail("unknown setting '{}' on the command line (known: {})", key, KnownKeys());
  }
  ResolvedSettings out;
  for (const auto& spec : kSpecs) {
    std::string key(spec.key);
    SettingValue v{key, "", SettingSource::kDefault, "default"};
    auto d = defaults.find(key);
    if (d == defaults.end()) Fail("{}: setting '{}' has no default", in.defaults_source, key);
    v.value = d->second;
    if (auto f = file.find(key); f != file.end()) {
      v = {key, f->second, SettingSource::kFile, "file " + in.file_source};
    }
    std::optional<std::string> env;
    std::string env_name;
    if (in.getenv) {
      env = in.getenv(spec.env);
      env_name = spec.env;
      if (!env && !spec.alt_env.empty()) {
        env = in.getenv(spec.alt_env);
        env_name = spec.alt_env;
      }
    }
    if (env) v = {key, *env, SettingSource::kEnv, "env " + env_name};
    if (auto fl = in.flags.find(key); fl != in.flags.end()) {
      v = {key, fl->second, SettingSource::kFlag, "flag " + FlagName(key)};
    }
    out.push_back(std::move(v));
  }
  return out;
}

const SettingValue& Get(const ResolvedSettings& settings, std::string_view key) {
  for (const auto& s : settings)
    if (s.key == key) return s;
  Fail("internal: setting '{}' was not resolved", key);
}

int LaunchProfile::NumGpusListed() const {
  if (gpus == "all") return gpus_per_node;
  return static_cast<int>(SplitList(gpus, ',').size());
}

LaunchProfile BuildProfile(const ResolvedSettings& s) {
  LaunchProfile p;
  auto str = [&](std::string_view key) -> const std::string& { return Get(s, key).value; };
  auto nonempty = [&](std::string_view key) -> const std::string& {
    const auto& v = Get(s, key);
    if (v.value.empty()) BadValue(v, "a non-empty value");
    return v.value;
  };
  auto integer = [&](std::string_view key, std::int64_t min, std::int64_t max = INT64_MAX) {
    return ParseInt(Get(s, key), min, max);
  };
  auto oneof = [&](std::string_view key, std::initializer_list<std::string_view> allowed) -> const std::string& {
    const auto& v = Get(s, key);
    for (auto a : allowed)
      if (v.value == a) return v.value;
    BadValue(v, fmt::format("one of {}", fmt::join(allowed, ", ")));
  };

  p.model = nonempty("model");
  p.model_path = nonempty("model_path");
  p.served_model_name = str("served_model_name");
  p.trust_remote_code = ParseBool(Get(s, "trust_remote_code"));
  p.gpu = nonempty("gpu");
  p.gpus_per_node = static_cast<int>(integer("gpus_per_node", 1, 1024));
  {
    const auto& v = Get(s, "gpus");
    p.gpus = v.value;
    if (p.gpus != "all") {
      auto ids = SplitList(p.gpus, ',');
      if (ids.empty() || ids.size() != static_cast<size_t>(std::count(p.gpus.begin(), p.gpus.end(), ',') + 1))
        BadValue(v, "comma-separated GPU ids or \"all\"");
      for (const auto& id : ids)
        if (id.find_first_not_of("0123456789") != std::string::npos) BadValue(v, "comma-separated GPU ids or \"all\"");
    }
  }
  p.nodes = SplitList(str("nodes"), ',');
  p.host = nonempty("host");
  p.port = static_cast<int>(integer("port", 1, 65535));
  p.vllm_version = nonempty("vllm_version");
  p.runtime = oneof("runtime", {"docker", "bare"});
  p.image = str("image");
  if (p.runtime == "docker" && p.image.empty()) BadValue(Get(s, "image"), "an image name when runtime is docker");
  p.docker_bin = nonempty("docker_bin");
  p.vllm_bin = nonempty("vllm_bin");
  p.container_name = nonempty("container_name");
  p.shm_size = str("shm_size");
  p.volumes = SplitList(str("volumes"), ';');
  p.ray_port = static_cast<int>(integer("ray_port", 1, 65535));
  p.tp_size = static_cast<int>(integer("tp_size", 1, 4096));
  p.pp_size = static_cast<int>(integer("pp_size", 1, 4096));
  p.pp_layer_partition = str("pp_layer_partition");
  p.disable_custom_all_reduce = ParseBool(Get(s, "disable_custom_all_reduce"));
  p.allow_unverified_pp = ParseBool(Get(s, "allow_unverified_pp"));
  p.allow_unchecked_indexer = ParseBool(Get(s, "allow_unchecked_indexer"));
  p.force_v2_runner = oneof("force_v2_runner", {"", "0", "1"});
  p.max_model_len = integer("max_model_len", 1);
  p.kv_cache_dtype = nonempty("kv_cache_dtype");
  {
    const auto& v = Get(s, "gpu_memory_utilization");
    double d = 0;
    const char* first = v.value.data();
    const char* last = first + v.value.size();
    auto [ptr, ec] = std::from_chars(first, last, d);
    if (v.value.empty() || ec != std::errc() || ptr != last || !std::isfinite(d) || d <= 0.0 || d > 1.0)
      BadValue(v, "a number in (0, 1]");
    p.gpu_memory_utilization = d;
  }
  p.kv_cache_memory_bytes = integer("kv_cache_memory_bytes", 0);
  p.spec_method = oneof("spec_method", {"auto", "mtp", "ngram", "none"});
  p.num_spec_tokens = static_cast<int>(integer("num_spec_tokens", 1, 64));
  {
    const auto& v = Get(s, "hf_overrides");
    p.hf_overrides = v.value;
    if (!p.hf_overrides.empty()) {
      auto j = nlohmann::json::parse(p.hf_overrides, nullptr, false);
      if (j.is_discarded() || !j.is_object()) BadValue(v, "a JSON object");
    }
  }
  return p;
}

}  // namespace ppdeploy::launch
