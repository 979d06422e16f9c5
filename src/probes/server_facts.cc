#include "probes/server_facts.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "core/json_fields.h"

namespace ppdeploy::probes {
namespace {

constexpr std::int64_t kMiB = 1 << 20;

std::string Trim(std::string_view s) {
  const auto a = s.find_first_not_of(" \t\r");
  if (a == std::string_view::npos) return "";
  const auto b = s.find_last_not_of(" \t\r");
  return std::string(s.substr(a, b - a + 1));
}

std::vector<std::string> SplitCsv(std::string_view line) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    const auto comma = line.find(',', start);
    out.push_back(Trim(line.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start)));
    if (comma == std::string_view::npos) return out;
    start = comma + 1;
  }
}

// "72430 MiB" or "72430" -> 72430.
std::optional<std::int64_t> ParseMiB(std::string_view t) {
  std::string s(t);
  if (s.size() > 4 && s.compare(s.size() - 4, 4, " MiB") == 0) s.resize(s.size() - 4);
  return ParseIntText(s);
}

double Round(double v, int digits) {
  const double f = std::pow(10.0, digits);
  return std::round(v * f) / f;
}

nlohmann::json HistogramJson(const PromHistogram& h, double scale) {
  nlohmann::json bounds = nlohmann::json::array();
  for (double b : h.upper_bounds) bounds.push_back(std::isinf(b) ? nlohmann::json() : nlohmann::json(b * scale));
  nlohmann::json j = {{"count", h.count}, {"upper_bounds_ms", bounds}, {"counts", h.Counts()}};
  if (auto m = h.Mean()) j["mean"] = Round(*m * scale, 4);
  if (auto q = h.Quantile(0.5)) j["p50"] = Round(*q * scale, 4);
  if (auto q = h.Quantile(0.9)) j["p90"] = Round(*q * scale, 4);
  if (auto q = h.Quantile(0.99)) j["p99"] = Round(*q * scale, 4);
  return j;
}

}  // namespace

FactGroup FactGroup::Unavailable(std::string why) {
  FactGroup g;
  g.unavailable = std::move(why);
  return g;
}

const nlohmann::json* FactGroup::Find(std::string_view name) const {
  const std::string key(name);
  if (!facts.is_object() || !facts.contains(key) || facts[key].is_null()) return nullptr;
  return &facts[key];
}

nlohmann::json ToJson(const ServerFacts& facts) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [name, g] : facts) {
    if (!g.unavailable.empty()) {
      j[name] = {{"unavailable", g.unavailable}};
      continue;
    }
    nlohmann::json o = g.facts.is_object() ? g.facts : nlohmann::json::object();
    o["source"] = g.source;
    if (!g.missing.empty()) o["unavailable"] = g.missing;
    j[name] = o;
  }
  return j;
}

ServerFacts ServerFactsFromJson(const nlohmann::json& j, const std::string& source) {
  ServerFacts out;
  const JsonContext ctx{source, "facts"};
  RequireObject(j, ctx);
  for (const auto& [name, g] : j.items()) {
    const JsonContext gc = ctx.Child(name);
    RequireObject(g, gc);
    FactGroup group;
    if (g.contains("unavailable") && g["unavailable"].is_string()) {
      group.unavailable = g["unavailable"].get<std::string>();
      out[name] = group;
      continue;
    }
    group.source = OptString(g, "source", gc).value_or("");
    for (const auto& [k, v] : g.items()) {
      if (k == "source") continue;
      if (k == "unavailable") {
        RequireObject(v, gc.Child("unavailable"));
        for (const auto& [mk, mv] : v.items()) group.missing[mk] = mv.is_string() ? mv.get<std::string>() : mv.dump();
        continue;
      }
      group.facts[k] = v;
    }
    out[name] = group;
  }
  return out;
}

FactGroup BootLogFacts(const BootLog& log, const std::string& path) {
  if (log.boot == 0)
    return FactGroup::Unavailable(log.boot_error.empty() ? fmt::format("{} holds no vLLM boot", path) : log.boot_error);
  FactGroup g;
  g.source = fmt::format("boot log {} (boot {} of {}, {})", log.WhereBoot(), log.boot, log.boots, ToString(log.status));
  if (log.version) g.facts["vllm_version"] = *log.version;
  if (!log.kv_tokens.empty())
    g.facts["kv_pool_tokens"] = *std::min_element(log.kv_tokens.begin(), log.kv_tokens.end());
  else
    g.missing["kv_pool_tokens"] = "no \"GPU KV cache size\" line";
  if (log.block_size)
    g.facts["block_size"] = *log.block_size;
  else
    g.missing["block_size"] = "no \"Setting kv cache block size\" line";
  if (log.num_gpu_blocks)
    g.facts["num_gpu_blocks"] = *log.num_gpu_blocks;
  else if (!log.kv_tokens.empty() && log.block_size && *log.block_size > 0)
    g.facts["num_gpu_blocks"] = g.facts["kv_pool_tokens"].get<std::int64_t>() / *log.block_size;
  else
    g.missing["num_gpu_blocks"] = "no \"# GPU blocks\" line, and no block size to divide the pool by";
  if (!log.max_concurrency.empty()) {
    const auto& m = log.max_concurrency.back();
    g.facts["max_concurrency"] = {{"tokens_per_request", m.tokens_per_request}, {"x", m.x}};
  } else {
    g.missing["max_concurrency"] = "no \"Maximum concurrency for N tokens per request\" line";
  }
  if (!log.partition.empty()) g.facts["layer_partition"] = log.partition;
  if (log.init_engine_s) g.facts["init_engine_s"] = *log.init_engine_s;
  nlohmann::json ranks = nlohmann::json::array();
  for (const auto& w : log.workers) {
    nlohmann::json r = {{"process", w.key}};
    std::optional<int> pp = w.process.pp, tp = w.process.tp;
    if (w.ranks) {
      if (!pp) pp = w.ranks->pp;
      if (!tp) tp = w.ranks->tp;
    }
    r["pp_rank"] = pp.value_or(0);
    r["tp_rank"] = tp.value_or(0);
    bool any = false;
    auto put = [&](const char* key, std::optional<double> v) {
      if (v) {
        r[key] = *v;
        any = true;
      }
    };
    put("available_kv_gib", w.available_kv_gib);
    std::optional<double> weights = w.model_loading_gib;
    if (!weights && w.usage_summary) weights = w.usage_summary->weights_gib;
    if (!weights && w.v0_profile) weights = w.v0_profile->weights_gib;
    put("weights_gib", weights);
    std::optional<double> activation;
    if (w.usage_summary) activation = w.usage_summary->peak_activation_gib;
    if (!activation && w.v0_profile) activation = w.v0_profile->activation_peak_gib;
    if (!activation && w.v1_profile) activation = w.v1_profile->torch_peak_increase_gib;
    put("activation_gib", activation);
    std::optional<double> graphs = w.cuda_graph_actual_gib;
    if (!graphs && w.usage_summary) graphs = w.usage_summary->cuda_graph_gib;
    if (!graphs) graphs = w.graph_capture_gib;
    put("cuda_graph_gib", graphs);
    if (w.usage_summary) put("non_torch_gib", w.usage_summary->non_torch_gib);
    put("model_loading_s", w.model_loading_s);
    if (any) ranks.push_back(r);
  }
  if (!ranks.empty())
    g.facts["ranks"] = ranks;
  else
    g.missing["ranks"] = "no worker printed \"Model loading took\" or \"Available KV cache memory\"";
  return g;
}

FactGroup MetricsFacts(const std::vector<PromSample>& samples, const std::string& url) {
  FactGroup g;
  g.source = url;
  if (auto cc = CacheConfigInfo(samples)) {
    g.facts["cache_config"] = *cc;
    auto num = [&](const char* key, std::int64_t min, std::int64_t max) -> std::optional<std::int64_t> {
      auto it = cc->find(key);
      if (it == cc->end()) {
        g.missing[key] = fmt::format("vllm:cache_config_info has no {} label", key);
        return std::nullopt;
      }
      auto v = ParseIntText(it->second);
      if (!v) g.missing[key] = fmt::format("vllm:cache_config_info {}=\"{}\" is not an integer", key, it->second);
      if (v && (*v < min || *v > max)) {
        g.missing[key] = fmt::format("vllm:cache_config_info {}=\"{}\" is refused: expected an integer from {} to {}",
                                     key, it->second, min, max);
        v.reset();
      }
      return v;
    };
    // Counts >= 0, capped so that their product cannot overflow (2^40 blocks x 2^20 tokens per block).
    auto blocks = num("num_gpu_blocks", 0, std::int64_t{1} << 40);
    auto block_size = num("block_size", 1, std::int64_t{1} << 20);
    if (blocks) g.facts["num_gpu_blocks"] = *blocks;
    if (block_size) g.facts["block_size"] = *block_size;
    if (blocks && block_size)
      g.facts["kv_pool_tokens"] = *blocks * *block_size;
    else
      g.missing["kv_pool_tokens"] = "needs num_gpu_blocks and block_size of vllm:cache_config_info";
  } else {
    g.missing["cache_config"] = "no vllm:cache_config_info series";
  }
  std::optional<double> usage;
  for (const auto& s : samples)
    if (s.name == "vllm:kv_cache_usage_perc") usage = std::max(usage.value_or(0.0), s.value);
  if (usage)
    g.facts["kv_cache_usage_perc"] = *usage;
  else
    g.missing["kv_cache_usage_perc"] = "no vllm:kv_cache_usage_perc series";
  for (const char* name : {"vllm:num_requests_running", "vllm:num_requests_waiting"}) {
    const std::string key = std::string(name).substr(5);
    if (auto v = SumOf(samples, name))
      g.facts[key] = *v;
    else
      g.missing[key] = fmt::format("no {} series", name);
  }
  if (auto h = FindHistogram(samples, "vllm:time_to_first_token_seconds", url); h && h->count > 0) {
    auto j = HistogramJson(*h, 1000.0);
    g.facts["ttft_ms"] = {{"mean", j.value("mean", 0.0)},
                          {"p50", j.value("p50", 0.0)},
                          {"p99", j.value("p99", 0.0)},
                          {"count", h->count},
                          {"window", "the server's life"}};
  } else {
    g.missing["ttft_ms"] = "no observation in vllm:time_to_first_token_seconds";
  }
  return g;
}

void AddStepTime(FactGroup& metrics, const std::vector<PromSample>& before, const std::vector<PromSample>& after,
                 const std::string& window, const std::string& url) {
  try {
    std::string_view name = kInterTokenLatency;
    auto h = FindHistogram(after, name, url);
    if (!h) {
      name = kTimePerOutputToken;
      h = FindHistogram(after, name, url);
    }
    if (!h) {
      metrics.missing["step_time_ms"] = fmt::format("no {} or {} histogram", kInterTokenLatency, kTimePerOutputToken);
      return;
    }
    PromHistogram delta = *h;
    if (auto b = FindHistogram(before, name, url)) delta = HistogramDelta(*h, *b);
    if (!(delta.count > 0)) {
      metrics.missing["step_time_ms"] = fmt::format("no observation in {} during {}", name, window);
      return;
    }
    nlohmann::json j = HistogramJson(delta, 1000.0);
    j["window"] = window;
    j["series"] = std::string(name);
    metrics.facts["step_time_ms"] = j;
  } catch (const Error& e) {
    metrics.missing["step_time_ms"] = e.what();
  }
}

std::vector<GpuMemoryReading> ParseNvidiaSmiMemoryCsv(std::string_view text, const std::string& source) {
  std::vector<GpuMemoryReading> out;
  std::int64_t line_no = 0;
  std::size_t pos = 0;
  bool header_seen = false;
  while (pos < text.size()) {
    const auto nl = text.find('\n', pos);
    const std::string line(text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos));
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    ++line_no;
    if (Trim(line).empty()) continue;
    const auto f = SplitCsv(line);
    auto where = [&] { return fmt::format("{}: line {}", source, line_no); };
    if (!header_seen && out.empty() && !f.empty() && f[0] == "index") {
      if (f.size() != 3 || f[1] != "memory.used [MiB]" || f[2] != "memory.total [MiB]")
        Fail("{}: expected the header \"index, memory.used [MiB], memory.total [MiB]\", got {}", where(),
             ShortJson(nlohmann::json(line)));
      header_seen = true;
      continue;
    }
    if (f.size() != 3)
      Fail("{}: expected 3 fields (index, memory.used, memory.total), got {}: {}", where(), f.size(),
           ShortJson(nlohmann::json(line)));
    GpuMemoryReading r;
    auto index = ParseIntText(f[0]);
    auto used = ParseMiB(f[1]);
    auto total = ParseMiB(f[2]);
    if (!index || *index < 0) Fail("{}: index: expected a GPU index, got {}", where(), ShortJson(nlohmann::json(f[0])));
    if (!used || *used < 0) Fail("{}: memory.used: expected MiB, got {}", where(), ShortJson(nlohmann::json(f[1])));
    if (!total || *total <= 0) Fail("{}: memory.total: expected MiB, got {}", where(), ShortJson(nlohmann::json(f[2])));
    r.index = static_cast<int>(*index);
    r.used_mib = *used;
    r.total_mib = *total;
    out.push_back(r);
  }
  if (out.empty()) Fail("{}: no GPU listed", source);
  return out;
}

FactGroup NvidiaSmiFacts(const std::vector<GpuMemoryReading>& readings, const std::vector<int>& gpus,
                         const std::string& source) {
  FactGroup g;
  g.source = source;
  nlohmann::json list = nlohmann::json::array();
  std::optional<std::int64_t> tightest;
  int tightest_gpu = -1;
  std::vector<int> absent;
  for (int id : gpus)
    if (std::none_of(readings.begin(), readings.end(), [&](const GpuMemoryReading& r) { return r.index == id; }))
      absent.push_back(id);
  for (const auto& r : readings) {
    if (!gpus.empty() && std::find(gpus.begin(), gpus.end(), r.index) == gpus.end()) continue;
    const std::int64_t headroom = r.total_mib - r.used_mib;
    list.push_back(
        {{"index", r.index}, {"used_mib", r.used_mib}, {"total_mib", r.total_mib}, {"headroom_mib", headroom}});
    if (!tightest || headroom < *tightest) {
      tightest = headroom;
      tightest_gpu = r.index;
    }
  }
  if (!absent.empty()) g.missing["gpus"] = fmt::format("nvidia-smi does not list GPU {}", fmt::join(absent, ", "));
  if (list.empty()) {
    g.missing["gpus"] = "none of the deployment's GPUs is listed";
    return g;
  }
  g.facts["gpus"] = list;
  g.facts["tightest_headroom_mib"] = *tightest;
  g.facts["tightest_gpu"] = tightest_gpu;
  return g;
}

void ApplyFacts(VerifyResult& r, const ServerFacts& facts) {
  auto group = [&](const char* name) -> const FactGroup* {
    auto it = facts.find(name);
    return it == facts.end() || !it->second.unavailable.empty() ? nullptr : &it->second;
  };
  const FactGroup* boot = group("boot_log");
  const FactGroup* metrics = group("metrics");
  const FactGroup* smi = group("nvidia_smi");
  const FactGroup* state = group("run_state");
  if (const nlohmann::json* v = boot ? boot->Find("kv_pool_tokens") : nullptr) {
    r.kv_pool_logged_tokens = v->get<std::int64_t>();
    r.kv_pool_logged_source = boot->source + ": GPU KV cache size";
  } else if (const nlohmann::json* m = metrics ? metrics->Find("kv_pool_tokens") : nullptr) {
    r.kv_pool_logged_tokens = m->get<std::int64_t>();
    r.kv_pool_logged_source = metrics->source + ": vllm:cache_config_info num_gpu_blocks x block_size";
  }
  if (const nlohmann::json* v = state ? state->Find("predicted_kv_tokens") : nullptr) {
    r.kv_pool_predicted_tokens = v->get<std::int64_t>();
    r.kv_pool_predicted_source = "planner: " + state->source;
  }
  if (const nlohmann::json* v = state ? state->Find("ready_s") : nullptr) {
    r.ready_s = v->get<double>();
    r.ready_source = "ppdeploy wait: " + state->source;
  }
  if (const nlohmann::json* v = state ? state->Find("max_model_len") : nullptr; v && !r.max_model_len) {
    r.max_model_len = v->get<std::int64_t>();
    r.max_model_len_source = state->source;
  }
  if (const nlohmann::json* v = smi ? smi->Find("gpus") : nullptr) {
    r.ranks.clear();
    for (const auto& gpu : *v) {
      RankMemory m;
      m.rank = gpu.at("index").get<int>();
      m.used_bytes = gpu.at("used_mib").get<std::int64_t>() * kMiB;
      m.total_bytes = gpu.at("total_mib").get<std::int64_t>() * kMiB;
      m.headroom_bytes = *m.total_bytes - *m.used_bytes;
      r.ranks.push_back(m);
    }
    r.memory_source = smi->source;
  }
  if (const nlohmann::json* v = metrics ? metrics->Find("step_time_ms") : nullptr) {
    StepTimeHistogram h;
    for (const auto& b : v->at("upper_bounds_ms"))
      h.upper_bounds_ms.push_back(b.is_null() ? std::numeric_limits<double>::infinity() : b.get<double>());
    for (const auto& c : v->at("counts")) h.counts.push_back(c.get<double>());
    h.mean_ms = v->value("mean", 0.0);
    h.count = v->value("count", 0.0);
    h.source = fmt::format("{}: {} over {}", metrics->source, v->value("series", ""), v->value("window", ""));
    r.step_time = h;
  }
  r.facts = ToJson(facts);
}

std::map<int, double> StageAvailableKvGib(const ServerFacts& facts) {
  std::map<int, double> out;
  auto it = facts.find("boot_log");
  if (it == facts.end() || !it->second.unavailable.empty()) return out;
  const nlohmann::json* ranks = it->second.Find("ranks");
  if (ranks == nullptr || !ranks->is_array()) return out;
  for (const auto& r : *ranks) {
    if (!r.is_object() || !r.contains("available_kv_gib") || !r["available_kv_gib"].is_number()) continue;
    const int pp = r.value("pp_rank", 0);
    const double v = r["available_kv_gib"].get<double>();
    auto [pos, inserted] = out.emplace(pp, v);
    if (!inserted) pos->second = std::min(pos->second, v);
  }
  return out;
}

}  // namespace ppdeploy::probes
