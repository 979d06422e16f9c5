// `ppdeploy preflight` through the binary: exit codes and the issue 3/8 acceptance.
#include <gtest/gtest.h>

#include "cli_runner.h"
#include "support/fake_checkpoint.h"

namespace ppdeploy {
namespace {
using testing::RunPpdeploy;

TEST(PreflightCliTest, SeedSplits) {
  auto r = RunPpdeploy("preflight --partition 41,37");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("[41,78)"), std::string::npos);
  EXPECT_NE(r.output.find("42,46,50,54,58,62,66,70,74"), std::string::npos);
  auto z = RunPpdeploy("preflight --partition 42,36 --format json");
  EXPECT_EQ(z.exit_code, 0);
  EXPECT_NE(z.output.find("\"zero_dependency\": true"), std::string::npos);
  // Without fix B the 39,39 split is unsafe (docs/seed.md §7): exit 2.
  auto u = RunPpdeploy("preflight --partition 39,39 --fix none");
  EXPECT_EQ(u.exit_code, 2) << u.output;
  EXPECT_NE(u.output.find("UNSAFE"), std::string::npos);
  auto bad = RunPpdeploy("preflight --partition 41,38");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_EQ(bad.output,
            "ppdeploy: error: pp_layer_partition (flag --partition): sum(partitions)=79 does not match "
            "num_hidden_layers=78.\n");
}

TEST(PreflightCliTest, PatternFixPrintsTheOverride) {
  // Issue 8: 41,37 -> F added at 41 only.
  auto r = RunPpdeploy("preflight --partition 41,37 --fix pattern --format json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto j = nlohmann::json::parse(r.output);
  std::string p = j["index_topk_pattern"];
  ASSERT_EQ(p.size(), 78u);
  EXPECT_EQ(p[41], 'F');
  EXPECT_EQ(p[39], 'S');
  EXPECT_EQ(p[42], 'F');
  EXPECT_NE(j["checkpoint_note"].get<std::string>().find("could not run"), std::string::npos);
  // 42,36 needs no override.
  auto z = RunPpdeploy("preflight --partition 42,36 --fix pattern --format json");
  EXPECT_EQ(nlohmann::json::parse(z.output)["index_topk_pattern"], "");
}

TEST(PreflightCliTest, CheckpointMissingIndexerTensorsOfAForcedLayer) {
  // Issue 8: a headers-only checkpoint generated from the model config; without layer 41's
  // indexer tensors `preflight --fix pattern --partition 41,37` exits 2 naming layer 41.
  testing::FakeMlaMoeSpec spec = testing::Glm5Spec();
  spec.n_routed_experts = 4;  // keep the fixture small; experts do not matter here
  auto tensors = testing::FakeMlaMoeTensors(spec);
  nlohmann::json cfg = nlohmann::json::parse(testing::FakeMlaMoeConfigJson(spec));
  cfg["index_topk_freq"] = 4;
  cfg["index_skip_topk_offset"] = 3;
  testing::TempDir good, bad;
  testing::FakeCheckpointOptions opt;
  opt.num_shards = 3;
  opt.config_json = cfg.dump();
  testing::WriteFakeCheckpoint(good.path(), tensors, opt);
  auto ok = RunPpdeploy("preflight --fix pattern --partition 41,37 --model " + good.path());
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_NE(ok.output.find("all present"), std::string::npos) << ok.output;
  ASSERT_GT(testing::RemoveTensorsWithPrefix(tensors, "model.layers.41.self_attn.indexer."), 0u);
  testing::WriteFakeCheckpoint(bad.path(), tensors, opt);
  auto r = RunPpdeploy("preflight --fix pattern --partition 41,37 --model " + bad.path());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("layer 41: model.layers.41.self_attn.indexer."), std::string::npos) << r.output;
}

}  // namespace
}  // namespace ppdeploy
