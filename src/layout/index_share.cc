#include "layout/index_share.h"

#include <algorithm>

namespace ppdeploy {

namespace {

// Shared layers in [range) that come before the range's first full layer.
std::vector<int> ForcedIn(const ModelConfig& m, LayerRange range) {
  std::vector<int> out;
  for (int i = range.start; i < range.end; ++i) {
    if (LayerIsFull(m, i)) break;
    out.push_back(i);
  }
  return out;
}

}  // namespace

IndexShareReport AnalyzeIndexShare(const ModelConfig& m, const std::vector<int>& partition, IndexShareMode mode,
                                   bool fix_applied) {
  IndexShareReport report;
  report.fix_applied = fix_applied;
  bool any_shared = false;
  if (m.dsa)
    for (int i = 0; i < m.num_hidden_layers && !any_shared; ++i) any_shared = !LayerIsFull(m, i);
  report.applies = m.dsa && any_shared && mode != IndexShareMode::kNone;
  const int pp = static_cast<int>(partition.size());
  const int n = m.num_hidden_layers;
  for (int r = 0; r < pp; ++r) {
    RankIndexShare rank;
    rank.pp_rank = r;
    rank.range = RankRange(partition, r);
    rank.legacy_range = LayerRange{r * n / pp, (r + 1) * n / pp};
    if (m.dsa)
      for (int i = rank.range.start; i < rank.range.end; ++i)
        if (LayerIsFull(m, i)) rank.self_computing.push_back(i);
    if (report.applies) {
      rank.forced = ForcedIn(m, rank.range);
      rank.legacy_forced = ForcedIn(m, rank.legacy_range);
      rank.residual_unsafe = fix_applied ? 0 : static_cast<int>(rank.forced.size());
      if (rank.legacy_forced != rank.forced) report.legacy_disagrees = true;
      report.forced.insert(report.forced.end(), rank.forced.begin(), rank.forced.end());
      if (rank.residual_unsafe) report.safe = false;
    }
    report.ranks.push_back(std::move(rank));
  }
  report.zero_dependency = report.forced.empty();
  return report;
}

std::string IndexTopkPattern(const ModelConfig& m, const std::vector<int>& forced) {
  std::string p(m.num_hidden_layers, 'S');
  for (int i = 0; i < m.num_hidden_layers; ++i)
    if (LayerIsFull(m, i) || std::find(forced.begin(), forced.end(), i) != forced.end()) p[i] = 'F';
  return p;
}

}  // namespace ppdeploy
