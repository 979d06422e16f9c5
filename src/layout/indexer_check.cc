#include "layout/indexer_check.h"

#include <map>
#include <unordered_map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "layout/index_share.h"

namespace ppdeploy {
namespace {

std::string Prefix(int layer) { return fmt::format("model.layers.{}.self_attn.indexer.", layer); }

}  // namespace

std::vector<std::string> CheckForcedIndexerTensors(const ModelConfig& m, const std::vector<TensorInfo>& tensors,
                                                   const std::vector<int>& forced) {
  std::vector<std::string> problems;
  if (forced.empty()) return problems;
  std::unordered_map<std::string_view, const TensorInfo*> by_name;
  by_name.reserve(tensors.size());
  for (const auto& t : tensors) by_name.emplace(t.name, &t);
  // Reference: the first self-computing backbone layer after the dense prefix that has indexer tensors.
  int ref = -1;
  std::map<std::string, const TensorInfo*> ref_tensors;  // suffix -> tensor
  for (int i = 0; i < m.num_hidden_layers && ref < 0; ++i) {
    if (!LayerIsFull(m, i)) continue;
    std::string p = Prefix(i);
    for (const auto& t : tensors)
      if (t.name.compare(0, p.size(), p) == 0) ref_tensors.emplace(t.name.substr(p.size()), &t);
    if (!ref_tensors.empty()) ref = i;
  }
  if (ref < 0) {
    problems.push_back("no self-computing layer has indexer tensors (model.layers.N.self_attn.indexer.*) to compare with");
    return problems;
  }
  for (int layer : forced) {
    for (const auto& [suffix, want] : ref_tensors) {
      std::string name = Prefix(layer) + suffix;
      auto it = by_name.find(name);
      if (it == by_name.end()) {
        problems.push_back(fmt::format("layer {}: {} is missing (self-computing layer {} has it)", layer, name, ref));
      } else if (it->second->dtype != want->dtype || it->second->shape != want->shape) {
        problems.push_back(fmt::format("layer {}: {} is {} [{}], layer {} has {} [{}]", layer, name, it->second->dtype,
                                       fmt::join(it->second->shape, ","), ref, want->dtype, fmt::join(want->shape, ",")));
      }
    }
  }
  return problems;
}

}  // namespace ppdeploy
