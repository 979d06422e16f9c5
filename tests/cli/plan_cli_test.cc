// End-to-end: the real binary's `plan` output, formats and exit codes.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_runner.h"

namespace {

using ppdeploy::testing::CliResult;
CliResult RunBinary(const std::string& args) { return ppdeploy::testing::RunPpdeploy(args); }

TEST(PlanCliTest, DefaultPlanRunsAndShowsTheSeedDeployment) {
  CliResult r = RunBinary("plan");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("glm-5.3-w4a16"), std::string::npos);
  EXPECT_NE(r.output.find("Layout TP4 PP2 split 41,37 (given)"), std::string::npos);
  // docs/seed.md §6: 729,280 measured at 41,37; the calibrated prediction is within 0.1% and printed
  // with its range.
  EXPECT_NE(r.output.find("GPU KV cache size: 728,"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("predicted pool: 728,704 (range "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("rejected: weights need"), std::string::npos);
}

TEST(PlanCliTest, JsonIsValidAndVersioned) {
  CliResult r = RunBinary("plan --format json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["schema"], "ppdeploy.plan/3");
  const auto& d = j["detailed"][0];
  EXPECT_LE(d["kv_tokens_lo"].get<long>(), d["kv_tokens"].get<long>());
  EXPECT_GE(d["kv_tokens_hi"].get<long>(), d["kv_tokens"].get<long>());
  EXPECT_FALSE(d["ranks"][0]["memory_terms"].empty());
  EXPECT_EQ(j["detailed"][0]["layer_partition"], nlohmann::json({41, 37}));
  EXPECT_GT(j["layouts"].size(), 3u);
}

TEST(PlanCliTest, CsvAndMarkdown) {
  CliResult csv = RunBinary("plan --format csv");
  EXPECT_EQ(csv.exit_code, 0);
  EXPECT_EQ(csv.output.rfind("tensor_parallel_size,pipeline_parallel_size,", 0), 0u);
  CliResult md = RunBinary("plan --format md");
  EXPECT_EQ(md.exit_code, 0);
  EXPECT_NE(md.output.find("| TP | PP | DP |"), std::string::npos);
}

TEST(PlanCliTest, BadInputIsOneLineAndExitOne) {
  CliResult r = RunBinary("plan --model no-such-model");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.output.rfind("ppdeploy: error: unknown model \"no-such-model\"", 0), 0u) << r.output;
  EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1);
  CliResult p = RunBinary("plan --tp 4 --pp 2 --partition 41,x");
  EXPECT_EQ(p.exit_code, 1);
  // vLLM's message (get_pp_indices: "Invalid partition string: {}"), then the field that failed.
  EXPECT_EQ(p.output,
            "ppdeploy: error: pp_layer_partition (flag --partition): Invalid partition string: 41,x (field 2 of 2, "
            "\"x\": character 1, \"x\", is not a decimal digit)\n");
  CliResult f = RunBinary("plan --format xml");
  EXPECT_EQ(f.exit_code, 1);
  EXPECT_EQ(f.output, "ppdeploy: error: --format: unknown value \"xml\" (accepted: table, json, md, csv, html, svg)\n");
}

TEST(PlanCliTest, MalformedConfigFileNamesTheFile) {
  std::string path = ::testing::TempDir() + "/bad_config.json";
  FILE* f = fopen(path.c_str(), "w");
  fputs("{\"architectures\": [\"LlamaForCausalLM\"], ", f);
  fclose(f);
  CliResult r = RunBinary("plan --model " + path);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.output.rfind("ppdeploy: error: " + path + ": malformed JSON:", 0), 0u) << r.output;
}

}  // namespace
