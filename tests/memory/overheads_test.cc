// The memory terms one by one, each against the vLLM rule it models (file / function named in
// src/memory/overheads.h) or a logged figure, and the constants file's strict reading.
#include "memory/overheads.h"

#include <gtest/gtest.h>

#include "core/units.h"
#include "model/presets.h"
#include "test_util.h"

namespace ppdeploy {
namespace {

const MemoryTerm* Term(const StageMemory& s, std::string_view name) {
  for (const auto& t : s.terms)
    if (t.name == name) return &t;
  return nullptr;
}

ModelConfig Preset(const std::string& name) {
  const ModelPreset* p = FindModelPreset(name);
  EXPECT_NE(p, nullptr) << name;
  return ParseModelConfig(p->config, "preset " + name);
}

StageInputs Seed39Pp0() {
  StageInputs in;
  in.tensor_parallel_size = 4;
  in.pipeline_parallel_size = 2;
  in.pp_rank = 0;
  in.local_layers = 39;
  in.dense_mlp_layers = 3;
  in.mtp_on = true;
  in.num_speculative_tokens = 3;
  in.mtp_layers = 1;
  in.max_model_len = 524288;
  in.max_num_seqs = 256;  // A100 default (EngineArgs.get_batch_defaults, docs/memory-overheads.md §4)
  in.max_num_batched_tokens = 2048;
  in.v2_model_runner = true;
  return in;
}

TEST(CudaGraphSizesTest, CaptureSizesPerVersion) {
  // facts.json (llm-d v0.19): "Profiling CUDA graph memory: PIECEWISE=51 (largest=512)" at
  // max_num_seqs 1024, max_num_batched_tokens 8192 (e.g. run codellama-...-tp1pp1dp1--8192).
  const VllmProfile& v019 = FindVllmProfile("0.19");
  std::vector<int> s = CudaGraphCaptureSizes(v019, 1024, 0, 8192);
  EXPECT_EQ(s.size(), 51u);
  EXPECT_EQ(s.back(), 512);
  // docs/memory-overheads.md §5: 35 sizes at max 256; max = min(mns x (1 + k) x 2, 512, mbt).
  EXPECT_EQ(CudaGraphCaptureSizes(v019, 128, 0, 8192).size(), 35u);
  EXPECT_EQ(CudaGraphCaptureSizes(v019, 32, 0, 8192).back(), 64);
  EXPECT_EQ(CudaGraphCaptureSizes(v019, 256, 3, 2048).back(), 512);
  // Before v0.11 the step stays 8 up to 512: 3 + 64 sizes.
  EXPECT_EQ(CudaGraphCaptureSizes(FindVllmProfile("0.10"), 1024, 0, 8192).size(), 67u);
}

TEST(OverheadsTest, SeedPp0ColumnsAndCauses) {
  const ModelConfig m = Preset("glm-5.3-w4a16");
  const GpuSpec& a100 = FindGpu("a100-80gb");
  const VllmProfile& v = FindVllmProfile("0.30-custom");
  StageMemory s = EstimateStageMemory(m, a100, v, Seed39Pp0(), DefaultMemoryConstants(a100, v));
  // The WorkspaceManager buffer is the largest of its users: the sparse-MLA prefill workspace
  // 5 x 524,288 x (512 + 64) x 2 B = 2.8125 GiB (flashmla_sparse.py get_prefill_workspace_size)
  // beats the DSA indexer's 40 x 524,288 x 132 B + 1 MiB and the MoE workspace.
  const MemoryTerm* ws = Term(s, "shared workspace");
  ASSERT_NE(ws, nullptr);
  EXPECT_EQ(ws->bytes.value, 5LL * 524288 * 576 * 2);
  // N era (0.30): persistent buffers are "consumed" memory, i.e. the non-torch column.
  EXPECT_EQ(ws->column, MemoryColumn::kNonTorch);
  EXPECT_EQ(Term(s, "PP receive buffers"), nullptr);  // first stage receives nothing
  // docs/seed.md §6: PP0 consumed - weights = 50.98 - 47.85 = 3.13 GiB; peak activation (with the graph
  // estimate) 2.36 GiB.
  EXPECT_NEAR(ToGiB(s.non_torch.value), 3.13, 0.1);
  EXPECT_NEAR(ToGiB(s.activation.value + s.cuda_graph_estimate.value), 2.36, 0.3);
  // docs/seed.md §6: the graph pool 0.76 GiB (outside the budget).
  EXPECT_NEAR(ToGiB(s.cuda_graph_actual.value), 0.76, 0.15);
  EXPECT_LE(s.budget().lo, s.budget().value);
  EXPECT_GE(s.budget().hi, s.budget().value);
}

TEST(OverheadsTest, WithoutDescriptionsTheFiguresAreTheSame) {
  // The split optimiser asks for figures only (StageInputs::describe = false): every column and
  // term keeps its bytes, only the texts are left out. Seed 39,39 both stages and TP8/PP1.
  const ModelConfig m = Preset("glm-5.3-w4a16");
  const GpuSpec& a100 = FindGpu("a100-80gb");
  const VllmProfile& v = FindVllmProfile("0.30-custom");
  const MemoryConstants k = DefaultMemoryConstants(a100, v);
  StageInputs pp1 = Seed39Pp0();
  pp1.pp_rank = 1;
  pp1.dense_mlp_layers = 0;
  StageInputs tp8 = Seed39Pp0();
  tp8.tensor_parallel_size = 8;
  tp8.pipeline_parallel_size = 1;
  tp8.local_layers = 78;
  tp8.max_model_len = 352000;
  for (StageInputs in : {Seed39Pp0(), pp1, tp8}) {
    StageMemory a = EstimateStageMemory(m, a100, v, in, k);
    in.describe = false;
    StageMemory b = EstimateStageMemory(m, a100, v, in, k);
    EXPECT_EQ(a.budget().value, b.budget().value);
    EXPECT_EQ(a.budget().lo, b.budget().lo);
    EXPECT_EQ(a.budget().hi, b.budget().hi);
    EXPECT_EQ(a.cuda_graph_actual.value, b.cuda_graph_actual.value);
    EXPECT_EQ(a.cuda_context.value, b.cuda_context.value);
    ASSERT_EQ(a.terms.size(), b.terms.size());
    for (size_t i = 0; i < a.terms.size(); ++i) {
      EXPECT_EQ(a.terms[i].name, b.terms[i].name);
      EXPECT_EQ(a.terms[i].bytes.value, b.terms[i].bytes.value);
      EXPECT_FALSE(a.terms[i].detail.empty()) << a.terms[i].name;
      EXPECT_TRUE(b.terms[i].detail.empty()) << b.terms[i].name;
    }
  }
}

TEST(OverheadsTest, MoeWorkspaceIsTorchPeakInV019AndNonTorchInTheNEra) {
  // Issue 13: the MoE expert workspace belongs to the torch peak in v0.19 (facts.json
  // Qwen1.5-MoE-A2.7B: torch peak increase 2.47 GiB, non-torch 0.25 GiB).
  const ModelConfig m = Preset("qwen3-30b-a3b");
  const GpuSpec& h100 = FindGpu("h100");
  StageInputs in;
  in.local_layers = m.num_hidden_layers;
  in.max_num_seqs = 1024;
  in.max_num_batched_tokens = 8192;
  const VllmProfile& v019 = FindVllmProfile("0.19");
  StageMemory s = EstimateStageMemory(m, h100, v019, in, DefaultMemoryConstants(h100, v019));
  const MemoryTerm* ws = Term(s, "shared workspace");
  ASSERT_NE(ws, nullptr);
  // fused_moe TritonExperts.workspace_shapes: M x topk x (max(N, K) + max(2N, K)), bf16:
  // 8192 x 8 x (max(768, 2048) + max(1536, 2048)) x 2 B.
  EXPECT_EQ(ws->bytes.value, 2LL * 8192 * 8 * (2048 + 2048));
  EXPECT_EQ(ws->column, MemoryColumn::kActivation);
  // facts.json Qwen3-30B-A3B (run qwen-qwen3-30b-a3b--h100-80gb--tp1pp1dp1--8192): non-torch
  // 0.27, torch peak increase 2.68 GiB.
  EXPECT_NEAR(ToGiB(s.non_torch.value), 0.27, 0.05);
  EXPECT_NEAR(ToGiB(s.activation.value), 2.68, 0.2);
  const VllmProfile& v026 = FindVllmProfile("0.26");
  StageMemory n = EstimateStageMemory(m, h100, v026, in, DefaultMemoryConstants(h100, v026));
  EXPECT_EQ(Term(n, "shared workspace")->column, MemoryColumn::kNonTorch);
  // The sum moves with the graph estimate only (subtracted since v0.21).
  EXPECT_EQ(s.cuda_graph_estimate.value, 0);
  EXPECT_GT(n.cuda_graph_estimate.value, 0);
}

TEST(OverheadsTest, SamplerOnlyOnTheLastStageAndReceiveBuffersOnlyAfterTheFirst) {
  // facts.json Llama-3.1-8B TP1/PP2 (run meta-llama-llama-3-1-8b---h100-80gb--tp1pp2dp1--8192):
  // torch peak increase 1.10 GiB on PP0, 2.01 on PP1 (the sampler and the receive buffers).
  const ModelConfig m = Preset("llama-3.1-8b");
  const GpuSpec& h100 = FindGpu("h100");
  const VllmProfile& v = FindVllmProfile("0.19");
  StageInputs in;
  in.pipeline_parallel_size = 2;
  in.local_layers = 16;
  in.dense_mlp_layers = 16;
  in.max_num_seqs = 1024;
  in.max_num_batched_tokens = 8192;
  const MemoryConstants k = DefaultMemoryConstants(h100, v);
  StageMemory first = EstimateStageMemory(m, h100, v, in, k);
  in.pp_rank = 1;
  StageMemory last = EstimateStageMemory(m, h100, v, in, k);
  EXPECT_EQ(Term(first, "PP receive buffers"), nullptr);
  ASSERT_NE(Term(last, "PP receive buffers"), nullptr);
  // make_empty_intermediate_tensors: hidden_states + residual, 8192 x 4096 bf16 each.
  EXPECT_EQ(Term(last, "PP receive buffers")->bytes.value, 2LL * 8192 * 4096 * 2);
  EXPECT_NEAR(ToGiB(first.activation.value), 1.10, 0.15);
  EXPECT_NEAR(ToGiB(last.activation.value), 2.01, 0.15);
  // Distributed: NCCL init already loaded part of the runtime (facts.json non-torch 0.07 at PP2).
  EXPECT_NEAR(ToGiB(first.non_torch.value), 0.07, 0.01);
}

TEST(OverheadsTest, TensorParallelCommunicationOnNvswitchHopper) {
  // facts.json: non-torch forward increase 2.06-2.11 GiB at TP2, 2.13-2.21 at TP4 on H100
  // (Llama-3.1-8B 2.07 / 2.13).
  const ModelConfig m = Preset("llama-3.1-8b");
  const GpuSpec& h100 = FindGpu("h100");
  const VllmProfile& v = FindVllmProfile("0.19");
  StageInputs in;
  in.local_layers = 32;
  in.dense_mlp_layers = 32;
  in.max_num_seqs = 1024;
  in.max_num_batched_tokens = 8192;
  in.tensor_parallel_size = 2;
  EXPECT_NEAR(ToGiB(EstimateStageMemory(m, h100, v, in, DefaultMemoryConstants(h100, v)).non_torch.value), 2.07, 0.05);
  in.tensor_parallel_size = 4;
  EXPECT_NEAR(ToGiB(EstimateStageMemory(m, h100, v, in, DefaultMemoryConstants(h100, v)).non_torch.value), 2.13, 0.05);
}

TEST(OverheadsTest, EagerHasNoGraphs) {
  const ModelConfig m = Preset("llama-3.1-8b");
  const GpuSpec& h100 = FindGpu("h100");
  const VllmProfile& v = FindVllmProfile("0.26");
  StageInputs in;
  in.local_layers = 32;
  in.dense_mlp_layers = 32;
  in.enforce_eager = true;
  StageMemory s = EstimateStageMemory(m, h100, v, in, DefaultMemoryConstants(h100, v));
  EXPECT_EQ(s.cuda_graph_actual.value, 0);
  EXPECT_EQ(s.cuda_graph_estimate.value, 0);
}

TEST(MemoryConstantsTest, SetsMatchByGpuAndRow) {
  EXPECT_EQ(DefaultMemoryConstants(FindGpu("a100-80gb"), FindVllmProfile("0.30-custom")).name, "a100-0.30-custom");
  EXPECT_EQ(DefaultMemoryConstants(FindGpu("h100"), FindVllmProfile("0.19")).name, "hopper-blackwell-nvswitch");
  EXPECT_EQ(DefaultMemoryConstants(FindGpu("a100-80gb"), FindVllmProfile("0.26")).name, "ampere-or-pcie");
  EXPECT_EQ(DefaultMemoryConstants(FindGpu("h100-pcie"), FindVllmProfile("0.26")).name, "ampere-or-pcie");
}

TEST(MemoryConstantsTest, BadFilesAreClearErrors) {
  nlohmann::json j = nlohmann::json::parse(R"({"schema": "ppdeploy.memory-constants/1", "model": {}, "sets": []})");
  EXPECT_EQ(testing::ErrorOf([&] { ParseMemoryConstants(j, "c.json"); }),
            "c.json: model.sampler_bytes_per_logit: required constant is missing");
  j = nlohmann::json::parse(R"({"schema": "ppdeploy.memory-constants/2"})");
  EXPECT_EQ(
      testing::ErrorOf([&] { ParseMemoryConstants(j, "c.json"); }),
      "c.json: schema: unsupported schema \"ppdeploy.memory-constants/2\" (expected ppdeploy.memory-constants/1)");
}

TEST(FitConstantsTest, RecoversAShiftedCommunicationConstantAndReproducesTheBoot) {
  // A synthetic boot made by the model itself with tp_comm 0.4 GiB higher: the fit finds it from
  // the non-torch column, and the boot's available memory comes back exactly.
  const ModelConfig m = Preset("llama-3.1-8b");
  const GpuSpec& h100 = FindGpu("h100");
  const VllmProfile& v = FindVllmProfile("0.19");
  MemoryConstants truth = DefaultMemoryConstants(h100, v);
  truth.tp_comm_gib.value += 0.4;
  StageInputs in;
  in.tensor_parallel_size = 2;
  in.local_layers = 32;
  in.dense_mlp_layers = 32;
  in.max_num_seqs = 1024;
  in.max_num_batched_tokens = 8192;
  StageMemory s = EstimateStageMemory(m, h100, v, in, truth);
  CalibrationStage st{in, GiBToBytes(7.5), GiBToBytes(75.23)};
  Calibration c;
  c.source = "synthetic";
  c.tensor_parallel_size = 2;
  c.total_gib = 79.19;
  c.gpu_memory_utilization = 0.95;
  CalibrationRank r;
  r.non_torch_gib = ToGiB(s.non_torch.value);
  r.peak_activation_gib = ToGiB(s.activation.value);
  r.available_kv_gib = ToGiB(st.requested_bytes - st.weights_bytes - s.budget().value);
  c.ranks.push_back(r);
  std::vector<std::string> notes;
  MemoryConstants fit = FitConstants(c, {st}, m, h100, v, DefaultMemoryConstants(h100, v), &notes);
  EXPECT_TRUE(fit.calibrated);
  EXPECT_NEAR(fit.tp_comm_gib.value, truth.tp_comm_gib.value, 0.001);
  EXPECT_FALSE(notes.empty());
  StageMemory back = EstimateStageMemory(m, h100, v, in, fit);
  EXPECT_NEAR(ToGiB(st.requested_bytes - st.weights_bytes - back.budget().value), r.available_kv_gib, 0.001);
}

}  // namespace
}  // namespace ppdeploy
