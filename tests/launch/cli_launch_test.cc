// Acceptance of issue 4 through the real binary (PPDEPLOY_BINARY) with the seed's environment
// variables (docs/seed.md §12 command surface), and defaultcheck drift.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "deploy_test_util.h"
#include "launch/defaultcheck.h"
#include "launch/launch_test_util.h"
#include "launch/prepare.h"

namespace ppdeploy::launch {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::RunPpdeploy;
using testing::TempDir;

// Issue 23 (acceptance, item 3): for the seed `plan` and `cmd --format json` give the same largest max_model_len,
// and `MAX_MODEL_LEN=<plan's figure> ppdeploy cmd` passes (it was refused by the range's low end).
TEST(CliLaunchTest, PlansLargestMaxModelLenPassesCmd) {
  TempDir dir;
  auto plan = RunPpdeploy({"plan", "--format", "json", "--no-enumerate", "--no-optimize"}, {}, dir.path());
  ASSERT_EQ(plan.rc, 0) << plan.out << plan.err;
  const auto pj = nlohmann::json::parse(plan.out);
  const std::int64_t largest = pj["detailed"][0]["largest_max_model_len"].get<std::int64_t>();
  auto cmd = RunPpdeploy({"cmd", "--format", "json"}, {}, dir.path());
  ASSERT_EQ(cmd.rc, 0) << cmd.out << cmd.err;
  const auto cj = nlohmann::json::parse(cmd.out);
  EXPECT_EQ(cj["plan"]["largest_max_model_len"].get<std::int64_t>(), largest);
  EXPECT_EQ(cj["plan"]["feasible"], pj["detailed"][0]["feasible"]);
  auto at = RunPpdeploy({"cmd"}, {{"MAX_MODEL_LEN", std::to_string(largest)}}, dir.path());
  EXPECT_EQ(at.rc, 0) << at.out << at.err;
  EXPECT_THAT(at.out, HasSubstr("Result: launch allowed"));
  // The layout asked for does not serve 1M tokens: `plan` prints "problem:" and exits 2 (README: a check found a
  // problem); `cmd` refuses it (exit 1).
  auto big = RunPpdeploy({"plan", "--no-enumerate", "--no-optimize"}, {{"MAX_MODEL_LEN", "1048576"}}, dir.path());
  EXPECT_EQ(big.rc, 2) << big.out << big.err;
  EXPECT_THAT(big.out, HasSubstr("problem: "));
  EXPECT_EQ(RunPpdeploy({"cmd"}, {{"MAX_MODEL_LEN", "1048576"}}, dir.path()).rc, 1);
}

TEST(CliLaunchTest, DefaultsPass) {
  TempDir dir;
  auto r = RunPpdeploy({"cmd"}, {}, dir.path());
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("Result: launch allowed"));
  EXPECT_THAT(r.out, HasSubstr("--speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":3}'"));
  EXPECT_THAT(r.out, HasSubstr("-e VLLM_USE_V2_MODEL_RUNNER=1"));
  EXPECT_THAT(r.out, HasSubstr("tp_size"));
}

TEST(CliLaunchTest, Pp4Tp2Refused) {
  TempDir dir;
  auto r = RunPpdeploy({"cmd"}, {{"PP_SIZE", "4"}, {"TP_SIZE", "2"}}, dir.path());
  EXPECT_EQ(r.rc, 1);
  EXPECT_THAT(r.out, HasSubstr("[FAIL] dsa-pp"));
  EXPECT_THAT(r.out, HasSubstr("45% with MTP k=3"));
  auto start = RunPpdeploy({"start", "--dry-run"}, {{"PP_SIZE", "4"}, {"TP_SIZE", "2"}}, dir.path());
  EXPECT_EQ(start.rc, 1);
  EXPECT_THAT(start.err, HasSubstr("start refused by the gates"));
}

TEST(CliLaunchTest, EscapeHatchFor1MContextPassesWithWarning) {
  // docs/seed.md §12: research only; the planner predicts a TP2/PP4 pool above 1M tokens (seed: 1,199,872).
  TempDir dir;
  std::map<std::string, std::string> env{{"ALLOW_UNVERIFIED_PP", "1"},
                                         {"TP_SIZE", "2"},
                                         {"PP_SIZE", "4"},
                                         {"PP_LAYER_PARTITION", "20,20,20,18"},
                                         {"MAX_MODEL_LEN", "1048576"},
                                         {"DISABLE_CUSTOM_ALL_REDUCE", "1"}};
  auto r = RunPpdeploy({"cmd"}, env, dir.path());
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("[warn] dsa-pp: WARNING"));
  EXPECT_THAT(r.out, HasSubstr("ppdeploy degen"));
  EXPECT_THAT(r.out, HasSubstr("[pass] memory: "));
  auto start = RunPpdeploy({"start", "--dry-run"}, env, dir.path());
  EXPECT_EQ(start.rc, 0) << start.out << start.err;
  EXPECT_THAT(start.err, HasSubstr("WARNING"));
}

TEST(CliLaunchTest, BadSplitsExitOneNamingTheProblem) {
  TempDir dir;
  const std::vector<std::pair<std::string, std::string>> cases{
      {"41,38", "sum(partitions)=79 does not match num_hidden_layers=78."},
      {"41,37,0", "len(partitions)=3 does not match pp_size=2."},
      {"41,x", "Invalid partition string: 41,x"},
      {"41,,37", "Invalid partition string: 41,,37"},
  };
  for (const auto& [split, message] : cases) {
    auto r = RunPpdeploy({"cmd"}, {{"PP_LAYER_PARTITION", split}}, dir.path());
    EXPECT_EQ(r.rc, 1) << split;
    EXPECT_THAT(r.out, HasSubstr(message)) << split;
    auto flag = RunPpdeploy({"cmd", "--pp-layer-partition", split}, {}, dir.path());
    EXPECT_EQ(flag.rc, 1) << split;
  }
}

TEST(CliLaunchTest, ShowsWhereEachSettingCameFrom) {
  TempDir dir;
  {
    std::ofstream f(dir.path() + "/ppdeploy.toml");
    f << "port = 9001\nmax_model_len = 262144\nkv_cache_dtype = \"bfloat16\"\n";
  }
  auto r = RunPpdeploy({"cmd", "--port", "9002", "--format", "json"}, {{"MAX_MODEL_LEN", "131072"}}, dir.path());
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["schema"], "ppdeploy.launch-cmd/2");
  std::map<std::string, std::pair<std::string, std::string>> s;
  for (const auto& e : j["settings"]) s[e["key"]] = {e["value"], e["source"]};
  EXPECT_EQ(s["port"], std::make_pair(std::string("9002"), std::string("flag")));
  EXPECT_EQ(s["max_model_len"], std::make_pair(std::string("131072"), std::string("env")));
  EXPECT_EQ(s["kv_cache_dtype"], std::make_pair(std::string("bfloat16"), std::string("file")));
  EXPECT_EQ(s["tp_size"], std::make_pair(std::string("4"), std::string("default")));
}

TEST(CliLaunchTest, BadSettingIsAnErrorNamingIt) {
  TempDir dir;
  auto r = RunPpdeploy({"cmd"}, {{"TP_SIZE", "four"}}, dir.path());
  EXPECT_EQ(r.rc, 1);
  EXPECT_THAT(r.err, HasSubstr("ppdeploy: error: tp_size (env TP_SIZE): expected an integer"));
  auto missing = RunPpdeploy({"cmd", "--profile", "nope.toml"}, {}, dir.path());
  EXPECT_EQ(missing.rc, 1);
  EXPECT_THAT(missing.err, HasSubstr("nope.toml: cannot read"));
}

TEST(DefaultcheckTest, DefaultsMatchCommittedExpectation) {
  TempDir dir;
  auto r = RunPpdeploy({"defaultcheck"}, {}, dir.path());
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("defaultcheck: OK: 42 argv elements"));
}

TEST(DefaultcheckTest, ChangedDefaultIsDriftExitTwo) {
  TempDir dir;
  // One default changed in a defaults file.
  std::string defaults = DefaultDeploymentText();
  auto pos = defaults.find("max_model_len = 524288");
  ASSERT_NE(pos, std::string::npos);
  defaults.replace(pos, 22, "max_model_len = 262144");
  {
    std::ofstream f(dir.path() + "/changed.toml");
    f << defaults;
  }
  auto r = RunPpdeploy({"defaultcheck", "--defaults", "changed.toml"}, {}, dir.path());
  EXPECT_EQ(r.rc, 2) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("- argv[37] \"524288\""));
  EXPECT_THAT(r.out, HasSubstr("+ argv[37] \"262144\""));
  // An environment override drifts too, and names where it came from.
  auto env = RunPpdeploy({"defaultcheck"}, {{"PP_LAYER_PARTITION", "39,39"}}, dir.path());
  EXPECT_EQ(env.rc, 2);
  EXPECT_THAT(env.out, HasSubstr("+ env VLLM_PP_LAYER_PARTITION=\"39,39\""));
  EXPECT_THAT(env.out, HasSubstr("pp_layer_partition=39,39 (env PP_LAYER_PARTITION)"));
}

TEST(DefaultcheckTest, PureComparisonFindsOrderChangesAndEnv) {
  RenderedLaunch r;
  r.steps.push_back({"local", "serve", {"vllm", "serve", "m", "--a", "1", "--b", "2"}, {}});
  r.injected_env = {{"VLLM_USE_V2_MODEL_RUNNER", "1"}};
  ExpectedDefault e{{"vllm", "serve", "m", "--a", "1", "--b", "2"}, {{"VLLM_USE_V2_MODEL_RUNNER", "1"}}};
  EXPECT_FALSE(CompareToExpected(r, e).drift);
  ExpectedDefault reordered{{"vllm", "serve", "m", "--b", "2", "--a", "1"}, {{"VLLM_USE_V2_MODEL_RUNNER", "1"}}};
  EXPECT_TRUE(CompareToExpected(r, reordered).drift);
  ExpectedDefault env{{"vllm", "serve", "m", "--a", "1", "--b", "2"},
                      {{"VLLM_USE_V2_MODEL_RUNNER", "0"}, {"VLLM_PP_LAYER_PARTITION", "41,37"}}};
  auto d = CompareToExpected(r, env);
  EXPECT_TRUE(d.drift);
  EXPECT_THAT(d.lines, ::testing::Contains("- env VLLM_PP_LAYER_PARTITION=\"41,37\""));
  EXPECT_THAT(d.lines, ::testing::Contains("+ env VLLM_USE_V2_MODEL_RUNNER=\"1\""));
  // The committed expectation parses back and matches the built-in default rendering.
  auto prepared = PrepareLaunch(ppdeploy::testing::ResolvedWith());
  auto committed = ParseExpectedDefault(ExpectedDefaultJson(prepared.rendered), "generated");
  EXPECT_FALSE(CompareToExpected(prepared.rendered, committed).drift);
}

TEST(CliLaunchTest, HelpHasExamples) {
  TempDir dir;
  for (const std::string cmd : {"plan", "preflight", "calibrate", "cmd", "defaultcheck", "start", "wait", "stop",
                                "status", "logs", "degen", "needle", "probe", "verify", "verdict", "bench", "sim"}) {
    auto r = RunPpdeploy({cmd, "--help"}, {}, dir.path());
    EXPECT_EQ(r.rc, 0) << cmd;
    EXPECT_THAT(r.out, HasSubstr("Examples:")) << cmd;
    EXPECT_THAT(r.out, HasSubstr("ppdeploy " + cmd)) << cmd;
  }
}

}  // namespace
}  // namespace ppdeploy::launch

namespace ppdeploy::launch {
namespace {

// Issue 8: with a vLLM that reads index_topk_pattern (profile 0.30 upstream), `cmd` renders ONE
// --hf-overrides argument whose JSON merges the user's HF_OVERRIDES with the split's pattern.
TEST(CliLaunchTest, PatternFixMergesHfOverrides) {
  TempDir dir;
  std::map<std::string, std::string> env{{"VLLM_VERSION", "0.30"},
                                         {"HF_OVERRIDES", R"({"max_position_embeddings": 1048576})"},
                                         {"ALLOW_UNCHECKED_INDEXER", "1"},
                                         {"RUNTIME", "bare"}};
  auto r = RunPpdeploy({"cmd", "--format", "json"}, env, dir.path());
  ASSERT_EQ(r.rc, 0) << r.out << r.err;
  auto j = nlohmann::json::parse(r.out);
  std::vector<std::string> argv = j["steps"][0]["argv"];
  int count = 0;
  std::string value;
  for (size_t i = 0; i + 1 < argv.size(); ++i)
    if (argv[i] == "--hf-overrides") {
      ++count;
      value = argv[i + 1];
    }
  EXPECT_EQ(count, 1);
  auto merged = nlohmann::json::parse(value);
  EXPECT_EQ(merged["max_position_embeddings"], 1048576);
  std::string pattern = merged["index_topk_pattern"];
  ASSERT_EQ(pattern.size(), 78u);
  EXPECT_EQ(pattern[41], 'F');  // 41,37: F added at 41 only
  EXPECT_EQ(pattern[40], 'S');
  // Without the waiver the unchecked checkpoint refuses the launch.
  env.erase("ALLOW_UNCHECKED_INDEXER");
  EXPECT_EQ(RunPpdeploy({"cmd"}, env, dir.path()).rc, 1);
  // 42,36 needs no override: none is rendered.
  env["PP_LAYER_PARTITION"] = "42,36";
  auto z = RunPpdeploy({"cmd", "--format", "json"}, env, dir.path());
  ASSERT_EQ(z.rc, 0) << z.out << z.err;
  std::string zargv = nlohmann::json::parse(z.out)["steps"][0]["argv"].dump();
  EXPECT_EQ(zargv.find("index_topk_pattern"), std::string::npos);
}

}  // namespace
}  // namespace ppdeploy::launch

namespace ppdeploy::launch {
namespace {

const std::map<std::string, std::string> kTwoNodeEnv = {{"TP_SIZE", "8"},
                                                        {"PP_SIZE", "2"},
                                                        {"NODES", "10.0.0.1,10.0.0.2"},
                                                        {"NCCL_SOCKET_IFNAME", "ib0"},
                                                        {"GLOO_SOCKET_IFNAME", "ib0"},
                                                        {"RUNTIME", "bare"}};

// Issue 16: `cmd` shows every node's argv and environment, and what ppdeploy spawns for it here:
// the remote shell prefix with the host, then the node's command as one shell-quoted word.
TEST(CliLaunchTest, MultiNodeCmdShowsEveryNodesArgvEnvironmentAndRemoteShellArgv) {
  TempDir dir;
  auto text = RunPpdeploy({"cmd"}, kTwoNodeEnv, dir.path());
  EXPECT_EQ(text.rc, 0) << text.out << text.err;
  EXPECT_THAT(text.out, HasSubstr("# step 1 on 10.0.0.2 (serve-headless)"));
  EXPECT_THAT(text.out, HasSubstr("# step 2 on 10.0.0.1 (serve)"));
  EXPECT_THAT(text.out, HasSubstr("VLLM_HOST_IP=10.0.0.2 \\\n"));
  EXPECT_THAT(text.out, HasSubstr("through the remote shell (no local shell): ssh -o BatchMode=yes '{host}' --"));
  EXPECT_THAT(text.out, HasSubstr("[pass] multi-node: native executor over 2 nodes (10.0.0.1, 10.0.0.2)"));
  auto json = RunPpdeploy({"cmd", "--format", "json"}, kTwoNodeEnv, dir.path());
  ASSERT_EQ(json.rc, 0) << json.err;
  auto j = nlohmann::json::parse(json.out);
  ASSERT_EQ(j["steps"].size(), 2u);
  const auto& worker = j["steps"][0];
  EXPECT_EQ(worker["node"], "10.0.0.2");
  EXPECT_EQ(worker["env"]["NCCL_SOCKET_IFNAME"], "ib0");
  EXPECT_EQ(worker["env"]["VLLM_HOST_IP"], "10.0.0.2");
  std::vector<std::string> local = worker["local_argv"];
  ASSERT_EQ(local.size(), 6u);  // the 5 words of the default prefix, then the command
  EXPECT_EQ(std::vector<std::string>(local.begin(), local.end() - 1),
            (std::vector<std::string>{"ssh", "-o", "BatchMode=yes", "10.0.0.2", "--"}));
  EXPECT_THAT(local.back(), HasSubstr("ppdeploy-remote env CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7"));
  EXPECT_THAT(local.back(), HasSubstr("--node-rank 1 --master-addr 10.0.0.1 --master-port 29501 --headless"));
}

// `defaultcheck` checks every node's step against an expectation written for that deployment.
TEST(DefaultcheckTest, MultiNodeStepsAgainstTheirExpectation) {
  TempDir dir;
  auto write =
      RunPpdeploy({"defaultcheck", "--write-expected", "two.json", "--expected", "two.json"}, kTwoNodeEnv, dir.path());
  EXPECT_EQ(write.rc, 0) << write.out << write.err;
  EXPECT_THAT(write.out, HasSubstr("defaultcheck: OK: 2 steps match two.json"));
  EXPECT_THAT(write.out, HasSubstr("serve-headless on 10.0.0.2:"));
  auto doc = nlohmann::json::parse(testing::ReadAll(dir.path() + "/two.json"));
  EXPECT_EQ(doc["schema"], "ppdeploy.expected-default/2");
  EXPECT_EQ(doc["steps"][1]["env"]["VLLM_HOST_IP"], "10.0.0.1");
  auto env = kTwoNodeEnv;
  env["GLOO_SOCKET_IFNAME"] = "eth0";
  auto drift = RunPpdeploy({"defaultcheck", "--expected", "two.json"}, env, dir.path());
  EXPECT_EQ(drift.rc, 2) << drift.out;
  EXPECT_THAT(drift.out, HasSubstr("- step 0 (serve-headless on 10.0.0.2) env GLOO_SOCKET_IFNAME=\"ib0\""));
  EXPECT_THAT(drift.out, HasSubstr("+ step 1 (serve on 10.0.0.1) env GLOO_SOCKET_IFNAME=\"eth0\""));
  env = kTwoNodeEnv;
  env["NODES"] = "10.0.0.1,10.0.0.3";
  drift = RunPpdeploy({"defaultcheck", "--expected", "two.json"}, env, dir.path());
  EXPECT_EQ(drift.rc, 2);
  EXPECT_THAT(drift.out, HasSubstr("+ step 0 node \"10.0.0.3\" role \"serve-headless\""));
  // The single-node expectation does not pass for a multi-node deployment.
  auto single = RunPpdeploy({"defaultcheck"}, kTwoNodeEnv, dir.path());
  EXPECT_EQ(single.rc, 2);
  EXPECT_THAT(single.out, HasSubstr("the deployment is multi-node (2 steps)"));
}

}  // namespace
}  // namespace ppdeploy::launch
