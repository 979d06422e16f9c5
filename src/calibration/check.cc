#include "calibration/check.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "core/units.h"

namespace ppdeploy {

CalibrationCheck CheckCalibration(const LogCalibration& c, const Deployment& d) {
  CalibrationCheck k;
  // The calibration's own boot (layout/planner.h CalibrationBootDeployment, as the fit models it) with the
  // block size and DCP the log showed: planned with estimates, then with the calibration.
  Deployment est = CalibrationBootDeployment(d, c.calibration);
  if (d.block_size == 0) est.block_size = c.block_size;
  est.decode_context_parallel_size = c.decode_context_parallel_size;
  Deployment cd = est;
  cd.calibration = c.calibration;
  LayoutSpec spec = c.layout;
  spec.layer_partition = c.calibration.layer_partition;
  LayoutPlan e = PlanLayout(est, spec);
  k.estimated_kv_tokens = e.pool.kv_tokens;
  for (const auto& r : e.ranks) k.planned_weights_bytes.push_back(r.weights.bytes);
  k.logged_kv_tokens = c.logged_kv_tokens;
  k.logged_blocks = c.logged_blocks;
  if (c.weights_only) {  // no available-KV figure: nothing to plan with
    for (const auto& r : e.ranks) k.bytes_per_token.push_back(r.bytes_per_token);
    return k;
  }
  // Stages that logged nothing (vLLM stopped at another stage's refusal) take the planner's estimate, so that
  // the refusal's stage is checked on its own figures.
  for (int r : c.missing_ranks) {
    CalibrationRank cr;
    cr.pp_rank = r;
    if (r < static_cast<int>(e.ranks.size())) cr.available_kv_gib = ToGiB(e.ranks[r].available_kv.bytes);
    cd.calibration->ranks.push_back(cr);
  }
  std::sort(cd.calibration->ranks.begin(), cd.calibration->ranks.end(),
            [](const auto& a, const auto& b) { return a.pp_rank < b.pp_rank; });
  LayoutPlan p = PlanLayout(cd, spec);
  k.predicted_kv_tokens = p.pool.kv_tokens;
  k.predicted_blocks = p.pool.num_gpu_blocks;
  std::int64_t lo = INT64_MAX, hi = INT64_MAX;
  for (size_t r = 0; r < p.ranks.size(); ++r) {
    const auto& cr = c.ranks[r];
    std::int64_t page = p.ranks[r].page_bytes;
    k.bytes_per_token.push_back(p.ranks[r].bytes_per_token);
    if (std::find(c.missing_ranks.begin(), c.missing_ranks.end(), static_cast<int>(r)) != c.missing_ranks.end())
      continue;
    lo = std::min(lo, std::max<std::int64_t>(0, GiBToBytes(cr.available_kv_gib - cr.uncertainty_gib)) / page);
    hi = std::min(hi, GiBToBytes(cr.available_kv_gib + cr.uncertainty_gib) / page);
  }
  k.blocks_lo = lo == INT64_MAX ? 0 : lo;
  k.blocks_hi = hi == INT64_MAX ? 0 : hi;
  // Issue 23 item 7: a logged pool inside the interval is not enough; the prediction must land there too.
  k.predicted_within = lo != INT64_MAX && k.predicted_blocks >= lo && k.predicted_blocks <= hi;
  if (c.logged_blocks) k.logged_within = *c.logged_blocks + c.logged_blocks_span - 1 >= lo && *c.logged_blocks <= hi;
  k.within_rounding = k.logged_within && k.predicted_within;
  if (c.refusal && c.refusal_pp_rank >= 0 && c.refusal_pp_rank < static_cast<int>(p.ranks.size())) {
    const int r = c.refusal_pp_rank;
    k.refusal_needed_bytes = p.ranks[r].kv_needed_bytes;
    // vLLM's estimate of the longest max_model_len, over the rounding of the stated available memory.
    auto longest = [&](double delta_gib) {
      Deployment sd = cd;
      for (auto& cr : sd.calibration->ranks)
        if (cr.pp_rank == r) cr.available_kv_gib += delta_gib;
      LayoutPlan sp = PlanLayout(sd, spec);
      for (const auto& pr : sp.problems)  // the stage's own estimate, as vLLM's message gives it
        if (pr.kind == PlanProblem::Kind::kMaxModelLenTooLarge && pr.pp_rank == r) return pr.have;
      return sp.limit.largest;
    };
    const double u = c.ranks[r].uncertainty_gib;
    k.max_model_len_lo = longest(-u);
    k.max_model_len_hi = longest(u);
    const bool need_ok = std::abs(ToGiB(k.refusal_needed_bytes) - c.refusal->needed_gib) <= 0.005 + 1e-9;
    const bool len_ok = c.refusal->estimated_max_model_len
                            ? *c.refusal->estimated_max_model_len >= k.max_model_len_lo &&
                                  *c.refusal->estimated_max_model_len <= k.max_model_len_hi
                            : true;
    k.refusal_reproduced = need_ok && len_ok && !p.feasible;
  }
  return k;
}

}  // namespace ppdeploy
