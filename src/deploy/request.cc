#include "deploy/request.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>

#include "core/error.h"
#include "core/escape.h"

namespace ppdeploy {
namespace {

[[noreturn]] void BadValue(const SettingValue& v, std::string_view expected) {
  Fail("{} ({}): expected {}, got {}", v.key, v.origin, expected, QuoteForMessage(v.value));
}

std::int64_t Int(const SettingValue& v, std::int64_t min, std::int64_t max) {
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

double Float(const SettingValue& v, double min, double max, bool min_inclusive) {
  double d = 0;
  const char* first = v.value.data();
  const char* last = first + v.value.size();
  auto [ptr, ec] = std::from_chars(first, last, d);
  if (v.value.empty() || ec != std::errc() || ptr != last || !std::isfinite(d) || d > max ||
      (min_inclusive ? d < min : d <= min))
    BadValue(v, fmt::format("a number in {}{}, {}]", min_inclusive ? "[" : "(", min, max));
  return d;
}

bool Bool(const SettingValue& v) {
  std::string s = v.value;
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  if (s == "1" || s == "true" || s == "yes" || s == "on") return true;
  if (s == "0" || s == "false" || s == "no" || s == "off" || s.empty()) return false;
  BadValue(v, "0 or 1 (true/false)");
}

std::vector<std::string> SplitList(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t pos = s.find(sep, start);
    out.push_back(s.substr(start, pos == std::string::npos ? std::string::npos : pos - start));
    if (pos == std::string::npos) break;
    start = pos + 1;
  }
  return out;
}

}  // namespace

int DeploymentRequest::GpusUsedPerNode() const {
  if (gpus == "all") return gpus_per_node;
  return static_cast<int>(SplitList(gpus, ',').size());
}

std::int64_t ParseHumanReadableInt(std::string_view text, std::string_view what) {
  if (text.empty()) Fail("{}: empty value", what);
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
  std::string_view number = text.substr(0, i), unit = text.substr(i);
  double v = 0;
  auto [ptr, ec] = std::from_chars(number.data(), number.data() + number.size(), v);
  if (number.empty() || ec != std::errc() || ptr != number.data() + number.size())
    Fail("{}: expected a number with an optional unit (k, K, m, M, g, G, t, T), got {}", what, QuoteForMessage(text));
  double mult = 1;
  if (unit == "k")
    mult = 1e3;
  else if (unit == "K")
    mult = 1024.0;
  else if (unit == "m")
    mult = 1e6;
  else if (unit == "M")
    mult = 1024.0 * 1024;
  else if (unit == "g")
    mult = 1e9;
  else if (unit == "G")
    mult = 1024.0 * 1024 * 1024;
  else if (unit == "t")
    mult = 1e12;
  else if (unit == "T")
    mult = 1024.0 * 1024 * 1024 * 1024;
  else if (!unit.empty())
    Fail("{}: unknown unit {} in {} (k, K, m, M, g, G, t, T)", what, QuoteForMessage(unit), QuoteForMessage(text));
  double bytes = v * mult;
  if (!std::isfinite(bytes) || bytes > 9.0e18) Fail("{}: value {} is too large", what, QuoteForMessage(text));
  return static_cast<std::int64_t>(bytes);
}

DeploymentRequest BuildRequest(const ResolvedSettings& s) {
  for (const auto& v : s) {
    if (!IsValidUtf8(v.value)) BadValue(v, "valid UTF-8 text");
    if (v.value.find('\0') != std::string::npos) BadValue(v, "text without NUL bytes");
    if (const SettingSpec* spec = FindSettingSpec(v.key); spec && spec->type == SettingType::kEnum) {
      auto choices = SplitList(std::string(spec->choices), '|');
      if (std::find(choices.begin(), choices.end(), v.value) == choices.end()) {
        std::vector<std::string> shown;
        for (const auto& c : choices) shown.push_back(c.empty() ? "\"\"" : c);
        BadValue(v, fmt::format("one of {}", fmt::join(shown, ", ")));
      }
    }
  }
  DeploymentRequest r;
  r.settings = s;
  auto str = [&](std::string_view key) -> const std::string& { return Get(s, key).value; };
  auto nonempty = [&](std::string_view key) -> const std::string& {
    const auto& v = Get(s, key);
    if (v.value.empty()) BadValue(v, "a non-empty value");
    return v.value;
  };
  auto integer = [&](std::string_view key, std::int64_t min, std::int64_t max) { return Int(Get(s, key), min, max); };
  auto boolean = [&](std::string_view key) { return Bool(Get(s, key)); };

  r.model = nonempty("model");
  r.model_path = str("model_path");
  r.served_model_name = str("served_model_name");
  r.trust_remote_code = boolean("trust_remote_code");
  r.dtype = str("dtype");
  r.quantization = str("quantization");
  {
    const auto& v = Get(s, "hf_overrides");
    r.hf_overrides = v.value;
    if (!r.hf_overrides.empty()) {
      auto j = nlohmann::json::parse(r.hf_overrides, nullptr, false);
      if (j.is_discarded() || !j.is_object()) BadValue(v, "a JSON object");
    }
  }
  r.gpu = nonempty("gpu");
  r.gpu_total_gib = Float(Get(s, "gpu_total_gib"), 0, 4096, true);
  if (!str("stage_gpus").empty()) {
    for (auto& g : SplitList(str("stage_gpus"), ',')) {
      if (g.empty())
        BadValue(Get(s, "stage_gpus"), "GPU types separated by commas, one per PP stage, without empty entries");
      r.stage_gpus.push_back(g);
    }
  }
  r.gpus_per_node = static_cast<int>(integer("gpus_per_node", 1, 1024));
  {
    const auto& v = Get(s, "gpus");
    r.gpus = v.value;
    if (r.gpus != "all") {
      std::set<std::string> seen;
      for (const auto& id : SplitList(r.gpus, ',')) {
        if (id.empty() || id.size() > 6 || id.find_first_not_of("0123456789") != std::string::npos)
          BadValue(v, "comma-separated GPU ids (0,1,2,3) or \"all\"");
        if (!seen.insert(id).second) BadValue(v, fmt::format("GPU ids listed once each (GPU {} appears twice)", id));
      }
      if (static_cast<int>(seen.size()) > r.gpus_per_node)
        BadValue(v, fmt::format("at most gpus_per_node = {} GPU ids", r.gpus_per_node));
    }
  }
  {
    const auto& v = Get(s, "nodes");
    if (!v.value.empty() && v.value.find_first_not_of("0123456789") == std::string::npos) {
      r.num_nodes = static_cast<int>(Int(v, 1, 4096));
    } else if (!v.value.empty()) {
      std::set<std::string> seen;
      for (auto& host : SplitList(v.value, ',')) {
        if (host.empty()) BadValue(v, "comma-separated host names without empty entries");
        // A leading '-' would reach the remote shell (ssh) as an option, e.g. -oProxyCommand=...
        if (host.front() == '-')
          BadValue(v, fmt::format("host names that do not start with '-' ({})", QuoteForMessage(host)));
        if (std::any_of(host.begin(), host.end(),
                        [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7F; }))
          BadValue(v, fmt::format("host names without control characters ({})", QuoteForMessage(host)));
        if (!seen.insert(host).second) BadValue(v, fmt::format("host names listed once each ({} appears twice)", host));
        r.nodes.push_back(host);
      }
      r.num_nodes = static_cast<int>(r.nodes.size());
    }
  }
  r.host = nonempty("host");
  r.port = static_cast<int>(integer("port", 1, 65535));
  r.vllm_version = nonempty("vllm_version");
  r.engine = str("engine");
  r.mla_disable = boolean("mla_disable");
  r.runtime = str("runtime");
  r.image = str("image");
  if (r.runtime == "docker" && r.image.empty()) BadValue(Get(s, "image"), "an image name when runtime is docker");
  r.docker_bin = nonempty("docker_bin");
  r.vllm_bin = nonempty("vllm_bin");
  r.container_name = nonempty("container_name");
  r.shm_size = str("shm_size");
  for (auto& vol : SplitList(str("volumes"), ';'))
    if (!vol.empty()) r.volumes.push_back(vol);
  r.ray_port = static_cast<int>(integer("ray_port", 1, 65535));
  r.executor = str("executor");
  {
    const auto& v = Get(s, "remote_shell");
    if (!v.value.empty() && v.value.front() == '[') {
      auto j = nlohmann::json::parse(v.value, nullptr, false);
      if (j.is_discarded() || !j.is_array()) BadValue(v, "a JSON list of strings, e.g. [\"ssh\", \"{host}\", \"--\"]");
      for (const auto& a : j) {
        if (!a.is_string()) BadValue(v, "a JSON list of strings");
        r.remote_shell.push_back(a.get<std::string>());
      }
    } else {
      std::string word;
      for (char c : v.value + " ") {
        if (c == ' ' || c == '\t') {
          if (!word.empty()) r.remote_shell.push_back(word);
          word.clear();
        } else {
          word += c;
        }
      }
    }
    if (r.remote_shell.empty() || r.remote_shell.front().empty())
      BadValue(v, "an argv prefix naming the remote shell, e.g. \"ssh -o BatchMode=yes {host} --\"");
    if (std::none_of(r.remote_shell.begin(), r.remote_shell.end(),
                     [](const std::string& w) { return w.find("{host}") != std::string::npos; }))
      BadValue(v, "an argv prefix in which {host} stands for the node, e.g. \"ssh -o BatchMode=yes {host} --\"");
  }
  r.ray_bin = nonempty("ray_bin");
  r.master_port = static_cast<int>(integer("master_port", 1, 65535));
  r.nccl_socket_ifname = str("nccl_socket_ifname");
  r.gloo_socket_ifname = str("gloo_socket_ifname");
  r.allow_cross_node_tp = boolean("allow_cross_node_tp");
  r.tp_size = static_cast<int>(integer("tp_size", 1, 4096));
  r.pp_size = static_cast<int>(integer("pp_size", 1, 4096));
  r.dp_size = static_cast<int>(integer("dp_size", 1, 4096));
  r.dcp_size = static_cast<int>(integer("dcp_size", 1, 4096));
  r.enable_expert_parallel = boolean("enable_expert_parallel");
  r.pp_layer_partition = str("pp_layer_partition");
  r.disable_custom_all_reduce = boolean("disable_custom_all_reduce");
  r.allow_unverified_pp = boolean("allow_unverified_pp");
  r.allow_unchecked_indexer = boolean("allow_unchecked_indexer");
  r.force_v2_runner = str("force_v2_runner");
  r.max_model_len = integer("max_model_len", 0, std::int64_t{1} << 40);
  r.kv_cache_dtype = nonempty("kv_cache_dtype");
  r.block_size = static_cast<int>(integer("block_size", 0, 1 << 20));
  r.gpu_memory_utilization = Float(Get(s, "gpu_memory_utilization"), 0, 1, true);
  {
    const auto& v = Get(s, "kv_cache_memory_bytes");
    r.kv_cache_memory_bytes =
        v.value.empty() ? 0 : ParseHumanReadableInt(v.value, fmt::format("{} ({})", v.key, v.origin));
  }
  r.num_gpu_blocks_override = integer("num_gpu_blocks_override", 0, std::int64_t{1} << 40);
  r.max_num_seqs = static_cast<int>(integer("max_num_seqs", 0, 1 << 24));
  r.max_num_batched_tokens = static_cast<int>(integer("max_num_batched_tokens", 0, 1 << 30));
  r.enforce_eager = boolean("enforce_eager");
  r.spec_method = str("spec_method");
  r.num_spec_tokens = static_cast<int>(integer("num_spec_tokens", 1, 64));
  {
    const auto& v = Get(s, "extra_vllm_args");
    if (!v.value.empty()) {
      auto j = nlohmann::json::parse(v.value, nullptr, false);
      if (j.is_discarded() || !j.is_array()) BadValue(v, "a JSON list of strings, e.g. [\"--enable-prefix-caching\"]");
      for (const auto& a : j) {
        if (!a.is_string()) BadValue(v, "a JSON list of strings");
        r.extra_vllm_args.push_back(a.get<std::string>());
      }
    }
  }
  r.calibration = str("calibration");
  return r;
}

nlohmann::ordered_json SettingsToJson(const ResolvedSettings& settings) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& v : settings)
    out.push_back({{"key", v.key}, {"value", v.value}, {"source", SourceName(v.source)}, {"origin", v.origin}});
  return out;
}

ResolvedSettings SettingsFromJson(const nlohmann::json& j, const std::string& source,
                                  const ResolvedSettings* missing_from) {
  if (!j.is_array()) Fail("{}: request: expected a list of settings", source);
  std::map<std::string, SettingValue> by_key;
  for (const auto& e : j) {
    if (!e.is_object() || !e.contains("key") || !e["key"].is_string() || !e.contains("value") ||
        !e["value"].is_string())
      Fail("{}: request: expected {{\"key\": ..., \"value\": ...}} entries", source);
    std::string key = e["key"].get<std::string>();
    if (!FindSettingSpec(key)) continue;  // a setting of another ppdeploy version
    std::string origin = e.contains("origin") && e["origin"].is_string() ? e["origin"].get<std::string>() : "?";
    std::string src = e.contains("source") && e["source"].is_string() ? e["source"].get<std::string>() : "";
    SettingSource source_kind = SettingSource::kState;
    for (auto k : {SettingSource::kVllmDefault, SettingSource::kDefault, SettingSource::kFile, SettingSource::kEnv,
                   SettingSource::kFlag, SettingSource::kState})
      if (SourceName(k) == src) source_kind = k;
    by_key[key] = {key, e["value"].get<std::string>(), source_kind, origin};
  }
  ResolvedSettings out;
  for (const auto& spec : SettingSpecs()) {
    auto it = by_key.find(std::string(spec.key));
    if (it != by_key.end()) {
      out.push_back(it->second);
      continue;
    }
    // A setting newer than the ppdeploy that wrote the state: that launch did not pass it, so
    // vLLM used its own default. An empty or foreign list is still an error.
    const SettingValue* fallback = nullptr;
    if (missing_from && !by_key.empty())
      for (const auto& v : *missing_from)
        if (v.key == spec.key) fallback = &v;
    if (!fallback) Fail("{}: request: setting '{}' is missing", source, spec.key);
    SettingValue v = *fallback;
    v.origin = fmt::format("{} (not in {}: written by an older ppdeploy)", v.origin, source);
    out.push_back(std::move(v));
  }
  return out;
}

}  // namespace ppdeploy
