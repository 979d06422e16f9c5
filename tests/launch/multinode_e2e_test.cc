// Multi-node start / wait / status / logs / stop end to end through the real binary, with
// stand-ins that record what they were given: a remote shell (standin_remote_shell.py: like ssh
// it joins its command words for the node's /bin/sh, and runs them here with a clean environment),
// `ray` (standin_ray.py: a cluster registry and Ray's `ray status` block), `vllm`
// (standin_vllm.py) and `nvidia-smi` (standin_nvidia_smi.py). The nodes are loopback addresses;
// nothing leaves this machine. Every test's processes are ended by a guard, also on failure.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "cli/async_run.h"
#include "launch/launch_test_util.h"
#include "launch/multinode.h"
#include "launch/process.h"

namespace ppdeploy::launch {
namespace {

using ::testing::ElementsAre;
using testing::FreeLoopbackPort;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::ReadAll;
using testing::RunPpdeploy;
using testing::TempDir;

const std::string kTests = std::string(PPDEPLOY_SOURCE_DIR) + "/tests/launch/";

/// The stand-ins' file-name form of a host: [A-Za-z0-9._-] kept, anything else '_'.
std::string Safe(const std::string& host) { return std::regex_replace(host, std::regex("[^A-Za-z0-9._-]"), "_"); }

std::vector<nlohmann::json> JsonLines(const std::string& path) {
  std::vector<nlohmann::json> out;
  std::istringstream in(ReadAll(path));
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) out.push_back(nlohmann::json::parse(line));
  return out;
}

std::map<std::string, std::string> EnvOf(const nlohmann::json& record) {
  std::map<std::string, std::string> env;
  for (auto it = record["env"].begin(); it != record["env"].end(); ++it) env[it.key()] = it->get<std::string>();
  return env;
}

std::vector<std::string> Tail(const std::vector<std::string>& v, size_t n) {
  return std::vector<std::string>(v.end() - static_cast<std::ptrdiff_t>(std::min(n, v.size())), v.end());
}

bool HasPair(const std::vector<std::string>& argv, const std::string& flag, const std::string& value) {
  for (size_t i = 0; i + 1 < argv.size(); ++i)
    if (argv[i] == flag && argv[i + 1] == value) return true;
  return false;
}

/// Two loopback "nodes", a model directory, a PATH with the nvidia-smi stand-in, and the settings
/// of a TP8 x PP2 launch over them.
class Cluster {
 public:
  explicit Cluster(std::string mode, std::vector<std::string> nodes = {"127.0.0.1", "127.0.0.2"},
                   std::string model_dir_name = "model")
      : nodes_(std::move(nodes)) {
    standin_ = dir_.path() + "/standin";
    std::filesystem::create_directories(standin_);
    std::filesystem::create_directories(dir_.path() + "/bin");
    std::filesystem::create_symlink(kTests + "standin_nvidia_smi.py", dir_.path() + "/bin/nvidia-smi");
    model_ = dir_.path() + "/" + model_dir_name;
    std::filesystem::create_directories(model_);
    std::ofstream(model_ + "/config.json") << "{\"architectures\": [\"GlmMoeDsaForCausalLM\"]}\n";
    port_ = FreeLoopbackPort();
    std::string nodes_text;
    for (const auto& n : nodes_) nodes_text += (nodes_text.empty() ? "" : ",") + n;
    env_ = {{"PATH", dir_.path() + "/bin:" + std::string(std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin")},
            {"RUNTIME", "bare"},
            {"VLLM_BIN", kTests + "standin_vllm.py"},
            {"RAY_BIN", kTests + "standin_ray.py"},
            {"PPDEPLOY_REMOTE_SHELL", kTests + "standin_remote_shell.py -o BatchMode=yes {host} --"},
            {"PPDEPLOY_EXECUTOR", mode},
            {"PPDEPLOY_RUN_DIR", RunDir()},
            {"STANDIN_DIR", standin_},
            {"NCCL_SOCKET_IFNAME", "lo"},
            {"GLOO_SOCKET_IFNAME", "lo"},
            {"PORT", std::to_string(port_)},
            {"PPDEPLOY_MODEL", "glm-5.3-w4a16"},
            {"MODEL_PATH", model_},
            {"NODES", nodes_text},
            {"TP_SIZE", "8"},
            {"PP_SIZE", "2"}};
  }
  /// Ends whatever a test left running: every step's local process group (which holds the
  /// stand-ins and their children).
  ~Cluster() {
    try {
      if (auto s = ReadRunState(RunDir()))
        if (auto m = MultiNodeOf(*s, "state"))
          for (const auto& step : m->steps)
            if (step.pid > 0) StopProcessGroup(step.Identity(), 0);
    } catch (...) {
    }
  }
  testing::RunResult Run(std::vector<std::string> args) { return RunPpdeploy(args, env_, dir_.path()); }
  /// Per-node behaviour of the stand-ins (standin_remote_shell.py env-<host>.json).
  void NodeEnv(const std::string& host, const nlohmann::json& env) {
    std::ofstream(standin_ + "/env-" + Safe(host) + ".json") << env.dump();
  }
  void NodeGpus(const std::string& host, const std::string& csv) {
    std::ofstream(standin_ + "/nvidia-smi-" + Safe(host) + ".txt") << csv;
  }
  std::string RunDir() const { return dir_.path() + "/run"; }
  std::vector<nlohmann::json> RemoteCalls() const { return JsonLines(standin_ + "/remote-shell.jsonl"); }
  std::vector<nlohmann::json> RayCalls() const { return JsonLines(standin_ + "/ray-calls.jsonl"); }
  /// What the vllm stand-in on `host` recorded. `start` returns once the step has lived a second,
  /// which under load can be before Python wrote the record: waits for it (bounded, 30 s).
  nlohmann::json VllmRecord(const std::string& host) const {
    const std::string path = standin_ + "/vllm-" + Safe(host) + ".json";
    for (int i = 0; i < 300 && !std::filesystem::exists(path); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    return nlohmann::json::parse(ReadAll(path));
  }
  MultiNodeState Nodes() const {
    auto s = ReadRunState(RunDir());
    EXPECT_TRUE(s.has_value());
    return *MultiNodeOf(*s, "state");
  }
  const std::string& dir() const { return dir_.path(); }
  const std::string& model() const { return model_; }
  const std::string& standin() const { return standin_; }
  std::map<std::string, std::string>& env() { return env_; }

 private:
  TempDir dir_;
  std::vector<std::string> nodes_;
  std::string standin_, model_;
  int port_ = 0;
  std::map<std::string, std::string> env_;
};

/// Index of the first remote-shell call to `host` whose command contains `needle` (-1 = none).
int CallIndex(const std::vector<nlohmann::json>& calls, const std::string& host, const std::string& needle) {
  for (size_t i = 0; i < calls.size(); ++i)
    if (calls[i]["host"] == host && calls[i]["words"].size() == 1 &&
        calls[i]["words"][0].get<std::string>().find(needle) != std::string::npos)
      return static_cast<int>(i);
  return -1;
}

bool Alive(int pid) { return pid > 0 && kill(pid, 0) == 0 && ProcessAlive(pid); }

// Ray: head, worker, `ray status` until every node's GPUs show, then `vllm serve` on the head;
// wait answers once the API does; stop ends the head first, then the worker; stop again is a no-op.
TEST(MultiNodeEndToEndTest, RayHeadThenWorkerThenServeWaitStatusLogsStop) {
  Cluster c("ray");
  c.NodeEnv("127.0.0.2", {{"STANDIN_RAY_JOIN_DELAY_S", "2"}});  // start must wait for it in `ray status`

  auto start = c.Run({"start"});
  ASSERT_EQ(start.rc, 0) << start.out << start.err;
  const auto& o = start.out;
  auto head = o.find("started ray-head on 127.0.0.1"), worker = o.find("started ray-worker on 127.0.0.2"),
       all = o.find("ray status on 127.0.0.1: 16 GPUs (0 in use) on 2 nodes"),
       serve = o.find("started serve on 127.0.0.1");
  ASSERT_NE(head, std::string::npos) << o;
  ASSERT_NE(worker, std::string::npos) << o;
  ASSERT_NE(all, std::string::npos) << o;
  ASSERT_NE(serve, std::string::npos) << o;
  EXPECT_LT(head, worker);
  EXPECT_LT(worker, all);
  EXPECT_LT(all, serve);
  EXPECT_THAT(o, HasSubstr("[pass] nodes: 2 nodes probed over the remote shell"));

  // The remote shell got one word per command: the probes, then the steps in order.
  auto calls = c.RemoteCalls();
  for (const auto& call : calls) EXPECT_EQ(call["words"].size(), 1u) << call.dump();
  const int smi0 = CallIndex(calls, "127.0.0.1", "nvidia-smi --query-gpu=index,name,memory.total");
  const int smi1 = CallIndex(calls, "127.0.0.2", "nvidia-smi --query-gpu=index,name,memory.total");
  const int ray_head = CallIndex(calls, "127.0.0.1", "standin_ray.py start --head");
  const int ray_worker = CallIndex(calls, "127.0.0.2", "standin_ray.py start --address");
  const int vllm = CallIndex(calls, "127.0.0.1", "standin_vllm.py serve");
  ASSERT_GE(smi0, 0);
  ASSERT_GE(smi1, 0);
  ASSERT_GE(ray_head, 0);
  EXPECT_LT(smi1, ray_head);
  EXPECT_LT(ray_head, ray_worker);
  EXPECT_LT(ray_worker, vllm);
  EXPECT_EQ(CallIndex(calls, "127.0.0.2", "standin_vllm.py"), -1);  // Ray places the workers itself

  // What each node ran, with the environment it got (a clean one plus what ppdeploy passed).
  std::map<std::string, nlohmann::json> ray_starts;
  for (const auto& call : c.RayCalls())
    if (call["argv"][0] == "start") ray_starts[call["host"]] = call;
  ASSERT_EQ(ray_starts.size(), 2u);
  EXPECT_THAT(ray_starts["127.0.0.1"]["argv"].get<std::vector<std::string>>(),
              ElementsAre("start", "--head", "--port", "6379", "--node-ip-address", "127.0.0.1", "--block"));
  EXPECT_THAT(ray_starts["127.0.0.2"]["argv"].get<std::vector<std::string>>(),
              ElementsAre("start", "--address", "127.0.0.1:6379", "--node-ip-address", "127.0.0.2", "--block"));
  for (const auto& [host, call] : ray_starts) {
    auto env = EnvOf(call);
    EXPECT_EQ(env["NCCL_SOCKET_IFNAME"], "lo") << host;
    EXPECT_EQ(env["GLOO_SOCKET_IFNAME"], "lo") << host;
    EXPECT_EQ(env["VLLM_HOST_IP"], host);
    EXPECT_EQ(env["CUDA_VISIBLE_DEVICES"], "0,1,2,3,4,5,6,7") << host;
    EXPECT_EQ(env["VLLM_PP_LAYER_PARTITION"], "41,37") << host;
    EXPECT_EQ(env["VLLM_USE_V2_MODEL_RUNNER"], "1") << host;
    EXPECT_EQ(env.count("PPDEPLOY_RUN_DIR"), 0u) << host;  // nothing leaks from ppdeploy's environment
  }
  auto served = c.VllmRecord("127.0.0.1");
  std::vector<std::string> argv = served["argv"];
  EXPECT_EQ(argv[0], "serve");
  EXPECT_EQ(argv[1], c.model());
  EXPECT_TRUE(HasPair(argv, "--tensor-parallel-size", "8"));
  EXPECT_TRUE(HasPair(argv, "--pipeline-parallel-size", "2"));
  EXPECT_THAT(Tail(argv, 2), ElementsAre("--distributed-executor-backend", "ray"));
  EXPECT_EQ(EnvOf(served)["VLLM_HOST_IP"], "127.0.0.1");

  auto wait = c.Run({"wait", "--timeout", "120", "--interval", "0.3"});
  ASSERT_EQ(wait.rc, 0) << wait.out << wait.err;
  EXPECT_THAT(wait.out, HasSubstr("ready:"));

  auto status = c.Run({"status"});
  EXPECT_EQ(status.rc, 0);
  EXPECT_THAT(status.out, HasSubstr("nodes (ray executor, bare):"));
  EXPECT_TRUE(std::regex_search(status.out, std::regex("127\\.0\\.0\\.2 +ray-worker +running")));
  auto json = nlohmann::json::parse(c.Run({"status", "--format", "json"}).out);
  ASSERT_EQ(json["nodes"].size(), 3u);
  EXPECT_EQ(json["nodes"][1]["node"], "127.0.0.2");
  EXPECT_EQ(json["nodes"][1]["state"], "running");

  auto logs = c.Run({"logs", "--node", "127.0.0.2"});
  EXPECT_EQ(logs.rc, 0) << logs.err;
  EXPECT_THAT(logs.out, HasSubstr("Ray runtime started."));
  auto bad = c.Run({"logs", "--node", "h9"});
  EXPECT_EQ(bad.rc, 1);
  EXPECT_THAT(bad.err, HasSubstr("--node h9: not a node of this run (nodes: 127.0.0.1, 127.0.0.2)"));

  const MultiNodeState before = c.Nodes();
  const int vllm_pid = served["pid"];
  auto stop = c.Run({"stop", "--grace", "20"});
  ASSERT_EQ(stop.rc, 0) << stop.out << stop.err;
  auto s_serve = stop.out.find("stopped serve on 127.0.0.1"), s_head = stop.out.find("stopped ray-head on 127.0.0.1"),
       s_worker = stop.out.find("stopped ray-worker on 127.0.0.2");
  ASSERT_NE(s_serve, std::string::npos) << stop.out;
  ASSERT_NE(s_head, std::string::npos) << stop.out;
  ASSERT_NE(s_worker, std::string::npos) << stop.out;
  EXPECT_LT(s_serve, s_head);
  EXPECT_LT(s_head, s_worker);
  EXPECT_THAT(stop.out, Not(HasSubstr("forcefully")));  // the nodes stopped them when asked
  for (const auto& step : before.steps) EXPECT_FALSE(Alive(step.pid)) << step.role << " on " << step.node;
  EXPECT_FALSE(Alive(vllm_pid));
  int ray_stops = 0;
  for (const auto& call : c.RayCalls()) ray_stops += call["argv"][0] == "stop" ? 1 : 0;
  EXPECT_EQ(ray_stops, 2);  // `ray stop` on each node
  EXPECT_FALSE(std::filesystem::exists(c.standin() + "/ray-cluster/127.0.0.1.json"));

  auto again = c.Run({"stop"});
  EXPECT_EQ(again.rc, 0) << again.err;
  EXPECT_THAT(again.out, HasSubstr("not running"));
  EXPECT_TRUE(std::regex_search(c.Run({"status"}).out, std::regex("127\\.0\\.0\\.2 +ray-worker +stopped")));
}

// Issue 23 item 8: `stop` with an unreachable node recorded its process as stopped and never retried. The
// worker's node answers like an unreachable ssh (exit 255): the step is recorded as not stopped (unknown), `stop`
// exits 1 naming it, and the next `stop`, once the node answers, asks it again.
TEST(MultiNodeEndToEndTest, Issue23StopWithAnUnreachableNodeRecordsUnknownAndTheNextStopRetries) {
  Cluster c("ray");
  auto start = c.Run({"start"});
  ASSERT_EQ(start.rc, 0) << start.out << start.err;
  std::ofstream(c.standin() + "/unreachable-127.0.0.2") << "";
  auto stop = c.Run({"stop", "--grace", "1"});
  EXPECT_EQ(stop.rc, 1) << stop.out << stop.err;
  EXPECT_THAT(stop.out, HasSubstr("stopped ray-head on 127.0.0.1"));
  EXPECT_THAT(stop.out, HasSubstr("not stopped ray-worker on 127.0.0.2 (unknown: the node is unreachable"));
  EXPECT_THAT(stop.err, HasSubstr("ray-worker on 127.0.0.2: the node did not answer its stop; recorded as not "
                                  "stopped (unknown): run `ppdeploy stop` again"));
  for (const auto& step : c.Nodes().steps)
    if (step.node == "127.0.0.2") {
      EXPECT_TRUE(step.stop_unconfirmed);
      EXPECT_EQ(step.stopped_time_unix_ms, 0);
    }
  EXPECT_TRUE(std::regex_search(c.Run({"status"}).out, std::regex("127\\.0\\.0\\.2 +ray-worker +stop unknown")));
  auto unreachable = c.Run({"stop"});  // still unreachable: still unknown
  EXPECT_EQ(unreachable.rc, 1) << unreachable.out << unreachable.err;
  EXPECT_THAT(unreachable.err, HasSubstr("ray-worker on 127.0.0.2: the node still does not answer its stop"));

  std::filesystem::remove(c.standin() + "/unreachable-127.0.0.2");
  auto again = c.Run({"stop"});
  EXPECT_EQ(again.rc, 0) << again.out << again.err;
  EXPECT_THAT(again.out,
              HasSubstr("stopped ray-worker on 127.0.0.2 (ray stop; the earlier stop had not reached the node)"));
  int worker_stops = 0;
  for (const auto& call : c.RayCalls()) worker_stops += call["argv"][0] == "stop" && call["host"] == "127.0.0.2";
  EXPECT_EQ(worker_stops, 1);  // the node answered the third stop only
  EXPECT_TRUE(std::regex_search(c.Run({"status"}).out, std::regex("127\\.0\\.0\\.2 +ray-worker +stopped")));
}

// Issue 23 item 8: Ctrl-C during a multi-node `start` left Ray running without a word. The worker never joins, so
// `start` polls `ray status`; SIGINT there stops the head and the worker, naming each, and exits 130.
TEST(MultiNodeEndToEndTest, Issue23CtrlCDuringStartStopsWhatWasStartedByName) {
  Cluster c("ray");
  c.NodeEnv("127.0.0.2", {{"STANDIN_RAY_JOIN_DELAY_S", "600"}});
  ppdeploy::testing::AsyncPpdeploy start({"start"}, c.env(), c.dir(), "start");
  ASSERT_TRUE(start.started());
  ASSERT_TRUE(
      start.WaitUntil([&] { return start.Out().find("started ray-worker on 127.0.0.2") != std::string::npos; }, 120))
      << start.Out() << start.Err();
  start.Signal(SIGINT);
  EXPECT_EQ(start.Wait(120), 130) << start.Out() << start.Err();
  const std::string err = start.Err();
  // In the worker's settle time or in the `ray status` poll: either names what was starting.
  EXPECT_THAT(err, ::testing::AnyOf(HasSubstr("ppdeploy: interrupted while Ray was starting"),
                                    HasSubstr("ppdeploy: interrupted while ray-worker on 127.0.0.2 was starting")));
  EXPECT_THAT(err, HasSubstr("stopping what was started"));
  EXPECT_THAT(err, HasSubstr("stopped ray-head on 127.0.0.1"));
  EXPECT_THAT(err, HasSubstr("stopped ray-worker on 127.0.0.2"));
  EXPECT_THAT(err, HasSubstr("multi-node start interrupted"));
  for (const auto& step : c.Nodes().steps) EXPECT_FALSE(Alive(step.pid)) << step.role << " on " << step.node;
  EXPECT_EQ(CallIndex(c.RemoteCalls(), "127.0.0.1", "standin_vllm.py"), -1);  // serve never started
}

// Native: the headless worker first, then the head; both stopped, the head first.
TEST(MultiNodeEndToEndTest, NativeWorkerThenHeadWaitStop) {
  Cluster c("native");
  auto start = c.Run({"start"});
  ASSERT_EQ(start.rc, 0) << start.out << start.err;
  auto worker = start.out.find("started serve-headless on 127.0.0.2"),
       head = start.out.find("started serve on 127.0.0.1");
  ASSERT_NE(worker, std::string::npos) << start.out;
  ASSERT_NE(head, std::string::npos) << start.out;
  EXPECT_LT(worker, head);
  auto calls = c.RemoteCalls();
  EXPECT_LT(CallIndex(calls, "127.0.0.2", "standin_vllm.py serve"),
            CallIndex(calls, "127.0.0.1", "standin_vllm.py serve"));
  EXPECT_TRUE(c.RayCalls().empty());

  std::vector<std::string> w = c.VllmRecord("127.0.0.2")["argv"], h = c.VllmRecord("127.0.0.1")["argv"];
  EXPECT_EQ(w[1], c.model());
  EXPECT_THAT(Tail(w, 9), ElementsAre("--nnodes", "2", "--node-rank", "1", "--master-addr", "127.0.0.1",
                                      "--master-port", "29501", "--headless"));
  EXPECT_THAT(Tail(h, 8),
              ElementsAre("--nnodes", "2", "--node-rank", "0", "--master-addr", "127.0.0.1", "--master-port", "29501"));
  for (const auto& host : {"127.0.0.1", "127.0.0.2"}) {
    auto env = EnvOf(c.VllmRecord(host));
    EXPECT_EQ(env["NCCL_SOCKET_IFNAME"], "lo");
    EXPECT_EQ(env["GLOO_SOCKET_IFNAME"], "lo");
    EXPECT_EQ(env["VLLM_HOST_IP"], host);
    EXPECT_EQ(env["VLLM_PP_LAYER_PARTITION"], "41,37");
    EXPECT_EQ(env.count("PPDEPLOY_MODEL"), 0u);
  }

  auto wait = c.Run({"wait", "--timeout", "120", "--interval", "0.3"});
  ASSERT_EQ(wait.rc, 0) << wait.out << wait.err;

  const int head_pid = c.VllmRecord("127.0.0.1")["pid"], worker_pid = c.VllmRecord("127.0.0.2")["pid"];
  auto stop = c.Run({"stop", "--grace", "20"});
  ASSERT_EQ(stop.rc, 0) << stop.out << stop.err;
  auto s_head = stop.out.find("stopped serve on 127.0.0.1"),
       s_worker = stop.out.find("stopped serve-headless on 127.0.0.2");
  ASSERT_NE(s_head, std::string::npos) << stop.out;
  ASSERT_NE(s_worker, std::string::npos) << stop.out;
  EXPECT_LT(s_head, s_worker);
  EXPECT_THAT(stop.out, HasSubstr("SIGTERM to pid " + std::to_string(head_pid) + " on the node"));
  EXPECT_FALSE(Alive(head_pid));
  EXPECT_FALSE(Alive(worker_pid));
  EXPECT_EQ(c.Run({"stop"}).rc, 0);
}

// A worker that exits early: `wait` fails naming the node, `status` says which; stop cleans up.
TEST(MultiNodeEndToEndTest, WorkerThatExitsEarlyFailsWaitNamingTheNode) {
  Cluster c("native");
  c.NodeEnv("127.0.0.2", {{"STANDIN_EXIT_AFTER_S", "4"}});
  c.NodeEnv("127.0.0.1", {{"STANDIN_READY_DELAY_S", "600"}});  // the API never answers
  auto start = c.Run({"start"});
  ASSERT_EQ(start.rc, 0) << start.out << start.err;
  auto wait = c.Run({"wait", "--timeout", "180", "--interval", "0.3"});
  EXPECT_EQ(wait.rc, 1) << wait.out << wait.err;
  EXPECT_THAT(wait.err, HasSubstr("node 127.0.0.2 (serve-headless) exited"));
  EXPECT_THAT(wait.err, HasSubstr("exiting with status 3"));  // its log's tail
  auto status = c.Run({"status"});
  EXPECT_TRUE(std::regex_search(status.out, std::regex("127\\.0\\.0\\.2 +serve-headless +exited")));
  EXPECT_THAT(status.out, HasSubstr("node 127.0.0.2 died"));
  auto stop = c.Run({"stop", "--grace", "20"});
  EXPECT_EQ(stop.rc, 0) << stop.out << stop.err;
  EXPECT_THAT(stop.out, HasSubstr("serve-headless on 127.0.0.2: not running (exited earlier)"));
  EXPECT_THAT(stop.out, HasSubstr("stopped serve on 127.0.0.1"));
}

// A Ray worker that exits during start: start fails naming it and stops the head it started.
TEST(MultiNodeEndToEndTest, RayWorkerThatExitsDuringStartFailsStartAndStopsTheHead) {
  Cluster c("ray");
  c.NodeEnv("127.0.0.2", {{"STANDIN_RAY_JOIN_DELAY_S", "600"}, {"STANDIN_EXIT_AFTER_S", "3"}});  // never joins
  auto start = c.Run({"start"});
  EXPECT_EQ(start.rc, 1) << start.out << start.err;
  EXPECT_THAT(start.err, HasSubstr("node 127.0.0.2 (ray-worker) exited"));
  EXPECT_THAT(start.err, HasSubstr("stopping what was started"));
  for (const auto& step : c.Nodes().steps) EXPECT_FALSE(Alive(step.pid)) << step.role << " on " << step.node;
  EXPECT_EQ(CallIndex(c.RemoteCalls(), "127.0.0.1", "standin_vllm.py"), -1);  // serve never started
}

// The gate: a node with 4 GPUs where the layout needs 8 is refused, naming the node; nothing starts.
TEST(MultiNodeEndToEndTest, NodeWithFourGpusIsRefusedNamingIt) {
  Cluster c("native");
  c.NodeGpus("127.0.0.2",
             "0, NVIDIA A100-SXM4-80GB, 81920\n1, NVIDIA A100-SXM4-80GB, 81920\n"
             "2, NVIDIA A100-SXM4-80GB, 81920\n3, NVIDIA A100-SXM4-80GB, 81920\n");
  auto start = c.Run({"start"});
  EXPECT_EQ(start.rc, 1) << start.out << start.err;
  EXPECT_THAT(start.err, HasSubstr("nodes: FAIL: 127.0.0.2 reports 4 GPUs (nvidia-smi), the layout needs 8 per node"));
  EXPECT_THAT(start.err, HasSubstr("start refused by the gates"));
  EXPECT_EQ(CallIndex(c.RemoteCalls(), "127.0.0.1", "standin_vllm.py"), -1);
  EXPECT_EQ(CallIndex(c.RemoteCalls(), "127.0.0.2", "standin_vllm.py"), -1);
  EXPECT_FALSE(std::filesystem::exists(c.RunDir() + "/state.json"));
}

// An unreachable node and a missing model are refused naming the node.
TEST(MultiNodeEndToEndTest, UnreachableNodeAndMissingModelAreRefused) {
  Cluster c("native");
  std::ofstream(c.standin() + "/unreachable-127.0.0.2") << "";
  auto start = c.Run({"start", "--dry-run"});
  EXPECT_EQ(start.rc, 1);
  EXPECT_THAT(start.err,
              HasSubstr("127.0.0.2: not reachable through the remote shell: exit 255: ssh: connect to host"));
  std::filesystem::remove(c.standin() + "/unreachable-127.0.0.2");
  c.env()["MODEL_PATH"] = c.dir() + "/nowhere";
  start = c.Run({"start", "--dry-run"});
  EXPECT_EQ(start.rc, 1);
  EXPECT_THAT(start.err, HasSubstr("127.0.0.1: sha256 of " + c.dir() + "/nowhere/config.json: not readable"));
}

// No local shell: a host name and a model path full of shell metacharacters reach the remote shell
// as given (one argument each), and arrive intact at `vllm` on the node after the node's shell has
// read the quoted command; no metacharacter runs anything, here or there.
TEST(MultiNodeEndToEndTest, MetacharactersInHostAndModelPathArriveIntact) {
  const std::string host = "node 1;touch PWNED_HOST|$(touch PWNED_SUBST)`touch PWNED_TICK`&'\"*";
  Cluster c("native", {"127.0.0.1", host}, "model dir;touch PWNED_MODEL $(touch PWNED_M2) 'q' \"d\" `x` \\ *");
  auto start = c.Run({"start"});
  ASSERT_EQ(start.rc, 0) << start.out << start.err;
  bool saw_host = false;
  for (const auto& call : c.RemoteCalls()) {
    ASSERT_EQ(call["words"].size(), 1u) << call.dump();  // the command as one word after the prefix
    saw_host = saw_host || call["host"] == host;
  }
  EXPECT_TRUE(saw_host);
  auto worker = c.VllmRecord(host);
  std::vector<std::string> argv = worker["argv"];
  EXPECT_EQ(argv[1], c.model());
  EXPECT_TRUE(HasPair(argv, "--master-addr", "127.0.0.1"));
  EXPECT_EQ(EnvOf(worker)["STANDIN_HOST"], host);
  EXPECT_EQ(c.VllmRecord("127.0.0.1")["argv"][1], c.model());
  EXPECT_THAT(start.out, HasSubstr("sha256 of " + c.model() + "/config.json"));  // the probe read it on both nodes
  // `touch` would have run in the working directory of ppdeploy (here or on the "node").
  for (const auto& entry : std::filesystem::recursive_directory_iterator(c.dir()))
    EXPECT_NE(entry.path().filename().string().rfind("PWNED", 0), 0u) << entry.path();
  for (const auto& entry : std::filesystem::directory_iterator("."))
    EXPECT_NE(entry.path().filename().string().rfind("PWNED", 0), 0u) << entry.path();
  auto stop = c.Run({"stop", "--grace", "20"});
  EXPECT_EQ(stop.rc, 0) << stop.out << stop.err;
  EXPECT_FALSE(Alive(worker["pid"].get<int>()));
}

}  // namespace
}  // namespace ppdeploy::launch
