#include "cli/deployment_options.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "core/error.h"
#include "core/escape.h"
#include "io/deployment_inputs.h"

namespace ppdeploy::cli {
namespace {

/// The count a flag gave (--nodes 2, --gpus-per-node 4; host names given to --nodes count as
/// nodes), 0 when the flag was not given.
int CountOf(const std::map<std::string, FlagValue>& f, const char* key, int gpus) {
  auto it = f.find(key);
  if (it == f.end()) return 0;
  const std::string& v = it->second.value;
  if (std::string_view(key) == "nodes" && !v.empty() && v.find_first_not_of("0123456789") != std::string::npos)
    return static_cast<int>(std::count(v.begin(), v.end(), ',')) + 1;
  int n = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec == std::errc() && p == v.data() + v.size() && n > 0) return n;
  Fail("--gpus {}: {} {} is not a positive count", gpus, it->second.flag, QuoteForMessage(v));
}

}  // namespace

void DeploymentOptions::Add(CLI::App* cmd) {
  settings.Add(cmd, {"gpus"});
  cmd->add_option("--gpus", gpus, "Total number of GPUs (default: 8); sets gpus all, gpus_per_node and nodes")
      ->check(CLI::PositiveNumber)
      ->group("Settings");
  cmd->add_option("--fix", fix, "Index-share fix to assume: profile, none, pattern, all-full")
      ->check(CLI::IsMember({"profile", "none", "pattern", "all-full"}));
}

std::map<std::string, FlagValue> DeploymentOptions::Flags() const {
  std::map<std::string, FlagValue> f = settings.Flags();
  if (gpus <= 0) return f;
  // --gpus is a total: over --nodes, or over nodes of --gpus-per-node (8 by default).
  const int nodes = CountOf(f, "nodes", gpus), gpus_per_node = CountOf(f, "gpus_per_node", gpus);
  int per_node = 0, n = 0;
  if (nodes > 0) {
    if (gpus % nodes != 0) Fail("--gpus {} is not a multiple of --nodes {}", gpus, nodes);
    per_node = gpus / nodes, n = nodes;
  } else if (gpus_per_node > 0) {
    if (gpus % gpus_per_node != 0) Fail("--gpus {} is not a multiple of --gpus-per-node {}", gpus, gpus_per_node);
    per_node = gpus_per_node, n = gpus / gpus_per_node;
  } else {
    per_node = std::min(gpus, 8), n = gpus / per_node;
    if (gpus % per_node != 0) Fail("--gpus {}: give --gpus-per-node (not a multiple of 8)", gpus);
  }
  f["gpus"] = {"all", "--gpus"};
  f["gpus_per_node"] = {std::to_string(per_node), "--gpus"};
  const bool host_names = f.count("nodes") && f.at("nodes").value.find_first_not_of("0123456789") != std::string::npos;
  if (!host_names) f["nodes"] = {std::to_string(n), "--gpus"};
  return f;
}

ResolvedDeployment DeploymentOptions::Resolve() const {
  ResolvedDeployment r =
      ResolveDeploymentFrom(ProcessSettingInputs(settings.profile_path, settings.defaults_path, Flags()));
  if (fix == "none")
    r.planner.index_fix = IndexFix::kNone;
  else if (fix == "pattern")
    r.planner.index_fix = IndexFix::kPattern;
  else if (fix == "all-full")
    r.planner.index_fix = IndexFix::kAllFull;
  return r;
}

}  // namespace ppdeploy::cli
