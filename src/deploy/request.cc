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

/// `shown`: how much of the value the message echoes (a number: its first 20 characters, issue 23 item 9).
[[noreturn]] void BadValue(const SettingValue& v, std::string_view expected, std::size_t shown = kMessageTextLimit) {
  Fail("{} ({}): expected {}, got {}", v.key, v.origin, expected, QuoteForMessage(v.value, shown));
}
constexpr std::size_t kNumberShown = 20;

/// An integer in [min, max] (max kNoLimit: no upper limit).
std::int64_t IntOf(const SettingValue& v, double min, double max) {
  const bool bounded = std::isfinite(max);
  const auto lo = static_cast<std::int64_t>(min), hi = bounded ? static_cast<std::int64_t>(max) : INT64_MAX;
  std::int64_t out = 0;
  const char* first = v.value.data();
  const char* last = first + v.value.size();
  auto [ptr, ec] = std::from_chars(first, last, out);
  if (v.value.empty() || ec != std::errc() || ptr != last || out < lo || out > hi) {
    if (!bounded) BadValue(v, fmt::format("an integer >= {}", lo), kNumberShown);
    BadValue(v, fmt::format("an integer in [{}, {}]", lo, hi), kNumberShown);
  }
  return out;
}

/// A finite number in [min, max].
double FloatOf(const SettingValue& v, double min, double max) {
  double d = 0;
  const char* first = v.value.data();
  const char* last = first + v.value.size();
  auto [ptr, ec] = std::from_chars(first, last, d);
  if (v.value.empty() || ec != std::errc() || ptr != last || !std::isfinite(d) || d > max || d < min)
    BadValue(v, fmt::format("a number in [{}, {}]", min, max), kNumberShown);
  return d;
}

bool BoolOf(const SettingValue& v) {
  std::string s = v.value;
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  if (s == "1" || s == "true" || s == "yes" || s == "on") return true;
  if (s == "0" || s == "false" || s == "no" || s == "off" || s.empty()) return false;
  BadValue(v, "0 or 1 (true/false)");
}

std::int64_t BytesOf(const SettingValue& v) {
  return v.value.empty() ? 0 : ParseHumanReadableInt(v.value, fmt::format("{} ({})", v.key, v.origin));
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

const SettingSpec& SpecOf(const SettingValue& v) {
  const SettingSpec* spec = FindSettingSpec(v.key);
  if (!spec) Fail("internal: setting '{}' is not in the settings table", v.key);
  return *spec;
}

/// Checks every setting may hold: valid UTF-8 without NUL bytes, and one of an enum's choices.
void CheckText(const SettingValue& v) {
  if (!IsValidUtf8(v.value)) BadValue(v, "valid UTF-8 text");
  if (v.value.find('\0') != std::string::npos) BadValue(v, "text without NUL bytes");
  const SettingSpec* spec = FindSettingSpec(v.key);
  if (!spec || spec->type != SettingType::kEnum) return;
  auto choices = SplitList(std::string(spec->choices), '|');
  if (std::find(choices.begin(), choices.end(), v.value) != choices.end()) return;
  std::vector<std::string> shown;
  for (const auto& c : choices) shown.push_back(c.empty() ? "\"\"" : c);
  BadValue(v, fmt::format("one of {}", fmt::join(shown, ", ")));
}

/// The check of a setting's type and range from its row (what a setting without its own
/// rules in BuildRequest gets).
void CheckTyped(const SettingValue& v) {
  const SettingSpec& spec = SpecOf(v);
  switch (spec.type) {
    case SettingType::kInt:
      IntOf(v, spec.min, spec.max);
      break;
    case SettingType::kFloat:
      FloatOf(v, spec.min, spec.max);
      break;
    case SettingType::kBool:
      BoolOf(v);
      break;
    case SettingType::kBytes:
      BytesOf(v);
      break;
    case SettingType::kJson:
      if (!v.value.empty() && nlohmann::json::parse(v.value, nullptr, false).is_discarded()) BadValue(v, "JSON text");
      break;
    case SettingType::kString:
    case SettingType::kEnum:
      break;
  }
}

/// Typed reads of the resolved settings, each checked by its row's type and range.
class SettingReader {
 public:
  explicit SettingReader(const ResolvedSettings& s) : s_(s) {}
  const SettingValue& operator[](std::string_view key) const { return Get(s_, key); }
  const std::string& Text(std::string_view key) const { return Get(s_, key).value; }
  const std::string& NonEmpty(std::string_view key) const {
    const auto& v = Get(s_, key);
    if (v.value.empty()) BadValue(v, "a non-empty value");
    return v.value;
  }
  std::int64_t Int64(std::string_view key) const {
    const auto& v = Get(s_, key);
    const SettingSpec& spec = SpecOf(v);
    return IntOf(v, spec.min, spec.max);
  }
  int Int(std::string_view key) const { return static_cast<int>(Int64(key)); }
  double Float(std::string_view key) const {
    const auto& v = Get(s_, key);
    const SettingSpec& spec = SpecOf(v);
    return FloatOf(v, spec.min, spec.max);
  }
  bool Bool(std::string_view key) const { return BoolOf(Get(s_, key)); }
  std::int64_t Bytes(std::string_view key) const { return BytesOf(Get(s_, key)); }

 private:
  const ResolvedSettings& s_;
};

/// A JSON list of strings (`example` shows one in the message).
std::vector<std::string> JsonStringList(const SettingValue& v, std::string_view example) {
  std::vector<std::string> out;
  auto j = nlohmann::json::parse(v.value, nullptr, false);
  if (j.is_discarded() || !j.is_array()) BadValue(v, fmt::format("a JSON list of strings, e.g. {}", example));
  for (const auto& a : j) {
    if (!a.is_string()) BadValue(v, "a JSON list of strings");
    out.push_back(a.get<std::string>());
  }
  return out;
}

/// GPUS: "all", or comma-separated ids, each listed once, at most gpus_per_node of them.
void CheckGpuIds(const SettingValue& v, int gpus_per_node) {
  if (v.value == "all") return;
  std::set<std::string> seen;
  for (const auto& id : SplitList(v.value, ',')) {
    if (id.empty() || id.size() > 6 || id.find_first_not_of("0123456789") != std::string::npos)
      BadValue(v, "comma-separated GPU ids (0,1,2,3) or \"all\"");
    if (!seen.insert(id).second) BadValue(v, fmt::format("GPU ids listed once each (GPU {} appears twice)", id));
  }
  if (static_cast<int>(seen.size()) > gpus_per_node)
    BadValue(v, fmt::format("at most gpus_per_node = {} GPU ids", gpus_per_node));
}

/// NODES: "" (one node), a node count, or host names (first = head), each listed once.
void ReadNodes(const SettingValue& v, DeploymentRequest& r) {
  if (v.value.empty()) return;
  if (v.value.find_first_not_of("0123456789") == std::string::npos) {
    r.num_nodes = static_cast<int>(IntOf(v, 1, 4096));
    return;
  }
  std::set<std::string> seen;
  for (auto& host : SplitList(v.value, ',')) {
    if (host.empty()) BadValue(v, "comma-separated host names without empty entries");
    // A leading '-' would reach the remote shell (ssh) as an option, e.g. -oProxyCommand=...
    if (host.front() == '-')
      BadValue(v, fmt::format("host names that do not start with '-' ({})", QuoteForMessage(host)));
    if (std::any_of(host.begin(), host.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7F; }))
      BadValue(v, fmt::format("host names without control characters ({})", QuoteForMessage(host)));
    if (!seen.insert(host).second) BadValue(v, fmt::format("host names listed once each ({} appears twice)", host));
    r.nodes.push_back(host);
  }
  r.num_nodes = static_cast<int>(r.nodes.size());
}

/// PPDEPLOY_REMOTE_SHELL: a JSON list, or words split on blanks; one word holds {host}.
std::vector<std::string> ReadRemoteShell(const SettingValue& v) {
  std::vector<std::string> argv;
  if (!v.value.empty() && v.value.front() == '[') {
    argv = JsonStringList(v, "[\"ssh\", \"{host}\", \"--\"]");
  } else {
    std::string word;
    for (char c : v.value + " ") {
      if (c == ' ' || c == '\t') {
        if (!word.empty()) argv.push_back(word);
        word.clear();
      } else {
        word += c;
      }
    }
  }
  if (argv.empty() || argv.front().empty())
    BadValue(v, "an argv prefix naming the remote shell, e.g. \"ssh -o BatchMode=yes {host} --\"");
  if (std::none_of(argv.begin(), argv.end(),
                   [](const std::string& w) { return w.find("{host}") != std::string::npos; }))
    BadValue(v, "an argv prefix in which {host} stands for the node, e.g. \"ssh -o BatchMode=yes {host} --\"");
  return argv;
}

void ReadServing(const SettingReader& in, DeploymentRequest& r) {
  r.model = in.NonEmpty("model");
  r.model_path = in.Text("model_path");
  r.served_model_name = in.Text("served_model_name");
  r.trust_remote_code = in.Bool("trust_remote_code");
  r.dtype = in.Text("dtype");
  r.quantization = in.Text("quantization");
  r.hf_overrides = in.Text("hf_overrides");
  if (!r.hf_overrides.empty()) {
    auto j = nlohmann::json::parse(r.hf_overrides, nullptr, false);
    if (j.is_discarded() || !j.is_object()) BadValue(in["hf_overrides"], "a JSON object");
  }
}

void ReadPlacement(const SettingReader& in, DeploymentRequest& r) {
  r.gpu = in.NonEmpty("gpu");
  r.gpu_total_gib = in.Float("gpu_total_gib");
  if (!in.Text("stage_gpus").empty()) {
    for (auto& g : SplitList(in.Text("stage_gpus"), ',')) {
      if (g.empty())
        BadValue(in["stage_gpus"], "GPU types separated by commas, one per PP stage, without empty entries");
      r.stage_gpus.push_back(g);
    }
  }
  r.gpus_per_node = in.Int("gpus_per_node");
  CheckGpuIds(in["gpus"], r.gpus_per_node);
  r.gpus = in.Text("gpus");
  ReadNodes(in["nodes"], r);
  r.host = in.NonEmpty("host");
  r.port = in.Int("port");
}

void ReadRuntime(const SettingReader& in, DeploymentRequest& r) {
  r.vllm_version = in.NonEmpty("vllm_version");
  r.engine = in.Text("engine");
  r.mla_disable = in.Bool("mla_disable");
  r.runtime = in.Text("runtime");
  r.image = in.Text("image");
  if (r.runtime == "docker" && r.image.empty()) BadValue(in["image"], "an image name when runtime is docker");
  r.docker_bin = in.NonEmpty("docker_bin");
  r.vllm_bin = in.NonEmpty("vllm_bin");
  r.container_name = in.NonEmpty("container_name");
  r.shm_size = in.Text("shm_size");
  for (auto& vol : SplitList(in.Text("volumes"), ';'))
    if (!vol.empty()) r.volumes.push_back(vol);
  r.ray_port = in.Int("ray_port");
}

void ReadMultiNode(const SettingReader& in, DeploymentRequest& r) {
  r.executor = in.Text("executor");
  r.remote_shell = ReadRemoteShell(in["remote_shell"]);
  r.ray_bin = in.NonEmpty("ray_bin");
  r.master_port = in.Int("master_port");
  r.nccl_socket_ifname = in.Text("nccl_socket_ifname");
  r.gloo_socket_ifname = in.Text("gloo_socket_ifname");
  r.allow_cross_node_tp = in.Bool("allow_cross_node_tp");
}

void ReadLayout(const SettingReader& in, DeploymentRequest& r) {
  r.tp_size = in.Int("tp_size");
  r.pp_size = in.Int("pp_size");
  r.dp_size = in.Int("dp_size");
  r.dcp_size = in.Int("dcp_size");
  r.enable_expert_parallel = in.Bool("enable_expert_parallel");
  r.pp_layer_partition = in.Text("pp_layer_partition");
  r.disable_custom_all_reduce = in.Bool("disable_custom_all_reduce");
  r.allow_unverified_pp = in.Bool("allow_unverified_pp");
  r.allow_unchecked_indexer = in.Bool("allow_unchecked_indexer");
  r.force_v2_runner = in.Text("force_v2_runner");
}

void ReadCacheAndBatch(const SettingReader& in, DeploymentRequest& r) {
  r.max_model_len = in.Int64("max_model_len");
  r.kv_cache_dtype = in.NonEmpty("kv_cache_dtype");
  r.block_size = in.Int("block_size");
  r.gpu_memory_utilization = in.Float("gpu_memory_utilization");
  r.kv_cache_memory_bytes = in.Bytes("kv_cache_memory_bytes");
  r.num_gpu_blocks_override = in.Int64("num_gpu_blocks_override");
  r.max_num_seqs = in.Int("max_num_seqs");
  r.max_num_batched_tokens = in.Int("max_num_batched_tokens");
  r.enforce_eager = in.Bool("enforce_eager");
}

void ReadSpeculationAndExtras(const SettingReader& in, DeploymentRequest& r) {
  r.spec_method = in.Text("spec_method");
  r.num_spec_tokens = in.Int("num_spec_tokens");
  if (!in.Text("extra_vllm_args").empty())
    r.extra_vllm_args = JsonStringList(in["extra_vllm_args"], "[\"--enable-prefix-caching\"]");
  r.calibration = in.Text("calibration");
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
  static constexpr std::pair<std::string_view, double> kUnits[] = {{"", 1},
                                                                   {"k", 1e3},
                                                                   {"K", 1024.0},
                                                                   {"m", 1e6},
                                                                   {"M", 1024.0 * 1024},
                                                                   {"g", 1e9},
                                                                   {"G", 1024.0 * 1024 * 1024},
                                                                   {"t", 1e12},
                                                                   {"T", 1024.0 * 1024 * 1024 * 1024}};
  const auto* u = std::find_if(std::begin(kUnits), std::end(kUnits), [&](const auto& e) { return e.first == unit; });
  if (u == std::end(kUnits))
    Fail("{}: unknown unit {} in {} (k, K, m, M, g, G, t, T)", what, QuoteForMessage(unit), QuoteForMessage(text));
  double bytes = v * u->second;
  if (!std::isfinite(bytes) || bytes > 9.0e18) Fail("{}: value {} is too large", what, QuoteForMessage(text));
  return static_cast<std::int64_t>(bytes);
}

DeploymentRequest BuildRequest(const ResolvedSettings& s) {
  for (const auto& v : s) CheckText(v);
  DeploymentRequest r;
  r.settings = s;
  const SettingReader in(s);
  ReadServing(in, r);
  ReadPlacement(in, r);
  ReadRuntime(in, r);
  ReadMultiNode(in, r);
  ReadLayout(in, r);
  ReadCacheAndBatch(in, r);
  ReadSpeculationAndExtras(in, r);
  for (const auto& v : s) CheckTyped(v);  // the settings without a typed field above (pass-through flags)
  return r;
}

std::string CanonicalValue(const SettingValue& v) {
  const SettingSpec& spec = SpecOf(v);
  switch (spec.type) {
    case SettingType::kInt:
      return std::to_string(IntOf(v, spec.min, spec.max));
    case SettingType::kFloat:
      return fmt::format("{}", FloatOf(v, spec.min, spec.max));
    case SettingType::kBool:
      return std::string(1, BoolOf(v) ? '1' : '0');
    case SettingType::kBytes:
      return std::to_string(BytesOf(v));
    case SettingType::kString:
    case SettingType::kEnum:
    case SettingType::kJson:
      break;
  }
  return v.value;
}

bool IsVllmDefault(const SettingValue& v) {
  const SettingSpec& spec = SpecOf(v);
  return CanonicalValue(v) == CanonicalValue({v.key, std::string(spec.vllm_default), SettingSource::kVllmDefault, ""});
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
