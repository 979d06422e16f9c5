#include "launch/planner_facts.h"

#include <cmath>
#include <numeric>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "launch/gates.h"

namespace ppdeploy::launch {
namespace {

// TODO(planner): this whole class is a stand-in until src/{model,memory,layout,vllm} can answer.
// It knows only the seed's model (GLM-5.3 CyberSec W4A16: 78 layers, one MTP layer, DSA with
// index_topk_freq 4 / index_skip_topk_offset 3, checkpoint 390.58 GiB) on 8 x 80 GB sm80 GPUs, and
// returns the seed's measured pools (digest §1, §5, §6, §11) for the layouts it measured.
class SeedStubPlannerFacts final : public PlannerFacts {
 public:
  MemoryFacts Memory(const LaunchProfile& p) override {
    MemoryFacts m;
    const double budget_gib = p.gpu_memory_utilization * 79.25;  // digest §2: per-rank budget
    const double weights_gib = 390.58 / (p.tp_size * p.pp_size);  // digest §2: checkpoint / (TP x PP)
    m.weights_fit = weights_gib <= budget_gib;
    m.weights_reason = fmt::format("weights {:.1f} GiB/GPU (390.58 GiB / TP x PP {}) {} budget {:.2f} GiB "
                                   "({} x 79.25 GiB) [stub planner facts]",
                                   weights_gib, p.tp_size * p.pp_size, m.weights_fit ? "<=" : ">", budget_gib,
                                   p.gpu_memory_utilization);
    m.predicted_kv_tokens = SeedPool(p);
    m.largest_max_model_len = m.predicted_kv_tokens / 64 * 64;  // block size 64 for DSA (vllm-rules §1.9)
    return m;
  }

  IndexShareFacts IndexShare(const LaunchProfile& p) override {
    IndexShareFacts f;
    f.forced_layers_per_rank.assign(static_cast<size_t>(std::max(p.pp_size, 1)), {});
    // The seed's diagnostic switch HF_OVERRIDES='{"index_topk_freq":1}' turns sharing off (digest §7).
    if (!p.hf_overrides.empty()) {
      auto j = nlohmann::json::parse(p.hf_overrides, nullptr, false);
      if (j.is_object() && j.contains("index_topk_freq") && j["index_topk_freq"] == 1) return f;
    }
    f.dsa_with_index_sharing = true;
    std::vector<int> split;
    if (p.pp_size <= 1) return f;
    if (p.pp_layer_partition.empty()) {
      split = DefaultPartition(kLayers, p.pp_size);
    } else {
      auto parsed = ParsePartitionLikeVllm(p.pp_layer_partition);
      if (!parsed || parsed->size() != static_cast<size_t>(p.pp_size)) return f;
      for (auto v : *parsed) {
        if (v < 0) return f;
        split.push_back(static_cast<int>(v));
      }
      if (std::accumulate(split.begin(), split.end(), 0) != kLayers) return f;
    }
    int start = 0;
    for (size_t rank = 0; rank < split.size(); ++rank) {
      f.forced_layers_per_rank[rank] = StubForcedLayers(start, start + split[rank]);
      start += split[rank];
    }
    return f;
  }

  int NumHiddenLayers(const LaunchProfile&) override { return kLayers; }
  int MtpLayers(const LaunchProfile&) override { return 1; }

 private:
  static constexpr int kLayers = 78;

  // TODO(planner): local helper for the stub only; the planner owns the IndexShare rule
  // (vllm-rules §1.3). A layer computes its own top-k when max(i - offset + 1, 0) % freq == 0
  // (freq 4, offset 3 -> 0, 1, 2, 6, ..., 74); a shared layer before the first self-computing
  // layer of its rank reads a buffer never written there (digest §7).
  static std::vector<int> StubForcedLayers(int start, int end) {
    std::vector<int> forced;
    for (int i = start; i < end; ++i) {
      if (std::max(i - 3 + 1, 0) % 4 == 0) break;
      forced.push_back(i);
    }
    return forced;
  }

  // TODO(planner): measured pools of the seed (digest §1, §5, §6, §11); elsewhere a rough x PP scaling.
  static std::int64_t SeedPool(const LaunchProfile& p) {
    const bool bf16 = p.kv_cache_dtype == "bfloat16" || p.kv_cache_dtype == "auto";
    const bool mtp = p.spec_method == "mtp";
    if (p.tp_size == 2 && p.pp_size == 4) return 1'199'872;
    if (p.tp_size == 8 && p.pp_size == 1) return bf16 ? 200'704 : (mtp ? 386'943 : 338'688);
    if (p.tp_size == 4 && p.pp_size == 2) {
      if (bf16) return 458'560;
      if (!mtp) return 791'744;
      const std::string& s = p.pp_layer_partition;
      if (s == "41,37") return 729'280;
      if (s == "40,38") return 647'700;
      if (s == "42,36") return 693'300;
      return 597'760;  // 39,39 = vLLM's default split of 78 layers over 2 stages
    }
    double pool = 386'943.0 * p.pp_size * (bf16 ? 1.0 / 1.71 : 1.0);
    return static_cast<std::int64_t>(std::floor(pool));
  }
};

}  // namespace

std::unique_ptr<PlannerFacts> MakeDefaultPlannerFacts() { return std::make_unique<SeedStubPlannerFacts>(); }

}  // namespace ppdeploy::launch
