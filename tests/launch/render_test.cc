// Rendering of the vllm serve command: the seed's default deployment, per-version flags,
// multi-node, and a shell preview that round-trips through /bin/sh with hostile values.
#include "launch/render.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "deploy_test_util.h"
#include "launch/launch_test_util.h"
#include "launch/prepare.h"

namespace ppdeploy::launch {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::TempDir;

PreparedLaunch Prepare(std::map<std::string, std::string> flags) {
  return PrepareLaunch(ppdeploy::testing::ResolvedWith(flags));
}

TEST(RenderTest, DefaultIsTheSeedDeployment) {
  auto p = Prepare({});
  ASSERT_EQ(p.rendered.steps.size(), 1u);
  const auto& argv = p.rendered.steps[0].argv;
  auto has_pair = [&](const std::string& flag, const std::string& value) {
    for (size_t i = 0; i + 1 < argv.size(); ++i)
      if (argv[i] == flag && argv[i + 1] == value) return true;
    return false;
  };
  // docs/seed.md §5/§8/§11: TP4/PP2 + 41,37 + fp8_ds_mla + MTP k=3, 524,288, 0.95, V2 runner pinned.
  EXPECT_TRUE(has_pair("--tensor-parallel-size", "4"));
  EXPECT_TRUE(has_pair("--pipeline-parallel-size", "2"));
  EXPECT_TRUE(has_pair("--kv-cache-dtype", "fp8_ds_mla"));
  EXPECT_TRUE(has_pair("--max-model-len", "524288"));
  EXPECT_TRUE(has_pair("--gpu-memory-utilization", "0.95"));
  EXPECT_TRUE(has_pair("--speculative-config", R"({"method":"mtp","num_speculative_tokens":3})"));
  EXPECT_TRUE(has_pair("-e", "VLLM_PP_LAYER_PARTITION=41,37"));
  EXPECT_TRUE(has_pair("-e", "VLLM_USE_V2_MODEL_RUNNER=1"));
  EXPECT_TRUE(has_pair("--gpus", "\"device=0,1,2,3,4,5,6,7\""));
  EXPECT_THAT(p.rendered.injected_env,
              ElementsAre(EnvVar{"VLLM_PP_LAYER_PARTITION", "41,37"}, EnvVar{"VLLM_USE_V2_MODEL_RUNNER", "1"}));
  EXPECT_EQ(argv[0], "docker");
  EXPECT_EQ(std::count(argv.begin(), argv.end(), "--disable-custom-all-reduce"), 0);
  EXPECT_THAT(PreviewStep(p.rendered.steps[0], false, false), HasSubstr(R"(--gpus '"device=0,1,2,3,4,5,6,7"')"));
}

TEST(RenderTest, BareRuntimeSetsEnvironmentAndOmitsPpFlagAtPp1) {
  auto p = Prepare({{"runtime", "bare"}, {"tp_size", "8"}, {"pp_size", "1"}, {"max_model_len", "352000"}});
  const auto& step = p.rendered.steps[0];
  EXPECT_EQ(step.argv[0], "vllm");
  EXPECT_EQ(step.argv[1], "serve");
  EXPECT_EQ(std::count(step.argv.begin(), step.argv.end(), "--pipeline-parallel-size"), 0);
  // PP=1: partition ignored (not passed), runner left to vLLM.
  EXPECT_THAT(step.env, ElementsAre(EnvVar{"CUDA_VISIBLE_DEVICES", "0,1,2,3,4,5,6,7"}));
  EXPECT_THAT(PreviewStep(step, true, false), HasSubstr("CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7 vllm serve"));
}

TEST(RenderTest, Tp2AddsDisableCustomAllReduce) {
  auto p = Prepare({{"tp_size", "2"}, {"pp_size", "4"}, {"pp_layer_partition", "20,20,20,18"}});
  const auto& argv = p.rendered.steps[0].argv;
  EXPECT_EQ(std::count(argv.begin(), argv.end(), "--disable-custom-all-reduce"), 1);
}

TEST(RenderTest, LegacySpeculationFlagsAndKvCacheMemoryBytes) {
  // A row without --speculative-config (vLLM before ~0.8) gets the legacy flags.
  auto old = Prepare({{"pp_size", "1"}, {"tp_size", "8"}});
  old.deployment.planner.vllm.speculative_config_json = false;
  auto serve = ServeArgs(old.deployment, old.gates.hf_overrides);
  EXPECT_EQ(std::count(serve.begin(), serve.end(), "--speculative-config"), 0);
  EXPECT_EQ(std::count(serve.begin(), serve.end(), "--num-speculative-tokens"), 1);
  auto bytes = Prepare({{"kv_cache_memory_bytes", "17000000000"}});
  serve = ServeArgs(bytes.deployment, bytes.gates.hf_overrides);
  EXPECT_EQ(std::count(serve.begin(), serve.end(), "--kv-cache-memory-bytes"), 1);
  auto refused = Prepare({{"kv_cache_memory_bytes", "17000000000"},
                          {"vllm_version", "0.10"},
                          {"pp_size", "1"},
                          {"tp_size", "8"},
                          {"kv_cache_dtype", "fp8"}});
  EXPECT_TRUE(refused.gates.Refused());
}

TEST(RenderTest, MultiNodeRayWithoutNativeFlags) {
  auto p = Prepare({{"tp_size", "8"},
                    {"pp_size", "2"},
                    {"pp_layer_partition", "41,37"},
                    {"vllm_version", "0.11"},
                    {"runtime", "bare"},
                    {"nodes", "n0,n1"},
                    {"kv_cache_dtype", "fp8"}});
  ASSERT_TRUE(p.rendered.multi_node);
  EXPECT_EQ(p.rendered.executor, "ray");
  ASSERT_EQ(p.rendered.steps.size(), 3u);
  // --block: `ray start` stays in the foreground, so its remote shell lives as long as the node's Ray.
  EXPECT_THAT(p.rendered.steps[0].argv, ElementsAre("ray", "start", "--head", "--port", "6379", "--block"));
  EXPECT_THAT(p.rendered.steps[1].argv, ElementsAre("ray", "start", "--address", "n0:6379", "--block"));
  EXPECT_EQ(p.rendered.steps[1].node, "n1");
  const auto& serve = p.rendered.steps[2].argv;
  EXPECT_EQ(serve[0], "vllm");
  EXPECT_THAT(std::vector<std::string>(serve.end() - 2, serve.end()),
              ElementsAre("--distributed-executor-backend", "ray"));
}

TEST(RenderTest, MultiNodeEnvironmentRayBinAndAddresses) {
  // Every step carries the interfaces and, on nodes named by an address, VLLM_HOST_IP and Ray's
  // --node-ip-address (a remote shell forwards no environment).
  auto p = Prepare({{"tp_size", "8"},
                    {"pp_size", "2"},
                    {"runtime", "bare"},
                    {"executor", "ray"},
                    {"ray_bin", "/opt/ray/bin/ray"},
                    {"nodes", "10.0.0.1,10.0.0.2"},
                    {"nccl_socket_ifname", "ib0"},
                    {"gloo_socket_ifname", "eth0"}});
  ASSERT_EQ(p.rendered.steps.size(), 3u);
  EXPECT_THAT(p.rendered.steps[1].argv, ElementsAre("/opt/ray/bin/ray", "start", "--address", "10.0.0.1:6379",
                                                    "--node-ip-address", "10.0.0.2", "--block"));
  EXPECT_THAT(p.rendered.steps[1].env,
              ElementsAre(EnvVar{"CUDA_VISIBLE_DEVICES", "0,1,2,3,4,5,6,7"}, EnvVar{"VLLM_PP_LAYER_PARTITION", "41,37"},
                          EnvVar{"VLLM_USE_V2_MODEL_RUNNER", "1"}, EnvVar{"NCCL_SOCKET_IFNAME", "ib0"},
                          EnvVar{"GLOO_SOCKET_IFNAME", "eth0"}, EnvVar{"VLLM_HOST_IP", "10.0.0.2"}));
  EXPECT_EQ(p.rendered.steps[2].env.back(), (EnvVar{"VLLM_HOST_IP", "10.0.0.1"}));
  // Docker: the Ray containers run in the foreground (no -d) and get the same variables as -e.
  auto d = Prepare({{"tp_size", "8"},
                    {"pp_size", "2"},
                    {"executor", "ray"},
                    {"nodes", "10.0.0.1,10.0.0.2"},
                    {"nccl_socket_ifname", "ib0"},
                    {"gloo_socket_ifname", "eth0"}});
  const auto& head = d.rendered.steps[0].argv;
  EXPECT_EQ(std::count(head.begin(), head.end(), "-d"), 0);
  EXPECT_EQ(std::count(head.begin(), head.end(), "NCCL_SOCKET_IFNAME=ib0"), 1);
  EXPECT_EQ(std::count(head.begin(), head.end(), "VLLM_HOST_IP=10.0.0.1"), 1);
  EXPECT_EQ(head.back(), "--block");
  EXPECT_FALSE(IsIpLiteral("head.local"));
  EXPECT_TRUE(IsIpLiteral("fd00::1"));
  EXPECT_TRUE(IsIpLiteral("[fd00::1]"));
}

TEST(RenderTest, MultiNodeNativeFlags) {
  auto p = Prepare({{"tp_size", "8"}, {"pp_size", "2"}, {"nodes", "head.local,w1.local"}});
  ASSERT_EQ(p.rendered.executor, "native");
  ASSERT_EQ(p.rendered.steps.size(), 2u);
  auto tail = [](const std::vector<std::string>& v, size_t n) {
    return std::vector<std::string>(v.end() - n, v.end());
  };
  // The headless worker first, then the head (vLLM's docs: --nnodes/--node-rank/--master-addr,
  // --headless on the workers; --master-port is ParallelConfig.master_port, 29501 by default).
  EXPECT_EQ(p.rendered.steps[0].node, "w1.local");
  EXPECT_EQ(p.rendered.steps[0].role, "serve-headless");
  EXPECT_THAT(tail(p.rendered.steps[0].argv, 9), ElementsAre("--nnodes", "2", "--node-rank", "1", "--master-addr",
                                                             "head.local", "--master-port", "29501", "--headless"));
  EXPECT_EQ(p.rendered.steps[1].node, "head.local");
  EXPECT_EQ(p.rendered.steps[1].role, "serve");
  EXPECT_THAT(tail(p.rendered.steps[1].argv, 8), ElementsAre("--nnodes", "2", "--node-rank", "0", "--master-addr",
                                                             "head.local", "--master-port", "29501"));
  EXPECT_EQ(std::count(p.rendered.steps[0].argv.begin(), p.rendered.steps[0].argv.end(), "--network=host"), 1);
}

TEST(ShellQuoteTest, QuotesOnlyWhatNeedsIt) {
  EXPECT_EQ(ShellQuote("--max-model-len"), "--max-model-len");
  EXPECT_EQ(ShellQuote("VLLM_PP_LAYER_PARTITION=41,37"), "VLLM_PP_LAYER_PARTITION=41,37");
  EXPECT_EQ(ShellQuote(""), "''");
  EXPECT_EQ(ShellQuote("a b"), "'a b'");
  EXPECT_EQ(ShellQuote("it's"), "'it'\\''s'");
  EXPECT_EQ(ShellQuote("$(id)"), "'$(id)'");
  EXPECT_EQ(ShellQuote("~/x"), "'~/x'");
}

/// Runs `script` with /bin/sh -c and returns its stdout.
std::string RunSh(const std::string& script, const std::string& dir) {
  std::string out_path = dir + "/sh.out";
  std::vector<std::string> args{"/bin/sh", "-c", script};
  std::vector<char*> argp;
  for (auto& a : args) argp.push_back(a.data());
  argp.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  char* envp[] = {const_cast<char*>("PATH=/usr/bin:/bin"), nullptr};
  EXPECT_EQ(posix_spawn(&pid, "/bin/sh", &fa, nullptr, argp.data(), envp), 0);
  posix_spawn_file_actions_destroy(&fa);
  int status = 0;
  waitpid(pid, &status, 0);
  return testing::ReadAll(out_path);
}

std::vector<std::string> SplitNul(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\0') {
      out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  return out;
}

TEST(ShellPreviewTest, HostileValuesRoundTripThroughSh) {
  TempDir dir;
  // A stand-in executable that prints its argv (NUL-separated), then two environment variables.
  const std::string dump = dir.path() + "/argv dump";
  {
    std::ofstream f(dump);
    f << "#!/bin/sh\nprintf '%s\\0' \"$0\" \"$@\"\nprintf 'ENV\\0%s\\0%s\\0' \"$VLLM_PP_LAYER_PARTITION\" "
         "\"$CUDA_VISIBLE_DEVICES\"\n";
  }
  chmod(dump.c_str(), 0755);
  const std::string hostile_name = "my model 'q' \"dq\" ; $(touch " + dir.path() + "/pwned) `id` \\ \nline2 & | > *";
  const std::string hostile_overrides = "{\"x\": \"it's; $(rm -rf /) `id` $HOME\",\n \"y\": [1, 2]}";
  const std::string hostile_path = "/models/a b;$(touch " + dir.path() + "/pwned2)";
  for (const std::string runtime : {"bare", "docker"}) {
    auto p = Prepare({{"runtime", runtime},
                      {"vllm_bin", dump},
                      {"docker_bin", dump},
                      {"served_model_name", hostile_name},
                      {"hf_overrides", hostile_overrides},
                      {"model_path", hostile_path},
                      {"volumes", "/data/my models:/models;/x:/y"},
                      {"pp_layer_partition", " 41, 37"}});
    const auto& step = p.rendered.steps.at(0);
    for (bool multiline : {false, true}) {
      std::string preview = PreviewStep(step, runtime == "bare", multiline);
      auto words = SplitNul(RunSh(preview, dir.path()));
      ASSERT_GE(words.size(), step.argv.size() + 3) << preview;
      std::vector<std::string> got_argv(words.begin(), words.begin() + static_cast<long>(step.argv.size()));
      EXPECT_EQ(got_argv, step.argv) << preview;
      EXPECT_EQ(words[step.argv.size()], "ENV");
      if (runtime == "bare") {
        EXPECT_EQ(words[step.argv.size() + 1], " 41, 37");
        EXPECT_EQ(words[step.argv.size() + 2], "0,1,2,3,4,5,6,7");
      }
      EXPECT_FALSE(std::filesystem::exists(dir.path() + "/pwned"));
      EXPECT_FALSE(std::filesystem::exists(dir.path() + "/pwned2"));
    }
    EXPECT_EQ(std::count(step.argv.begin(), step.argv.end(), hostile_name), 1);
    EXPECT_EQ(std::count(step.argv.begin(), step.argv.end(), hostile_overrides), 1);
  }
}

}  // namespace
}  // namespace ppdeploy::launch
