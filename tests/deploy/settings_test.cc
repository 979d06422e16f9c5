// The one deployment request: settings precedence (flag > env > file > default deployment >
// vLLM defaults), origins, typed values and errors that name the setting, origin and value.
#include "deploy/settings.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "cli_runner.h"
#include "deploy/request.h"
#include "deploy_test_util.h"
#include "launch/gates.h"
#include "launch/render.h"
#include "test_util.h"

namespace ppdeploy {
namespace {

using testing::ErrorOf;
using ::testing::HasSubstr;

SettingInputs Inputs(std::map<std::string, std::string> env = {}, std::optional<std::string> file = std::nullopt,
                     std::map<std::string, std::string> flags = {}) {
  SettingInputs in = testing::TestSettingInputs(flags, env);
  in.file_text = std::move(file);
  in.file_source = "ppdeploy.toml";
  return in;
}

DeploymentRequest Request(std::map<std::string, std::string> env = {}, std::optional<std::string> file = std::nullopt,
                          std::map<std::string, std::string> flags = {}) {
  return BuildRequest(ResolveSettings(Inputs(std::move(env), std::move(file), std::move(flags))));
}

TEST(SettingsTest, DefaultsAreTheSeedDeployment) {
  auto p = Request();
  // docs/seed.md §5/§8/§11: TP4, PP2, 41,37, fp8_ds_mla, MTP k=3, 524,288, 0.95, 8 GPUs, 0.30-custom.
  EXPECT_EQ(p.tp_size, 4);
  EXPECT_EQ(p.pp_size, 2);
  EXPECT_EQ(p.pp_layer_partition, "41,37");
  EXPECT_EQ(p.kv_cache_dtype, "fp8_ds_mla");
  EXPECT_EQ(p.spec_method, "auto");
  EXPECT_EQ(p.num_spec_tokens, 3);
  EXPECT_EQ(p.max_model_len, 524'288);
  EXPECT_DOUBLE_EQ(p.gpu_memory_utilization, 0.95);
  EXPECT_EQ(p.TotalGpus(), 8);
  EXPECT_EQ(p.vllm_version, "0.30-custom");
  EXPECT_EQ(p.force_v2_runner, "auto");  // the seed's auto pin, spelled out since issue 23 ("" is vLLM's: none)
  EXPECT_FALSE(p.disable_custom_all_reduce);
  EXPECT_FALSE(p.allow_unverified_pp);
  EXPECT_EQ(p.calibration, "calibration/seed-glm53-a100-tp4pp2.json");
}

TEST(SettingsTest, PrecedenceFlagOverEnvOverFileOverDefault) {
  auto s = ResolveSettings(Inputs({{"TP_SIZE", "2"}, {"PP_SIZE", "4"}},
                                  "tp_size = 8\nport = 9000\nmax_model_len = 1000\n", {{"tp_size", "1"}}));
  EXPECT_EQ(Get(s, "tp_size").value, "1");
  EXPECT_EQ(Get(s, "tp_size").origin, "flag --tp-size");
  EXPECT_EQ(Get(s, "pp_size").value, "4");
  EXPECT_EQ(Get(s, "pp_size").origin, "env PP_SIZE");
  EXPECT_EQ(Get(s, "port").value, "9000");
  EXPECT_EQ(Get(s, "port").origin, "profile ppdeploy.toml");
  EXPECT_EQ(Get(s, "max_model_len").source, SettingSource::kFile);
  EXPECT_EQ(Get(s, "kv_cache_dtype").origin, "default deployment");
  EXPECT_EQ(Get(s, "block_size").origin, "vLLM default");
}

TEST(SettingsTest, AnotherModelStartsFromVllmDefaults) {
  // The seed's layout, KV dtype and context belong to its model: asking for DeepSeek-V3 must not
  // launch it with 41,37 / fp8_ds_mla / 524,288 / the seed's checkpoint path.
  auto p = Request({{"PPDEPLOY_MODEL", "deepseek-ai/DeepSeek-V3"}});
  EXPECT_EQ(p.tp_size, 1);
  EXPECT_EQ(p.pp_size, 1);
  EXPECT_EQ(p.pp_layer_partition, "");
  EXPECT_EQ(p.kv_cache_dtype, "auto");
  EXPECT_EQ(p.max_model_len, 0);
  EXPECT_EQ(p.model_path, "");
  EXPECT_EQ(p.calibration, "");
  EXPECT_EQ(p.gpu, "a100-80gb");             // the site's hardware stays
  EXPECT_EQ(p.vllm_version, "0.30-custom");  // and its vLLM
  // An alias of the default model is the same model: the default deployment applies.
  EXPECT_EQ(Request({{"PPDEPLOY_MODEL", "seed"}}).pp_layer_partition, "41,37");
}

TEST(SettingsTest, GpusFallsBackToCudaVisibleDevices) {
  auto s = ResolveSettings(Inputs({{"CUDA_VISIBLE_DEVICES", "4,5"}}));
  EXPECT_EQ(Get(s, "gpus").value, "4,5");
  EXPECT_EQ(Get(s, "gpus").origin, "env CUDA_VISIBLE_DEVICES");
  auto both = ResolveSettings(Inputs({{"CUDA_VISIBLE_DEVICES", "4,5"}, {"GPUS", "0,1"}}));
  EXPECT_EQ(Get(both, "gpus").value, "0,1");
}

TEST(SettingsTest, EmptyEnvValueIsAValue) {
  auto s = ResolveSettings(Inputs({{"PP_LAYER_PARTITION", ""}}));
  EXPECT_EQ(Get(s, "pp_layer_partition").value, "");
  EXPECT_EQ(Get(s, "pp_layer_partition").source, SettingSource::kEnv);
}

TEST(SettingsTest, BadValuesNameSettingOriginAndValue) {
  EXPECT_EQ(ErrorOf([] {
              Request({{"TP_SIZE", "x"}});
            }),
            "tp_size (env TP_SIZE): expected an integer in [1, 4096], got \"x\"");
  EXPECT_EQ(ErrorOf([] {
              Request({{"SPEC_METHOD", "eagle"}});
            }),
            "spec_method (env SPEC_METHOD): expected one of auto, mtp, ngram, none, got \"eagle\"");
  EXPECT_EQ(ErrorOf([] {
              Request({{"GPU_MEMORY_UTILIZATION", "1.5"}});
            }),
            "gpu_memory_utilization (env GPU_MEMORY_UTILIZATION): expected a number in [0, 1], got \"1.5\"");
  EXPECT_EQ(ErrorOf([] {
              Request({{"HF_OVERRIDES", "{oops"}});
            }),
            "hf_overrides (env HF_OVERRIDES): expected a JSON object, got \"{oops\"");
  EXPECT_EQ(ErrorOf([] {
              Request({{"FORCE_V2_RUNNER", "2"}});
            }),
            "force_v2_runner (env FORCE_V2_RUNNER): expected one of \"\", auto, 0, 1, got \"2\"");
}

// Issue 15: GPUS=0,0,0,0,0,0,0,0 passed the GPU gate; `port = true` became --port 1; invalid UTF-8
// gave an internal JSON exception text; invisible characters must be visible in messages.
TEST(SettingsTest, TypedSettingsRefuseWhatVllmWouldNotRun) {
  EXPECT_EQ(ErrorOf([] {
              Request({{"GPUS", "0,0,0,0,0,0,0,0"}});
            }),
            "gpus (env GPUS): expected GPU ids listed once each (GPU 0 appears twice), got \"0,0,0,0,0,0,0,0\"");
  EXPECT_THAT(ErrorOf([] { Request({}, "port = true\n"); }),
              HasSubstr("ppdeploy.toml: line 1: port: expected an integer"));
  EXPECT_EQ(ErrorOf([] {
              Request({{"PORT", "70000"}});
            }),
            "port (env PORT): expected an integer in [1, 65535], got \"70000\"");
  EXPECT_EQ(ErrorOf([] {
              Request({{"SERVED_MODEL_NAME", "glm\xff"}});
            }),
            "served_model_name (env SERVED_MODEL_NAME): expected valid UTF-8 text, got \"glm\\xff\"");
  EXPECT_EQ(ErrorOf([] {
              Request({{"TP_SIZE", "4\xe2\x80\x8b"}});
            }),
            "tp_size (env TP_SIZE): expected an integer in [1, 4096], got \"4<U+200B>\"");
  EXPECT_EQ(ErrorOf([] {
              Request({{"NODES", "h0,,h1"}});
            }),
            "nodes (env NODES): expected comma-separated host names without empty entries, got \"h0,,h1\"");
  EXPECT_EQ(
      ErrorOf([] {
        Request({{"VLLM_EXTRA_ARGS", "--foo"}});
      }),
      "extra_vllm_args (env VLLM_EXTRA_ARGS): expected a JSON list of strings, e.g. [\"--enable-prefix-caching\"], "
      "got \"--foo\"");
}

TEST(SettingsTest, FileErrorsNameTheFileAndLine) {
  EXPECT_THAT(ErrorOf([] { ResolveSettings(Inputs({}, "\ntp_sise = 4\n")); }),
              HasSubstr("ppdeploy.toml: line 2: unknown setting 'tp_sise'"));
  EXPECT_THAT(ErrorOf([] { ResolveSettings(Inputs({}, "tp_size = [4]\n")); }),
              HasSubstr("ppdeploy.toml: line 1: tp_size: expected an integer"));
  EXPECT_THAT(ErrorOf([] { ResolveSettings(Inputs({}, "tp_size = \n")); }),
              HasSubstr("ppdeploy.toml: line 1: malformed TOML"));
  EXPECT_EQ(ErrorOf([] { ResolveSettings(Inputs({}, "image = \"a\xff\"\n")); }), "ppdeploy.toml: not valid UTF-8 text");
  // A quoted TOML key may hold any code point (TOML 1.0 \uXXXX escapes): a zero-width space or a
  // NUL in an unknown key is shown escaped (core/escape.h), not echoed to the terminal.
  EXPECT_THAT(ErrorOf([] { ResolveSettings(Inputs({}, "\"tp\\u200bsize\" = 4\n")); }),
              HasSubstr("ppdeploy.toml: line 1: unknown setting 'tp<U+200B>size' (known: "));
  EXPECT_THAT(ErrorOf([] { ResolveSettings(Inputs({}, "\"tp\\u0000\" = 4\n")); }),
              HasSubstr("ppdeploy.toml: line 1: unknown setting 'tp\\x00' (known: "));
  // toml++ quotes what it saw: a control byte there is escaped too (found by fuzz/profile_fuzz.cc).
  EXPECT_EQ(ErrorOf([] {
              ParseSettingsToml(
                  "port = tru\x02"
                  "e\n",
                  "f.toml");
            }),
            "f.toml: line 1: malformed TOML: Error while parsing boolean: expected 'true', saw 'tru\\x02'");
}

TEST(SettingsTest, TomlTypesBecomeText) {
  auto m = ParseSettingsToml("tp_size = 2\ngpu_memory_utilization = 0.9\ntrust_remote_code = false\nimage = \"a b\"\n",
                             "f.toml");
  EXPECT_EQ(m["tp_size"], "2");
  EXPECT_EQ(m["gpu_memory_utilization"], "0.9");
  EXPECT_EQ(m["trust_remote_code"], "0");
  EXPECT_EQ(m["image"], "a b");
}

// The option table itself (docs/sources.md §6): unique env names, a vLLM default for every key,
// help for every setting, only known keys in the default deployment.
TEST(SettingsTest, EveryEnvNameIsUniqueAndEveryKeyHasAVllmDefault) {
  std::set<std::string_view> envs;
  auto vllm = ParseSettingsToml(VllmDefaultsText(), "vllm-defaults");
  auto defaults = ParseSettingsToml(DefaultDeploymentText(), "default");
  for (const auto& s : SettingSpecs()) {
    EXPECT_TRUE(envs.insert(s.env).second) << s.env;
    EXPECT_TRUE(vllm.count(std::string(s.key))) << s.key;
    EXPECT_FALSE(s.help.empty()) << s.key;
  }
  EXPECT_EQ(vllm.size(), SettingSpecs().size());
  for (const auto& [k, v] : defaults) EXPECT_NE(FindSettingSpec(k), nullptr) << k;
}

TEST(SettingsTest, StoredRequestReadsBackAsItWas) {
  auto s = ResolveSettings(Inputs({{"TP_SIZE", "8"}}, "port = 9000\n"));
  auto back = SettingsFromJson(nlohmann::json::parse(SettingsToJson(s).dump()), "state.json");
  ASSERT_EQ(back.size(), s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    EXPECT_EQ(back[i].key, s[i].key);
    EXPECT_EQ(back[i].value, s[i].value);
    EXPECT_EQ(back[i].source, s[i].source);
    EXPECT_EQ(back[i].origin, s[i].origin);
  }
  EXPECT_THAT(ErrorOf([] { SettingsFromJson(nlohmann::json::array(), "state.json"); }),
              HasSubstr("state.json: request: setting 'model' is missing"));
}

TEST(SettingsTest, StoredRequestOfAnOlderPpdeployTakesVllmDefaultsForNewSettings) {
  // A run state written before the `executor` setting existed (issue 16) still resolves: that
  // launch passed no executor flag, so the value is vLLM's default, and the origin says why.
  auto s = ResolveSettings(Inputs({{"TP_SIZE", "8"}}, ""));
  auto stored = nlohmann::json::parse(SettingsToJson(s).dump());
  nlohmann::json older = nlohmann::json::array();
  for (const auto& e : stored)
    if (e["key"] != "executor") older.push_back(e);
  SettingInputs vllm_only = Inputs({}, "");
  vllm_only.defaults_text.clear();
  const ResolvedSettings vllm_defaults = ResolveSettings(vllm_only);
  auto back = SettingsFromJson(older, "state.json", &vllm_defaults);
  ASSERT_EQ(back.size(), s.size());
  EXPECT_EQ(Get(back, "tp_size").value, "8");
  EXPECT_EQ(Get(back, "executor").value, Get(vllm_defaults, "executor").value);
  EXPECT_THAT(Get(back, "executor").origin, HasSubstr("not in state.json: written by an older ppdeploy"));
  // Without the fallback, or with nothing known in the list, it stays an error.
  EXPECT_THAT(ErrorOf([&] { SettingsFromJson(older, "state.json"); }),
              HasSubstr("state.json: request: setting 'executor' is missing"));
  EXPECT_THAT(ErrorOf([&] { SettingsFromJson(nlohmann::json::array(), "state.json", &vllm_defaults); }),
              HasSubstr("setting 'model' is missing"));
}

TEST(SettingsTest, HumanReadableIntegersAsVllmReadsThem) {
  EXPECT_EQ(ParseHumanReadableInt("1k", "x"), 1000);
  EXPECT_EQ(ParseHumanReadableInt("1K", "x"), 1024);
  EXPECT_EQ(ParseHumanReadableInt("25.6G", "x"), static_cast<std::int64_t>(25.6 * 1024 * 1024 * 1024));
  EXPECT_EQ(ParseHumanReadableInt("20g", "x"), 20'000'000'000);
  EXPECT_EQ(ErrorOf([] { ParseHumanReadableInt("20q", "x"); }),
            "x: unknown unit \"q\" in \"20q\" (k, K, m, M, g, G, t, T)");
}

// Issue 21: the settings table drives every front-end. Its rows must agree with themselves: one
// spelling per flag across the table, one setting per `vllm serve` flag, every vLLM default a
// valid value of its setting, the generated vLLM-defaults layer equal to the column, and no
// "{flag}" / "{vllm_env}" placeholder left in a help line (deploy/settings.h SettingSpec).
TEST(SettingsTableTest, RowsAgreeWithThemselves) {
  std::set<std::string> spellings, serve_flags, vllm_envs;
  const auto generated = ParseSettingsToml(VllmDefaultsToml(), "generated");
  for (const auto& spec : SettingSpecs()) {
    std::vector<std::string> names = FlagAliases(spec);
    names.push_back(FlagName(spec.key));
    for (const auto& n : names) EXPECT_TRUE(spellings.insert(n).second) << n << " names two settings";
    if (!spec.serve.flag.empty()) {
      EXPECT_TRUE(serve_flags.insert(std::string(spec.serve.flag)).second) << spec.serve.flag;
      EXPECT_EQ(FindSettingByServeFlag(spec.serve.flag), &spec) << spec.key;
    }
    if (!spec.vllm_env.empty()) {
      EXPECT_TRUE(vllm_envs.insert(std::string(spec.vllm_env)).second) << spec.vllm_env;
    }
    const SettingValue d{std::string(spec.key), std::string(spec.vllm_default), SettingSource::kVllmDefault,
                         "vLLM default"};
    EXPECT_EQ(ErrorOf([&] { CanonicalValue(d); }), "(no error)") << spec.key;
    EXPECT_TRUE(IsVllmDefault(d)) << spec.key;
    EXPECT_EQ(generated.at(std::string(spec.key)), spec.vllm_default) << spec.key;
    const std::string help = SettingHelp(spec);
    EXPECT_EQ(help.find("{flag}"), std::string::npos) << spec.key;
    EXPECT_EQ(help.find("{vllm_env}"), std::string::npos) << spec.key;
    if (spec.serve.flag.empty()) {
      EXPECT_EQ(std::string(spec.help).find("{flag}"), std::string::npos) << spec.key;
    }
  }
  EXPECT_EQ(generated.size(), SettingSpecs().size());
  // The rows the seed's `vllm serve` command is made of (data/launch/expected-default.json):
  EXPECT_EQ(ServeFlagOf("tp_size"), "--tensor-parallel-size");
  EXPECT_EQ(ServeFlagOf("max_num_seqs"), "--max-num-seqs");
  EXPECT_EQ(VllmEnvOf("pp_layer_partition"), "VLLM_PP_LAYER_PARTITION");
  EXPECT_EQ(FindSettingByServeFlag("--enable-prefix-caching"), nullptr);  // passed through, not a setting
}

// A value is compared with vLLM's default the way vLLM reads it: "0.0" is the default 0 of
// gpu_memory_utilization, "20G" of kv_cache_memory_bytes is 20 x 2^30 bytes (vLLM's
// human-readable integers, vllm/engine/arg_utils.py human_readable_int).
TEST(SettingsTableTest, CanonicalValuesAreWhatVllmIsGiven) {
  auto v = [](const char* key, const char* value) {
    return SettingValue{key, value, SettingSource::kFlag, std::string("flag ") + FlagName(key)};
  };
  EXPECT_EQ(CanonicalValue(v("gpu_memory_utilization", "0.950")), "0.95");
  EXPECT_TRUE(IsVllmDefault(v("gpu_memory_utilization", "0.0")));
  EXPECT_EQ(CanonicalValue(v("kv_cache_memory_bytes", "20G")), "21474836480");
  EXPECT_TRUE(IsVllmDefault(v("kv_cache_memory_bytes", "")));
  EXPECT_EQ(CanonicalValue(v("tp_size", "04")), "4");
  EXPECT_EQ(CanonicalValue(v("enforce_eager", "true")), "1");
  EXPECT_FALSE(IsVllmDefault(v("pp_size", "2")));
  EXPECT_EQ(ErrorOf([&] { CanonicalValue(v("tp_size", "x")); }),
            "tp_size (flag --tp-size): expected an integer in [1, 4096], got \"x\"");
}

// The extra-arguments refusal reads the same column as the renderer: every setting's `vllm serve`
// flag given through VLLM_EXTRA_ARGS is refused naming the setting (the plan and the gates would
// not see it), and a flag no setting has passes through.
TEST(SettingsTableTest, ExtraArgsThatAreSettingsAreRefusedByTheirRow) {
  for (const auto& spec : SettingSpecs()) {
    if (spec.serve.flag.empty()) continue;
    const std::string arg = std::string(spec.serve.flag) + "=1";
    EXPECT_THAT(ErrorOf([&] {
                  testing::ResolvedWith({{"extra_vllm_args", nlohmann::json({arg}).dump()}});
                }),
                HasSubstr(fmt::format("{} is a ppdeploy setting ({}); set it as {} or {}", spec.serve.flag, spec.key,
                                      FlagName(spec.key), spec.env)))
        << spec.key;
  }
  EXPECT_EQ(ErrorOf([] {
              testing::ResolvedWith({{"extra_vllm_args", R"(["--enable-prefix-caching"])"}});
            }),
            "(no error)");
}

// The release lines a row names for its `vllm serve` flag, and the V0-only rows (the version-flags
// gate): a flag that exists in 0.8 to 0.26 and only under V0 (as vLLM's V1 oracle refused
// V0-only scheduler features, vllm/engine/arg_utils.py _is_v1_supported_oracle).
TEST(SettingsTableTest, ServeFlagReleaseLinesAndEngine) {
  const SettingSpec spec{.key = "x",
                         .env = "X",
                         .type = SettingType::kInt,
                         .vllm_default = "1",
                         .serve = {.flag = "--x", .first_line = "0.8", .last_line = "0.26", .needs_v0 = true},
                         .help = "{flag}"};
  EXPECT_EQ(ServeFlagVersionProblem(spec, "0.7", "0.7", true),
            "X: --x does not exist in vLLM 0.7 (it exists in 0.8 to 0.26)");
  EXPECT_EQ(ServeFlagVersionProblem(spec, "0.30", "0.30-custom", false),
            "X: --x does not exist in vLLM 0.30-custom (it exists in 0.8 to 0.26)");
  EXPECT_EQ(ServeFlagVersionProblem(spec, "0.10", "0.10", true), std::nullopt);
  EXPECT_EQ(
      ServeFlagVersionProblem(spec, "0.10", "0.10", false),
      "X: --x other than vLLM's default 1 needs the V0 engine (VLLM_ENGINE=v0 where the release ships it); the V1 "
      "engine of vLLM 0.10 refuses it");
  const SettingSpec any{.key = "y", .env = "Y", .serve = {.flag = "--y"}, .help = "{flag}"};
  EXPECT_EQ(ServeFlagVersionProblem(any, "0.5", "0.5", true), std::nullopt);
}

// plan and cmd take the same generated flags: one per setting, the older spellings (plan's --tp,
// --pp, --vllm, --partition) as aliases of it, and the same deployment either way.
TEST(SettingsFlagsTest, OneFlagPerSettingWithItsOlderSpellings) {
  auto argv_of = [](const std::string& args) {
    auto r = testing::RunPpdeploy("cmd " + args + " --format json", false);
    auto j = nlohmann::json::parse(r.output, nullptr, false);
    return j.is_object() ? j["steps"][0]["argv"].dump() : r.output;
  };
  EXPECT_EQ(argv_of("--tp 8 --pp 1 --vllm 0.30"), argv_of("--tp-size 8 --pp-size 1 --vllm-version 0.30"));
  // --partition gives the stage count (plan's meaning since issue 3), in cmd as in plan.
  EXPECT_EQ(argv_of("--tp 2 --partition 20,20,20,18 --allow-unverified-pp"),
            argv_of("--tp-size 2 --pp-size 4 --pp-layer-partition 20,20,20,18 --allow-unverified-pp"));
  auto plan = testing::RunPpdeploy("plan --tp-size 8 --pp-size 1 --no-enumerate --no-optimize --format json", false);
  auto old = testing::RunPpdeploy("plan --tp 8 --pp 1 --no-enumerate --no-optimize --format json", false);
  // Issue 23 item 7: TP8/PP1 does not hold the seed's 524,288 tokens ("problem:"): exit 2, the same for both spellings.
  EXPECT_EQ(plan.exit_code, 2);
  EXPECT_EQ(old.exit_code, 2);
  auto detailed = [](const std::string& out) {
    auto j = nlohmann::json::parse(out, nullptr, false);
    return j.is_object() ? j["detailed"].dump() : out;
  };
  EXPECT_EQ(detailed(plan.output), detailed(old.output));  // the notes name the flag as typed
  auto both = testing::RunPpdeploy("plan --tp 8 --tp-size 8");
  EXPECT_EQ(both.exit_code, 1);
  EXPECT_THAT(both.output, HasSubstr("two spellings of the setting tp_size"));
  auto help = testing::RunPpdeploy("plan --help");
  EXPECT_THAT(help.output, HasSubstr("--tensor-parallel-size (env TP_SIZE; default 4; also --tp)"));
  EXPECT_THAT(help.output, HasSubstr("--max-num-batched-tokens"));  // every setting, as in cmd --help
}

// Issue 21: one new vLLM setting is one row of the settings table. --max-num-partial-prefills:
// vLLM's EngineArgs flag for SchedulerConfig.max_num_partial_prefills, an integer, default 1,
// Field(ge=1) (vllm/config/scheduler.py); added for the V0 scheduler by vLLM PR #10235 (merged
// February 2025; in the v0.8.1 engine-arguments page), refused by the V1 engine's feature oracle
// from v0.8 on (a value other than 1 falls back to V0 where the release ships it, else fails to
// start: vLLM issue #39737 on v0.19.0), removed by vLLM PR #49244 (2026-07-21) and absent from
// v0.27.0 (the v0.27.0 flag-drift check of runpod-workers/worker-vllm PR #324). Accepted from a
// flag, the environment and a profile, rendered into `vllm serve`, gated by version and engine,
// listed in `cmd --help`, its origin shown.
TEST(SettingsTableTest, MaxNumPartialPrefillsIsOneRow) {
  const char* key = "max_num_partial_prefills";
  auto flag = ResolveSettings(Inputs({}, std::nullopt, {{key, "4"}}));
  EXPECT_EQ(Get(flag, key).value, "4");
  EXPECT_EQ(Get(flag, key).origin, "flag --max-num-partial-prefills");
  auto env = ResolveSettings(Inputs({{"MAX_NUM_PARTIAL_PREFILLS", "2"}}));
  EXPECT_EQ(Get(env, key).origin, "env MAX_NUM_PARTIAL_PREFILLS");
  auto file = ResolveSettings(Inputs({}, "max_num_partial_prefills = 3\n"));
  EXPECT_EQ(Get(file, key).value, "3");
  EXPECT_EQ(Get(file, key).origin, "profile ppdeploy.toml");
  EXPECT_EQ(Get(ResolveSettings(Inputs()), key).value, "1");  // vLLM's default
  EXPECT_EQ(ErrorOf([] {
              Request({{"MAX_NUM_PARTIAL_PREFILLS", "0"}});
            }),
            "max_num_partial_prefills (env MAX_NUM_PARTIAL_PREFILLS): expected an integer >= 1, got \"0\"");

  // Rendered after --max-num-batched-tokens on a V0 engine that has it, not passed at its default 1.
  auto on = [&](const std::string& vllm, const std::string& engine, const std::string& value) {
    return testing::ResolvedWith({{"model", "llama-3.1-8b"}, {"vllm_version", vllm}, {"engine", engine}, {key, value}});
  };
  const ResolvedDeployment v0 = on("0.10", "v0", "4");
  const auto serve = launch::ServeArgs(v0, "");
  auto at = std::find(serve.begin(), serve.end(), "--max-num-partial-prefills");
  ASSERT_NE(at, serve.end());
  EXPECT_EQ(*(at + 1), "4");
  const auto plain = launch::ServeArgs(on("0.10", "v0", "1"), "");
  EXPECT_EQ(std::count(plain.begin(), plain.end(), "--max-num-partial-prefills"), 0);
  // The version-flags gate: passes on 0.10 V0; refused on V1 and where the flag does not exist.
  EXPECT_EQ(launch::CheckVersionFlags(v0).status, CheckStatus::kPass);
  const auto v1 = launch::CheckVersionFlags(on("0.10", "v1", "4"));
  EXPECT_EQ(v1.status, CheckStatus::kFail);
  EXPECT_THAT(v1.messages, ::testing::Contains(HasSubstr("needs the V0 engine")));
  const auto newer = launch::CheckVersionFlags(on("0.30", "", "4"));
  EXPECT_THAT(newer.messages, ::testing::Contains("MAX_NUM_PARTIAL_PREFILLS: --max-num-partial-prefills does not "
                                                  "exist in vLLM 0.30 (it exists in 0.8 to 0.26)"));
  EXPECT_EQ(launch::CheckVersionFlags(on("0.30", "", "1")).status, CheckStatus::kPass);  // not passed

  // The binary: listed in `cmd --help`, and `cmd` shows where the value came from.
  auto help = testing::RunPpdeploy("cmd --help");
  EXPECT_THAT(help.output, HasSubstr("--max-num-partial-prefills"));
  EXPECT_THAT(help.output, HasSubstr("(env MAX_NUM_PARTIAL_PREFILLS; default 1)"));
  auto cmd = testing::RunPpdeploy("cmd --max-num-partial-prefills 4 --format json", false);
  auto j = nlohmann::json::parse(cmd.output, nullptr, false);
  ASSERT_TRUE(j.is_object()) << cmd.output;
  bool shown = false;
  for (const auto& s : j["settings"])
    if (s["key"] == key) shown = s["value"] == "4" && s["origin"] == "flag --max-num-partial-prefills";
  EXPECT_TRUE(shown);
}

}  // namespace
}  // namespace ppdeploy
