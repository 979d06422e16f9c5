// The planner on the embedded default deployment, calibrated on the seed's 39,39 stage table
// (docs/seed.md §6), and plan invariants that every plan must keep.
#include "layout/planner.h"

#include <gtest/gtest.h>

#include "core/units.h"
#include "deploy_test_util.h"
#include "layout/plan_report.h"
#include "test_util.h"

namespace ppdeploy {
namespace {

Deployment Default() { return testing::DeploymentWith(); }

// Invariants every plan must keep (bloaty-style consistency checks).
void CheckInvariants(const Deployment& d, const LayoutPlan& l) {
  int covered = 0;
  for (size_t r = 0; r < l.ranks.size(); ++r) {
    const RankPlan& rp = l.ranks[r];
    EXPECT_EQ(rp.layers.start, covered) << "layers covered once, in order";
    covered = rp.layers.end;
    EXPECT_GE(rp.num_blocks, 0);
    EXPECT_EQ(rp.page_bytes, rp.bytes_per_token * l.block_size);
    if (!d.kv_cache_memory_bytes) {
      EXPECT_NEAR(rp.requested_bytes - rp.weights.bytes - rp.non_torch.bytes - rp.activation.bytes -
                      rp.cuda_graph_estimate.bytes,
                  rp.available_kv.bytes, 8)
          << "the budget breakdown sums (to the rounding of the interval sums)";
      EXPECT_LE(rp.available_kv.lo, rp.available_kv.bytes);
      EXPECT_GE(rp.available_kv.hi, rp.available_kv.bytes);
    }
    if (rp.available_kv.bytes > 0) {
      EXPECT_EQ(rp.num_blocks, rp.available_kv.bytes / rp.page_bytes);
    }
    EXPECT_GE(rp.num_blocks, l.pool.num_gpu_blocks) << "the pool is the minimum over ranks";
    std::int64_t terms = 0;
    for (const auto& t : rp.memory_terms)
      if (t.column != MemoryColumn::kOutsideBudget) terms += t.bytes.value;
    EXPECT_NEAR(terms, rp.non_torch.bytes + rp.activation.bytes + rp.cuda_graph_estimate.bytes, 16)
        << "the terms make up the columns";
  }
  EXPECT_EQ(covered, d.model.num_hidden_layers);
  EXPECT_LE(l.pool_lo.num_gpu_blocks, l.pool.num_gpu_blocks);
  EXPECT_GE(l.pool_hi.num_gpu_blocks, l.pool.num_gpu_blocks);
}

TEST(PlannerTest, DefaultPlanShowsTheSeedLayouts) {
  Deployment d = Default();
  PlanReport rep = BuildPlanReport(d, {}, true);
  auto find = [&](int tp, int pp, int dp) -> const LayoutPlan* {
    for (const auto& l : rep.layouts)
      if (l.spec.tensor_parallel_size == tp && l.spec.pipeline_parallel_size == pp && l.spec.data_parallel_size == dp)
        return &l;
    return nullptr;
  };
  for (auto [tp, pp] : {std::pair{8, 1}, {4, 2}, {2, 4}}) {
    const LayoutPlan* l = find(tp, pp, 1);
    ASSERT_NE(l, nullptr) << tp << "/" << pp;
    // docs/seed.md §2: weights per GPU = 390.58 / (TP x PP) ~ 48.8 GiB; our estimate of the checkpoint is within 1%.
    EXPECT_NEAR(ToGiB(d.weights.total_bytes) / (tp * pp), 48.8, 0.5);
    EXPECT_GT(l->pool.kv_tokens, 0);
    CheckInvariants(d, *l);
  }
  const LayoutPlan* tp4pp1 = find(4, 1, 2);
  ASSERT_NE(tp4pp1, nullptr);
  EXPECT_FALSE(tp4pp1->feasible);
  // docs/seed.md §2: "TP4/PP1 would be 97.5 GiB per GPU" (> the 79.25 GiB GPU).
  EXPECT_NEAR(ToGiB(d.weights.total_bytes) / 4, 97.5, 1.0);
  EXPECT_EQ(tp4pp1->problems.front().kind, PlanProblem::Kind::kWeightsOverBudget);
  EXPECT_EQ(tp4pp1->problems.front().message.rfind("weights need 100.", 0), 0u) << tp4pp1->problems.front().message;
  EXPECT_NE(tp4pp1->problems.front().message.find("more than the GPU's 79.25 GiB"), std::string::npos);
  // The best safe, ungated layout on 8 GPUs is TP4/PP2 (docs/seed.md §11).
  ASSERT_GE(rep.best, 0);
  EXPECT_EQ(rep.layouts[rep.best].spec.tensor_parallel_size, 4);
  EXPECT_EQ(rep.layouts[rep.best].spec.pipeline_parallel_size, 2);
  // PP4 is gated on a DSA model with index sharing (docs/seed.md §8).
  EXPECT_TRUE(find(2, 4, 1)->pp_gated);
}

TEST(PlannerTest, CalibratedSplitsMatchTheSeedMeasurements) {
  Deployment d = Default();
  // Calibration split itself: measured 597,760 (docs/seed.md §6), PP1 binds.
  LayoutPlan p3939 = PlanLayout(d, {4, 2, 1, {39, 39}});
  EXPECT_NEAR(p3939.pool.kv_tokens, 597760, 597760 * 0.001);
  EXPECT_EQ(p3939.pool.binding_rank, 1);
  EXPECT_EQ(p3939.ranks[1].indexer_caches, 13);
  EXPECT_EQ(p3939.ranks[1].forced_layers, (std::vector<int>{39, 40, 41}));
  EXPECT_NEAR(ToGiB(p3939.ranks[1].available_kv.bytes), 15.56, 0.0051);
  EXPECT_NEAR(ToGiB(p3939.ranks[0].available_kv.bytes), 21.95, 0.0051);
  // Our weight estimate for PP0 at 39,39 against the log's "Model loading took 47.85 GiB".
  EXPECT_NEAR(ToGiB(p3939.ranks[0].weights.bytes), 47.85, 0.25);
  CheckInvariants(d, p3939);
  // 41,37: measured 729,280 (+22.0%); predicted within 0.1%, PP0 now binds (docs/seed.md §6 derived check).
  LayoutPlan p4137 = PlanLayout(d, {4, 2, 1, {41, 37}});
  EXPECT_NEAR(p4137.pool.kv_tokens, 729280, 729280 * 0.001);
  EXPECT_EQ(p4137.pool.binding_rank, 0);
  EXPECT_EQ(p4137.ranks[0].bytes_per_token, 28480);
  EXPECT_NEAR(p4137.pool.max_concurrency, 1.39, 0.006);
  CheckInvariants(d, p4137);
}

// Known-memory mode (issue 12 acceptance): each stage's logged available KV memory as the calibration, at
// the layout it was logged at; the pool's block count must lie in what the two-decimal rounding allows.
LayoutPlan PlanKnown(Deployment d, const LayoutSpec& spec, const std::vector<double>& gib, double delta) {
  Calibration c;
  c.source = "seed digest";
  c.tensor_parallel_size = spec.tensor_parallel_size;
  c.pipeline_parallel_size = spec.pipeline_parallel_size;
  c.layer_partition = spec.layer_partition;
  c.gpu_memory_utilization = d.gpu_memory_utilization;
  c.max_model_len = d.effective_max_model_len();
  c.total_gib = d.gpu.total_gib;
  c.num_speculative_tokens = d.num_speculative_tokens;  // the boot's MTP layer is in its weights
  for (size_t r = 0; r < gib.size(); ++r) {
    CalibrationRank cr;
    cr.pp_rank = static_cast<int>(r);
    cr.available_kv_gib = gib[r] + delta;
    c.ranks.push_back(cr);
  }
  d.calibration = c;
  return PlanLayout(d, spec);
}

TEST(PlannerTest, SeedPoolsInKnownMemoryMode) {
  Deployment d = Default();
  auto check = [&](const LayoutSpec& spec, const std::vector<double>& gib, std::int64_t blocks, std::int64_t tokens,
                   std::int64_t bytes_per_token) {
    LayoutPlan p = PlanKnown(d, spec, gib, 0);
    EXPECT_EQ(p.ranks[p.pool.binding_rank].bytes_per_token, bytes_per_token);
    EXPECT_LE(PlanKnown(d, spec, gib, -0.005).pool.num_gpu_blocks, blocks);
    EXPECT_GE(PlanKnown(d, spec, gib, 0.005).pool.num_gpu_blocks, blocks);
    EXPECT_EQ(blocks * p.block_size, tokens);  // v0.30: int(blocks / 8,192 x 524,288) = blocks x 64
  };
  // docs/seed.md §3: TP8/PP1 + MTP, 17.26 GiB available -> 338,688 tokens = 5,292 blocks of 64 at 79 x 656 + 22 x 132 =
  // 54,728 B/token (the derived check: the MTP layer's indexer cache counts).
  check({8, 1, 1, {}}, {17.26}, 5292, 338688, 54728);
  // docs/seed.md §6: TP4/PP2 39,39, PP0 21.95 GiB and PP1 15.56 GiB -> 597,760 tokens = 9,340 blocks, PP1 binding at
  // 40 x 656 + 13 x 132 = 27,956 B/token.
  check({4, 2, 1, {39, 39}}, {21.95, 15.56}, 9340, 597760, 27956);
}

TEST(PlannerTest, MaxModelLenGateAndLargestThatFits) {
  Deployment d = Default();
  LayoutPlan p = PlanLayout(d, {8, 1, 1, {}});
  // TP8/PP1 cannot hold one 524,288-token request: the seed ran it at 352,000.
  EXPECT_FALSE(p.feasible);
  ASSERT_NE(p.Problem(PlanProblem::Kind::kMaxModelLenTooLarge), nullptr);
  // vLLM's own message (kv_cache_utils.py _check_enough_kv_cache_memory), with its binary-searched estimate.
  EXPECT_NE(p.Problem(PlanProblem::Kind::kMaxModelLenTooLarge)
                ->message.find("To serve at least one request with the model's max seq len (524288)"),
            std::string::npos);
  EXPECT_NE(p.Problem(PlanProblem::Kind::kMaxModelLenTooLarge)->message.find("the estimated maximum model length is"),
            std::string::npos);
  // The estimate is the longest length whose blocks fit: a multiple of the block size, below the pool.
  EXPECT_EQ(p.Problem(PlanProblem::Kind::kMaxModelLenTooLarge)->have, p.pool.num_gpu_blocks * 64);
  d.max_model_len = 352000;
  LayoutPlan q = PlanLayout(d, {8, 1, 1, {}});
  // docs/seed.md §5 measured 386,943 tokens at TP8/PP1 (max_model_len 352,000); the calibration from the
  // TP4/PP2 stages transfers its constants, not its totals (tests/memory/seed_pools_test.cc).
  EXPECT_NEAR(q.pool.kv_tokens, 386943, 386943 * 0.01);
  // Issue 23 item 3: the largest max_model_len is one a launch at it accepts. The DSA workspace grows with
  // max_model_len, so the pool's 385,344 tokens at 352,000 are not all there at 385,344: the limit is the plan's
  // figure at that length (at most the blocks x 64 of this plan), and planning at it fits.
  EXPECT_LE(q.limit.largest, q.pool.num_gpu_blocks * 64);
  EXPECT_GE(q.limit.largest, 352000);
  EXPECT_EQ(q.pool.largest_max_model_len, q.limit.largest);
  d.max_model_len = q.limit.largest;
  EXPECT_TRUE(PlanLayout(d, {8, 1, 1, {}}).feasible);
  d.max_model_len = 262144;
  EXPECT_TRUE(PlanLayout(d, {8, 1, 1, {}}).feasible);
}

// Issue 22: a deployment whose profiled available memory is not positive is a failed boot in vLLM's own words
// (V1 kv_cache_utils.py check_enough_kv_cache_memory, V0 raise_if_cache_size_invalid). At 0.62 the seed's
// TP4/PP2 weights (~50.4 GiB per GPU) exceed the 49.1 GiB budget; at 0.66 they fit, the rest does not.
TEST(PlannerTest, NoMemoryForTheCacheIsVllmsStartUpError) {
  for (double util : {0.62, 0.66}) {
    Deployment d = Default();
    d.gpu_memory_utilization = util;
    LayoutPlan p = PlanLayout(d, {4, 2, 1, {41, 37}});
    EXPECT_FALSE(p.feasible) << util;
    ASSERT_FALSE(p.problems.empty()) << util;
    EXPECT_NE(p.problems.front().message.find("No available memory for the cache blocks"), std::string::npos)
        << util << ": " << p.problems.front().message;
  }
}

TEST(PlannerTest, BadLayoutInputsAreErrors) {
  Deployment d = Default();
  EXPECT_EQ(testing::ErrorOf([&] {
              PlanLayout(d, {3, 1, 1, {}});
            }),
            "tensor_parallel_size=3 does not divide num_attention_heads=64 (preset glm-5.3-w4a16)");
  EXPECT_EQ(testing::ErrorOf([&] {
              PlanLayout(d, {4, 2, 1, {41, 38}});
            }),
            "sum(partitions)=79 does not match num_hidden_layers=78.");
  EXPECT_EQ(testing::ErrorOf([&] {
              PlanLayout(d, {4, 2, 1, {80, -2}});
            }),
            "layer partition 80,-2: entry 2 is -2 (a stage cannot hold a negative number of layers)");
  d.block_size = 96;
  EXPECT_EQ(testing::ErrorOf([&] {
              PlanLayout(d, {4, 2, 1, {}});
            }),
            "--block-size 96 is not a multiple of 64, the kernel block size of this model's attention backend");
}

TEST(PlannerTest, PpWithMtpRejectedWhereUnsupported) {
  Deployment d = Default();
  d.vllm = FindVllmProfile("0.26");
  d.calibration.reset();
  LayoutPlan p = PlanLayout(d, {4, 2, 1, {41, 37}});
  bool found = false;
  for (const auto& pr : p.problems)
    found |= pr.kind == PlanProblem::Kind::kPpSpeculation &&
             pr.message.find("rejects pipeline parallelism with MTP") != std::string::npos;
  EXPECT_TRUE(found);
}

TEST(PlannerTest, UnsafeSplitWithoutFixIsFlagged) {
  Deployment d = Default();
  d.index_fix = IndexFix::kNone;
  LayoutPlan p = PlanLayout(d, {4, 2, 1, {39, 39}});
  EXPECT_FALSE(p.index_share_safe);
  // Without the fix the forced layers own no indexer cache: PP1 has 10 (9 full + MTP).
  EXPECT_EQ(p.ranks[1].indexer_caches, 10);
  LayoutPlan z = PlanLayout(d, {4, 2, 1, {42, 36}});
  EXPECT_TRUE(z.index_share_safe);  // the zero-dependency split needs no fix
}

TEST(PlannerTest, EstimatesWithoutCalibrationKeepInvariants) {
  Deployment d = testing::DeploymentWith(
      {{"model", "deepseek-v3"}, {"gpu", "h200"}, {"vllm_version", "0.26"}, {"max_model_len", "131072"}});
  EXPECT_FALSE(d.calibration.has_value());
  PlanReport rep = BuildPlanReport(d, {}, true);
  ASSERT_FALSE(rep.layouts.empty());
  for (const auto& l : rep.layouts) {
    CheckInvariants(d, l);
    for (const auto& r : l.ranks) EXPECT_EQ(r.weights.provenance, Provenance::kEstimated);
  }
}

}  // namespace
}  // namespace ppdeploy
