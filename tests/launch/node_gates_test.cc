// The multi-node launch's pure parts: reading nvidia-smi and `ray status`, naming GPUs, NCCL/Gloo
// interface selection, which stage runs on which node, the `nodes` gate, per-node GPU types in the
// plan, the multi-node and cross-node-TP gates.
#include "launch/node_gates.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/error.h"
#include "core/units.h"
#include "deploy_test_util.h"
#include "launch/prepare.h"

namespace ppdeploy::launch {
namespace {

using ppdeploy::testing::ResolvedWith;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

std::string Joined(const CheckResult& r) {
  std::string out;
  for (const auto& m : r.messages) out += m + "\n";
  return out;
}

const GateResult& Gate(const PreparedLaunch& p, std::string_view name) {
  for (const auto& g : p.gates.results)
    if (g.name == name) return g;
  static const GateResult none{"missing", GateStatus::kFail, {"gate not run"}};
  return none;
}

/// What nvidia-smi prints for n GPUs of one type (csv,noheader,nounits).
std::string Smi(int n, const std::string& name, int mib) {
  std::string out;
  for (int i = 0; i < n; ++i) out += std::to_string(i) + ", " + name + ", " + std::to_string(mib) + "\n";
  return out;
}

NodeProbe Probe(const std::string& node, int gpus, const std::string& name = "NVIDIA A100-SXM4-80GB", int mib = 81920) {
  NodeProbe p;
  p.node = node;
  p.reachable = true;
  p.gpus = ParseNvidiaSmiGpus(Smi(gpus, name, mib), node);
  p.interfaces_probed = true;
  p.interfaces = {"lo", "eth0", "ib0"};
  p.identities = {{"sha256 of /models/GLM-5.3-CyberSec-W4A16/config.json", "ab12", ""}};
  return p;
}

const std::map<std::string, std::string> kTwoNodes = {{"tp_size", "8"},
                                                      {"pp_size", "2"},
                                                      {"nodes", "h0,h1"},
                                                      {"nccl_socket_ifname", "eth0"},
                                                      {"gloo_socket_ifname", "eth0"}};

TEST(NvidiaSmiTest, ReadsTheCsvAndNamesTheBadLine) {
  auto gpus = ParseNvidiaSmiGpus("0, NVIDIA A100-SXM4-80GB, 81920\n1, NVIDIA A100-SXM4-80GB, 81920\n", "node h1");
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_EQ(gpus[1].index, 1);
  EXPECT_EQ(gpus[1].name, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(gpus[1].memory_mib, 81920);
  try {
    ParseNvidiaSmiGpus("0, NVIDIA A100-SXM4-80GB, 81920\n1, NVIDIA A100-SXM4-80GB, [N/A]\n", "node h1: nvidia-smi");
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "node h1: nvidia-smi: line 2: memory.total: expected MiB as an integer, got \"[N/A]\"");
  }
  EXPECT_THROW(ParseNvidiaSmiGpus("index, name, memory.total [MiB]\n", "n"), Error);  // a header: not nounits
  EXPECT_THROW(ParseNvidiaSmiGpus("", "n"), Error);
  try {
    ParseNvidiaSmiGpus("No devices were found\x1b[0m\n", "node h2: nvidia-smi");
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("got \"No devices were found\\x1b[0m\""));  // escape bytes shown, not sent
  }
}

TEST(NvidiaSmiTest, NamesGpusByModelNumberAndMemory) {
  // Names and totals as nvidia-smi prints them on these GPUs (data/gpus.json nvidia_smi_mib).
  auto name = [](std::string_view n, int mib) {
    const GpuSpec* g = GpuFromNvidiaSmi(n, mib);
    return g ? g->name : std::string("none");
  };
  EXPECT_EQ(name("NVIDIA A100-SXM4-80GB", 81920), "a100-80gb");
  EXPECT_EQ(name("NVIDIA A100-SXM4-40GB", 40960), "a100-40gb");
  EXPECT_EQ(name("NVIDIA H100 80GB HBM3", 81559), "h100-80gb");
  EXPECT_EQ(name("NVIDIA H100 PCIe", 81559), "h100-pcie");
  EXPECT_EQ(name("NVIDIA H800", 81559), "h100-80gb");  // an alias of the row
  EXPECT_EQ(name("NVIDIA H200", 143771), "h200");
  EXPECT_EQ(name("NVIDIA L40S", 46068), "l40s");
  EXPECT_EQ(name("NVIDIA GeForce RTX 4090", 24564), "rtx-4090");
  EXPECT_EQ(name("Tesla T4", 15360), "t4");  // the T4 row (issue 12)
  EXPECT_EQ(name("Tesla V100-SXM2-16GB", 16384), "none");
  EXPECT_EQ(name("NVIDIA A100-SXM4-80GB", 40960), "none");  // memory decides as well
}

TEST(RayStatusTest, ReadsActiveNodesAndTheGpuLine) {
  // Ray 2.x `ray status` (the layout printed by the autoscaler's status formatter).
  const std::string two = R"(======== Autoscaler status: 2025-04-09 09:25:37.694016 ========
Node status
---------------------------------------------------------------
Active:
 1 node_ef382ffd687d8f6b060c1b68e63ada7341b936fe5b1901dd04de1027
 1 node_1eb4d7d07e793114c23a89d1a41f1f76acf6ef5b35af844a4ee8e4ba
Pending:
 (no pending nodes)
Recent failures:
 (no failures)

Resources
---------------------------------------------------------------
Usage:
 0.0/360.0 CPU
 0.0/16.0 GPU
 0B/3.39TiB memory
 0B/372.53GiB object_store_memory

Demands:
 (no resource demands)
)";
  RayStatus s = ParseRayStatus(two);
  EXPECT_TRUE(s.parsed);
  EXPECT_EQ(s.active_nodes, 2);
  EXPECT_EQ(s.gpus_total, 16.0);
  EXPECT_EQ(s.gpus_used, 0.0);
  // Newer Ray: "Total Usage:", and a GPU line with its placement-group note.
  RayStatus t = ParseRayStatus(
      "Active:\n 1 node_a\nPending:\n\nResources\n----\nTotal Usage:\n 8.0/64.0 CPU\n"
      " 8.0/8.0 GPU (8.0 used of 8.0 reserved in placement groups)\n");
  EXPECT_TRUE(t.parsed);
  EXPECT_EQ(t.active_nodes, 1);
  EXPECT_EQ(t.gpus_used, 8.0);
  EXPECT_EQ(t.gpus_total, 8.0);
  EXPECT_FALSE(ParseRayStatus("Resources\nUsage:\n 0.0/16.0 CPU\n").parsed);  // no GPU line: Ray sees no GPU
  EXPECT_FALSE(ParseRayStatus("ConnectionError: could not connect\n").parsed);
}

TEST(InterfaceTest, NcclAndGlooSyntax) {
  const std::vector<std::string> ifs{"lo", "docker0", "eth0", "ib0"};
  EXPECT_TRUE(NcclInterfaceMatches("eth", ifs));  // a prefix
  EXPECT_TRUE(NcclInterfaceMatches("ib,eth", ifs));
  EXPECT_FALSE(NcclInterfaceMatches("=eth", ifs));  // '=': exact names
  EXPECT_TRUE(NcclInterfaceMatches("=eth0", ifs));
  EXPECT_FALSE(NcclInterfaceMatches("bond", ifs));
  EXPECT_TRUE(NcclInterfaceMatches("^docker,lo", ifs));              // '^': anything else
  EXPECT_FALSE(NcclInterfaceMatches("^docker", {"lo", "docker0"}));  // lo does not count
  EXPECT_THAT(GlooInterfacesMissing("eth0,bond0", ifs), ElementsAre("bond0"));
  EXPECT_TRUE(GlooInterfacesMissing("eth0", ifs).empty());
}

TEST(StageNodesTest, RanksFillTheNodesInOrder) {
  EXPECT_THAT(StageNodes(8, 2, 1, 8, 0), ElementsAre(0));
  EXPECT_THAT(StageNodes(8, 2, 1, 8, 1), ElementsAre(1));
  EXPECT_THAT(StageNodes(4, 4, 1, 8, 2), ElementsAre(1));      // ranks 8-11
  EXPECT_THAT(StageNodes(16, 1, 1, 8, 0), ElementsAre(0, 1));  // a TP group over two nodes
  EXPECT_THAT(StageNodes(4, 2, 2, 8, 1), ElementsAre(0, 1));   // DP 2: ranks 4-7 and 12-15
  EXPECT_THAT(CrossNodeTpGroups(3, 8, 1, 8),
              ElementsAre("PP stage 2 on ranks 6-8 spans nodes 0-1", "PP stage 5 on ranks 15-17 spans nodes 1-2"));
  EXPECT_TRUE(CrossNodeTpGroups(8, 2, 1, 8).empty());
}

TEST(NodesGateTest, FourGpusOnH1IsRefusedNamingH1) {
  ResolvedDeployment d = ResolvedWith(kTwoNodes);
  auto ok = CheckNodes(d, {Probe("h0", 8), Probe("h1", 8)});
  EXPECT_EQ(ok.status, CheckStatus::kPass) << Joined(ok);
  EXPECT_THAT(Joined(ok), HasSubstr("h1: 8 x a100-80gb (81920 MiB, GPUs 0,1,2,3,4,5,6,7)"));
  auto four = CheckNodes(d, {Probe("h0", 8), Probe("h1", 4)});
  EXPECT_EQ(four.status, CheckStatus::kFail);
  EXPECT_THAT(Joined(four), HasSubstr("h1 reports 4 GPUs (nvidia-smi), the layout needs 8 per node (TP x PP x DP = 16 "
                                      "over 2 nodes, GPUS=0,1,2,3,4,5,6,7)"));
  EXPECT_THAT(Joined(four), Not(HasSubstr("h0 reports")));
}

TEST(NodesGateTest, IdsInterfacesIdentityAndReachability) {
  auto with = kTwoNodes;
  with["gpus"] = "0,1,2,3,4,5,6,9";
  with["gpus_per_node"] = "10";
  auto ids = CheckNodes(ResolvedWith(with), {Probe("h0", 10), Probe("h1", 9)});
  EXPECT_EQ(ids.status, CheckStatus::kFail);
  EXPECT_THAT(Joined(ids), HasSubstr("h1: GPUS=0,1,2,3,4,5,6,9 uses GPU 9 but nvidia-smi lists only 0, 1, 2"));

  ResolvedDeployment d = ResolvedWith(kTwoNodes);
  NodeProbe no_if = Probe("h1", 8);
  no_if.interfaces = {"lo", "ens5"};
  auto ifs = CheckNodes(d, {Probe("h0", 8), no_if});
  EXPECT_EQ(ifs.status, CheckStatus::kFail);
  EXPECT_THAT(Joined(ifs), HasSubstr("h1: NCCL_SOCKET_IFNAME=eth0 selects none of its interfaces (lo, ens5)"));
  EXPECT_THAT(Joined(ifs), HasSubstr("h1: GLOO_SOCKET_IFNAME=eth0: no interface eth0 (it has lo, ens5)"));

  NodeProbe other = Probe("h1", 8);
  other.identities[0].value = "cd34";
  auto differ = CheckNodes(d, {Probe("h0", 8), other});
  EXPECT_EQ(differ.status, CheckStatus::kFail);
  EXPECT_THAT(Joined(differ), HasSubstr("sha256 of /models/GLM-5.3-CyberSec-W4A16/config.json differs between nodes: "
                                        "ab12 on h0; cd34 on h1"));
  NodeProbe missing = Probe("h1", 8);
  missing.identities[0] = {"sha256 of /m/config.json", "", "not readable on the node (exit 1: No such file)"};
  EXPECT_THAT(Joined(CheckNodes(d, {Probe("h0", 8), missing})),
              HasSubstr("h1: sha256 of /m/config.json: not readable on the node (exit 1: No such file)"));

  NodeProbe gone;
  gone.node = "h1";
  gone.error = "exit 255: ssh: connect to host h1 port 22: Connection refused";
  auto unreachable = CheckNodes(d, {Probe("h0", 8), gone});
  EXPECT_EQ(unreachable.status, CheckStatus::kFail);
  EXPECT_THAT(Joined(unreachable),
              HasSubstr("h1: not reachable through the remote shell: exit 255: ssh: connect to host h1"));
}

TEST(NodesGateTest, UnknownGpuSmallerThanPlannedFails) {
  ResolvedDeployment d = ResolvedWith(kTwoNodes);
  auto small = CheckNodes(d, {Probe("h0", 8), Probe("h1", 8, "Tesla V100-SXM2-16GB", 16384)});
  EXPECT_EQ(small.status, CheckStatus::kFail);
  EXPECT_THAT(Joined(small),
              HasSubstr("h1: GPU \"Tesla V100-SXM2-16GB\" (16384 MiB) is not in data/gpus.json and has less "
                        "memory than the a100-80gb the plan assumes (81920 MiB)"));
}

TEST(NodeGpusTest, OneTypeEverywhereBecomesTheGpuAndMixedTypesPlanPerStage) {
  // Both nodes report H100s while the settings say A100: the plan uses H100s, and the stored
  // request says where that came from.
  auto both = kTwoNodes;
  const std::vector<NodeProbe> h100 = {Probe("h0", 8, "NVIDIA H100 80GB HBM3", 81559),
                                       Probe("h1", 8, "NVIDIA H100 80GB HBM3", 81559)};
  PreparedLaunch p = PrepareLaunch(ResolvedWith(both), &h100);
  EXPECT_EQ(p.deployment.planner.gpu.name, "h100-80gb");
  EXPECT_EQ(p.deployment.request.Setting("gpu").value, "h100-80gb");
  EXPECT_EQ(p.deployment.request.Setting("gpu").origin, "nvidia-smi on h0, h1");
  EXPECT_FALSE(p.deployment.planner.calibration.has_value());  // the seed's A100 calibration does not apply
  EXPECT_EQ(Gate(p, "nodes").status, GateStatus::kWarn);
  EXPECT_THAT(Joined(Gate(p, "nodes")),
              HasSubstr("h0: nvidia-smi reports h100-80gb (NVIDIA H100 80GB HBM3), the gpu "
                        "setting says a100-80gb (default deployment): the plan uses what the nodes report"));
  // Mixed: PP stage 0 on h0 (A100), stage 1 on h1 (H200): each stage's budget is its GPU's
  // (gpu_memory_utilization x the torch-visible total of data/gpus.json).
  const std::vector<NodeProbe> mixed = {Probe("h0", 8), Probe("h1", 8, "NVIDIA H200", 143771)};
  PreparedLaunch m = PrepareLaunch(ResolvedWith(both), &mixed);
  ASSERT_EQ(m.deployment.planner.stage_gpus.size(), 2u);
  EXPECT_EQ(m.deployment.planner.stage_gpus[0].name, "a100-80gb");
  EXPECT_EQ(m.deployment.planner.stage_gpus[1].name, "h200");
  ASSERT_EQ(m.plan.ranks.size(), 2u);
  EXPECT_EQ(m.plan.ranks[0].requested_bytes, static_cast<std::int64_t>(std::ceil(GiBToBytes(79.25) * 0.95)));
  EXPECT_EQ(m.plan.ranks[1].requested_bytes, static_cast<std::int64_t>(std::ceil(GiBToBytes(139.81) * 0.95)));
  // Without probes nothing changes.
  PreparedLaunch none = PrepareLaunch(ResolvedWith(both));
  EXPECT_TRUE(none.deployment.planner.stage_gpus.empty());
  EXPECT_EQ(none.plan.ranks[1].requested_bytes, none.plan.ranks[0].requested_bytes);
}

TEST(MultiNodeGateTest, InterfacesRequiredAndNativeOnlyWhereTheVersionHasIt) {
  auto gate = [](std::map<std::string, std::string> s) { return Gate(PrepareLaunch(ResolvedWith(s)), "multi-node"); };
  EXPECT_EQ(gate(kTwoNodes).status, GateStatus::kPass);
  auto no_if = kTwoNodes;
  no_if.erase("nccl_socket_ifname");
  no_if.erase("gloo_socket_ifname");
  auto unset = gate(no_if);
  EXPECT_EQ(unset.status, GateStatus::kFail);
  EXPECT_THAT(Joined(unset), HasSubstr("NCCL_SOCKET_IFNAME and GLOO_SOCKET_IFNAME not set"));
  auto old = kTwoNodes;
  old["vllm_version"] = "0.11";
  old["kv_cache_dtype"] = "fp8";
  old["executor"] = "native";
  EXPECT_THAT(Joined(gate(old)), HasSubstr("vLLM 0.11 has no native multi-node mode"));
  old["executor"] = "auto";
  EXPECT_EQ(PrepareLaunch(ResolvedWith(old)).rendered.executor, "ray");  // auto on a row without native_multinode
  EXPECT_EQ(PrepareLaunch(ResolvedWith(kTwoNodes)).rendered.executor, "native");
  // One node: no multi-node gate at all.
  EXPECT_EQ(Gate(PrepareLaunch(ResolvedWith()), "multi-node").name, "missing");
}

TEST(MultiNodeGateTest, TpGroupAcrossNodesRefusedUnlessAllowed) {
  auto tp16 = kTwoNodes;
  tp16["tp_size"] = "16";
  tp16["pp_size"] = "1";
  auto refused = Gate(PrepareLaunch(ResolvedWith(tp16)), "gpus");
  EXPECT_EQ(refused.status, GateStatus::kFail);
  EXPECT_THAT(Joined(refused), HasSubstr("TP_SIZE=16 groups span nodes of 8 GPUs (PP stage 0 on ranks 0-15 spans nodes "
                                         "0-1): the TP all-reduce would cross the network"));
  EXPECT_THAT(Joined(refused), HasSubstr("ALLOW_CROSS_NODE_TP=1"));
  tp16["allow_cross_node_tp"] = "1";
  auto allowed = Gate(PrepareLaunch(ResolvedWith(tp16)), "gpus");
  EXPECT_EQ(allowed.status, GateStatus::kWarn);
  EXPECT_THAT(Joined(allowed), HasSubstr("WARNING: TP_SIZE=16 groups span nodes"));
}

}  // namespace
}  // namespace ppdeploy::launch
