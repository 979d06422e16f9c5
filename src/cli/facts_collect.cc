#include "cli/facts_collect.h"

#include <fmt/format.h>

#include <cstdlib>

#include "client/http.h"
#include "core/error.h"
#include "io/files.h"
#include "launch/process.h"
#include "vllm/log_parser.h"

namespace ppdeploy::cli {
namespace {

// The value of setting `key` in a stored request ([{"key","value",...}]), or "".
std::string StoredSetting(const nlohmann::json& request, const std::string& key) {
  if (!request.is_array()) return "";
  for (const auto& s : request)
    if (s.is_object() && s.value("key", "") == key && s.contains("value") && s["value"].is_string())
      return s["value"].get<std::string>();
  return "";
}

std::vector<int> GpuIds(const std::string& text) {
  std::vector<int> ids;
  if (text.empty() || text == "all") return ids;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const auto comma = text.find(',', pos);
    const std::string item = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    char* end = nullptr;
    const long v = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v < 0) return {};  // not plain ids (e.g. UUIDs): no filter
    ids.push_back(static_cast<int>(v));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return ids;
}

}  // namespace

probes::FactGroup CollectBootLogFacts(const ServerTarget& t) {
  if (!t.state)
    return probes::FactGroup::Unavailable(fmt::format(
        "{} was not started by ppdeploy from {} (no run state names it): its boot log is not known", t.url, t.run_dir));
  const std::string& path = t.state->log_path;
  if (!IsRegularFile(path)) return probes::FactGroup::Unavailable(fmt::format("{}: no such boot log", path));
  try {
    const BootLog log = ParseBootLog(ReadFileText(path, kBootLogReadLimitBytes), LogParseOptions{path, 0});
    return probes::BootLogFacts(log, path);
  } catch (const Error& e) {
    return probes::FactGroup::Unavailable(e.what());
  }
}

probes::FactGroup CollectRunStateFacts(const ServerTarget& t) {
  if (!t.state)
    return probes::FactGroup::Unavailable(
        fmt::format("{} was not started by ppdeploy from {}: no ready time, no recorded plan", t.url, t.run_dir));
  const launch::RunState& s = *t.state;
  probes::FactGroup g;
  g.source = launch::StatePath(t.run_dir);
  if (s.ready_time_unix_ms > 0 && s.start_time_unix_ms > 0)
    g.facts["ready_s"] = static_cast<double>(s.ready_time_unix_ms - s.start_time_unix_ms) / 1000.0;
  else
    g.missing["ready_s"] = "`ppdeploy wait` has not seen this server ready";
  const nlohmann::json& r = s.resolved;
  auto copy = [&](const char* from, const char* to) {
    if (r.is_object() && r.contains(from) && !r[from].is_null())
      g.facts[to] = r[from];
    else
      g.missing[to] = fmt::format("the run state has no resolved.{}", from);
  };
  copy("predicted_kv_tokens", "predicted_kv_tokens");
  copy("predicted_num_gpu_blocks", "predicted_num_gpu_blocks");
  copy("max_model_len", "max_model_len");
  copy("layer_partition", "layer_partition");
  copy("vllm", "vllm_profile");
  g.facts["pid"] = s.pid;
  return g;
}

MetricsScrape ScrapeMetrics(const std::string& base_url, const std::atomic<bool>* cancel) {
  MetricsScrape m;
  m.url = client::JoinUrl(base_url, "/metrics");
  const client::HttpResponse r = client::MakeCurlHttpClient("", cancel)->Get(m.url, 30.0);
  if (!r.ok()) {
    m.error = r.error.empty() ? fmt::format("{} answered HTTP {}", m.url, r.status) : m.url + ": " + r.error;
    return m;
  }
  try {
    m.samples = ParsePrometheusText(r.body, m.url);
  } catch (const Error& e) {
    m.error = e.what();
  }
  return m;
}

probes::FactGroup MetricsGroup(const MetricsScrape& scrape) {
  if (!scrape.ok()) return probes::FactGroup::Unavailable(scrape.error);
  return probes::MetricsFacts(scrape.samples, scrape.url);
}

std::string NvidiaSmiBinary() {
  if (const char* env = std::getenv("PPDEPLOY_NVIDIA_SMI"); env != nullptr && *env != '\0') return env;
  return "nvidia-smi";
}

probes::FactGroup CollectNvidiaSmiFacts(const ServerTarget& t) {
  if (!t.local)
    return probes::FactGroup::Unavailable(
        fmt::format("{} is not on this host: nvidia-smi here would describe other GPUs", t.url));
  const std::string bin = NvidiaSmiBinary();
  const std::vector<std::string> argv = {bin, "--query-gpu=index,memory.used,memory.total", "--format=csv"};
  std::string source = "nvidia-smi --query-gpu=index,memory.used,memory.total --format=csv";
  if (bin != "nvidia-smi") source += " (PPDEPLOY_NVIDIA_SMI=" + bin + ")";
  const launch::CommandOutput r = launch::RunCaptured(argv, 20000);
  if (!r.started)
    return probes::FactGroup::Unavailable(
        bin == "nvidia-smi" ? "nvidia-smi is not on this host's PATH (PPDEPLOY_NVIDIA_SMI names another binary)"
                            : r.error);
  if (r.timed_out) return probes::FactGroup::Unavailable(fmt::format("{} did not answer within 20 s", bin));
  if (r.exit_code != 0)
    return probes::FactGroup::Unavailable(
        fmt::format("{} exited with status {}: {}", bin, r.exit_code, r.err.substr(0, 300)));
  try {
    const auto readings = probes::ParseNvidiaSmiMemoryCsv(r.out, bin);
    const std::vector<int> gpus = t.state ? GpuIds(StoredSetting(t.state->request, "gpus")) : std::vector<int>{};
    return probes::NvidiaSmiFacts(readings, gpus, source);
  } catch (const Error& e) {
    return probes::FactGroup::Unavailable(e.what());
  }
}

}  // namespace ppdeploy::cli
