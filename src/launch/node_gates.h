// The multi-node launch's facts about each node, as pure functions: what `nvidia-smi`, the node's
// interfaces and its copy of the model or image said (gathered over the remote shell by
// launch/multinode.h), which PP stage runs on which node, the `nodes` gate over those facts, the
// per-node GPU types handed to the planner, and the reader of `ray status`.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "deploy/check.h"
#include "deploy/resolve.h"
#include "model/gpu.h"

namespace ppdeploy::launch {

/// One line of `nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader,nounits`.
struct NvidiaSmiGpu {
  int index = 0;
  std::string name;             ///< e.g. "NVIDIA A100-SXM4-80GB"
  std::int64_t memory_mib = 0;  ///< memory.total
};

/// The query the probe runs; ParseNvidiaSmiGpus reads its output.
inline constexpr std::string_view kNvidiaSmiQuery = "--query-gpu=index,name,memory.total";

/// Parses the CSV lines above. Throws Error naming `where` (e.g. "node h1: nvidia-smi"), the line
/// and the bad value for anything else (a header, a missing field, "[N/A]", a non-number).
std::vector<NvidiaSmiGpu> ParseNvidiaSmiGpus(std::string_view text, const std::string& where);

/// The row of data/gpus.json for an nvidia-smi name and memory: the total within 3% of the row's
/// nvidia_smi_mib, the row's model number (the name or an alias token holding a digit) in the name,
/// most matching tokens first. nullptr when no row fits.
const GpuSpec* GpuFromNvidiaSmi(std::string_view name, std::int64_t memory_mib);

/// One thing that must be the same on every node: what it is and its value there.
struct NodeIdentity {
  std::string what;   ///< "sha256 of /models/x/config.json", "image id of vllm/vllm-openai:v0.19.0"
  std::string value;  ///< the digest or id ("" when `error` says why)
  std::string error;
};

/// What the probe learnt about one node (multinode.h ProbeNodes).
struct NodeProbe {
  std::string node;
  bool reachable = false;
  std::string error;  ///< why the remote shell could not run the probe ("" = reached)
  std::vector<NvidiaSmiGpu> gpus;
  std::string gpus_error;  ///< nvidia-smi failed or printed something else ("" = gpus read)
  bool interfaces_probed = false;
  std::vector<std::string> interfaces;   ///< names under /sys/class/net
  std::vector<NodeIdentity> identities;  ///< the model's config.json, the image
};

/// Whether an NCCL_SOCKET_IFNAME value selects one of `interfaces` (NCCL's syntax: a comma list of
/// prefixes, '=' for exact names, '^' to exclude; lo does not count for an exclusion).
bool NcclInterfaceMatches(std::string_view spec, const std::vector<std::string>& interfaces);

/// The names of a GLOO_SOCKET_IFNAME value (comma list of exact names) missing from `interfaces`.
std::vector<std::string> GlooInterfacesMissing(std::string_view spec, const std::vector<std::string>& interfaces);

/// The nodes (indices into NODES) that hold PP stage `stage`: vLLM orders ranks DP, PP, TP from
/// outer to inner, global rank = (dp x PP + stage) x TP + tp, placed `per_node` to a node in order.
std::vector<int> StageNodes(int tp, int pp, int dp, int per_node, int stage);

/// The `nodes` gate over the probes (in NODES order): every node reached; nvidia-smi lists the GPU
/// ids the node's share uses (GPUS) and at least GPUs-per-node of them; their type (warn when it is
/// not the `gpu` setting: the plan then uses what the nodes report; fail when an unknown GPU has less
/// memory than the one planned); NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME name interfaces the node
/// has; the model's config.json (or the image) is on every node and the same everywhere. Every
/// message names the node.
CheckResult CheckNodes(const ResolvedDeployment& d, const std::vector<NodeProbe>& probes);

/// Hands the nodes' GPU types to the planner: one known type on every node -> the deployment's
/// `gpu` (and its setting, origin "nvidia-smi on ..."), so the stored request plans the same;
/// different types -> per-stage GPUs (Deployment::stage_gpus, the smallest type among a stage's
/// nodes). A calibration taken on another GPU is dropped. Returns what it changed, for the notes.
std::vector<std::string> ApplyNodeGpus(ResolvedDeployment& d, const std::vector<NodeProbe>& probes);

/// What `ray status` says: its "Active:" nodes and the "<used>/<total> GPU" line of its Resources
/// block (Ray 2.x: "Usage:" or "Total Usage:").
struct RayStatus {
  bool parsed = false;  ///< a Resources block with a GPU line was found
  int active_nodes = 0;
  double gpus_used = 0, gpus_total = 0;
};
RayStatus ParseRayStatus(std::string_view text);

}  // namespace ppdeploy::launch
