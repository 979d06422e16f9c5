// Launch settings: precedence flag > env > file > default, origins, typed errors.
#include "launch/profile.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/error.h"
#include "launch/capabilities.h"
#include "launch/prepare.h"

namespace ppdeploy::launch {
namespace {

using ::testing::HasSubstr;

std::string ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

SettingInputs Inputs(std::map<std::string, std::string> env = {}, std::optional<std::string> file = std::nullopt,
                     std::map<std::string, std::string> flags = {}) {
  SettingInputs in;
  in.defaults_text = BuiltinDefaultsText();
  in.defaults_source = "defaults";
  in.file_text = std::move(file);
  in.file_source = "ppdeploy.toml";
  in.getenv = [env](std::string_view name) -> std::optional<std::string> {
    auto it = env.find(std::string(name));
    if (it == env.end()) return std::nullopt;
    return it->second;
  };
  in.flags = std::move(flags);
  return in;
}

TEST(ProfileTest, DefaultsAreTheSeedDeployment) {
  auto p = BuildProfile(ResolveSettings(Inputs()));
  // Seed digest §5/§8/§11: TP4, PP2, 41,37, fp8_ds_mla, MTP k=3, 524,288, 0.95, 8 GPUs, 0.30-custom.
  EXPECT_EQ(p.tp_size, 4);
  EXPECT_EQ(p.pp_size, 2);
  EXPECT_EQ(p.pp_layer_partition, "41,37");
  EXPECT_EQ(p.kv_cache_dtype, "fp8_ds_mla");
  EXPECT_EQ(p.spec_method, "auto");
  EXPECT_EQ(p.num_spec_tokens, 3);
  EXPECT_EQ(p.max_model_len, 524'288);
  EXPECT_DOUBLE_EQ(p.gpu_memory_utilization, 0.95);
  EXPECT_EQ(p.NumGpusListed(), 8);
  EXPECT_EQ(p.vllm_version, "0.30-custom");
  EXPECT_EQ(p.force_v2_runner, "");
  EXPECT_FALSE(p.disable_custom_all_reduce);
  EXPECT_FALSE(p.allow_unverified_pp);
}

TEST(ProfileTest, PrecedenceFlagOverEnvOverFileOverDefault) {
  auto s = ResolveSettings(Inputs({{"TP_SIZE", "2"}, {"PP_SIZE", "4"}}, "tp_size = 8\nport = 9000\nmax_model_len = 1000\n",
                                  {{"tp_size", "1"}}));
  EXPECT_EQ(Get(s, "tp_size").value, "1");
  EXPECT_EQ(Get(s, "tp_size").origin, "flag --tp-size");
  EXPECT_EQ(Get(s, "pp_size").value, "4");
  EXPECT_EQ(Get(s, "pp_size").origin, "env PP_SIZE");
  EXPECT_EQ(Get(s, "port").value, "9000");
  EXPECT_EQ(Get(s, "port").origin, "file ppdeploy.toml");
  EXPECT_EQ(Get(s, "max_model_len").source, SettingSource::kFile);
  EXPECT_EQ(Get(s, "kv_cache_dtype").origin, "default");
}

TEST(ProfileTest, GpusFallsBackToCudaVisibleDevices) {
  auto s = ResolveSettings(Inputs({{"CUDA_VISIBLE_DEVICES", "4,5"}}));
  EXPECT_EQ(Get(s, "gpus").value, "4,5");
  EXPECT_EQ(Get(s, "gpus").origin, "env CUDA_VISIBLE_DEVICES");
  auto both = ResolveSettings(Inputs({{"CUDA_VISIBLE_DEVICES", "4,5"}, {"GPUS", "0,1"}}));
  EXPECT_EQ(Get(both, "gpus").value, "0,1");
}

TEST(ProfileTest, EmptyEnvValueIsAValue) {
  auto s = ResolveSettings(Inputs({{"PP_LAYER_PARTITION", ""}}));
  EXPECT_EQ(Get(s, "pp_layer_partition").value, "");
  EXPECT_EQ(Get(s, "pp_layer_partition").source, SettingSource::kEnv);
}

TEST(ProfileTest, BadValuesNameSettingOriginAndValue) {
  EXPECT_EQ(ErrorOf([] { BuildProfile(ResolveSettings(Inputs({{"TP_SIZE", "x"}}))); }),
            "tp_size (env TP_SIZE): expected an integer in [1, 4096], got \"x\"");
  EXPECT_EQ(ErrorOf([] { BuildProfile(ResolveSettings(Inputs({{"SPEC_METHOD", "eagle"}}))); }),
            "spec_method (env SPEC_METHOD): expected one of auto, mtp, ngram, none, got \"eagle\"");
  EXPECT_EQ(ErrorOf([] { BuildProfile(ResolveSettings(Inputs({{"GPU_MEMORY_UTILIZATION", "1.5"}}))); }),
            "gpu_memory_utilization (env GPU_MEMORY_UTILIZATION): expected a number in (0, 1], got \"1.5\"");
  EXPECT_EQ(ErrorOf([] { BuildProfile(ResolveSettings(Inputs({{"HF_OVERRIDES", "{oops"}}))); }),
            "hf_overrides (env HF_OVERRIDES): expected a JSON object, got \"{oops\"");
  EXPECT_EQ(ErrorOf([] { BuildProfile(ResolveSettings(Inputs({{"FORCE_V2_RUNNER", "2"}}))); }),
            "force_v2_runner (env FORCE_V2_RUNNER): expected one of , 0, 1, got \"2\"");
}

TEST(ProfileTest, FileErrorsNameTheFile) {
  EXPECT_THAT(ErrorOf([] { ResolveSettings(Inputs({}, "tp_sise = 4\n")); }),
              HasSubstr("ppdeploy.toml: unknown setting 'tp_sise'"));
  EXPECT_THAT(ErrorOf([] { ResolveSettings(Inputs({}, "tp_size = [4]\n")); }),
              HasSubstr("ppdeploy.toml: tp_size: expected a string, number or boolean"));
  EXPECT_THAT(ErrorOf([] { ResolveSettings(Inputs({}, "tp_size = \n")); }), HasSubstr("ppdeploy.toml: malformed TOML"));
}

TEST(ProfileTest, TomlTypesBecomeText) {
  auto m = ParseSettingsToml("tp_size = 2\ngpu_memory_utilization = 0.9\ntrust_remote_code = false\nimage = \"a b\"\n",
                             "f.toml");
  EXPECT_EQ(m["tp_size"], "2");
  EXPECT_EQ(m["gpu_memory_utilization"], "0.9");
  EXPECT_EQ(m["trust_remote_code"], "0");
  EXPECT_EQ(m["image"], "a b");
}

TEST(ProfileTest, EveryEnvNameIsUniqueAndEveryKeyHasADefault) {
  std::set<std::string_view> envs;
  auto defaults = ParseSettingsToml(BuiltinDefaultsText(), "defaults");
  for (const auto& s : SettingSpecs()) {
    EXPECT_TRUE(envs.insert(s.env).second) << s.env;
    EXPECT_TRUE(defaults.count(std::string(s.key))) << s.key;
    EXPECT_FALSE(s.help.empty()) << s.key;
  }
  EXPECT_EQ(defaults.size(), SettingSpecs().size());
}

TEST(CapabilitiesTest, TableLoadsAndUnknownProfileListsKnownOnes) {
  for (const auto& name : CapabilityProfileNames()) EXPECT_EQ(LoadCapabilities(name).name, name);
  auto c = LoadCapabilities("0.30-custom");
  EXPECT_TRUE(c.pp_speculation);
  EXPECT_TRUE(c.index_share_fix_b);
  EXPECT_FALSE(c.ngram_under_v2);
  EXPECT_FALSE(LoadCapabilities("0.26").pp_speculation);  // vllm-rules §1.11: N rejects PP + MTP
  EXPECT_FALSE(LoadCapabilities("0.10").kv_cache_memory_bytes);
  EXPECT_TRUE(LoadCapabilities("0.11").kv_cache_memory_bytes);
  EXPECT_THAT(ErrorOf([] { LoadCapabilities("9.9"); }), HasSubstr("unknown vLLM version profile '9.9' (known: "));
}

}  // namespace
}  // namespace ppdeploy::launch
