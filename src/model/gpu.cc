#include "model/gpu.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>

#include "core/embedded_data.h"
#include "core/error.h"
#include "core/escape.h"
#include "core/json_fields.h"
#include "core/units.h"

namespace ppdeploy {

std::int64_t GpuSpec::total_bytes() const { return GiBToBytes(total_gib); }

bool GpuSpec::large_batch_defaults() const { return total_gib >= 70.0 && arch != "sm80"; }

const std::vector<GpuSpec>& GpuSpecs() {
  static const std::vector<GpuSpec> specs = [] {
    const std::string source = "data/gpus.json";
    auto text = FindEmbedded("gpus.json");
    if (!text) Fail("{}: not embedded in this binary", source);
    auto j = ParseJsonText(*text, source);
    std::vector<GpuSpec> out;
    int idx = 0;
    for (const auto& g : j.at("gpus")) {
      JsonContext c{source, fmt::format("gpus[{}]", idx++)};
      GpuSpec s;
      s.name = ReqString(g, "name", c);
      if (g.contains("aliases"))
        for (const auto& a : g["aliases"]) s.aliases.push_back(a.get<std::string>());
      s.total_gib = ReqNumber(g, "total_gib", c, 1.0);
      s.nvidia_smi_mib = ReqInt(g, "nvidia_smi_mib", c);
      s.arch = ReqString(g, "arch", c);
      s.vendor = OptString(g, "vendor", c).value_or("nvidia");
      if (s.vendor != "nvidia" && s.vendor != "amd")
        Fail("{}: expected \"nvidia\" or \"amd\", got {}", c.Where("vendor"), QuoteForMessage(s.vendor));
      s.nvswitch = OptBool(g, "nvswitch", c).value_or(false);
      s.source = OptString(g, "source", c).value_or("");
      auto est = OptBool(g, "total_estimated", c);
      if (!est) Fail("{}: required boolean is missing", c.Where("total_estimated"));
      s.total_estimated = *est;
      out.push_back(std::move(s));
    }
    return out;
  }();
  return specs;
}

namespace {

// vLLM on ROCm sizes the KV cache by its own backends; none of that is modelled (docs/vllm-rules.md §3.2).
const GpuSpec& Plannable(const GpuSpec& g, const std::string& asked) {
  if (g.vendor == "nvidia") return g;
  Fail(
      "GPU {} ({}, {} {}): not planned: vLLM on ROCm uses rules ppdeploy does not model (its own KV-cache layouts, "
      "e.g. the fp8 MLA cache is not CUDA's fp8_ds_mla; its own attention backends and block sizes; another DSA "
      "indexer reservation; memory constants fitted on NVIDIA GPUs only), and planning it with CUDA's rules would "
      "give wrong figures",
      QuoteForMessage(asked), g.name, g.vendor == "amd" ? "AMD" : g.vendor, g.arch);
}

}  // namespace

const GpuSpec& FindGpu(const std::string& name) {
  auto lower = [](std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
    return s;
  };
  std::string wanted = lower(name);
  std::vector<std::string> names;
  for (const auto& g : GpuSpecs()) {
    bool match = g.name == wanted;
    for (const auto& a : g.aliases) match = match || a == wanted;
    if (match) return Plannable(g, name);
    if (g.vendor == "nvidia") names.push_back(g.name);
  }
  Fail("unknown GPU {} (known: {}); give --gpu-total-gib for another GPU", QuoteForMessage(name),
       fmt::join(names, ", "));
}

}  // namespace ppdeploy
