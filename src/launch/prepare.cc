#include "launch/prepare.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "core/error.h"
#include "layout/optimizer.h"
#include "report/plan_render.h"

namespace ppdeploy::launch {

std::vector<PpAlternative> PlanPpAlternatives(const ResolvedDeployment& d) {
  std::vector<PpAlternative> out;
  const int gpus = d.request.tp_size * d.request.pp_size * d.request.dp_size;
  for (int pp : {2, 1}) {
    if (gpus % pp != 0) continue;
    const int tp = gpus / pp;
    if (d.planner.model.num_attention_heads % tp != 0 || tp > d.request.GpusUsedPerNode()) continue;
    LayoutSpec spec_layout{tp, pp, 1, {}};
    // The alternative runs with the speculation its own layout allows (auto decides per layout).
    SpeculationDecision spec;
    const Deployment dep = DeploymentFor(d, spec_layout, &spec);
    if (spec.check.Failed()) continue;
    try {
      if (pp == 2 && dep.vllm.pool_combine == PoolCombine::kPerRankMin)
        spec_layout.layer_partition = OptimizeSplit(dep, tp, pp, OptimizeOptions{}).best.partition;
      LayoutPlan plan = PlanLayout(dep, spec_layout);
      if (!plan.feasible && !plan.Problem(PlanProblem::Kind::kMaxModelLenTooLarge)) continue;
      std::string settings = fmt::format("TP_SIZE={} PP_SIZE={}", tp, pp);
      if (pp > 1) settings += " PP_LAYER_PARTITION=" + FormatPartition(plan.partition);
      if (plan.Problem(PlanProblem::Kind::kMaxModelLenTooLarge))
        settings += fmt::format(" MAX_MODEL_LEN={}", plan.limit.largest);
      if (spec.method != d.spec_method) settings += " SPEC_METHOD=" + spec.method;
      out.push_back({settings, plan.pool.kv_tokens, plan.limit.largest, LimitText(plan)});
    } catch (const Error&) {
      continue;  // an impossible layout is no alternative
    }
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.kv_tokens > b.kv_tokens; });
  if (out.size() > 3) out.resize(3);
  return out;
}

PreparedLaunch PrepareLaunch(ResolvedDeployment deployment, const std::vector<NodeProbe>* probes) {
  PreparedLaunch out;
  std::optional<GateResult> nodes;
  if (probes) {
    nodes = CheckNodes(deployment, *probes);  // against the settings, before the nodes' GPUs replace them
    ApplyNodeGpus(deployment, *probes);
  }
  out.deployment = std::move(deployment);
  const ResolvedDeployment& d = out.deployment;
  try {
    out.plan = PlanLayout(d.planner, d.layout);
  } catch (const Error& e) {
    out.plan_error = e.what();  // e.g. a version without DSA support for a DSA model
  }
  IndexShareFacts index = out.plan_error.empty() ? IndexShareFactsOf(d, out.plan) : IndexShareFacts{};
  std::vector<PpAlternative> alternatives;
  if (index.dsa_with_index_sharing && d.request.pp_size > 2 && !d.request.allow_unverified_pp)
    alternatives = PlanPpAlternatives(d);
  out.gates = RunGates(d, out.plan_error.empty() ? &out.plan : nullptr, out.plan_error, index, alternatives,
                       nodes ? &*nodes : nullptr);
  out.rendered = RenderLaunch(d, out.gates);
  return out;
}

}  // namespace ppdeploy::launch
