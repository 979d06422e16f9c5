#include "launch/planner_facts.h"

#include <cmath>
#include <numeric>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/embedded_data.h"
#include "core/error.h"
#include "core/json_fields.h"
#include "io/model_input.h"
#include "launch/gates.h"
#include "layout/deployment_file.h"
#include "layout/planner.h"
#include <filesystem>

#include "model/indexer_check.h"
#include "model/presets.h"
#include "vllm/calibrate.h"

namespace ppdeploy::launch {
namespace {

// A stand-in kept for tests (MakeSeedStubPlannerFacts).
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

  // Local helper for the stub only; the planner owns the IndexShare rule
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

  // Measured pools of the seed (digest §1, §5, §6, §11); elsewhere a rough x PP scaling.
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

// The planner's answers (src/layout/planner.h) for a launch profile.
class RealPlannerFacts final : public PlannerFacts {
 public:
  MemoryFacts Memory(const LaunchProfile& p) override {
    const Deployment& d = Build(p);
    LayoutPlan l = PlanLayout(d, LayoutSpec{p.tp_size, p.pp_size, 1, Partition(p, d)});
    MemoryFacts m;
    for (const auto& problem : l.problems)
      if (problem.rfind("weights", 0) == 0 || problem.rfind("no memory left", 0) == 0) {
        m.weights_fit = false;
        m.weights_reason = problem;
        break;
      }
    if (m.weights_fit) {
      std::int64_t w = 0;
      for (const auto& r : l.ranks) w = std::max(w, r.weights.bytes);
      m.weights_reason = fmt::format("weights {:.2f} GiB per GPU ({}) fit the {:.2f} GiB budget", w / 1073741824.0,
                                     d.weights.from_checkpoint ? "checkpoint headers" : "estimated",
                                     l.ranks.front().requested_bytes / 1073741824.0);
    }
    m.predicted_kv_tokens = l.pool.kv_tokens;
    m.largest_max_model_len = l.pool.largest_max_model_len;
    return m;
  }

  IndexShareFacts IndexShare(const LaunchProfile& p) override {
    IndexShareFacts f;
    f.forced_layers_per_rank.assign(static_cast<size_t>(std::max(p.pp_size, 1)), {});
    const Deployment& d = Build(p);
    std::vector<int> split = Partition(p, d);
    if (static_cast<int>(split.size()) != p.pp_size) return f;
    IndexShareReport r = AnalyzeIndexShare(EffectiveModel(d), split, d.vllm.index_share, false);
    f.dsa_with_index_sharing = r.applies;
    for (const auto& rank : r.ranks) f.forced_layers_per_rank[rank.pp_rank] = rank.forced;
    if (!r.forced.empty()) {
      f.pattern = IndexTopkPattern(EffectiveModel(d), r.forced);
      std::error_code ec;
      if (!p.model_path.empty() && std::filesystem::is_directory(p.model_path, ec)) {
        try {
          ResolvedModel ckpt = ResolveModel(p.model_path);
          if (!ckpt.tensors.empty()) {
            f.checkpoint_checked = true;
            f.checkpoint_problems = CheckForcedIndexerTensors(ckpt.config, ckpt.tensors, r.forced);
          }
        } catch (const Error& e) {
          f.checkpoint_checked = true;
          f.checkpoint_problems.push_back(e.what());
        }
      }
    }
    return f;
  }

  int NumHiddenLayers(const LaunchProfile& p) override { return Build(p).model.num_hidden_layers; }
  int MtpLayers(const LaunchProfile& p) override { return Build(p).model.num_nextn_predict_layers; }

 private:
  // The deployment the profile describes; the seed's calibration applies to the seed's model and GPU.
  const Deployment& Build(const LaunchProfile& p) {
    std::string key = p.model + "|" + p.gpu + "|" + p.vllm_version + "|" + p.kv_cache_dtype + "|" + p.spec_method + "|" +
                      std::to_string(p.num_spec_tokens) + "|" + std::to_string(p.max_model_len) + "|" +
                      std::to_string(p.gpu_memory_utilization) + "|" + std::to_string(p.kv_cache_memory_bytes) + "|" +
                      p.hf_overrides + "|" + std::to_string(p.gpus_per_node);
    if (cached_ && key == key_) return *cached_;
    Deployment d;
    ResolvedModel rm = ResolveModel(p.model);
    d.model_name = rm.name;
    d.model = rm.config;
    d.weights = rm.weights;
    d.gpu = FindGpu(p.gpu);
    d.gpus_per_node = p.gpus_per_node;
    d.nodes = std::max<int>(1, static_cast<int>(p.nodes.size()));
    bool known = false;
    for (const auto& v : VllmProfiles()) known |= v.name == p.vllm_version;
    if (known) d.vllm = FindVllmProfile(p.vllm_version);
    else if (auto near = ProfileForVersion(p.vllm_version)) d.vllm = FindVllmProfile(*near);
    else d.vllm = DefaultVllmProfile();
    d.gpu_memory_utilization = p.gpu_memory_utilization;
    d.kv_cache_dtype = ParseKvCacheDtype(p.kv_cache_dtype.empty() ? "auto" : p.kv_cache_dtype);
    d.num_speculative_tokens = p.spec_method == "mtp" ? p.num_spec_tokens : 0;
    d.max_model_len = p.max_model_len;
    if (p.kv_cache_memory_bytes > 0) d.kv_cache_memory_bytes = p.kv_cache_memory_bytes;
    if (!p.hf_overrides.empty()) {
      auto j = nlohmann::json::parse(p.hf_overrides, nullptr, false);
      if (j.is_object()) {
        if (j.contains("index_topk_freq") && j["index_topk_freq"] == 1) d.index_fix = IndexFix::kAllFull;
        if (j.contains("index_topk_pattern") && j["index_topk_pattern"].is_string())
          d.model.index_topk_pattern = j["index_topk_pattern"].get<std::string>();
      }
    }
    if (auto text = FindEmbedded("deployments/default.json")) {
      DeploymentFile f = ParseDeploymentFile(ParseJsonText(*text, "data/deployments/default.json"), "default.json");
      if (!f.calibration.empty() && FindModelPreset(p.model) == FindModelPreset(f.model) && &FindGpu(p.gpu) == &FindGpu(f.gpu))
        d.calibration = LoadCalibration(f.calibration);
    }
    cached_ = std::make_unique<Deployment>(std::move(d));
    key_ = key;
    return *cached_;
  }

  std::vector<int> Partition(const LaunchProfile& p, const Deployment& d) {
    if (p.pp_size <= 1) return {d.model.num_hidden_layers};
    if (!p.pp_layer_partition.empty()) {
      try {
        auto parts = ParsePartition(p.pp_layer_partition, p.pp_size, d.model.num_hidden_layers);
        ValidatePartitionForPlanning(parts);
        return parts;
      } catch (const Error&) {
        // The split gate reports it; plan vLLM's default split meanwhile.
      }
    }
    return ::ppdeploy::DefaultPartition(d.model.num_hidden_layers, p.pp_size);
  }

  std::unique_ptr<Deployment> cached_;
  std::string key_;
};

std::unique_ptr<PlannerFacts> MakeDefaultPlannerFacts() { return std::make_unique<RealPlannerFacts>(); }

/// The seed-only stub, kept for tests that need the seed's measured pools.
std::unique_ptr<PlannerFacts> MakeSeedStubPlannerFacts() { return std::make_unique<SeedStubPlannerFacts>(); }

}  // namespace ppdeploy::launch
