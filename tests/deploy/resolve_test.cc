// Issue 11: one deployment model. For the same settings, `plan`, `cmd` and the pool `wait`
// predicts are the same number; every front-end resolves to the same deployment; one version
// table with one resolution rule; layout sanity; the layers point one way.
#include "deploy/resolve.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "cli/deployment_options.h"
#include "cli_runner.h"
#include "deploy/plan.h"
#include "deploy_test_util.h"
#include "launch/prepare.h"
#include "test_util.h"

namespace ppdeploy {
namespace {

using testing::ErrorOf;
using ::testing::HasSubstr;

/// `ppdeploy <cmd> --format json` with `env` (a shell prefix of NAME=value words).
nlohmann::json JsonOf(const std::string& env, const std::string& args) {
  std::string cmd = "env -i PATH=\"$PATH\" HOME=/nonexistent " + env + " " + std::string(PPDEPLOY_BINARY) + " " + args +
                    " --format json 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  pclose(p);
  return nlohmann::json::parse(out, nullptr, false);
}

// The acceptance list of issue 11: the default; PP_LAYER_PARTITION=39,39; TP_SIZE=8 PP_SIZE=1
// MAX_MODEL_LEN=352000; KV_CACHE_DTYPE=bfloat16 MAX_MODEL_LEN=262144; SPEC_METHOD=none;
// --enable-expert-parallel (docs/seed.md §5, §6, §11, §12).
TEST(OneDeploymentTest, PlanCmdAndWaitPredictTheSamePool) {
  const std::vector<std::pair<std::map<std::string, std::string>, std::string>> cases{
      {{}, ""},
      {{{"PP_LAYER_PARTITION", "39,39"}}, "PP_LAYER_PARTITION=39,39"},
      {{{"TP_SIZE", "8"}, {"PP_SIZE", "1"}, {"MAX_MODEL_LEN", "352000"}}, "TP_SIZE=8 PP_SIZE=1 MAX_MODEL_LEN=352000"},
      {{{"KV_CACHE_DTYPE", "bfloat16"}, {"MAX_MODEL_LEN", "262144"}}, "KV_CACHE_DTYPE=bfloat16 MAX_MODEL_LEN=262144"},
      {{{"SPEC_METHOD", "none"}}, "SPEC_METHOD=none"},
      {{{"ENABLE_EXPERT_PARALLEL", "1"}}, "ENABLE_EXPERT_PARALLEL=1"},
  };
  for (const auto& [env, shell] : cases) {
    // cmd and start: the launch front-end.
    nlohmann::json cmd = JsonOf(shell, "cmd");
    ASSERT_TRUE(cmd.is_object()) << shell;
    const std::int64_t cmd_pool = cmd["plan"]["kv_tokens"];
    // plan: the same environment; its detailed layout is the launched one.
    nlohmann::json plan = JsonOf(shell, "plan --no-enumerate --no-optimize");
    ASSERT_TRUE(plan.is_object()) << shell;
    EXPECT_EQ(plan["detailed"][0]["kv_tokens"], cmd_pool) << shell;
    // wait: the request `start` stores, read back and resolved again.
    ResolvedDeployment launched = ResolveDeploymentFrom(testing::TestSettingInputs({}, env));
    ResolvedDeployment stored =
        ResolveStoredDeployment(nlohmann::json::parse(SettingsToJson(launched.request.settings).dump()), "state.json");
    EXPECT_EQ(PlanLayout(stored.planner, stored.layout).pool.kv_tokens, cmd_pool) << shell;
    EXPECT_EQ(stored.spec_method, launched.spec_method) << shell;
  }
  // The same settings as plan flags (the planning front-end) give the same number.
  nlohmann::json flags = JsonOf("", "plan --tp 8 --pp 1 --max-model-len 352000 --no-enumerate --no-optimize");
  nlohmann::json env = JsonOf("TP_SIZE=8 PP_SIZE=1 MAX_MODEL_LEN=352000", "cmd");
  EXPECT_EQ(flags["detailed"][0]["kv_tokens"], env["plan"]["kv_tokens"]);
  nlohmann::json ep =
      JsonOf("", "cmd --enable-expert-parallel --max-num-seqs 64 --block-size 64 --gpu-total-gib 79.25");
  nlohmann::json ep_plan = JsonOf("",
                                  "plan --enable-expert-parallel --max-num-seqs 64 --block-size 64 --gpu-total-gib "
                                  "79.25 --no-enumerate --no-optimize");
  EXPECT_EQ(ep["plan"]["kv_tokens"], ep_plan["detailed"][0]["kv_tokens"]);
  EXPECT_EQ(ep["plan"]["block_size"], 64);
}

// Issue 13 acceptance, through the binary as an operator types it: `TP_SIZE=8 PP_SIZE=1
// MAX_MODEL_LEN=352000 ppdeploy cmd` passes the memory gate (docs/seed.md §5 / §11: the seed ran
// this layout in production, pool 386,943 tokens), on the low end of the predicted range.
TEST(OneDeploymentTest, SeedTp8Pp1At352000CmdPassesTheMemoryGate) {
  nlohmann::json cmd = JsonOf("TP_SIZE=8 PP_SIZE=1 MAX_MODEL_LEN=352000", "cmd");
  ASSERT_TRUE(cmd.is_object());
  EXPECT_EQ(cmd["refused"], false);
  EXPECT_EQ(cmd["exit_code"], 0);
  const nlohmann::json* memory = nullptr;
  for (const auto& g : cmd["gates"])
    if (g["gate"] == "memory") memory = &g;
  ASSERT_NE(memory, nullptr);
  EXPECT_EQ((*memory)["status"], "pass") << memory->dump();
  // Issue 23: the gate quotes the plan's one limit (point estimate, its low end beside it).
  EXPECT_NE(
      (*memory)["messages"][0].get<std::string>().find("<= the largest max_model_len that fits, " +
                                                       cmd["plan"]["max_model_len_limit"]["text"].get<std::string>()),
      std::string::npos)
      << memory->dump();
  const std::int64_t pool = cmd["plan"]["kv_tokens"];
  EXPECT_NEAR(static_cast<double>(pool), 386943, 386943 * 0.01);  // docs/seed.md §5: 386,943 measured
}

// A property over many random requests: the plan flags, the launch flags and the environment
// variables fill the same request and resolve to the same deployment and pool.
TEST(OneDeploymentTest, EveryFrontEndResolvesToTheSameDeployment) {
  std::mt19937 rng(20261201);
  auto pick = [&](std::vector<std::string> v) {
    return v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)];
  };
  for (int trial = 0; trial < 40; ++trial) {
    const std::string tp = pick({"2", "4", "8"}), pp = pick({"1", "2"});
    const std::string part = pp == "2" ? pick({"", "39,39", "40,38", "41,37", "42,36"}) : "";
    const std::string kv = pick({"fp8_ds_mla", "bfloat16", "auto"});
    const std::string mml = pick({"131072", "262144", "352000"});
    const std::string mtp = pick({"0", "1", "3"});
    const std::string util = pick({"0.9", "0.92", "0.95"});
    const std::string seqs = pick({"0", "64", "256"});
    const std::string vllm = pick({"0.30-custom", "0.30", "0.26"});
    // 1. plan's flags, through plan's own parser.
    cli::DeploymentOptions o;
    CLI::App plan_app;
    o.Add(&plan_app);
    plan_app.parse(fmt::format("--tp {} --pp {} --kv-cache-dtype {} --max-model-len {} --mtp {} "
                               "--gpu-memory-utilization {} --max-num-seqs {} --vllm {}{}",
                               tp, pp, kv, mml, mtp, util, seqs, vllm, part.empty() ? "" : " --partition " + part),
                   false);
    SettingInputs from_plan = testing::TestSettingInputs();
    from_plan.flags = o.Flags();
    // 2. the launcher's environment variables (the seed deploy.sh's names).
    std::map<std::string, std::string> env{{"TP_SIZE", tp},
                                           {"PP_SIZE", pp},
                                           {"KV_CACHE_DTYPE", kv},
                                           {"MAX_MODEL_LEN", mml},
                                           {"SPEC_METHOD", mtp == "0" ? "none" : "mtp"},
                                           {"GPU_MEMORY_UTILIZATION", util},
                                           {"MAX_NUM_SEQS", seqs},
                                           {"VLLM_VERSION", vllm}};
    if (mtp != "0") env["NUM_SPEC_TOKENS"] = mtp;
    if (!part.empty()) env["PP_LAYER_PARTITION"] = part;
    // 3. the launcher's flags.
    std::map<std::string, std::string> flags{{"tp_size", tp},
                                             {"pp_size", pp},
                                             {"kv_cache_dtype", kv},
                                             {"max_model_len", mml},
                                             {"spec_method", mtp == "0" ? "none" : "mtp"},
                                             {"gpu_memory_utilization", util},
                                             {"max_num_seqs", seqs},
                                             {"vllm_version", vllm}};
    if (mtp != "0") flags["num_spec_tokens"] = mtp;
    if (!part.empty()) flags["pp_layer_partition"] = part;
    std::vector<ResolvedDeployment> all{ResolveDeploymentFrom(from_plan),
                                        ResolveDeploymentFrom(testing::TestSettingInputs({}, env)),
                                        ResolveDeploymentFrom(testing::TestSettingInputs(flags))};
    const std::string what = fmt::format("TP{} PP{} split '{}' {} {} k={} util {} seqs {} vLLM {}", tp, pp, part, kv,
                                         mml, mtp, util, seqs, vllm);
    std::optional<std::int64_t> pool;
    for (const auto& r : all) {
      EXPECT_EQ(r.layout.tensor_parallel_size, all[0].layout.tensor_parallel_size) << what;
      EXPECT_EQ(r.partition, all[0].partition) << what;
      EXPECT_EQ(r.spec_method, all[0].spec_method) << what;
      EXPECT_EQ(r.planner.num_speculative_tokens, all[0].planner.num_speculative_tokens) << what;
      EXPECT_EQ(r.planner.vllm.name, all[0].planner.vllm.name) << what;
      EXPECT_EQ(r.planner.max_model_len, all[0].planner.max_model_len) << what;
      EXPECT_EQ(r.planner.max_num_seqs, all[0].planner.max_num_seqs) << what;
      EXPECT_DOUBLE_EQ(r.planner.gpu_memory_utilization, all[0].planner.gpu_memory_utilization) << what;
      EXPECT_EQ(r.planner.calibration.has_value(), all[0].planner.calibration.has_value()) << what;
      try {
        std::int64_t p = PlanLayout(r.planner, r.layout).pool.kv_tokens;
        if (pool) {
          EXPECT_EQ(p, *pool) << what;
        }
        pool = p;
      } catch (const Error& e) {
        ADD_FAILURE() << what << ": " << e.what();
      }
    }
  }
}

// `auto` speculation is decided once, in the resolver: MTP k=3 on the seed's image even at PP=2
// (docs/seed.md §5: the v0.30 image runs PP + MTP), none where the version lacks PP + speculation.
TEST(OneDeploymentTest, AutoSpeculationIsDecidedOnce) {
  ResolvedDeployment seed = testing::ResolvedWith();
  EXPECT_EQ(seed.spec_method, "mtp");
  EXPECT_EQ(seed.planner.num_speculative_tokens, 3);
  ResolvedDeployment upstream = testing::ResolvedWith({{"vllm_version", "0.26"}});
  EXPECT_EQ(upstream.spec_method, "none");
  EXPECT_EQ(upstream.planner.num_speculative_tokens, 0);
  EXPECT_THAT(upstream.speculation_check.messages[0], HasSubstr("downgraded to none"));
}

// The seed calibration was taken on 0.30-custom: naming that version keeps it; another version drops
// it with a note (the old builder dropped it as soon as any version was named).
TEST(OneDeploymentTest, CalibrationAppliesWhereItWasTaken) {
  EXPECT_TRUE(testing::ResolvedWith({{"vllm_version", "0.30-custom"}}).planner.calibration.has_value());
  EXPECT_TRUE(testing::ResolvedWith({{"vllm_version", "v0.30.0+custom"}}).planner.calibration.has_value());
  ResolvedDeployment other = testing::ResolvedWith({{"vllm_version", "0.30"}});
  EXPECT_FALSE(other.planner.calibration.has_value());
  bool noted = false;
  for (const auto& n : other.notes)
    noted |= n.find("not used: taken on another deployment (vLLM 0.30-custom vs 0.30)") != std::string::npos;
  EXPECT_TRUE(noted);
  EXPECT_FALSE(testing::ResolvedWith({{"gpu", "h200"}}).planner.calibration.has_value());
  // plan --vllm 0.30-custom gives exactly the default's figures.
  auto pool = [](const ResolvedDeployment& r) { return PlanLayout(r.planner, r.layout).pool.kv_tokens; };
  EXPECT_EQ(pool(testing::ResolvedWith({{"vllm_version", "0.30-custom"}})), pool(testing::ResolvedWith()));
}

// One version table, one documented rule (data/vllm/versions.json "resolution_rule").
TEST(VersionTableTest, VersionStringsResolveByTheRule) {
  auto row = [](const char* v) { return ResolveVllmVersion(v).profile->name; };
  EXPECT_EQ(row("0.30"), "0.30");
  EXPECT_EQ(row("v0.30.1"), "0.30");
  EXPECT_EQ(row("0.30.0+cu126"), "0.30");  // a local build tag that is not "custom"
  EXPECT_EQ(row("0.30.0+custom"), "0.30-custom");
  EXPECT_EQ(row("0.30-custom"), "0.30-custom");
  EXPECT_EQ(row("0.10.1.dev101+gbda9d0535"), "0.10");  // DEV-MLA-01 log (the boot-log examples (docs/sources.md §3))
  EXPECT_EQ(row("0.26.1rc1.dev693"), "0.26");          // docs/vllm-rules.md §5.1
  EXPECT_TRUE(ResolveVllmVersion("0.30").exact);
  // Every release line from 0.5 to 0.30 has its own row (issue 12): none is planned with another's.
  VersionMatch m = ResolveVllmVersion("0.19.0");
  EXPECT_EQ(m.profile->name, "0.19");
  EXPECT_TRUE(m.exact);
  EXPECT_EQ(m.note, "");
  EXPECT_EQ(m.patch, 0);
  EXPECT_EQ(ResolveVllmVersion("0.7.1").patch, 1);
  EXPECT_EQ(ResolveVllmVersion("0.7").patch, std::nullopt);
  for (int minor = 5; minor <= 30; ++minor) {
    VersionMatch row_of = ResolveVllmVersion(fmt::format("0.{}", minor));
    EXPECT_TRUE(row_of.exact) << minor;
    EXPECT_EQ(row_of.profile->name, fmt::format("0.{}", minor)) << minor;
  }
  for (const char* bad : {"0.4", "9.1", "main", "", "0.3O", "0.30.0+customer", "x0.30"})
    EXPECT_THAT(ErrorOf([&] { ResolveVllmVersion(bad); }), HasSubstr("unknown vLLM version")) << bad;
  EXPECT_THAT(ErrorOf([] { ResolveVllmVersion("9.1"); }), HasSubstr("known rows: 0.5, 0.6, 0.7, 0.8, 0.9, 0.10, 0.11"));
}

// plan --vllm X and VLLM_VERSION=X cmd resolve to the same row or refuse with the same message.
TEST(VersionTableTest, PlanAndCmdAgreeOnEveryVersion) {
  for (const std::string v : {"0.30", "0.30-custom", "0.21", "0.19.0", "0.4", "9.9"}) {
    auto plan = testing::RunPpdeploy("plan --no-enumerate --vllm " + v + " --format json");
    std::string cmd_line = "env -i PATH=\"$PATH\" VLLM_VERSION=" + v + " " + std::string(PPDEPLOY_BINARY) + " cmd 2>&1";
    FILE* p = popen(cmd_line.c_str(), "r");
    std::string cmd;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) cmd.append(buf, n);
    pclose(p);
    if (plan.exit_code == 0) {
      auto j = nlohmann::json::parse(plan.output);
      const std::string row = j["deployment"]["vllm"];
      EXPECT_THAT(cmd, HasSubstr("(vLLM " + row + ", runtime")) << v;
    } else {
      EXPECT_THAT(cmd, HasSubstr(plan.output.substr(0, plan.output.find('\n')))) << v;
    }
  }
}

TEST(VersionTableTest, EveryRowIsComplete) {
  for (const auto& p : VllmProfiles()) {
    EXPECT_FALSE(p.kv_cache_dtypes.empty()) << p.name;
    EXPECT_FALSE(p.description.empty()) << p.name;
    EXPECT_EQ(ResolveVllmVersion(p.name).profile, &p) << p.name;
    for (const auto& line : p.lines) EXPECT_EQ(ResolveVllmVersion(line).profile, &p) << line;
  }
  EXPECT_EQ(DefaultVllmProfile().name, "0.30-custom");
}

// Layout sanity: TP x PP x DP must match the GPUs given.
TEST(LayoutSanityTest, LayoutNeedingMoreGpusThanGivenSaysSo) {
  auto r = testing::RunPpdeploy("plan --tp 4 --pp 3 --gpus 8 --no-enumerate --no-optimize --format json");
  // Issue 23 item 7: a problem in the layout asked for is exit 2 (README: a check found a problem), not 0.
  ASSERT_EQ(r.exit_code, 2) << r.output;
  auto j = nlohmann::json::parse(r.output);
  const auto& l = j["detailed"][0];
  EXPECT_FALSE(l["feasible"]);
  bool found = false;
  for (const auto& p : l["problems"])
    found |= p["kind"] == "gpu-count" && p["need"] == 12 && p["have"] == 8 &&
             p["message"].get<std::string>().find("needs 12 GPUs") != std::string::npos;
  EXPECT_TRUE(found) << l["problems"].dump();
  ResolvedDeployment idle = testing::ResolvedWith({{"tp_size", "2"}, {"pp_size", "2"}, {"pp_layer_partition", ""}});
  LayoutPlan p = PlanLayout(idle.planner, idle.layout);
  bool warned = false;
  for (const auto& w : p.warnings)
    warned |= w.find("uses 4 of the 8 GPUs; 4 stay idle (DP2 would use them)") != std::string::npos;
  EXPECT_TRUE(warned);
}

// The default deployment's 41,37 belongs to PP=2: under PP_SIZE=4 it is dropped for vLLM's split
// (with a note), while a split the user gives is checked as given.
TEST(LayoutSanityTest, DefaultSplitDoesNotFollowAnotherStageCount) {
  ResolvedDeployment r = testing::ResolvedWith({{"pp_size", "4"}, {"tp_size", "2"}});
  EXPECT_TRUE(r.PartitionValid());
  EXPECT_EQ(r.partition, (std::vector<int>{19, 20, 20, 19}));
  ResolvedDeployment bad = testing::ResolvedWith({{"pp_size", "4"}, {"tp_size", "2"}, {"pp_layer_partition", "41,37"}});
  EXPECT_FALSE(bad.PartitionValid());
  EXPECT_THAT(bad.partition_check.messages[0], HasSubstr("len(partitions)=2 does not match pp_size=4."));
}

// Issue 15: `--partition ''` planned vLLM's default split without a word. ppdeploy reads an empty split
// as unset, as the seed's deploy.sh does: VLLM_PP_LAYER_PARTITION is not passed (vLLM's envs.py default is
// None), so vLLM splits the seed model's 78 layers at PP2 by get_pp_indices: 39,39 (docs/vllm-rules.md §1.4). The
// resolved deployment says so: a warning in the layer-partition check that `cmd` shows among its gates, and
// in the notes that plan, cmd and start show (text and JSON).
TEST(LayoutSanityTest, EmptyPartitionIsVllmsDefaultSplitAndSaysSo) {
  auto warning = [](const std::string& origin) {
    return "pp_layer_partition (" + origin +
           ") is empty: read as unset, so VLLM_PP_LAYER_PARTITION is not passed and vLLM uses its default split "
           "39,39 (get_pp_indices)";
  };
  ResolvedDeployment r = testing::ResolvedWith({{"pp_layer_partition", ""}});
  std::string want = warning(r.request.Setting("pp_layer_partition").origin);
  EXPECT_TRUE(r.PartitionValid());
  EXPECT_FALSE(r.pass_partition_env);
  EXPECT_EQ(r.partition, (std::vector<int>{39, 39}));
  EXPECT_EQ(r.partition_check.status, CheckStatus::kWarn);
  ASSERT_FALSE(r.partition_check.messages.empty());
  EXPECT_EQ(r.partition_check.messages[0], want);
  EXPECT_THAT(r.notes, ::testing::Contains("warning: " + want));
  PlanChoices report_only;
  report_only.enumerate = false;
  report_only.no_optimize = true;
  EXPECT_THAT(PlanDeployment(r, report_only).notes,
              ::testing::Contains("warning: " + want));  // what plan's report reads
  // From the environment (PP_LAYER_PARTITION=) likewise, with its origin.
  ResolvedDeployment e = ResolveDeploymentFrom(testing::TestSettingInputs({}, {{"PP_LAYER_PARTITION", ""}}));
  EXPECT_THAT(e.notes, ::testing::Contains(HasSubstr("pp_layer_partition (env PP_LAYER_PARTITION) is empty")));
  // And from a profile (pp_layer_partition = "" in ppdeploy.toml).
  SettingInputs file = testing::TestSettingInputs();
  file.file_text = "pp_layer_partition = \"\"\n";
  file.file_source = "ppdeploy.toml";
  ResolvedDeployment f = ResolveDeploymentFrom(file);
  EXPECT_FALSE(f.pass_partition_env);
  EXPECT_THAT(f.notes, ::testing::Contains(HasSubstr("pp_layer_partition (profile ppdeploy.toml) is empty")));
  // No such warning when the split is given or left to the default deployment, nor at PP1 (no split at all).
  for (const auto& flags : std::vector<std::map<std::string, std::string>>{
           {}, {{"pp_layer_partition", "39,39"}}, {{"pp_size", "1"}, {"tp_size", "8"}, {"pp_layer_partition", ""}}})
    for (const auto& n : testing::ResolvedWith(flags).notes) EXPECT_THAT(n, ::testing::Not(HasSubstr("is empty")));
  // Through the binary (plan's --partition, cmd's --pp-layer-partition): the JSON notes, and plan's text.
  want = warning("flag --partition");
  nlohmann::json plan = JsonOf("", "plan --partition '' --no-enumerate --no-optimize");
  ASSERT_TRUE(plan.is_object());
  EXPECT_THAT(plan["notes"].get<std::vector<std::string>>(), ::testing::Contains("warning: " + want));
  EXPECT_EQ(plan["detailed"][0]["layer_partition"], nlohmann::json({39, 39}));
  nlohmann::json cmd = JsonOf("", "cmd --pp-layer-partition ''");
  ASSERT_TRUE(cmd.is_object());
  EXPECT_THAT(cmd["notes"].get<std::vector<std::string>>(),
              ::testing::Contains("warning: " + warning("flag --pp-layer-partition")));
  EXPECT_EQ(cmd["injected_env"].count("VLLM_PP_LAYER_PARTITION"), 0u);
  testing::CliResult text = testing::RunPpdeploy("plan --partition '' --no-enumerate --no-optimize", false);
  EXPECT_THAT(text.output, HasSubstr("warning: " + want));
}

// Issue 15: what the config reader accepts although vLLM reads it differently (ModelConfig::warnings) reaches
// the plan's notes. Constructed config: a small Llama whose max_position_embeddings is the float 4096.0 (vLLM
// casts it with int()) and whose torch_dtype is "bf16" (transformers' getattr(torch, "bf16") fails).
TEST(OneDeploymentTest, ConfigWarningsReachThePlan) {
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "resolve_config_warnings";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "config.json").string();
  {
    std::ofstream f(path);
    f << R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "num_hidden_layers": 4,
             "hidden_size": 1024, "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 128,
             "intermediate_size": 2048, "vocab_size": 32000, "max_position_embeddings": 4096.0,
             "torch_dtype": "bf16"})";
  }
  const std::string cast = "warning: model config: " + path +
                           ": max_position_embeddings: the float 4096.0 is read as the integer 4096 (vLLM casts it "
                           "with int())";
  ResolvedDeployment r = testing::ResolvedWith({{"model", path}, {"tp_size", "1"}, {"pp_size", "1"}});
  EXPECT_THAT(r.notes, ::testing::Contains(cast));
  EXPECT_THAT(r.notes, ::testing::Contains(HasSubstr("torch_dtype: \"bf16\" is not a torch dtype name")));
  nlohmann::json plan = JsonOf("", "plan --model " + path + " --tp 1 --pp 1 --no-enumerate --no-optimize");
  ASSERT_TRUE(plan.is_object());
  EXPECT_THAT(plan["notes"].get<std::vector<std::string>>(), ::testing::Contains(cast));
  testing::CliResult text = testing::RunPpdeploy("plan --model " + path + " --tp 1 --pp 1 --no-enumerate", false);
  EXPECT_THAT(text.output, HasSubstr(cast));
}

// The layers (docs/CONVENTIONS.md "Layers", the one place the order is declared): every folder of src/ is in
// the declared order, and every file includes only its own folder and folders before it; the pure folders come
// before every adapter, include no I/O library, and are the folders CMake builds into the pure core library.
std::vector<std::string> BacktickedWords(const std::string& doc, const std::string& label) {
  const std::regex line("(^|\n) *- " + label + R"re(: `([^`]*)`)re");
  std::smatch m;
  if (!std::regex_search(doc, m, line)) return {};
  std::vector<std::string> words;
  const std::regex word(R"re([a-z_]+)re");
  const std::string text = m[2];
  for (auto it = std::sregex_iterator(text.begin(), text.end(), word); it != std::sregex_iterator(); ++it)
    words.push_back(it->str());
  return words;
}

TEST(LayeringTest, EveryIncludeFollowsTheDeclaredFolderOrder) {
  namespace fs = std::filesystem;
  const fs::path root(PPDEPLOY_SOURCE_DIR);
  std::ifstream doc_in(root / "docs" / "CONVENTIONS.md");
  const std::string doc((std::istreambuf_iterator<char>(doc_in)), std::istreambuf_iterator<char>());
  const std::vector<std::string> order = BacktickedWords(doc, "Layer order");
  const std::vector<std::string> pure = BacktickedWords(doc, "Pure folders");
  ASSERT_GE(order.size(), 14u) << "docs/CONVENTIONS.md declares no layer order";
  ASSERT_FALSE(pure.empty());
  std::map<std::string, size_t> rank;
  for (size_t i = 0; i < order.size(); ++i) rank[order[i]] = i;
  // The pure folders are the first ones of the order: no pure file can include an adapter.
  for (size_t i = 0; i < pure.size(); ++i) EXPECT_EQ(pure[i], order[i]) << "pure folders must lead the order";
  const std::vector<std::string> io_libs{"fstream", "filesystem", "iostream", "cstdio",
                                         "curl/",   "unistd.h",   "sys/",     "toml++/toml.hpp"};
  const std::regex include(R"re(^\s*#\s*include\s*([<"])([^>"]+)[>"])re");
  int files = 0, includes = 0;
  for (const auto& e : fs::recursive_directory_iterator(root / "src")) {
    if (!e.is_regular_file()) continue;
    const std::string folder = fs::relative(e.path(), root / "src").begin()->string();
    ASSERT_TRUE(rank.count(folder)) << "src/" << folder << " is not in docs/CONVENTIONS.md's layer order";
    const bool is_pure = std::find(pure.begin(), pure.end(), folder) != pure.end();
    std::ifstream in(e.path());
    std::string line;
    ++files;
    while (std::getline(in, line)) {
      std::smatch m;
      if (!std::regex_search(line, m, include)) continue;
      const std::string inc = m[2];
      if (is_pure) {
        for (const auto& lib : io_libs) EXPECT_NE(inc.rfind(lib, 0), 0u) << e.path() << " includes I/O library " << inc;
      }
      if (m[1] != "\"" || inc.find('/') == std::string::npos) continue;
      const std::string target = inc.substr(0, inc.find('/'));
      if (!rank.count(target)) continue;  // a library's own header
      ++includes;
      EXPECT_LE(rank[target], rank[folder]) << e.path() << " (" << folder << ") reaches up to " << inc;
    }
  }
  EXPECT_GT(files, 200);
  EXPECT_GT(includes, 500);
  // CMake's pure core library is built from exactly the pure folders.
  std::ifstream cmake_in(root / "CMakeLists.txt");
  const std::string cmake((std::istreambuf_iterator<char>(cmake_in)), std::istreambuf_iterator<char>());
  std::smatch glob;
  ASSERT_TRUE(
      std::regex_search(cmake, glob, std::regex(R"re(file\(GLOB PPDEPLOY_CORE_SRC CONFIGURE_DEPENDS([^)]*)\))re")));
  std::vector<std::string> core;
  const std::string globbed = glob[1];
  const std::regex dir(R"re(src/([a-z_]+)/\*\.cc)re");
  for (auto it = std::sregex_iterator(globbed.begin(), globbed.end(), dir); it != std::sregex_iterator(); ++it)
    core.push_back((*it)[1]);
  std::vector<std::string> pure_sorted = pure;
  std::sort(core.begin(), core.end());
  std::sort(pure_sorted.begin(), pure_sorted.end());
  EXPECT_EQ(core, pure_sorted);
}

}  // namespace
}  // namespace ppdeploy
