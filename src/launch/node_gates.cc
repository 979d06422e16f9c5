#include "launch/node_gates.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <map>
#include <set>

#include "core/error.h"
#include "core/escape.h"

namespace ppdeploy::launch {
namespace {

std::string Trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

std::vector<std::string> Split(std::string_view s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t pos = s.find(sep, start);
    out.emplace_back(s.substr(start, pos == std::string_view::npos ? std::string_view::npos : pos - start));
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
  return out;
}

std::vector<std::string> Lines(std::string_view text) {
  std::vector<std::string> out;
  for (auto& l : Split(text, '\n')) {
    if (!l.empty() && l.back() == '\r') l.pop_back();
    out.push_back(std::move(l));
  }
  return out;
}

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

template <typename T>
bool ParseNumber(const std::string& s, T& out) {
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return !s.empty() && ec == std::errc() && ptr == s.data() + s.size();
}

/// Tokens of a data/gpus.json name or alias ("a100-sxm4-80gb" -> a100, sxm4, 80gb).
std::vector<std::string> Tokens(const std::string& name) {
  std::vector<std::string> out;
  for (auto& t : Split(Lower(name), '-'))
    if (!t.empty()) out.push_back(t);
  return out;
}

/// The GPU ids of one node's share: GPUS, or 0..gpus_per_node-1 for "all".
std::vector<int> UsedIds(const DeploymentRequest& q) {
  std::vector<int> ids;
  if (q.gpus == "all") {
    for (int i = 0; i < q.gpus_per_node; ++i) ids.push_back(i);
    return ids;
  }
  for (const auto& s : Split(q.gpus, ',')) {
    int id = 0;
    if (ParseNumber(s, id)) ids.push_back(id);
  }
  return ids;
}

/// The known type of a node's used GPUs (the smallest when they differ), nullptr when unknown.
const GpuSpec* NodeGpuType(const DeploymentRequest& q, const NodeProbe& p) {
  if (!p.reachable || !p.gpus_error.empty() || p.gpus.empty()) return nullptr;
  const GpuSpec* smallest = nullptr;
  for (int id : UsedIds(q)) {
    auto it = std::find_if(p.gpus.begin(), p.gpus.end(), [&](const NvidiaSmiGpu& g) { return g.index == id; });
    if (it == p.gpus.end()) return nullptr;
    const GpuSpec* s = GpuFromNvidiaSmi(it->name, it->memory_mib);
    if (!s) return nullptr;
    if (!smallest || s->total_gib < smallest->total_gib) smallest = s;
  }
  return smallest;
}

std::string Short(const std::string& id) { return id.size() > 16 ? id.substr(0, 16) : id; }

}  // namespace

std::vector<NvidiaSmiGpu> ParseNvidiaSmiGpus(std::string_view text, const std::string& where) {
  std::vector<NvidiaSmiGpu> out;
  int line_no = 0;
  for (const auto& raw : Lines(text)) {
    ++line_no;
    std::string line = Trim(raw);
    if (line.empty()) continue;
    auto fields = Split(line, ',');
    if (fields.size() != 3)
      Fail("{}: line {}: expected \"index, name, memory.total\" (csv,noheader,nounits), got \"{}\"", where, line_no,
           EscapeForMessage(line));
    NvidiaSmiGpu g;
    const std::string index = Trim(fields[0]), mib = Trim(fields[2]);
    g.name = Trim(fields[1]);
    if (!ParseNumber(index, g.index) || g.index < 0)
      Fail("{}: line {}: index: expected a GPU index, got \"{}\"", where, line_no, EscapeForMessage(index));
    if (!ParseNumber(mib, g.memory_mib) || g.memory_mib <= 0)
      Fail("{}: line {}: memory.total: expected MiB as an integer, got \"{}\"", where, line_no, EscapeForMessage(mib));
    if (g.name.empty()) Fail("{}: line {}: name: empty", where, line_no);
    out.push_back(std::move(g));
  }
  if (out.empty()) Fail("{}: no GPU listed", where);
  return out;
}

const GpuSpec* GpuFromNvidiaSmi(std::string_view name, std::int64_t memory_mib) {
  std::string n = Lower(std::string(name));
  std::replace(n.begin(), n.end(), ' ', '-');
  // A size the name states ("80gb" in "NVIDIA A100-SXM4-80GB") must be the memory nvidia-smi reports
  // (within 5%), else the row is not chosen by memory alone (an 80GB name reporting 40960 MiB).
  for (const auto& t : Tokens(n)) {
    int gb = 0;
    if (t.size() > 2 && t.compare(t.size() - 2, 2, "gb") == 0 && ParseNumber(t.substr(0, t.size() - 2), gb) && gb > 0 &&
        std::abs(static_cast<double>(memory_mib) / 1024.0 - gb) > 0.05 * gb)
      return nullptr;
  }
  const GpuSpec* best = nullptr;
  int best_score = -1;
  for (const auto& spec : GpuSpecs()) {
    if (spec.vendor != "nvidia") continue;  // nvidia-smi reports NVIDIA GPUs only
    if (spec.nvidia_smi_mib <= 0 || std::abs(static_cast<double>(memory_mib - spec.nvidia_smi_mib)) >
                                        0.03 * static_cast<double>(spec.nvidia_smi_mib))
      continue;
    std::vector<std::string> spellings{spec.name};
    spellings.insert(spellings.end(), spec.aliases.begin(), spec.aliases.end());
    int score = -1;
    for (const auto& spelling : spellings) {
      int found = 0;
      bool model_number = false;
      for (const auto& t : Tokens(spelling)) {
        if (n.find(t) == std::string::npos) continue;
        ++found;
        if (std::any_of(t.begin(), t.end(), [](unsigned char c) { return std::isdigit(c); })) model_number = true;
      }
      if (model_number) score = std::max(score, found);
    }
    if (score < 0) continue;
    score = score * 2 + (memory_mib == spec.nvidia_smi_mib ? 1 : 0);
    if (score > best_score) {
      best_score = score;
      best = &spec;
    }
  }
  return best;
}

bool NcclInterfaceMatches(std::string_view spec, const std::vector<std::string>& interfaces) {
  std::string_view s = spec;
  const bool exclude = !s.empty() && s.front() == '^';
  if (exclude) s.remove_prefix(1);
  const bool exact = !s.empty() && s.front() == '=';
  if (exact) s.remove_prefix(1);
  auto items = Split(s, ',');
  auto listed = [&](const std::string& ifname) {
    return std::any_of(items.begin(), items.end(), [&](const std::string& item) {
      return !item.empty() && (exact ? ifname == item : ifname.rfind(item, 0) == 0);
    });
  };
  return std::any_of(interfaces.begin(), interfaces.end(), [&](const std::string& ifname) {
    return exclude ? ifname != "lo" && !listed(ifname) : listed(ifname);
  });
}

std::vector<std::string> GlooInterfacesMissing(std::string_view spec, const std::vector<std::string>& interfaces) {
  std::vector<std::string> missing;
  for (const auto& name : Split(spec, ','))
    if (!name.empty() && std::find(interfaces.begin(), interfaces.end(), name) == interfaces.end())
      missing.push_back(name);
  return missing;
}

std::vector<int> StageNodes(int tp, int pp, int dp, int per_node, int stage) {
  std::set<int> nodes;
  for (int r = 0; r < std::max(1, dp); ++r) {
    const int first = (r * pp + stage) * tp;
    for (int rank = first; rank < first + tp; ++rank) nodes.insert(rank / std::max(1, per_node));
  }
  return {nodes.begin(), nodes.end()};
}

CheckResult CheckNodes(const ResolvedDeployment& d, const std::vector<NodeProbe>& probes) {
  CheckResult r{"nodes", CheckStatus::kPass, {}};
  const DeploymentRequest& q = d.request;
  auto fail = [&](std::string m) {
    r.status = CheckStatus::kFail;
    r.messages.push_back(std::move(m));
  };
  auto warn = [&](std::string m) {
    r.status = std::max(r.status, CheckStatus::kWarn);
    r.messages.push_back(std::move(m));
  };
  const int need = q.GpusUsedPerNode();
  const std::vector<int> ids = UsedIds(q);
  std::vector<std::string> summaries;
  std::map<std::string, std::map<std::string, std::vector<std::string>>> identities;  // what -> value -> nodes
  for (const auto& p : probes) {
    if (!p.reachable) {
      fail(fmt::format("{}: not reachable through the remote shell: {}", p.node, EscapeForMessage(p.error)));
      continue;
    }
    if (!p.gpus_error.empty()) {
      fail(fmt::format("{}: nvidia-smi: {}", p.node, EscapeForMessage(p.gpus_error)));
    } else {
      std::vector<int> listed;
      for (const auto& g : p.gpus) listed.push_back(g.index);
      std::vector<int> missing;
      for (int id : ids)
        if (std::find(listed.begin(), listed.end(), id) == listed.end()) missing.push_back(id);
      if (static_cast<int>(p.gpus.size()) < need) {
        fail(
            fmt::format("{} reports {} GPU{} (nvidia-smi), the layout needs {} per node (TP x PP x DP = {} over {} "
                        "nodes, GPUS={})",
                        p.node, p.gpus.size(), p.gpus.size() == 1 ? "" : "s", need, q.tp_size * q.pp_size * q.dp_size,
                        q.num_nodes, q.gpus));
      } else if (!missing.empty()) {
        fail(fmt::format("{}: GPUS={} uses GPU {} but nvidia-smi lists only {}", p.node, q.gpus,
                         fmt::join(missing, ", "), fmt::join(listed, ", ")));
      } else {
        if (q.gpus == "all" && static_cast<int>(p.gpus.size()) > q.gpus_per_node)
          warn(fmt::format("{} has {} GPUs; GPUS=all exposes all of them but the plan counts gpus_per_node = {}",
                           p.node, p.gpus.size(), q.gpus_per_node));
        std::set<std::string> names;
        std::int64_t min_mib = 0;
        for (int id : ids) {
          const auto& g =
              *std::find_if(p.gpus.begin(), p.gpus.end(), [&](const NvidiaSmiGpu& x) { return x.index == id; });
          names.insert(g.name);
          min_mib = min_mib == 0 ? g.memory_mib : std::min(min_mib, g.memory_mib);
        }
        const std::string shown = fmt::format("{}", fmt::join(names, " + "));
        if (names.size() > 1)
          warn(fmt::format("{} mixes GPU types ({}): planned with the smallest", p.node, EscapeForMessage(shown)));
        const GpuSpec* type = NodeGpuType(q, p);
        if (!type) {
          const GpuSpec& planned = d.planner.gpu;
          if (min_mib < planned.nvidia_smi_mib * 97 / 100)
            fail(
                fmt::format("{}: GPU \"{}\" ({} MiB) is not in data/gpus.json and has less memory than the {} the plan "
                            "assumes ({} MiB); set --gpu to its type or --gpu-total-gib",
                            p.node, EscapeForMessage(shown), min_mib, planned.name, planned.nvidia_smi_mib));
          else
            warn(fmt::format("{}: GPU \"{}\" ({} MiB) is not in data/gpus.json: planned as {}", p.node,
                             EscapeForMessage(shown), min_mib, planned.name));
        } else if (type->name != d.planner.gpu.name) {
          warn(
              fmt::format("{}: nvidia-smi reports {} ({}), the gpu setting says {} ({}): the plan uses what the "
                          "nodes report",
                          p.node, type->name, EscapeForMessage(shown), q.gpu, q.Setting("gpu").origin));
        }
        summaries.push_back(fmt::format("{}: {} x {} ({} MiB, GPUs {})", p.node, ids.size(),
                                        type ? type->name : EscapeForMessage(shown), min_mib, fmt::join(ids, ",")));
      }
    }
    if (p.interfaces_probed) {
      if (!q.nccl_socket_ifname.empty() && !NcclInterfaceMatches(q.nccl_socket_ifname, p.interfaces))
        fail(fmt::format("{}: NCCL_SOCKET_IFNAME={} selects none of its interfaces ({})", p.node,
                         EscapeForMessage(q.nccl_socket_ifname),
                         EscapeForMessage(fmt::format("{}", fmt::join(p.interfaces, ", ")))));
      auto missing = GlooInterfacesMissing(q.gloo_socket_ifname, p.interfaces);
      if (!missing.empty())
        fail(fmt::format("{}: GLOO_SOCKET_IFNAME={}: no interface {} (it has {})", p.node,
                         EscapeForMessage(q.gloo_socket_ifname),
                         EscapeForMessage(fmt::format("{}", fmt::join(missing, ", "))),
                         EscapeForMessage(fmt::format("{}", fmt::join(p.interfaces, ", ")))));
    }
    for (const auto& id : p.identities) {
      if (!id.error.empty())
        fail(fmt::format("{}: {}: {}", p.node, EscapeForMessage(id.what), EscapeForMessage(id.error)));
      else
        identities[id.what][id.value].push_back(p.node);
    }
  }
  std::vector<std::string> same;
  for (const auto& [what, values] : identities) {
    if (values.size() > 1) {
      std::vector<std::string> parts;
      for (const auto& [value, nodes] : values)
        parts.push_back(fmt::format("{} on {}", EscapeForMessage(Short(value)), fmt::join(nodes, ", ")));
      fail(fmt::format("{} differs between nodes: {}; every node must serve the same model from the same image",
                       EscapeForMessage(what), fmt::join(parts, "; ")));
    } else if (!values.empty()) {
      same.push_back(fmt::format("{} {}", EscapeForMessage(what), EscapeForMessage(Short(values.begin()->first))));
    }
  }
  if (r.status != CheckStatus::kFail) {
    r.messages.insert(
        r.messages.begin(),
        fmt::format("{} node{} probed over the remote shell{}", probes.size(), probes.size() == 1 ? "" : "s",
                    same.empty() ? "" : fmt::format("; the same on every node: {}", fmt::join(same, ", "))));
    r.messages.insert(r.messages.begin() + 1, summaries.begin(), summaries.end());
  }
  return r;
}

std::vector<std::string> ApplyNodeGpus(ResolvedDeployment& d, const std::vector<NodeProbe>& probes) {
  std::vector<std::string> notes;
  const DeploymentRequest& q = d.request;
  if (probes.empty()) return notes;
  std::vector<const GpuSpec*> node_type;
  for (const auto& p : probes) node_type.push_back(NodeGpuType(q, p));
  const int pp = std::max(1, q.pp_size);
  std::vector<GpuSpec> stages;
  for (int s = 0; s < pp; ++s) {
    const GpuSpec* smallest = nullptr;
    for (int n : StageNodes(q.tp_size, pp, q.dp_size, q.GpusUsedPerNode(), s)) {
      const GpuSpec* t = n < static_cast<int>(node_type.size()) && node_type[static_cast<size_t>(n)]
                             ? node_type[static_cast<size_t>(n)]
                             : &d.planner.gpu;
      if (!smallest || t->total_gib < smallest->total_gib) smallest = t;
    }
    stages.push_back(*smallest);
  }
  const bool uniform =
      std::all_of(stages.begin(), stages.end(), [&](const GpuSpec& g) { return g.name == stages[0].name; });
  const double total_override = q.gpu_total_gib;
  if (uniform) {
    if (stages[0].name == d.planner.gpu.name) return notes;
    std::vector<std::string> names;
    for (const auto& p : probes) names.push_back(p.node);
    const std::string origin = fmt::format("nvidia-smi on {}", fmt::join(names, ", "));
    notes.push_back(
        fmt::format("gpu: {} ({}) instead of {} ({})", stages[0].name, origin, q.gpu, q.Setting("gpu").origin));
    d.planner.gpu = stages[0];
    if (total_override > 0) d.planner.gpu.total_gib = total_override;
    d.request.gpu = stages[0].name;
    for (auto& s : d.request.settings)
      if (s.key == "gpu") s = {"gpu", stages[0].name, SettingSource::kFlag, origin};
  } else {
    std::vector<std::string> names;
    for (auto& g : stages) names.push_back(g.name);
    notes.push_back(fmt::format("PP stages on {} (nvidia-smi on each stage's nodes)", fmt::join(names, ", ")));
    d.planner.stage_gpus = stages;
  }
  if (d.planner.calibration) {
    std::string why;
    if (!CalibrationMatches(*d.planner.calibration, d.planner, &why) || !uniform) {
      notes.push_back(fmt::format("calibration {} not used: taken on another GPU ({}); estimates instead",
                                  q.calibration, why.empty() ? "mixed GPU types" : why));
      d.planner.calibration.reset();
    }
  }
  d.notes.insert(d.notes.end(), notes.begin(), notes.end());
  return notes;
}

RayStatus ParseRayStatus(std::string_view text) {
  RayStatus out;
  enum class Section { kNone, kActive, kResources } section = Section::kNone;
  for (const auto& raw : Lines(text)) {
    const std::string line = Trim(raw);
    if (line == "Active:") {
      section = Section::kActive;
      continue;
    }
    if (line == "Pending:" || line == "Recent failures:" || line == "Node status") {
      section = Section::kNone;
      continue;
    }
    if (line == "Resources") {
      section = Section::kResources;
      continue;
    }
    if (section == Section::kActive) {
      // " 1 node_0123abcd..." (a count, then the node id)
      auto space = line.find(' ');
      int count = 0;
      if (space != std::string::npos && line.compare(space + 1, 5, "node_") == 0 &&
          ParseNumber(line.substr(0, space), count))
        out.active_nodes += count;
    } else if (section == Section::kResources && !out.parsed) {
      // " 0.0/16.0 GPU", possibly followed by " (0.0 used of 0.0 reserved in placement groups)"
      auto slash = line.find('/');
      auto unit = line.find(" GPU");
      if (slash == std::string::npos || unit == std::string::npos || unit < slash) continue;
      if (unit + 4 != line.size() && line[unit + 4] != ' ') continue;
      double used = 0, total = 0;
      if (ParseNumber(line.substr(0, slash), used) && ParseNumber(line.substr(slash + 1, unit - slash - 1), total)) {
        out.parsed = true;
        out.gpus_used = used;
        out.gpus_total = total;
      }
    }
  }
  return out;
}

}  // namespace ppdeploy::launch
