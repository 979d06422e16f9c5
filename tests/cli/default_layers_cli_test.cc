// End-to-end: the real binary's `cmd`, `plan` and `defaultcheck` under the three layers of
// defaults (issue 23 items 4, 5 and 7): another model launches with vLLM's own defaults, every
// setting names its origin, an alias serves the id the user named, the seed is unchanged.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "cli_runner.h"

namespace {

using ppdeploy::testing::CliResult;
using ppdeploy::testing::RunPpdeploy;
using ::testing::HasSubstr;
using ::testing::Not;

// The rendered command of `cmd ARGS --format json`: every step's argv and environment, one string.
std::string RenderedCommand(const std::string& args) {
  CliResult r = RunPpdeploy("cmd " + args + " --format json", false);
  auto j = nlohmann::json::parse(r.output, nullptr, false);
  if (j.is_discarded()) return "unparsable: " + r.output;
  std::string out;
  for (const auto& s : j["steps"]) {
    for (const auto& a : s["argv"]) out += a.get<std::string>() + " ";
    for (const auto& [k, v] : s["env"].items()) out += k + "=" + v.get<std::string>() + " ";
  }
  for (const auto& [k, v] : j["injected_env"].items()) out += k + "=" + v.get<std::string>() + " ";
  return out;
}

// Issue 23, acceptance bullet 2.
TEST(DefaultLayersCliTest, AnotherModelsCommandIsPlainVllmServe) {
  const std::string cmd = RenderedCommand("--model deepseek-v3 --gpu h200 --tp-size 8");
  EXPECT_THAT(cmd, HasSubstr("serve deepseek-ai/DeepSeek-V3 "));
  EXPECT_THAT(cmd, HasSubstr("--tensor-parallel-size 8 "));
  EXPECT_THAT(cmd, Not(HasSubstr("--speculative-config")));
  EXPECT_THAT(cmd, Not(HasSubstr("VLLM_USE_V2_MODEL_RUNNER")));
  // The same with PP 2 on an upstream row: no runner pin, vLLM's split.
  const std::string pp = RenderedCommand("--model deepseek-v3 --gpu h200 --tp-size 8 --pp-size 2 --vllm 0.19");
  EXPECT_THAT(pp, HasSubstr("--pipeline-parallel-size 2 "));
  EXPECT_THAT(pp, Not(HasSubstr("VLLM_USE_V2_MODEL_RUNNER")));
  EXPECT_THAT(pp, Not(HasSubstr("VLLM_PP_LAYER_PARTITION")));
  EXPECT_THAT(pp, Not(HasSubstr("--speculative-config")));
  // The seed's, for contrast: both (docs/seed.md §8).
  const std::string seed = RenderedCommand("");
  EXPECT_THAT(seed, HasSubstr("--speculative-config"));
  EXPECT_THAT(seed, HasSubstr("VLLM_USE_V2_MODEL_RUNNER=1"));
}

// Every setting's origin is one of the layers, each named truthfully.
TEST(DefaultLayersCliTest, EverySettingNamesItsOrigin) {
  CliResult r = RunPpdeploy("cmd --model deepseek-v3 --gpu h200 --tp-size 8 --vllm 0.19 --format json", false);
  auto j = nlohmann::json::parse(r.output, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.output;
  std::set<std::string> seen;
  for (const auto& s : j["settings"]) {
    const std::string origin = s["origin"], key = s["key"];
    const bool known = origin == "vLLM 0.19 default" || origin == "ppdeploy default" ||
                       origin == "default deployment" || origin.rfind("flag --", 0) == 0;
    EXPECT_TRUE(known) << key << ": " << origin;
    seen.insert(origin);
    if (key == "spec_method") {
      EXPECT_EQ(s["value"], "none");
      EXPECT_EQ(origin, "vLLM 0.19 default");
    }
    if (key == "vllm_version") {
      EXPECT_EQ(origin, "flag --vllm");
    }
  }
  EXPECT_TRUE(seen.count("vLLM 0.19 default"));
  EXPECT_EQ(j["spec_method"], "none");
  EXPECT_TRUE(j["injected_env"].is_object());
  EXPECT_FALSE(j["injected_env"].contains("VLLM_USE_V2_MODEL_RUNNER"));
  // The text listing shows the same labels.
  CliResult text = RunPpdeploy("cmd --model deepseek-v3 --gpu h200 --tp-size 8 --vllm 0.19", false);
  EXPECT_THAT(text.output, ::testing::ContainsRegex("spec_method +none +vLLM 0\\.19 default"));
  EXPECT_THAT(text.output, ::testing::ContainsRegex("tp_size +8 +flag --tp-size"));
}

// `plan --model deepseek-v3` models no MTP unless asked (issue 23 item 4: 61,464 -> 62,252 B/token).
TEST(DefaultLayersCliTest, PlanModelsNoMtpUnlessAsked) {
  CliResult r = RunPpdeploy("plan --model deepseek-v3 --gpu h200 --tp 8 --vllm 0.19 --format json", false);
  auto j = nlohmann::json::parse(r.output, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.output;
  EXPECT_EQ(j["deployment"]["num_speculative_tokens"], 0);
  CliResult asked =
      RunPpdeploy("plan --model deepseek-v3 --gpu h200 --tp 8 --vllm 0.19 --spec-method mtp --format json", false);
  auto ja = nlohmann::json::parse(asked.output, nullptr, false);
  ASSERT_FALSE(ja.is_discarded()) << asked.output;
  EXPECT_EQ(ja["deployment"]["num_speculative_tokens"], 3);
}

// Acceptance: `ppdeploy cmd` with no arguments still renders the seed's command as `defaultcheck` expects.
TEST(DefaultLayersCliTest, TheSeedsCommandIsUnchanged) {
  CliResult check = RunPpdeploy("defaultcheck");
  EXPECT_EQ(check.exit_code, 0) << check.output;
  EXPECT_THAT(check.output, HasSubstr("defaultcheck: OK"));
  CliResult cmd = RunPpdeploy("cmd", false);
  EXPECT_THAT(cmd.output, ::testing::ContainsRegex("spec_method +auto +default deployment"));
}

// Issue 23 item 5: `cmd --model deepseek-r1` rendered `vllm serve deepseek-ai/deepseek-v3`.
TEST(DefaultLayersCliTest, AnAliasServesTheIdTheUserNamed) {
  CliResult r = RunPpdeploy("cmd --model deepseek-r1 --gpu h200 --tp-size 8", false);
  EXPECT_THAT(r.output, HasSubstr("deepseek-ai/DeepSeek-R1"));
  EXPECT_THAT(r.output, Not(HasSubstr("deepseek-ai/deepseek-v3")));
}

// Issue 23 item 7: with --stage-gpus the header still named the default GPU.
TEST(DefaultLayersCliTest, StageGpusAreNamedInThePlanHeader) {
  CliResult r =
      RunPpdeploy("plan --model deepseek-v3 --gpu a100-80gb --stage-gpus h200,h100-80gb --tp 4 --pp 2", false);
  EXPECT_THAT(r.output, HasSubstr("on 8 GPUs, PP stages on h200"));
  EXPECT_THAT(r.output, HasSubstr("h100-80gb"));
  EXPECT_THAT(r.output, Not(HasSubstr("x a100-80gb")));
}

}  // namespace
