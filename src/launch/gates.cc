#include "launch/gates.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/units.h"
#include "layout/indexer_check.h"
#include "report/plan_render.h"

namespace ppdeploy::launch {

GateResult CheckDsaPpGate(int pp_size, bool dsa_with_index_sharing, bool allow_unverified_pp,
                          const std::vector<PpAlternative>& alternatives) {
  GateResult r{"dsa-pp", GateStatus::kPass, {}};
  if (!dsa_with_index_sharing) {
    r.messages.push_back("not a DSA model with index sharing: no PP limit from the index-sharing defect");
    return r;
  }
  if (pp_size <= 2) {
    r.messages.push_back(fmt::format("PP_SIZE={} <= 2 on a DSA model with index sharing", pp_size));
    return r;
  }
  const std::string figures =
      "the seed measured PP=4 degenerating 20% of answers with speculation off and 45% with MTP k=3 "
      "(correct answer, then a loop without EOS up to the token cap); PP=2 with Fix B: 0/200";
  if (allow_unverified_pp) {
    r.status = GateStatus::kWarn;
    r.messages.push_back(
        fmt::format("WARNING: PP_SIZE={} > 2 on a DSA model with index sharing is UNVERIFIED: {}.", pp_size, figures));
    r.messages.push_back(
        "WARNING: ALLOW_UNVERIFIED_PP=1 lets it through for research only; do not serve users from it. After "
        "`ppdeploy start` and `ppdeploy wait`, run `ppdeploy degen` (exit 2 on any degeneration).");
    return r;
  }
  r.status = GateStatus::kFail;
  r.messages.push_back(fmt::format(
      "PP_SIZE={} > 2 on a DSA model with index sharing is refused: {}; context beyond what PP <= 2 holds is not "
      "usable today.",
      pp_size, figures));
  if (alternatives.empty()) {
    r.messages.push_back("No layout with PP <= 2 fits these GPUs (the planner found none).");
  } else {
    r.messages.push_back("Alternatives (planned on the same GPUs):");
    for (size_t i = 0; i < alternatives.size(); ++i) {
      const auto& a = alternatives[i];
      r.messages.push_back(fmt::format("  {}. {}: KV pool {} tokens, max_model_len up to {}", i + 1, a.settings,
                                       WithThousands(a.kv_tokens),
                                       a.limit_text.empty() ? WithThousands(a.largest_max_model_len) : a.limit_text));
    }
  }
  r.messages.push_back("Research only: ALLOW_UNVERIFIED_PP=1 lets it pass with a warning; then run `ppdeploy degen`.");
  return r;
}

IndexShareFacts IndexShareFactsOf(const ResolvedDeployment& d, const LayoutPlan& plan) {
  IndexShareFacts f;
  f.forced_layers_per_rank.assign(static_cast<size_t>(std::max(1, d.layout.pipeline_parallel_size)), {});
  if (!d.PartitionValid()) return f;
  // The split as the version would run it, fix or not: which layers read an index never written.
  IndexShareReport r = AnalyzeIndexShare(EffectiveModel(d.planner), plan.partition, d.planner.vllm.index_share, false);
  f.dsa_with_index_sharing = r.applies;
  for (const auto& rank : r.ranks)
    if (rank.pp_rank < static_cast<int>(f.forced_layers_per_rank.size()))
      f.forced_layers_per_rank[static_cast<size_t>(rank.pp_rank)] = rank.forced;
  if (!r.forced.empty()) {
    f.pattern = IndexTopkPattern(EffectiveModel(d.planner), r.forced);
    if (!d.checkpoint_tensors.empty()) {
      f.checkpoint_checked = true;
      f.checkpoint_problems = CheckForcedIndexerTensors(d.planner.model, d.checkpoint_tensors, r.forced);
    }
  }
  return f;
}

GateResult CheckIndexShareSafety(const IndexShareFacts& facts, bool fix_b, std::string_view vllm_version) {
  GateResult r{"index-share", GateStatus::kPass, {}};
  if (!facts.dsa_with_index_sharing) {
    r.messages.push_back("not a DSA model with index sharing");
    return r;
  }
  std::vector<std::string> forced;
  for (size_t rank = 0; rank < facts.forced_layers_per_rank.size(); ++rank) {
    const auto& layers = facts.forced_layers_per_rank[rank];
    if (!layers.empty()) forced.push_back(fmt::format("rank {}: [{}]", rank, fmt::join(layers, ", ")));
  }
  if (forced.empty()) {
    r.messages.push_back(
        "every rank starts on a self-computing layer: no shared top-k buffer is read before it is "
        "written");
    return r;
  }
  if (fix_b) {
    r.messages.push_back(fmt::format("Fix B in vLLM {} forces {} to compute their own top-k indices", vllm_version,
                                     fmt::join(forced, "; ")));
    return r;
  }
  r.status = GateStatus::kFail;
  r.messages.push_back(fmt::format(
      "split leaves {} reading a shared top-k buffer never written on that rank (seed: 19-21% degenerate answers at "
      "PP=2 without Fix B); vLLM {} has no Fix B",
      fmt::join(forced, "; "), vllm_version));
  r.messages.push_back(
      "use a split whose later stages start on a self-computing layer (e.g. 42,36 for the seed "
      "model), PP_SIZE=1, or a vLLM with Fix B (0.30-custom) or index_topk_pattern (0.26 and later)");
  return r;
}

GateResult CheckIndexSharePatternFix(const IndexShareFacts& facts, const std::string& hf_overrides,
                                     const std::string& model_path, bool allow_unchecked_indexer,
                                     std::string* merged_hf_overrides) {
  GateResult r{"index-share", GateStatus::kPass, {}};
  std::vector<std::string> forced;
  for (size_t rank = 0; rank < facts.forced_layers_per_rank.size(); ++rank)
    if (!facts.forced_layers_per_rank[rank].empty())
      forced.push_back(fmt::format("rank {}: [{}]", rank, fmt::join(facts.forced_layers_per_rank[rank], ", ")));
  nlohmann::json overrides = nlohmann::json::object();
  if (!hf_overrides.empty()) overrides = nlohmann::json::parse(hf_overrides, nullptr, false);
  if (!overrides.is_object()) overrides = nlohmann::json::object();
  if (overrides.contains("index_topk_pattern") && overrides["index_topk_pattern"] != facts.pattern) {
    r.status = GateStatus::kFail;
    r.messages.push_back(
        "HF_OVERRIDES already sets index_topk_pattern to another value; refusing to replace it "
        "(the split needs " +
        facts.pattern + ")");
    return r;
  }
  overrides["index_topk_pattern"] = facts.pattern;
  *merged_hf_overrides = overrides.dump();
  r.messages.push_back(
      fmt::format("fix B as an override: --hf-overrides index_topk_pattern makes {} compute their own "
                  "top-k (merged with HF_OVERRIDES)",
                  fmt::join(forced, "; ")));
  if (facts.checkpoint_checked && !facts.checkpoint_problems.empty()) {
    r.status = GateStatus::kFail;
    for (const auto& p : facts.checkpoint_problems) r.messages.push_back("checkpoint: " + p);
    r.messages.push_back(
        "a forced layer without indexer weights would load uninitialised parameters and answer "
        "silently wrong; use a split whose later stages start on a self-computing layer (42,36 for "
        "the seed model)");
    return r;
  }
  if (!facts.checkpoint_checked) {
    if (allow_unchecked_indexer) {
      r.status = GateStatus::kWarn;
      r.messages.push_back(fmt::format(
          "WARNING: MODEL_PATH {} is not a local checkpoint directory, so the forced layers' indexer tensors were NOT "
          "checked (ALLOW_UNCHECKED_INDEXER=1). A missing tensor loads uninitialised weights: run `ppdeploy degen` "
          "after start.",
          model_path));
    } else {
      r.status = GateStatus::kFail;
      r.messages.push_back(fmt::format(
          "cannot check MODEL_PATH {} for the forced layers' indexer tensors (not a local checkpoint directory); "
          "run where the checkpoint is, or set ALLOW_UNCHECKED_INDEXER=1 to waive the check",
          model_path));
    }
    return r;
  }
  r.messages.push_back("checkpoint holds indexer tensors for every forced layer");
  return r;
}

GateResult CheckVersionFlags(const ResolvedDeployment& d) {
  GateResult r{"version-flags", GateStatus::kPass, {}};
  const VllmProfile& v = d.planner.vllm;
  const DeploymentRequest& q = d.request;
  if (std::find(v.kv_cache_dtypes.begin(), v.kv_cache_dtypes.end(), q.kv_cache_dtype) == v.kv_cache_dtypes.end()) {
    r.status = GateStatus::kFail;
    r.messages.push_back(fmt::format("KV_CACHE_DTYPE={}: vLLM {} accepts {}", q.kv_cache_dtype, v.name,
                                     fmt::join(v.kv_cache_dtypes, ", ")));
  }
  if (q.kv_cache_memory_bytes > 0 && !v.kv_cache_memory_bytes) {
    r.status = GateStatus::kFail;
    r.messages.push_back(
        fmt::format("KV_CACHE_MEMORY_BYTES: --kv-cache-memory-bytes does not exist in vLLM {} (since ~0.11)", v.name));
  }
  // A passed `vllm serve` flag whose settings row names the release lines it exists in, or the
  // engine it needs (deploy/settings_table.cc).
  const std::string line = !d.version.line.empty() ? d.version.line : !v.lines.empty() ? v.lines.front() : v.custom_of;
  for (const auto& spec : SettingSpecs()) {
    const ServeArg& serve = spec.serve;
    if (serve.flag.empty() || (serve.first_line.empty() && serve.last_line.empty() && !serve.needs_v0)) continue;
    if (serve.when != ServeWhen::kAlways && IsVllmDefault(q.Setting(spec.key))) continue;  // not passed
    if (auto problem = ServeFlagVersionProblem(spec, line, v.name, d.planner.engine == Engine::kV0)) {
      r.status = GateStatus::kFail;
      r.messages.push_back(*problem);
    }
  }
  if (r.messages.empty()) r.messages.push_back(fmt::format("flags supported by vLLM {}", v.name));
  return r;
}

GateResult CheckGpuCount(const ResolvedDeployment& d, const LayoutPlan& plan) {
  GateResult r{"gpus", GateStatus::kPass, {}};
  const DeploymentRequest& q = d.request;
  const int world = q.tp_size * q.pp_size * q.dp_size;
  if (const PlanProblem* p = plan.Problem(PlanProblem::Kind::kGpuCount)) {
    r.status = GateStatus::kFail;
    r.messages.push_back(
        fmt::format("{} (GPUS={}, GPUS_PER_NODE={}, NODES={})", p->message, q.gpus, q.gpus_per_node,
                    q.nodes.empty() ? std::to_string(q.num_nodes) : fmt::format("{}", fmt::join(q.nodes, ","))));
    return r;
  }
  if (auto crossing = CrossNodeTpGroups(q.tp_size, q.pp_size, q.dp_size, q.GpusUsedPerNode()); !crossing.empty()) {
    const std::string what =
        fmt::format("TP_SIZE={} groups span nodes of {} GPUs ({}): the TP all-reduce would cross the network",
                    q.tp_size, q.GpusUsedPerNode(), fmt::join(crossing, "; "));
    if (!q.allow_cross_node_tp) {
      r.status = GateStatus::kFail;
      r.messages.push_back(what + fmt::format("; put TP inside a node (a TP_SIZE dividing {}) and PP across nodes, or "
                                              "set ALLOW_CROSS_NODE_TP=1 to run it anyway",
                                              q.GpusUsedPerNode()));
      return r;
    }
    r.status = GateStatus::kWarn;
    r.messages.push_back("WARNING: " + what +
                         "; ALLOW_CROSS_NODE_TP=1 lets it through: expect far slower decoding than TP inside a node");
  }
  if (q.num_nodes > 1) {
    if (q.nodes.empty()) {
      r.status = GateStatus::kWarn;
      r.messages.push_back(
          fmt::format("{} GPUs over {} nodes of {}: set NODES=head,worker,... (host names); the preview "
                      "uses placeholders",
                      world, q.num_nodes, q.GpusUsedPerNode()));
    } else {
      r.messages.push_back(fmt::format("TP x PP x DP = {} over {} nodes ({}) of {} GPUs", world, q.num_nodes,
                                       fmt::join(q.nodes, ", "), q.GpusUsedPerNode()));
    }
  } else {
    r.messages.push_back(fmt::format("TP x PP x DP = {} on GPUs {}", world, q.gpus));
  }
  for (const auto& w : plan.warnings)
    if (w.find("stay idle") != std::string::npos) {
      r.status = std::max(r.status, GateStatus::kWarn);
      r.messages.push_back(w);
    }
  return r;
}

std::vector<std::string> CrossNodeTpGroups(int tp, int pp, int dp, int per_node) {
  std::vector<std::string> out;
  int more = 0;
  per_node = std::max(1, per_node);
  for (int r = 0; r < std::max(1, dp); ++r)
    for (int s = 0; s < std::max(1, pp); ++s) {
      const int first = (r * pp + s) * tp, last = first + tp - 1;
      if (first / per_node == last / per_node) continue;
      if (out.size() >= 4) {
        ++more;
        continue;
      }
      out.push_back(fmt::format("{}PP stage {} on ranks {}-{} spans nodes {}-{}",
                                dp > 1 ? fmt::format("DP {} ", r) : "", s, first, last, first / per_node,
                                last / per_node));
    }
  if (more > 0) out.push_back(fmt::format("and {} more", more));
  return out;
}

GateResult CheckMultiNode(const ResolvedDeployment& d) {
  GateResult r{"multi-node", GateStatus::kPass, {}};
  const DeploymentRequest& q = d.request;
  if (q.num_nodes <= 1) {
    r.messages.push_back("one node: nothing runs through the remote shell");
    return r;
  }
  if (d.executor == "native" && !d.planner.vllm.native_multinode) {
    r.status = GateStatus::kFail;
    r.messages.push_back(fmt::format(
        "executor native ({}): vLLM {} has no native multi-node mode (--nnodes/--node-rank/--master-addr/"
        "--headless; native_multinode in data/vllm/versions.json); use PPDEPLOY_EXECUTOR=ray or a version that has "
        "it",
        q.Setting("executor").origin, d.planner.vllm.name));
  }
  std::vector<std::string> unset;
  if (q.nccl_socket_ifname.empty()) unset.push_back("NCCL_SOCKET_IFNAME");
  if (q.gloo_socket_ifname.empty()) unset.push_back("GLOO_SOCKET_IFNAME");
  if (!unset.empty()) {
    r.status = GateStatus::kFail;
    r.messages.push_back(
        fmt::format("{} not set: name the interface the nodes reach each other on (e.g. NCCL_SOCKET_IFNAME=eth0 "
                    "GLOO_SOCKET_IFNAME=eth0, or ib0); left to themselves NCCL and Gloo may pick docker0 or lo and "
                    "hang at start-up",
                    fmt::join(unset, " and ")));
  }
  if (r.Failed()) return r;
  r.messages.push_back(fmt::format(
      "{} executor over {} nodes ({}); NCCL_SOCKET_IFNAME={} GLOO_SOCKET_IFNAME={} on every node; remote shell: {}",
      d.executor, q.num_nodes, q.nodes.empty() ? "placeholders" : fmt::format("{}", fmt::join(q.nodes, ", ")),
      q.nccl_socket_ifname, q.gloo_socket_ifname, fmt::join(q.remote_shell, " ")));
  return r;
}

GateResult CheckMemory(const LayoutPlan& plan) {
  GateResult r{"memory", GateStatus::kPass, {}};
  // Every problem the plan reports refuses the launch (the gpu count is the gpus gate's), so `cmd` never passes
  // what `plan` calls a problem.
  for (const auto& p : plan.problems) {
    if (p.kind == PlanProblem::Kind::kGpuCount) continue;
    r.status = GateStatus::kFail;
    r.messages.push_back(p.kind == PlanProblem::Kind::kMaxModelLenTooLarge
                             ? p.message + " The largest max_model_len that fits: " + LimitText(plan)
                             : p.message);
  }
  if (r.Failed()) return r;
  // The limit of the plan (LayoutPlan::limit) decides at the point estimate; above the low end of the range it
  // passes with a warning.
  const MaxModelLenLimit& k = plan.limit;
  if (!k.fits_low_end) {
    r.status = GateStatus::kWarn;
    r.messages.push_back(fmt::format(
        "WARNING: MAX_MODEL_LEN={} fits the point estimate but not the low end of the range: the largest "
        "max_model_len that fits is {}; if the estimated terms come out at their pessimistic end vLLM refuses it at "
        "start-up (calibrate on a boot of this image, `ppdeploy calibrate`, to narrow the range)",
        WithThousands(plan.max_model_len), LimitText(plan)));
  }
  std::int64_t w = 0;
  for (const auto& rank : plan.ranks) w = std::max(w, rank.weights.bytes);
  const double conc = plan.max_model_len > 0 ? static_cast<double>(plan.pool.kv_tokens) / plan.max_model_len : 0.0;
  r.messages.push_back(fmt::format(
      "weights {:.2f} GiB per GPU ({}) fit the {:.2f} GiB budget; MAX_MODEL_LEN={} <= the largest max_model_len "
      "that fits, {}; predicted KV pool {} tokens ({:.2f}x concurrency)",
      ToGiB(w), plan.ranks.empty() ? "" : ToString(plan.ranks.front().weights.provenance),
      plan.ranks.empty() ? 0.0 : ToGiB(plan.ranks.front().requested_bytes), WithThousands(plan.max_model_len),
      LimitText(plan), PoolWithRangeText(plan), conc));
  return r;
}

bool GateReport::Refused() const {
  return std::any_of(results.begin(), results.end(), [](const GateResult& r) { return r.Failed(); });
}

GateReport RunGates(const ResolvedDeployment& d, const LayoutPlan* plan, const std::string& plan_error,
                    const IndexShareFacts& index, const std::vector<PpAlternative>& alternatives,
                    const GateResult* nodes) {
  GateReport report;
  const DeploymentRequest& q = d.request;
  report.hf_overrides = q.hf_overrides;
  report.results.push_back(
      CheckDsaPpGate(q.pp_size, index.dsa_with_index_sharing, q.allow_unverified_pp, alternatives));
  report.results.push_back(d.partition_check);
  const VllmProfile& v = d.planner.vllm;
  if (d.PartitionValid()) {
    if (v.fix_b == FixBSource::kPattern && index.dsa_with_index_sharing && !index.pattern.empty())
      report.results.push_back(CheckIndexSharePatternFix(index, q.hf_overrides, q.model_path, q.allow_unchecked_indexer,
                                                         &report.hf_overrides));
    else
      report.results.push_back(CheckIndexShareSafety(index, v.fix_b == FixBSource::kBuiltin, v.name));
  } else {
    report.results.push_back({"index-share", GateStatus::kPass, {"skipped: the layer split is invalid"}});
  }
  report.results.push_back(d.v2_runner_check);
  report.results.push_back(d.speculation_check);
  report.results.push_back(d.all_reduce_check);
  report.results.push_back(CheckVersionFlags(d));
  if (plan) report.results.push_back(CheckGpuCount(d, *plan));
  if (q.num_nodes > 1) report.results.push_back(CheckMultiNode(d));
  if (nodes) report.results.push_back(*nodes);
  if (plan) {
    if (d.PartitionValid())
      report.results.push_back(CheckMemory(*plan));
    else
      report.results.push_back({"memory", GateStatus::kPass, {"skipped: the layer split is invalid"}});
  } else {
    report.results.push_back({"memory", GateStatus::kFail, {"the planner cannot plan this deployment: " + plan_error}});
  }
  return report;
}

}  // namespace ppdeploy::launch
