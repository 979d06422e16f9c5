// Tests of ParseBootLog. Fixtures: the raw_log_lines of the boot-log examples (docs/sources.md §3) (copied
// verbatim; expected values = that file's "logged" figures) and one line per format string of
// docs/vllm-rules.md §2 (values chosen for the test, formats as quoted there).
#include "vllm/log_parser.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <string>

namespace ppdeploy {
namespace {

// ---- the boot-log examples (docs/sources.md §3) raw_log_lines, verbatim ----

// DEV-MLA-01: DeepSeek-V2-Lite TP2 PP2 on 4x L4, vLLM 0.1.dev7548+gbaba038 (July 2025), vllm PR #20665.
constexpr std::string_view kDevMla01 =
    R"LOG((VllmWorker rank=0 pid=19831) WARNING 07-09 09:47:44 [fused_moe.py:690] Using default MoE config. Performance might be sub-optimal! Config file not found at <VLLM_SRC>/vllm/model_executor/layers/fused_moe/configs/E=64,N=704,device_name=NVIDIA_L4.json
(VllmWorker rank=3 pid=19834) INFO 07-09 09:47:45 [gpu_worker.py:233] Available KV cache memory: 11.33 GiB
(VllmWorker rank=2 pid=19833) INFO 07-09 09:47:45 [gpu_worker.py:233] Available KV cache memory: 11.33 GiB
(VllmWorker rank=1 pid=19832) INFO 07-09 09:47:45 [gpu_worker.py:233] Available KV cache memory: 12.13 GiB
(VllmWorker rank=0 pid=19831) INFO 07-09 09:47:45 [gpu_worker.py:233] Available KV cache memory: 12.13 GiB
INFO 07-09 09:47:46 [kv_cache_utils.py:716] GPU KV cache size: 807,792 tokens
INFO 07-09 09:47:46 [kv_cache_utils.py:720] Maximum concurrency for 1,024 tokens per request: 788.86x
INFO 07-09 09:47:46 [kv_cache_utils.py:716] GPU KV cache size: 807,792 tokens
INFO 07-09 09:47:46 [kv_cache_utils.py:720] Maximum concurrency for 1,024 tokens per request: 788.86x
)LOG";

// DEV-MLA-13 (vllm PR #14462) has no raw_log_lines (raw_lines_verbatim: false): nothing to copy.

// DEV-MLA-18: Kimi-K2-Thinking TP8 on 8x H200, nightly 2025-11-06, vllm-project/recipes PR #115.
constexpr std::string_view kDevMla18 =
    R"LOG((Worker_TP0 pid=591236) INFO 11-06 12:08:54 [gpu_worker.py:349] Available KV cache memory: 46.80 GiB
(EngineCore_DP0 pid=591074) INFO 11-06 12:08:55 [kv_cache_utils.py:1229] GPU KV cache size: 715,072 tokens
)LOG";

// DEV-GQA-02: Llama-3.1-8B on an RTX 3090, V0 ~0.6.4, vllm issue #10517.
constexpr std::string_view kDevGqa02 = R"LOG(Loading model weights took 14.9888 GB
Memory profiling results: total_gpu_memory=23.58GiB initial_memory_usage=15.34GiB peak_torch_memory=17.06GiB memory_usage_post_profile=15.35GiB non_torch_memory=0.35GiB kv_cache_size=3.81GiB gpu_memory_utilization=0.90
GPU blocks: 1952, # CPU blocks: 2048
Maximum concurrency for 20000 tokens per request: 1.56x
)LOG";

// DEV-GQA-17: Qwen3-Coder-480B FP8, DP8+EP on H20, vLLM 0.10.1.dev101, vllm-project/recipes PR #12.
constexpr std::string_view kDevGqa17 =
    R"LOG(ValueError: To serve at least one request with the models's max seq len (262144), (62.00 GiB KV cache is needed, which is larger than the available KV cache memory (48.66 GiB). Based on the available memory, the estimated maximum model length is 205728. Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.
)LOG";

std::string Joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += x + "\n";
  return s;
}

TEST(LogParserTest, DevMla01PerRankAvailableKvAndCapacity) {
  BootLog log = ParseBootLog(kDevMla01);
  EXPECT_TRUE(log.warnings.empty()) << Joined(log.warnings);
  const double expected[] = {12.13, 12.13, 11.33, 11.33};  // logged.available_kv_cache_gib rank0..rank3
  for (int r = 0; r < 4; ++r) {
    const WorkerLog* w = log.FindWorker("VllmWorker rank=" + std::to_string(r));
    ASSERT_NE(w, nullptr) << r;
    ASSERT_TRUE(w->process.rank.has_value());
    EXPECT_EQ(*w->process.rank, r);
    EXPECT_EQ(w->process.pid.value_or(0), 19831 + r);
    ASSERT_TRUE(w->available_kv_gib.has_value());
    EXPECT_DOUBLE_EQ(*w->available_kv_gib, expected[r]);
  }
  EXPECT_EQ(log.workers.size(), 4u);
  EXPECT_EQ(log.kv_tokens, (std::vector<std::int64_t>{807792, 807792}));  // logged.gpu_kv_cache_tokens
  ASSERT_EQ(log.max_concurrency.size(), 2u);
  EXPECT_EQ(log.max_concurrency[0].tokens_per_request, 1024);
  EXPECT_DOUBLE_EQ(log.max_concurrency[0].x, 788.86);
  EXPECT_EQ(log.lines, 9);
  EXPECT_EQ(log.recognized_lines, 8);
}

TEST(LogParserTest, DevMla18AvailableKvAndTokens) {
  BootLog log = ParseBootLog(kDevMla18);
  EXPECT_TRUE(log.warnings.empty()) << Joined(log.warnings);
  const WorkerLog* w = log.FindWorker("Worker_TP0");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->process.tp, 0);
  EXPECT_FALSE(w->process.pp.has_value());
  EXPECT_DOUBLE_EQ(w->available_kv_gib.value_or(-1), 46.80);  // logged.available_kv_cache_gib.Worker_TP0
  EXPECT_EQ(log.kv_tokens, (std::vector<std::int64_t>{715072}));
  EXPECT_EQ(log.kv_tokens_process, (std::vector<std::string>{"EngineCore_DP0"}));
  EXPECT_TRUE(log.max_concurrency.empty());
}

TEST(LogParserTest, DevGqa02V0ProfileAndBlocks) {
  BootLog log = ParseBootLog(kDevGqa02);
  EXPECT_TRUE(log.warnings.empty()) << Joined(log.warnings);
  const WorkerLog* w = log.FindWorker("");
  ASSERT_NE(w, nullptr);
  EXPECT_DOUBLE_EQ(w->model_loading_gib.value_or(-1), 14.9888);  // logged.model_loading_gib
  ASSERT_TRUE(w->v0_profile.has_value());
  const V0MemoryProfile& p = *w->v0_profile;
  EXPECT_DOUBLE_EQ(p.total_gpu_gib.value_or(-1), 23.58);  // gpu_total_memory_gib_logged
  EXPECT_DOUBLE_EQ(p.initial_memory_usage_gib.value_or(-1), 15.34);
  EXPECT_DOUBLE_EQ(p.peak_torch_memory_gib.value_or(-1), 17.06);
  EXPECT_DOUBLE_EQ(p.memory_usage_post_profile_gib.value_or(-1), 15.35);
  EXPECT_DOUBLE_EQ(p.non_torch_gib.value_or(-1), 0.35);
  EXPECT_DOUBLE_EQ(p.kv_cache_gib.value_or(-1), 3.81);
  EXPECT_DOUBLE_EQ(p.gpu_memory_utilization.value_or(-1), 0.90);
  EXPECT_EQ(log.num_gpu_blocks, 1952);
  EXPECT_EQ(log.num_cpu_blocks, 2048);
  ASSERT_EQ(log.max_concurrency.size(), 1u);
  EXPECT_EQ(log.max_concurrency[0].tokens_per_request, 20000);
  EXPECT_DOUBLE_EQ(log.max_concurrency[0].x, 1.56);
  EXPECT_TRUE(log.kv_tokens.empty());
}

TEST(LogParserTest, DevGqa17NotEnoughKvError) {
  BootLog log = ParseBootLog(kDevGqa17);
  EXPECT_TRUE(log.warnings.empty()) << Joined(log.warnings);
  ASSERT_TRUE(log.not_enough_kv.has_value());
  EXPECT_EQ(log.not_enough_kv->max_seq_len, 262144);
  EXPECT_DOUBLE_EQ(log.not_enough_kv->needed_gib, 62.00);         // logged.error_kv_needed_gib
  EXPECT_DOUBLE_EQ(log.not_enough_kv->available_gib, 48.66);      // logged.error_available_kv_gib
  EXPECT_EQ(log.not_enough_kv->estimated_max_model_len, 205728);  // logged.estimated_max_model_len
}

TEST(LogParserTest, EmptyInput) {
  BootLog log = ParseBootLog("");
  EXPECT_EQ(log.lines, 0);
  EXPECT_TRUE(log.workers.empty());
  EXPECT_TRUE(log.warnings.empty());
  EXPECT_FALSE(log.version.has_value());
}

// ---- docs/vllm-rules.md §2: one line per format string, oldest -> newest ----

TEST(LogParserTest, ModelLoadingAllVersions) {
  BootLog log = ParseBootLog(
      // v0.8.0 "%.4f GB and %.6f seconds"
      "(A pid=1) INFO 03-18 10:00:00 [gpu_model_runner.py:1200] Model loading took 14.9888 GB and 5.123456 seconds\n"
      // 2025-03-31 (#15807) "%.4f GiB and"
      "(B pid=2) INFO 04-18 10:00:00 [gpu_model_runner.py:1200] Model loading took 14.9888 GiB and 5.123456 seconds\n"
      // 2025-11-09 (#28178) "%.4f GiB memory and"
      "(Worker_TP0 pid=3) INFO 11-18 10:00:00 [gpu_model_runner.py:1200] Model loading took 55.1900 GiB memory and "
      "48.502592 seconds\n"
      // 2026-01-07 (#31865) format_gib: 12.3 not 12.30
      "(Worker_TP1 pid=4) INFO 01-18 10:00:00 [gpu_model_runner.py:5405] Model loading took 12.3 GiB memory and "
      "48.502592 seconds\n");
  EXPECT_TRUE(log.warnings.empty()) << Joined(log.warnings);
  EXPECT_DOUBLE_EQ(log.FindWorker("A pid=1")->model_loading_gib.value_or(-1), 14.9888);
  EXPECT_DOUBLE_EQ(log.FindWorker("A pid=1")->model_loading_s.value_or(-1), 5.123456);
  EXPECT_DOUBLE_EQ(log.FindWorker("B pid=2")->model_loading_gib.value_or(-1), 14.9888);
  EXPECT_DOUBLE_EQ(log.FindWorker("Worker_TP0")->model_loading_gib.value_or(-1), 55.19);
  EXPECT_DOUBLE_EQ(log.FindWorker("Worker_TP1")->model_loading_gib.value_or(-1), 12.3);
  EXPECT_EQ(log.FindWorker("Worker_TP1")->process.tp, 1);
}

TEST(LogParserTest, AvailableKvFormatsAndNegative) {
  BootLog log = ParseBootLog(
      "(Worker_PP0_TP0 pid=10) INFO 01-01 00:00:00 [gpu_worker.py:349] Available KV cache memory: 46.80 GiB\n"
      "(Worker_PP1_TP0 pid=11) INFO 01-01 00:00:00 [gpu_worker.py:349] Available KV cache memory: 15.6 GiB\n"
      "(Worker_PP2_TP0 pid=12) INFO 01-01 00:00:00 [gpu_worker.py:349] Available KV cache memory: -1.25 GiB\n");
  EXPECT_TRUE(log.warnings.empty()) << Joined(log.warnings);
  EXPECT_DOUBLE_EQ(*log.FindWorker("Worker_PP0_TP0")->available_kv_gib, 46.80);
  EXPECT_DOUBLE_EQ(*log.FindWorker("Worker_PP1_TP0")->available_kv_gib, 15.6);
  EXPECT_DOUBLE_EQ(*log.FindWorker("Worker_PP2_TP0")->available_kv_gib, -1.25);
  EXPECT_EQ(log.FindWorker("Worker_PP1_TP0")->process.pp, 1);
}

TEST(LogParserTest, KvCacheMemoryBytesOverrideBothForms) {
  BootLog log = ParseBootLog(
      // N
      "(Worker_TP0 pid=1) INFO 08-01 00:00:00 [gpu_worker.py:300] Initial free memory 78.52 GiB, reserved 20.00 GiB "
      "memory for KV Cache as specified by kv_cache_memory_bytes config and skipped memory profiling. This does not "
      "respect the gpu_memory_utilization config. Only use kv_cache_memory_bytes config when you want manual control "
      "of KV cache memory size.\n"
      // v0.11: "reserved {Y:.2f}GiB" and "This does does not"
      "(Worker_TP1 pid=2) INFO 10-01 00:00:00 [gpu_worker.py:300] Initial free memory 78.5 GiB, reserved 1.62GiB "
      "memory for KV Cache as specified by kv_cache_memory_bytes config and skipped memory profiling. This does does "
      "not respect the gpu_memory_utilization config.\n");
  EXPECT_TRUE(log.warnings.empty()) << Joined(log.warnings);
  EXPECT_DOUBLE_EQ(*log.FindWorker("Worker_TP0")->kv_cache_memory_override_gib, 20.00);
  EXPECT_DOUBLE_EQ(*log.FindWorker("Worker_TP0")->initial_free_gib, 78.52);
  EXPECT_DOUBLE_EQ(*log.FindWorker("Worker_TP1")->kv_cache_memory_override_gib, 1.62);
}

TEST(LogParserTest, CudaGraphLines) {
  BootLog log = ParseBootLog(
      "(Worker_TP0 pid=1) INFO 08-01 00:00:00 [gpu_model_runner.py:1] Profiling CUDA graph memory: FULL=35 "
      "(largest=512), PIECEWISE=67 (largest=512)\n"
      "(Worker_TP0 pid=1) INFO 08-01 00:00:01 [gpu_model_runner.py:2] Estimated CUDA graph memory: 1.31 GiB total\n"
      "(Worker_TP0 pid=1) INFO 08-01 00:00:02 [gpu_worker.py:3] CUDA graph memory profiling is enabled (default since "
      "v0.21.0). The current --gpu-memory-utilization=0.9200 is equivalent to --gpu-memory-utilization=0.9036 without "
      "CUDA graph memory profiling. To maintain the same effective KV cache size as before, increase "
      "--gpu-memory-utilization to 0.9364.\n"
      "(Worker_TP0 pid=1) INFO 08-01 00:00:50 [gpu_model_runner.py:4] Graph capturing finished in 46 secs, took 0.76 "
      "GiB\n"
      "(Worker_TP0 pid=1) INFO 08-01 00:00:51 [gpu_worker.py:5] CUDA graph pool memory: 0.76 GiB (actual), 1.31 GiB "
      "(estimated), difference: -0.55 GiB (-42.0%).\n");
  EXPECT_TRUE(log.warnings.empty()) << Joined(log.warnings);
  const WorkerLog& w = *log.FindWorker("Worker_TP0");
  EXPECT_DOUBLE_EQ(*w.cuda_graph_estimate_gib, 1.31);
  EXPECT_DOUBLE_EQ(*w.cg_hint_current_util, 0.92);
  EXPECT_DOUBLE_EQ(*w.cg_hint_equivalent_util, 0.9036);
  EXPECT_DOUBLE_EQ(*w.graph_capture_s, 46);
  EXPECT_DOUBLE_EQ(*w.graph_capture_gib, 0.76);
  EXPECT_DOUBLE_EQ(*w.cuda_graph_actual_gib, 0.76);
  EXPECT_DOUBLE_EQ(*w.cuda_graph_pool_estimated_gib, 1.31);
}

TEST(LogParserTest, CapacityTwoLineAndOneLineFormats) {
  BootLog log = ParseBootLog(
      // before 2026-08-04: two lines
      "(EngineCore_DP0 pid=5) INFO 07-01 00:00:00 [kv_cache_utils.py:1229] GPU KV cache size: 621,392 tokens\n"
      "(EngineCore_DP0 pid=5) INFO 07-01 00:00:00 [kv_cache_utils.py:1230] Maximum concurrency for 32,768 tokens per "
      "request: 18.96x\n"
      // since 2026-08-04 (#50462): one line
      "(EngineCore pid=31298) INFO 08-21 10:17:50 [kv_cache_utils.py:1869] GPU KV cache size: 1,174,643 tokens, "
      "Maximum "
      "concurrency for 131,072 tokens per request: 8.96x\n");
  EXPECT_TRUE(log.warnings.empty()) << Joined(log.warnings);
  EXPECT_EQ(log.kv_tokens, (std::vector<std::int64_t>{621392, 1174643}));
  ASSERT_EQ(log.max_concurrency.size(), 2u);
  EXPECT_EQ(log.max_concurrency[0].tokens_per_request, 32768);
  EXPECT_DOUBLE_EQ(log.max_concurrency[0].x, 18.96);
  EXPECT_EQ(log.max_concurrency[1].tokens_per_request, 131072);
  EXPECT_EQ(log.max_concurrency[0].process, "EngineCore_DP0");
  EXPECT_EQ(log.max_concurrency[1].process, "EngineCore");
  EXPECT_DOUBLE_EQ(log.max_concurrency[1].x, 8.96);
  EXPECT_TRUE(log.workers.empty());
}

TEST(LogParserTest, BlockSizePartitionOverrideMultiplierDtype) {
  BootLog log = ParseBootLog(
      "INFO 03-01 00:00:00 [cuda.py:1] Forcing kv cache block size to 64 for FlashMLASparse backend.\n"
      "INFO 03-12 00:00:00 [interface.py:1] Setting kv cache block size to 64 for FLASHMLA_SPARSE backend.\n"
      "INFO 05-01 00:00:00 [utils.py:1] Hidden layers were unevenly partitioned: [19,20,20,19]. This can be manually "
      "overridden using the VLLM_PP_LAYER_PARTITION environment variable\n"
      "INFO 05-01 00:00:00 [kv_cache_utils.py:1] Overriding num_gpu_blocks=1952 with num_gpu_blocks_override=512\n"
      "INFO 05-01 00:00:00 [kv_cache_utils.py:1] Multiplying the GPU KV cache size by the cp_world_size 8 "
      "(pcp_world_size 2 * dcp_world_size 4).\n"
      "INFO 05-01 00:00:00 [cache.py:1] Using fp8 data type to store kv cache. It reduces the GPU memory footprint "
      "and boosts the performance. Meanwhile, it may cause accuracy drop without a proper scaling factor\n"
      "INFO 05-01 00:00:00 [mla_attention.py:1] Using DeepSeek's fp8_ds_mla KV cache format. To use standard fp8 "
      "kv-cache format, please set `--attention-backend FLASHINFER_MLA_SPARSE`\n");
  EXPECT_TRUE(log.warnings.empty()) << Joined(log.warnings);
  EXPECT_EQ(log.block_size, 64);
  EXPECT_EQ(log.block_size_backend, "FLASHMLA_SPARSE");
  EXPECT_EQ(log.partition, (std::vector<int>{19, 20, 20, 19}));
  EXPECT_EQ(log.num_gpu_blocks_computed, 1952);
  EXPECT_EQ(log.num_gpu_blocks_override, 512);
  EXPECT_EQ(log.kv_tokens_cp_multiplier, 8);
  EXPECT_EQ(log.kv_cache_dtype_logged, "fp8");
  EXPECT_EQ(log.dsa_kv_cache_format, "fp8_ds_mla");

  BootLog old = ParseBootLog(
      // before 2025-04-08: two lines, no brackets; old dcp form
      "INFO 03-01 00:00:00 [utils.py:1] Hidden layers were unevenly partitioned: 15,15,16,15\n"
      "INFO 03-01 00:00:00 [utils.py:2] This can be manually overridden using the VLLM_PP_LAYER_PARTITION environment "
      "variable\n"
      "INFO 03-01 00:00:00 [kv_cache_utils.py:1] Multiplying the GPU KV cache size by the dcp_world_size 4.\n"
      "INFO 03-01 00:00:00 [cuda.py:1] Forcing kv cache block size to 128 for CUTLASS_MLA backend.\n"
      "INFO 11-01 00:00:00 [config.py:1] Using custom fp8 kv-cache format for DeepSeekV3.2\n");
  EXPECT_TRUE(old.warnings.empty()) << Joined(old.warnings);
  EXPECT_EQ(old.partition, (std::vector<int>{15, 15, 16, 15}));
  EXPECT_EQ(old.kv_tokens_cp_multiplier, 4);
  EXPECT_EQ(old.block_size, 128);
  EXPECT_EQ(old.block_size_backend, "CUTLASS_MLA");
  EXPECT_EQ(old.dsa_kv_cache_format, "fp8_ds_mla");
}

TEST(LogParserTest, InitEngineBothForms) {
  BootLog a = ParseBootLog(
      "(EngineCore_DP0 pid=1) INFO 08-01 00:00:00 [core.py:1] init engine (profile, create kv cache, warmup model) "
      "took 84.91 s (compilation: 30.98 s)\n");
  EXPECT_DOUBLE_EQ(a.init_engine_s.value_or(-1), 84.91);
  EXPECT_DOUBLE_EQ(a.init_engine_compilation_s.value_or(-1), 30.98);
  BootLog b = ParseBootLog(
      "INFO 05-01 00:00:00 [core.py:1] init engine (profile, create kv cache, warmup model) took 12.30 seconds\n");
  EXPECT_DOUBLE_EQ(b.init_engine_s.value_or(-1), 12.30);
  EXPECT_FALSE(b.init_engine_compilation_s.has_value());
  EXPECT_TRUE(a.warnings.empty() && b.warnings.empty());
}

TEST(LogParserTest, V1DebugMemoryProfileBothThirdFields) {
  BootLog log = ParseBootLog(
      "(Worker_TP0 pid=1) DEBUG 05-01 00:00:00 [gpu_worker.py:1] Memory profiling takes 17.96 seconds. Total non KV "
      "cache memory: 17.12GiB; torch peak memory increase: 1.89GiB; non-torch forward increase memory: 0.25GiB; "
      "weights memory: 14.99GiB.\n"
      "(Worker_TP1 pid=2) DEBUG 08-01 00:00:00 [gpu_worker.py:1] Memory profiling takes 31.20 seconds. Total non KV "
      "cache memory: 63.53GiB; torch peak memory increase: 2.04GiB; total consumed (from mem_get_info): 61.49GiB; "
      "weights memory: 55.87GiB.\n");
  EXPECT_TRUE(log.warnings.empty()) << Joined(log.warnings);
  const V1MemoryProfile& a = *log.FindWorker("Worker_TP0")->v1_profile;
  EXPECT_DOUBLE_EQ(*a.profile_s, 17.96);
  EXPECT_DOUBLE_EQ(*a.non_kv_gib, 17.12);
  EXPECT_DOUBLE_EQ(*a.torch_peak_increase_gib, 1.89);
  EXPECT_DOUBLE_EQ(*a.non_torch_increase_gib, 0.25);
  EXPECT_DOUBLE_EQ(*a.weights_gib, 14.99);
  const V1MemoryProfile& b = *log.FindWorker("Worker_TP1")->v1_profile;
  EXPECT_DOUBLE_EQ(*b.total_consumed_gib, 61.49);
  EXPECT_FALSE(b.non_torch_increase_gib.has_value());
  EXPECT_DOUBLE_EQ(*b.weights_gib, 55.87);
}

TEST(LogParserTest, V0MemoryProfilingBlockThreeLines) {
  // V0 INFO block: the message has embedded newlines, so only its first line has a header; a Ray prefix
  // on the first line attributes the continuation lines to that process.
  BootLog log = ParseBootLog(
      "(RayWorkerWrapper pid=4242, ip=10.0.0.2) INFO 12-01 00:00:00 [worker.py:1] Memory profiling takes 4.25 seconds\n"
      "the current vLLM instance can use total_gpu_memory (79.11GiB) x gpu_memory_utilization (0.90) = 71.20GiB\n"
      "model weights take 37.50GiB; non_torch_memory takes 1.20GiB; PyTorch activation peak memory takes 4.10GiB; the "
      "rest of the memory reserved for KV Cache is 28.40GiB.\n"
      "INFO 12-01 00:00:01 [executor_base.py:1] # cuda blocks: 2902, # CPU blocks: 409\n");
  EXPECT_TRUE(log.warnings.empty()) << Joined(log.warnings);
  const WorkerLog* w = log.FindWorker("RayWorkerWrapper pid=4242");
  ASSERT_NE(w, nullptr);
  ASSERT_TRUE(w->v0_profile.has_value());
  const V0MemoryProfile& p = *w->v0_profile;
  EXPECT_DOUBLE_EQ(*p.profile_s, 4.25);
  EXPECT_DOUBLE_EQ(*p.total_gpu_gib, 79.11);
  EXPECT_DOUBLE_EQ(*p.gpu_memory_utilization, 0.90);
  EXPECT_DOUBLE_EQ(*p.requested_gib, 71.20);
  EXPECT_DOUBLE_EQ(*p.weights_gib, 37.50);
  EXPECT_DOUBLE_EQ(*p.non_torch_gib, 1.20);
  EXPECT_DOUBLE_EQ(*p.activation_peak_gib, 4.10);
  EXPECT_DOUBLE_EQ(*p.kv_cache_gib, 28.40);
  EXPECT_EQ(log.num_gpu_blocks, 2902);
  EXPECT_EQ(log.num_cpu_blocks, 409);
  EXPECT_EQ(log.workers.size(), 1u);
}

TEST(LogParserTest, NewerMemoryUsageSummaryLine) {
  BootLog log = ParseBootLog(
      "(Worker_TP1 pid=771) INFO 08-21 18:22:06 [gpu_worker.py:789] Free memory on device (94.05/95.01 GiB) on "
      "startup. Desired GPU memory utilization is (0.9, 85.51 GiB). Actual usage is 56.89 GiB for consumed memory "
      "(weights + non-torch), 0.76 GiB for peak activation, and 0.32 GiB for CUDAGraph memory. Replace "
      "gpu_memory_utilization config with `--kv-cache-memory=29407858586` (27.39 GiB) to fit into requested memory, "
      "or `--kv-cache-memory=38581581312` (35.93 GiB) to fully utilize gpu memory. Current kv cache memory in use is "
      "27.85 GiB.\n");
  EXPECT_TRUE(log.warnings.empty()) << Joined(log.warnings);
  const MemoryUsageSummary& u = *log.FindWorker("Worker_TP1")->usage_summary;
  EXPECT_DOUBLE_EQ(*u.free_at_startup_gib, 94.05);
  EXPECT_DOUBLE_EQ(*u.total_gib, 95.01);
  EXPECT_DOUBLE_EQ(*u.gpu_memory_utilization, 0.9);
  EXPECT_DOUBLE_EQ(*u.requested_gib, 85.51);
  EXPECT_DOUBLE_EQ(*u.consumed_gib, 56.89);
  EXPECT_DOUBLE_EQ(*u.peak_activation_gib, 0.76);
  EXPECT_DOUBLE_EQ(*u.cuda_graph_gib, 0.32);
  EXPECT_EQ(*u.fit_kv_cache_memory_bytes, 29407858586);
  EXPECT_EQ(*u.full_kv_cache_memory_bytes, 38581581312);
  EXPECT_DOUBLE_EQ(*u.kv_cache_in_use_gib, 27.85);
}

TEST(LogParserTest, ErrorsModelsApostropheNoMemoryAndFreeMemoryRefusal) {
  BootLog log = ParseBootLog(
      "(EngineCore_DP0 pid=9) ERROR 10-01 00:00:00 [core.py:1] ValueError: To serve at least one request with the "
      "model's max seq len (524288), (30.01 GiB KV cache is needed, which is larger than the available KV cache "
      "memory (21.95 GiB). Based on the available memory, the estimated maximum model length is 383,488. Try "
      "increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.\n"
      "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when "
      "initializing the engine.\n"
      "(Worker_TP0 pid=3) ERROR 10-01 00:00:00 [core.py:1] ValueError: Free memory on device (74.1/79.11 GiB) on "
      "startup is less than desired GPU memory utilization (0.95, 75.15 GiB). Decrease GPU memory utilization or "
      "reduce GPU memory used by other processes.\n"
      "ValueError: The model's max seq len (20000) is larger than the maximum number of tokens that can be stored in "
      "KV cache (23648). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the "
      "engine.\n");
  EXPECT_TRUE(log.warnings.empty()) << Joined(log.warnings);
  ASSERT_TRUE(log.not_enough_kv.has_value());
  EXPECT_EQ(log.not_enough_kv->max_seq_len, 524288);
  EXPECT_DOUBLE_EQ(log.not_enough_kv->needed_gib, 30.01);
  EXPECT_DOUBLE_EQ(log.not_enough_kv->available_gib, 21.95);
  EXPECT_EQ(log.not_enough_kv->estimated_max_model_len, 383488);
  EXPECT_TRUE(log.no_available_memory);
  ASSERT_TRUE(log.insufficient_free_memory.has_value());
  EXPECT_DOUBLE_EQ(log.insufficient_free_memory->free_gib, 74.1);
  EXPECT_DOUBLE_EQ(log.insufficient_free_memory->total_gib, 79.11);
  EXPECT_DOUBLE_EQ(*log.insufficient_free_memory->gpu_memory_utilization, 0.95);
  EXPECT_DOUBLE_EQ(*log.insufficient_free_memory->requested_gib, 75.15);
  ASSERT_TRUE(log.max_seq_len_error.has_value());
  EXPECT_EQ(log.max_seq_len_error->max_seq_len, 20000);
  EXPECT_EQ(log.max_seq_len_error->kv_tokens, 23648);
}

TEST(LogParserTest, VersionsAndNonDefaultArgs) {
  BootLog log = ParseBootLog(
      "(APIServer pid=5385) INFO 11-03 05:51:44 [api_server.py:1839] vLLM API server version 0.11.0\n"
      "(APIServer pid=5385) INFO 11-03 05:51:44 [utils.py:233] non-default args: {'model_tag': '/m/GLM-5', 'port': "
      "8005, 'model': '/m/GLM-5', 'trust_remote_code': True, 'max_model_len': 524288, 'served_model_name': ['glm'], "
      "'tensor_parallel_size': 4, 'pipeline_parallel_size': 2, 'gpu_memory_utilization': 0.95, 'kv_cache_dtype': "
      "'fp8', 'block_size': 64, 'enforce_eager': False, 'speculative_config': {'method': 'mtp', "
      "'num_speculative_tokens': 3}, 'lora_modules': [LoRAModulePath(name='a', path='b, c', base_model_name=None)], "
      "'max_num_seqs': 32}\n"
      "(APIServer pid=5385) INFO 11-03 05:51:45 [api_server.py:1] Starting vLLM API server 0 on http://0.0.0.0:8005\n");
  EXPECT_TRUE(log.warnings.empty()) << Joined(log.warnings);
  EXPECT_EQ(log.version, "0.11.0");
  EXPECT_TRUE(log.api_server_started);
  ASSERT_TRUE(log.launch_args.has_value());
  const LaunchArgs& a = *log.launch_args;
  EXPECT_EQ(a.tensor_parallel_size, 4);
  EXPECT_EQ(a.pipeline_parallel_size, 2);
  EXPECT_EQ(a.max_model_len, 524288);
  EXPECT_DOUBLE_EQ(a.gpu_memory_utilization.value_or(-1), 0.95);
  EXPECT_EQ(a.kv_cache_dtype, "fp8");
  EXPECT_EQ(a.block_size, 64);
  EXPECT_EQ(a.enforce_eager, false);
  EXPECT_EQ(a.speculative_config, "{'method': 'mtp', 'num_speculative_tokens': 3}");
  EXPECT_EQ(a.max_num_seqs, 32);
  EXPECT_EQ(a.model, "/m/GLM-5");
  EXPECT_EQ(a.raw.size(), 15u);

  BootLog e = ParseBootLog(
      "INFO 08-04 00:00:00 [core.py:1] Initializing a V1 LLM engine (v0.10.1.dev101+gbda9d0535) with config: "
      "model='/m/Qwen3', speculative_config=None, tokenizer='/m/Qwen3', skip_tokenizer_init=False, "
      "dtype=torch.bfloat16, "
      "max_seq_len=262144, download_dir=None, tensor_parallel_size=1, pipeline_parallel_size=1, "
      "data_parallel_size=8, quantization=fp8, enforce_eager=False, kv_cache_dtype=auto, "
      "decoding_config=DecodingConfig(backend='auto', disable_fallback=False), seed=0\n"
      "2026-04-19 12:18:36.353 | (APIServer pid=1) INFO 04-19 10:18:36 [utils.py:299]  \xe2\x96\x84\xe2\x96\x84 "
      "\xe2\x96\x84\xe2\x96\x88 \xe2\x96\x88     \xe2\x96\x88  version 0.10.1.dev101+gbda9d0535\n");
  EXPECT_TRUE(e.warnings.empty()) << Joined(e.warnings);
  EXPECT_EQ(e.version, "0.10.1.dev101+gbda9d0535");
  ASSERT_TRUE(e.engine_config.has_value());
  EXPECT_EQ(e.engine_config->max_model_len, 262144);
  EXPECT_EQ(e.engine_config->data_parallel_size, 8);
  EXPECT_EQ(e.engine_config->dtype, "torch.bfloat16");
  EXPECT_EQ(e.engine_config->kv_cache_dtype, "auto");
  EXPECT_FALSE(e.engine_config->speculative_config.has_value());
}

TEST(LogParserTest, AnsiColouredPrefixesAndLevels) {
  BootLog log = ParseBootLog(
      "\x1b[36m(Worker_PP1_TP0 pid=123)\x1b[0m INFO 08-01 00:00:00 [gpu_worker.py:1] Available KV cache memory: "
      "15.56 GiB\n"
      "\x1b[1;36m(EngineCore_DP0 pid=120)\x1b[0;0m \x1b[32mINFO\x1b[0m 08-01 00:00:01 [kv_cache_utils.py:1] GPU KV "
      "cache size: 1,2\x1b[0m34 tokens\n");
  EXPECT_TRUE(log.warnings.empty()) << Joined(log.warnings);
  const WorkerLog* w = log.FindWorker("Worker_PP1_TP0");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->process.pp, 1);
  EXPECT_EQ(w->process.tp, 0);
  EXPECT_DOUBLE_EQ(*w->available_kv_gib, 15.56);
  EXPECT_EQ(log.kv_tokens, (std::vector<std::int64_t>{1234}));
}

TEST(LogParserTest, InterleavedProcessesKeepTheirOwnFigures) {
  BootLog log = ParseBootLog(
      "(Worker_DP0_PP0_TP0_EP0 pid=1) INFO 08-01 00:00:00 [gpu_model_runner.py:1] Model loading took 47.85 GiB "
      "memory and 120.5 seconds\n"
      "(Worker_DP0_PP1_TP2_EP6 pid=2) INFO 08-01 00:00:00 [gpu_model_runner.py:1] Model loading took 50.2 GiB memory "
      "and 121.0 seconds\n"
      "(APIServer pid=7) INFO 08-01 00:00:00 [launcher.py:1] Route: /health\n"
      "(Worker_DP0_PP1_TP2_EP6 pid=2) INFO 08-01 00:00:30 [gpu_worker.py:1] Available KV cache memory: 15.56 GiB\n"
      "(Worker_DP0_PP0_TP0_EP0 pid=1) INFO 08-01 00:00:30 [gpu_worker.py:1] Available KV cache memory: 21.95 GiB\n"
      "(EngineCore_DP0 pid=6) INFO 08-01 00:00:31 [kv_cache_utils.py:1] GPU KV cache size: 1,626,048 tokens\n"
      "(Worker_DP0_PP1_TP2_EP6 pid=2) INFO 08-01 00:01:00 [gpu_model_runner.py:1] Graph capturing finished in 29 "
      "secs, took 1.49 GiB\n"
      "(Worker_DP0_PCP1_TP0_DCP3 pid=9) INFO 08-01 00:01:00 [gpu_model_runner.py:1] Graph capturing finished in 29 "
      "secs, took 0.5 GiB\n");
  EXPECT_TRUE(log.warnings.empty()) << Joined(log.warnings);
  ASSERT_EQ(log.workers.size(), 3u);
  const WorkerLog& a = *log.FindWorker("Worker_DP0_PP0_TP0_EP0");
  const WorkerLog& b = *log.FindWorker("Worker_DP0_PP1_TP2_EP6");
  EXPECT_DOUBLE_EQ(*a.model_loading_gib, 47.85);
  EXPECT_DOUBLE_EQ(*a.available_kv_gib, 21.95);
  EXPECT_DOUBLE_EQ(*b.model_loading_gib, 50.2);
  EXPECT_DOUBLE_EQ(*b.available_kv_gib, 15.56);
  EXPECT_DOUBLE_EQ(*b.graph_capture_gib, 1.49);
  EXPECT_FALSE(a.graph_capture_gib.has_value());
  EXPECT_EQ(b.process.dp, 0);
  EXPECT_EQ(b.process.pp, 1);
  EXPECT_EQ(b.process.tp, 2);
  EXPECT_EQ(b.process.ep, 6);
  const WorkerLog& c = *log.FindWorker("Worker_DP0_PCP1_TP0_DCP3");
  EXPECT_EQ(c.process.pcp, 1);
  EXPECT_EQ(c.process.dcp, 3);
  EXPECT_EQ(log.kv_tokens, (std::vector<std::int64_t>{1626048}));
}

TEST(LogParserTest, TruncatedAndMalformedLinesWarn) {
  BootLog log = ParseBootLog(
      "(Worker_TP0 pid=1) INFO 08-01 00:00:00 [gpu_worker.py:1] Available KV cache memory: 1x.5 GiB\n"
      "(Worker_TP1 pid=2) INFO 08-01 00:00:00 [gpu_worker.py:1] Available KV cache memory: 46.80 GiB\n"
      "(EngineCore pid=3) INFO 08-01 00:00:00 [kv_cache_utils.py:1] GPU KV cache size: 807,7");  // cut mid-number
  ASSERT_EQ(log.warnings.size(), 2u) << Joined(log.warnings);
  EXPECT_NE(log.warnings[0].find("line 1: malformed 'Available KV cache memory' line"), std::string::npos)
      << log.warnings[0];
  EXPECT_NE(log.warnings[1].find("line 3: truncated 'GPU KV cache size' line"), std::string::npos) << log.warnings[1];
  EXPECT_FALSE(log.FindWorker("Worker_TP0") && log.FindWorker("Worker_TP0")->available_kv_gib);
  EXPECT_DOUBLE_EQ(*log.FindWorker("Worker_TP1")->available_kv_gib, 46.80);
  EXPECT_TRUE(log.kv_tokens.empty());
  EXPECT_EQ(log.lines, 3);
}

TEST(LogParserTest, TruncatedNonDefaultArgsKeepsWhatItHas) {
  BootLog log = ParseBootLog(
      "(APIServer pid=1) INFO 08-01 00:00:00 [utils.py:233] non-default args: {'model': 'x', "
      "'tensor_parallel_size': 8, 'max_model_len': 26");
  ASSERT_TRUE(log.launch_args.has_value());
  EXPECT_EQ(log.launch_args->tensor_parallel_size, 8);
  EXPECT_EQ(log.launch_args->max_model_len, 26);  // the cut value, with a warning
  ASSERT_EQ(log.warnings.size(), 1u);
  EXPECT_NE(log.warnings[0].find("truncated 'non-default args'"), std::string::npos) << log.warnings[0];
}

bool ValidUtf8(const std::string& s) {
  for (std::size_t i = 0; i < s.size();) {
    auto c = static_cast<unsigned char>(s[i]);
    std::size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (std::size_t k = 1; k < n; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return false;
    }
    i += n;
  }
  return true;
}

TEST(LogParserTest, GarbageBytesNeverCrashAndWarningsAreValidUtf8) {
  std::mt19937 rng(12345);
  const std::string pieces[] = {"Available KV cache memory: ",
                                "GPU KV cache size: ",
                                " tokens",
                                "(Worker_TP",
                                " pid=",
                                ")",
                                "\x1b[",
                                "\xff\xfe",
                                std::string("\0", 1),
                                "1,2",
                                ".",
                                "GiB",
                                "\n",
                                "non-default args: {'",
                                "Memory profiling takes ",
                                "Maximum concurrency for ",
                                "Hidden layers were unevenly partitioned: [",
                                "\r",
                                "\xe2\x96\x88  version "};
  for (int round = 0; round < 200; ++round) {
    std::string s;
    int n = static_cast<int>(rng() % 60);
    for (int i = 0; i < n; ++i) {
      if (rng() % 3 == 0) {
        s.push_back(static_cast<char>(rng() % 256));
      } else {
        s += pieces[rng() % std::size(pieces)];
      }
    }
    BootLog log = ParseBootLog(s);
    for (const auto& w : log.warnings) EXPECT_TRUE(ValidUtf8(w)) << ::testing::PrintToString(w);
    for (const auto& w : log.workers) EXPECT_TRUE(ValidUtf8(w.key)) << w.key;
    if (log.version) {
      EXPECT_TRUE(ValidUtf8(*log.version));
    }
    EXPECT_LE(log.warnings.size(), kMaxLogWarnings + 1);
  }
}

TEST(LogParserTest, WarningsAreCapped) {
  std::string s;
  for (int i = 0; i < 1000; ++i) s += "Available KV cache memory: x GiB\n";
  BootLog log = ParseBootLog(s);
  ASSERT_EQ(log.warnings.size(), kMaxLogWarnings + 1);
  EXPECT_EQ(log.warnings.back(), "... 800 more warnings not shown");
}

TEST(LogParserTest, ProcessNames) {
  LogProcess p = ParseLogProcessName("Worker_DP1_PP2_PCP3_TP4_DCP5_EP6");
  EXPECT_EQ(p.dp, 1);
  EXPECT_EQ(p.pp, 2);
  EXPECT_EQ(p.pcp, 3);
  EXPECT_EQ(p.tp, 4);
  EXPECT_EQ(p.dcp, 5);
  EXPECT_EQ(p.ep, 6);
  EXPECT_EQ(ParseLogProcessName("VllmWorker rank=7").rank, 7);
  EXPECT_EQ(ParseLogProcessName("EngineCore_DP3").dp, 3);
  LogProcess api = ParseLogProcessName("APIServer");
  EXPECT_FALSE(api.dp || api.tp || api.rank);
  EXPECT_FALSE(ParseLogProcessName("Worker_TPx").tp.has_value());
}

}  // namespace
}  // namespace ppdeploy

namespace ppdeploy {
namespace {

std::string ReadCorpus(const std::string& name) {
  std::string path = std::string(PPDEPLOY_SOURCE_DIR) + "/fuzz/corpus/log_parser/" + name;
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return {};
  std::string s;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) s.append(buf, n);
  std::fclose(f);
  return s;
}

// The fuzz seed corpus is a set of valid logs: they must parse with no warning (so the fuzzer starts from
// the interesting paths). Expected values are those written into the seeds (formats from docs/vllm-rules.md §2).
TEST(LogParserTest, FuzzSeedNEraPipelineLog) {
  std::string text = ReadCorpus("n_era_pp.log");
  ASSERT_FALSE(text.empty());
  BootLog log = ParseBootLog(text);
  EXPECT_TRUE(log.warnings.empty()) << Joined(log.warnings);
  EXPECT_EQ(log.version, "0.26.1");
  EXPECT_EQ(log.partition, (std::vector<int>{39, 39}));
  EXPECT_EQ(log.block_size, 64);
  EXPECT_EQ(log.kv_tokens, (std::vector<std::int64_t>{1626048}));
  EXPECT_DOUBLE_EQ(*log.FindWorker("Worker_PP0_TP0")->available_kv_gib, 21.95);
  EXPECT_DOUBLE_EQ(*log.FindWorker("Worker_PP1_TP0")->model_loading_gib, 50.2);
  EXPECT_EQ(log.launch_args->speculative_config, "{'method': 'mtp', 'num_speculative_tokens': 3}");
  EXPECT_DOUBLE_EQ(*log.init_engine_s, 84.91);
  EXPECT_EQ(log.recognized_lines, log.lines);

  BootLog v0 = ParseBootLog(ReadCorpus("v0_block.log"));
  EXPECT_TRUE(v0.warnings.empty()) << Joined(v0.warnings);
  EXPECT_EQ(v0.version, "0.6.4");
  EXPECT_EQ(v0.engine_config->tensor_parallel_size, 2);
  EXPECT_EQ(v0.num_gpu_blocks, 2902);
  EXPECT_DOUBLE_EQ(*v0.FindWorker("RayWorkerWrapper pid=4242")->v0_profile->kv_cache_gib, 28.40);
  EXPECT_EQ(v0.max_seq_len_error->kv_tokens, 23648);
}

}  // namespace
}  // namespace ppdeploy

namespace ppdeploy {
namespace {

TEST(LogParserTest, GpuBlocksAloneAndSeveralBoots) {
  BootLog log = ParseBootLog(
      "(APIServer pid=1) INFO 01-01 00:00:00 [utils.py:233] non-default args: {'max_model_len': 29000}\n"
      "INFO 01-01 00:00:01 [executor_base.py:1] GPU blocks: 1478\n"
      "(APIServer pid=2) INFO 01-01 00:10:00 [utils.py:233] non-default args: {'max_model_len': 20000}\n"
      "INFO 01-01 00:10:01 [executor_base.py:1] # GPU blocks: 1952, # CPU blocks: 2048\n");
  EXPECT_EQ(log.boots, 2);
  EXPECT_EQ(log.launch_args->max_model_len, 20000);  // the last boot's
  EXPECT_EQ(log.num_gpu_blocks, 1952);
  EXPECT_EQ(log.num_cpu_blocks, 2048);
  ASSERT_EQ(log.warnings.size(), 1u) << Joined(log.warnings);
  EXPECT_NE(log.warnings[0].find("more than one boot"), std::string::npos);
  BootLog one = ParseBootLog("GPU blocks: 1478\n");
  EXPECT_EQ(one.num_gpu_blocks, 1478);
  EXPECT_FALSE(one.num_cpu_blocks.has_value());
  EXPECT_TRUE(one.warnings.empty());
}

}  // namespace
}  // namespace ppdeploy

namespace ppdeploy {
namespace {

// Every known line kind is recognised from its fixed text alone (guards the parser's quick pre-filter:
// a kind whose text lacks every pre-filter anchor would be silently skipped). Formats: docs/vllm-rules.md §2.
TEST(LogParserTest, EveryKindIsRecognisedFromItsMarkerAlone) {
  const char* markers[] = {"Available KV cache memory:",
                           "GPU KV cache size:",
                           "Maximum concurrency for ",
                           "Model loading took ",
                           "Loading model weights took ",
                           "Estimated CUDA graph memory: ",
                           "CUDA graph pool memory: ",
                           "Graph capturing finished in ",
                           "Initial free memory kv_cache_memory_bytes",
                           "is equivalent to --gpu-memory-utilization=",
                           "Setting kv cache block size to ",
                           "Forcing kv cache block size to ",
                           "Hidden layers were unevenly partitioned: ",
                           "Overriding num_gpu_blocks=",
                           "init engine (profile, create kv cache, warmup model) took ",
                           "To serve at least one request with the model",
                           "is larger than the maximum number of tokens that can be stored in KV cache (",
                           "No available memory for the cache blocks",
                           "non-default args: ",
                           "Initializing a V1 LLM engine (v",
                           "Initializing an LLM engine (v",
                           "vLLM API server version 1",
                           "vLLM version 1",
                           "vLLM version: v1",
                           "Starting vLLM API server",
                           "Memory profiling takes ",
                           "the current vLLM instance can use total_gpu_memory (",
                           "model weights take ",
                           "Memory profiling results: ",
                           "GPU blocks: 1",
                           "# cuda blocks: 1",
                           "CPU blocks: 1",
                           "# neuron blocks: 1",
                           "Free memory on device (",
                           "Actual usage is ",
                           "Multiplying the GPU KV cache size by the ",
                           "Using x data type to store kv cache",
                           "Using custom fp8 kv-cache format for DeepSeek",
                           "Using DeepSeek's fp8_ds_mla KV cache format",
                           "Using standard fp8 KV cache format",
                           "Using bfloat16 kv-cache for DeepSeek",
                           "Using x KV cache format for ",
                           "\xe2\x96\x88  version 1",
                           "\xe2\x96\x88 version 1"};
  for (const char* m : markers) {
    EXPECT_EQ(ParseBootLog(m).recognized_lines, 1) << m;
    EXPECT_EQ(ParseBootLog(std::string("(Worker_TP0 pid=1) INFO 01-01 00:00:00 [x.py:1] ") + m).recognized_lines, 1)
        << m;
  }
  EXPECT_EQ(ParseBootLog("(Worker_TP0 pid=1) INFO 01-01 00:00:00 [x.py:1] Route: /v1/chat/completions, Methods: POST")
                .recognized_lines,
            0);
}

}  // namespace
}  // namespace ppdeploy

// ---- boots, failures, processes (issue 15) ----

namespace ppdeploy {
namespace {

// One boot of the seed deployment (GLM-5.3 W4A16, TP4/PP2, docs/seed.md §5-§6) in the
// vLLM 0.19 line formats: `split` is the VLLM_PP_LAYER_PARTITION and `tokens` the pool the digest measured
// for it (39,39 -> 597,760; 41,37 -> 729,280); pids differ per boot as in a restart.
std::string SeedBoot(const std::string& split, const std::string& tokens, const std::string& concurrency, int pid) {
  auto line = [&](const char* name, int pid_offset, const std::string& rest) {
    return std::string("(") + name + " pid=" + std::to_string(pid + pid_offset) + ") " + rest + "\n";
  };
  return line("APIServer", 0,
              "INFO 08-21 18:00:00 [entrypoints/utils.py:299]  \xe2\x96\x84\xe2\x96\x84 \xe2\x96\x88  version 0.19.0") +
         line("APIServer", 0,
              "INFO 08-21 18:00:00 [entrypoints/utils.py:233] non-default args: {'model': '/m/GLM-5', "
              "'max_model_len': 524288, 'tensor_parallel_size': 4, 'pipeline_parallel_size': 2, "
              "'gpu_memory_utilization': 0.95}") +
         line("EngineCore_DP0", 1,
              "INFO 08-21 18:00:10 [v1/engine/core.py:105] Initializing a V1 LLM engine (v0.19.0) with config: "
              "model='/m/GLM-5', max_seq_len=524288, tensor_parallel_size=4, pipeline_parallel_size=2") +
         line("EngineCore_DP0", 1,
              "INFO 08-21 18:00:11 [distributed/utils.py:1] Hidden layers were unevenly partitioned: [" + split +
                  "]. This can be manually overridden using the VLLM_PP_LAYER_PARTITION environment variable") +
         line("Worker_PP0_TP0", 2,
              "INFO 08-21 18:03:00 [v1/worker/gpu_worker.py:436] Available KV cache memory: 21.95 GiB") +
         line("EngineCore_DP0", 1,
              "INFO 08-21 18:03:01 [v1/core/kv_cache_utils.py:1319] GPU KV cache size: " + tokens + " tokens") +
         line("EngineCore_DP0", 1,
              "INFO 08-21 18:03:01 [v1/core/kv_cache_utils.py:1324] Maximum concurrency for 524,288 tokens per "
              "request: " +
                  concurrency + "x") +
         line("EngineCore_DP0", 1,
              "INFO 08-21 18:04:01 [v1/engine/core.py:283] init engine (profile, create kv cache, warmup model) took "
              "84.91 seconds") +
         line("APIServer", 0,
              "INFO 08-21 18:04:05 [entrypoints/openai/api_server.py:1] Starting vLLM API server 0 on "
              "http://0.0.0.0:8000");
}

TEST(LogParserBootsTest, TwoBootsUseTheLastOneNotTheMinimumOverBoth) {
  // The issue's case: a 39,39 boot then a 41,37 boot in one file. The pool is the last boot's 729,280, not the
  // minimum over both (597,760); the result says which boot it used.
  std::string text = SeedBoot("39,39", "597,760", "1.14", 100) + SeedBoot("41,37", "729,280", "1.39", 200);
  BootLog log = ParseBootLog(text, LogParseOptions{"restarts.log", 0});
  ASSERT_EQ(log.boots, 2);
  EXPECT_EQ(log.boot, 2);
  EXPECT_EQ(log.status, BootStatus::kComplete);
  EXPECT_EQ(log.kv_tokens, (std::vector<std::int64_t>{729280}));
  EXPECT_EQ(log.partition, (std::vector<int>{41, 37}));
  EXPECT_EQ(log.boot_list[0].first_line, 1);
  EXPECT_EQ(log.boot_list[0].last_line, 9);
  EXPECT_EQ(log.boot_list[1].first_line, 10);
  EXPECT_EQ(log.boot_list[0].kv_tokens, 597760);
  EXPECT_EQ(log.DescribeBoot(), "boot 2 of 2 (restarts.log:10-18, complete, the last complete one)");
  ASSERT_EQ(log.warnings.size(), 1u) << Joined(log.warnings);
  EXPECT_NE(log.warnings[0].find("more than one boot: boot 2 of 2"), std::string::npos) << log.warnings[0];

  BootLog first = ParseBootLog(text, LogParseOptions{"restarts.log", 1});  // --boot 1
  EXPECT_EQ(first.boot, 1);
  EXPECT_TRUE(first.boot_requested);
  EXPECT_EQ(first.kv_tokens, (std::vector<std::int64_t>{597760}));
  EXPECT_EQ(first.partition, (std::vector<int>{39, 39}));

  BootLog none = ParseBootLog(text, LogParseOptions{"restarts.log", 3});
  EXPECT_EQ(none.boot, 0);
  EXPECT_TRUE(none.kv_tokens.empty());
  EXPECT_EQ(none.boot_error, "restarts.log: boot 3 was asked for, the log holds 2 boots");
}

// A failed 0.19 boot, constructed in the shape vLLM prints it: the engine's logger.exception (every traceback
// line repeats the ERROR header, vllm/v1/engine/core.py "EngineCore failed to start."), then the process's
// own uncaught traceback, then the API server's RuntimeError (vllm/v1/engine/utils.py). The root cause is
// vLLM's start-up refusal `Free memory on device cuda:1 (F/T GiB) on startup is less than desired ...`.
constexpr std::string_view kFailedBoot =
    R"LOG((APIServer pid=1) INFO 08-22 09:00:00 [entrypoints/utils.py:233] non-default args: {'model': '/m/GLM-5', 'tensor_parallel_size': 2, 'gpu_memory_utilization': 0.95}
(EngineCore_DP0 pid=50) INFO 08-22 09:00:10 [v1/engine/core.py:105] Initializing a V1 LLM engine (v0.19.0) with config: model='/m/GLM-5', tensor_parallel_size=2
(Worker pid=61) ERROR 08-22 09:00:20 [v1/executor/multiproc_executor.py:857] WorkerProc failed to start.
(Worker pid=61) ERROR 08-22 09:00:20 [v1/executor/multiproc_executor.py:857] Traceback (most recent call last):
(Worker pid=61) ERROR 08-22 09:00:20 [v1/executor/multiproc_executor.py:857]     raise ValueError(
(Worker pid=61) ERROR 08-22 09:00:20 [v1/executor/multiproc_executor.py:857] ValueError: Free memory on device cuda:1 (60.87/79.19 GiB) on startup is less than desired GPU memory utilization (0.95, 75.23 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.
(EngineCore_DP0 pid=50) ERROR 08-22 09:00:21 [v1/engine/core.py:1108] EngineCore failed to start.
(EngineCore_DP0 pid=50) Traceback (most recent call last):
(EngineCore_DP0 pid=50) Exception: WorkerProc initialization failed due to an exception in a background process. See stack trace for root cause.
(APIServer pid=1) Traceback (most recent call last):
(APIServer pid=1) RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}
)LOG";

TEST(LogParserBootsTest, FailedBootReportsItsRootCause) {
  BootLog log = ParseBootLog(kFailedBoot, LogParseOptions{"gpu-busy.log", 0});
  EXPECT_EQ(log.boots, 1);
  EXPECT_EQ(log.status, BootStatus::kFailed);
  ASSERT_TRUE(log.failure);
  EXPECT_EQ(log.failure->line, 3);  // the first ERROR record
  EXPECT_EQ(log.failure->process, "Worker pid=61");
  EXPECT_EQ(log.failure->message, "WorkerProc failed to start.");
  EXPECT_EQ(log.failure->cause_line, 6);  // the innermost raise, not the API server's RuntimeError
  EXPECT_EQ(log.failure->cause.substr(0, 56), "ValueError: Free memory on device cuda:1 (60.87/79.19 Gi");
  ASSERT_TRUE(log.insufficient_free_memory);
  EXPECT_EQ(log.insufficient_free_memory->device, "cuda:1");
  EXPECT_DOUBLE_EQ(log.insufficient_free_memory->free_gib, 60.87);
  EXPECT_DOUBLE_EQ(*log.insufficient_free_memory->requested_gib, 75.23);
  EXPECT_NE(log.DescribeBoot().find("boot 1 of 1 (gpu-busy.log:1-11, failed at line 6: ValueError: Free memory"),
            std::string::npos)
      << log.DescribeBoot();
}

TEST(LogParserBootsTest, FailedBootThenSuccessfulRestart) {
  std::string text = std::string(kFailedBoot) + SeedBoot("41,37", "729,280", "1.39", 200);
  BootLog log = ParseBootLog(text);
  ASSERT_EQ(log.boots, 2);
  EXPECT_EQ(log.boot, 2);
  EXPECT_EQ(log.status, BootStatus::kComplete);
  EXPECT_FALSE(log.failure);
  EXPECT_FALSE(log.insufficient_free_memory);  // boot 1's, not this boot's
  EXPECT_EQ(log.boot_list[0].status, BootStatus::kFailed);
  EXPECT_EQ(log.boot_list[0].failure->cause_line, 6);
  EXPECT_EQ(log.kv_tokens, (std::vector<std::int64_t>{729280}));
}

TEST(LogParserBootsTest, CompleteBootThenFailedRestartUsesTheCompleteOneAndSaysWhy) {
  std::string text = SeedBoot("41,37", "729,280", "1.39", 200) + std::string(kFailedBoot);
  BootLog log = ParseBootLog(text);
  ASSERT_EQ(log.boots, 2);
  EXPECT_EQ(log.boot, 1);
  EXPECT_EQ(log.kv_tokens, (std::vector<std::int64_t>{729280}));
  EXPECT_EQ(log.DescribeBoot(),
            "boot 1 of 2 (lines 1-9, complete, the last complete one); boot 2 (lines 10-20) failed at line 15: "
            "ValueError: Free memory on device cuda:1 (60.87/79.19 GiB) on startup is less than desired GPU memory "
            "utilization (0.95, 75.23 GiB). Decrease GPU memory utilization or reduce GPU memory used by other "
            "processes.");
  BootLog second = ParseBootLog(text, LogParseOptions{"", 2});
  EXPECT_EQ(second.status, BootStatus::kFailed);
  EXPECT_TRUE(second.kv_tokens.empty());
}

TEST(LogParserBootsTest, AnErrorTheServerSurvivesDoesNotFailTheBoot) {
  std::string text = SeedBoot("41,37", "729,280", "1.39", 200);
  // An ERROR before the server is ready that it survives (e.g. a failed optional import), and request errors
  // after it is ready.
  text.insert(text.find("(Worker_PP0_TP0"),
              "(Worker_PP0_TP0 pid=202) ERROR 08-21 18:01:00 [utils/import_utils.py:1] Failed to load the optional "
              "kernel library\n");
  text +=
      "(APIServer pid=200) ERROR 08-21 19:00:00 [entrypoints/openai/serving_chat.py:1] Error in preprocessing "
      "prompt inputs\n(APIServer pid=200) ValueError: This model's maximum context length is 524288 tokens.\n";
  BootLog log = ParseBootLog(text);
  EXPECT_EQ(log.boots, 1);
  EXPECT_EQ(log.status, BootStatus::kComplete);
  EXPECT_TRUE(log.boot_list[0].ready);
  ASSERT_EQ(log.warnings.size(), 1u) << Joined(log.warnings);
  EXPECT_EQ(log.warnings[0],
            "line 10: an error at line 5 did not stop the boot (the server became ready): Failed to load the optional "
            "kernel library");
}

TEST(LogParserBootsTest, ARestartWithoutStartLinesIsFoundByItsNewPids) {
  // A grep of two boots' capacity lines: no version or args line, but EngineCore_DP0's pid changes.
  BootLog log = ParseBootLog(
      "(EngineCore_DP0 pid=101) INFO 08-21 18:03:01 [v1/core/kv_cache_utils.py:1319] GPU KV cache size: 597,760 "
      "tokens\n"
      "(EngineCore_DP0 pid=201) INFO 08-21 19:03:01 [v1/core/kv_cache_utils.py:1319] GPU KV cache size: 729,280 "
      "tokens\n");
  EXPECT_EQ(log.boots, 2);
  EXPECT_EQ(log.kv_tokens, (std::vector<std::int64_t>{729280}));
}

TEST(LogParserBootsTest, OneBootWithTwoEnginesAndTwoCapacityLines) {
  // DP2: each EngineCore_DPd prints its own engine config and pool; V1 up to v0.11 may print the pool once per
  // worker (the boot-log examples (docs/sources.md §3) DEV-MLA-01 prints it twice). One boot, every line kept.
  BootLog dp = ParseBootLog(
      "(APIServer pid=1) INFO 08-21 18:00:00 [entrypoints/utils.py:233] non-default args: {'data_parallel_size': 2}\n"
      "(EngineCore_DP0 pid=10) INFO 08-21 18:00:10 [v1/engine/core.py:105] Initializing a V1 LLM engine (v0.19.0) "
      "with config: model='m', data_parallel_size=1\n"
      "(EngineCore_DP0 pid=10) INFO 08-21 18:03:01 [v1/core/kv_cache_utils.py:1319] GPU KV cache size: 100,000 "
      "tokens\n"
      "(EngineCore_DP1 pid=11) INFO 08-21 18:00:10 [v1/engine/core.py:105] Initializing a V1 LLM engine (v0.19.0) "
      "with config: model='m', data_parallel_size=1\n"
      "(EngineCore_DP1 pid=11) INFO 08-21 18:03:01 [v1/core/kv_cache_utils.py:1319] GPU KV cache size: 99,984 "
      "tokens\n");
  EXPECT_EQ(dp.boots, 1);
  EXPECT_EQ(dp.kv_tokens, (std::vector<std::int64_t>{100000, 99984}));
  EXPECT_EQ(dp.kv_tokens_process, (std::vector<std::string>{"EngineCore_DP0", "EngineCore_DP1"}));
  EXPECT_EQ(ParseBootLog(kDevMla01).boots, 1);
  // Two offline V0 engines in one script (no API server): the second engine config starts a second boot.
  BootLog v0 = ParseBootLog(
      "INFO 12-01 00:00:00 [llm_engine.py:1] Initializing an LLM engine (v0.6.4) with config: model='a'\n"
      "INFO 12-01 00:00:01 [executor_base.py:1] # GPU blocks: 2902, # CPU blocks: 409\n"
      "INFO 12-01 00:10:00 [llm_engine.py:1] Initializing an LLM engine (v0.6.4) with config: model='b'\n"
      "INFO 12-01 00:10:01 [executor_base.py:1] # GPU blocks: 1952, # CPU blocks: 2048\n");
  EXPECT_EQ(v0.boots, 2);
  EXPECT_EQ(v0.num_gpu_blocks, 1952);
  EXPECT_EQ(v0.engine_config->model, "b");
}

TEST(LogParserBootsTest, InterleavedRecordIsBookedToItsOwnRank) {
  // The issue's case: PP1's "Model loading took" written into the middle of PP0's line must be PP1's.
  BootLog log = ParseBootLog(
      "(Worker_PP0_TP0 pid=10) INFO 08-21 18:02:00 [v1/worker/gpu_model_runner.py:4820] Loading weights took 118.2 "
      "sec"
      "(Worker_PP1_TP0 pid=14) INFO 08-21 18:02:00 [v1/worker/gpu_model_runner.py:4820] Model loading took 50.2 GiB "
      "memory and 121.0 seconds\n"
      "onds\n"
      "(Worker_PP0_TP0 pid=10) INFO 08-21 18:02:01 [v1/worker/gpu_model_runner.py:4820] Model loading took 47.85 GiB "
      "memory and 120.502592 seconds\n");
  EXPECT_TRUE(log.warnings.empty()) << Joined(log.warnings);
  EXPECT_DOUBLE_EQ(*log.FindWorker("Worker_PP1_TP0")->model_loading_gib, 50.2);
  EXPECT_DOUBLE_EQ(*log.FindWorker("Worker_PP0_TP0")->model_loading_gib, 47.85);
}

TEST(LogParserBootsTest, RankLinesFollowTheWorkerAcrossItsRename) {
  // vLLM 0.19 workers print their rank line as `Worker` and later lines as `Worker_PP1_TP0` (same pid).
  BootLog log = ParseBootLog(
      "(Worker pid=214) INFO 08-21 18:00:30 [distributed/parallel_state.py:1716] rank 4 in world size 8 is assigned "
      "as DP rank 0, PP rank 1, PCP rank 0, TP rank 0, EP rank N/A, EPLB rank N/A\n"
      "(Worker_PP1_TP0 pid=214) INFO 08-21 18:02:00 [v1/worker/gpu_model_runner.py:4820] Model loading took 50.2 GiB "
      "memory and 121.0 seconds\n");
  EXPECT_TRUE(log.warnings.empty()) << Joined(log.warnings);
  const WorkerLog* w = log.FindWorker("Worker_PP1_TP0");
  ASSERT_TRUE(w && w->ranks);
  EXPECT_EQ(w->ranks->pp, 1);
  EXPECT_EQ(w->ranks->rank, 4);
}

TEST(LogParserBootsTest, WarningsNameTheFileAndEscapeWhatTheyQuote) {
  std::string text =
      "(Worker_TP0 pid=1) INFO 08-01 00:00:00 [gpu_worker.py:1] Available KV cache memory: 4\xe2\x80\x8b"
      "6.80 GiB\n";
  text += std::string("\0\0\0\0", 4);
  text += "(EngineCore pid=3) INFO 08-01 00:00:01 [kv_cache_utils.py:1] GPU KV cache size: 1,234 tokens\n";
  BootLog log = ParseBootLog(text, LogParseOptions{"boot.log", 0});
  ASSERT_EQ(log.warnings.size(), 2u) << Joined(log.warnings);
  EXPECT_EQ(log.warnings[0],
            "boot.log:2: binary data: 4 NUL bytes in 1 runs (a log truncated under a running writer?); the text "
            "after a run is read as a new record");
  EXPECT_EQ(log.warnings[1],
            "boot.log:1: malformed 'Available KV cache memory' line (stops at byte 28 of the message: '<U+200B>'): "
            "'Available KV cache memory: "
            "4<U+200B>6.80 GiB'");
  EXPECT_EQ(log.kv_tokens, (std::vector<std::int64_t>{1234}));
  EXPECT_EQ(log.lines, 2);
}

TEST(LogParserBootsTest, TheV019MemorySummaryParses) {
  // v0.10-0.19 format of vllm/v1/worker/gpu_worker.py (the parts instead of "consumed memory"; non-torch may be
  // negative), seed PP1 figures.
  BootLog log = ParseBootLog(
      "(Worker_PP1_TP0 pid=214) DEBUG 08-21 18:04:00 [v1/worker/gpu_worker.py:661] Free memory on device "
      "(78.32/79.25 GiB) on startup. Desired GPU memory utilization is (0.95, 75.29 GiB). Actual usage is 50.2 GiB "
      "for weight, 3.2 GiB for peak activation, -0.5 GiB for non-torch memory, and 1.49 GiB for CUDAGraph memory. "
      "Replace gpu_memory_utilization config with `--kv-cache-memory=16707812474` to fit into requested memory, or "
      "`--kv-cache-memory=17714445107` to fully utilize gpu memory. Current kv cache memory in use is 16707812474 "
      "bytes.\n");
  EXPECT_TRUE(log.warnings.empty()) << Joined(log.warnings);
  const auto& u = *log.FindWorker("Worker_PP1_TP0")->usage_summary;
  EXPECT_DOUBLE_EQ(*u.non_torch_gib, -0.5);
  EXPECT_DOUBLE_EQ(*u.cuda_graph_gib, 1.49);
  EXPECT_NEAR(*u.kv_cache_in_use_gib, 15.56, 0.005);  // 16,707,812,474 B
  EXPECT_EQ(u.fit_kv_cache_memory_bytes, 16707812474);
}

}  // namespace
}  // namespace ppdeploy

namespace ppdeploy {
namespace {

TEST(LogParserBootsTest, ATracebackLoggedAtDebugLevelIsNotAnError) {
  // vLLM 0.19 logs some handled exceptions with logger.debug(..., exc_info=True) (e.g. a missing chat template,
  // renderers/hf.py): NewLineFormatter gives every traceback line the DEBUG header. Such a boot is complete.
  std::string text = SeedBoot("41,37", "729,280", "1.39", 200);
  text.insert(text.find("(Worker_PP0_TP0"),
              "(APIServer pid=200) DEBUG 08-21 18:01:00 [renderers/hf.py:122] Failed to load AutoTokenizer chat "
              "template for /m/GLM-5\r\n"
              "(APIServer pid=200) DEBUG 08-21 18:01:00 [renderers/hf.py:122] Traceback (most recent call last):\r\n"
              "(APIServer pid=200) DEBUG 08-21 18:01:00 [renderers/hf.py:122] ValueError: Cannot use chat template "
              "functions because tokenizer.chat_template is not set\n");
  BootLog log = ParseBootLog(text);
  EXPECT_EQ(log.status, BootStatus::kComplete);
  EXPECT_TRUE(log.warnings.empty()) << Joined(log.warnings);
}

TEST(LogParserBootsTest, ACutProgressBarIsNoWarningButACutFigureIs) {
  // tqdm bars are interrupted by the same process's log records all the time (their tail comes many lines
  // later or never): no warning. A known line cut the same way may have lost part of its figure: a warning.
  std::string bar =
      "(EngineCore pid=244) \rCapturing CUDA graphs (decode, FULL):   0%|          | 0/51 [00:00<?, ?it/s]"
      "(EngineCore pid=244) DEBUG 04-22 00:21:44 [v1/worker/gpu_model_runner.py:5342] ubatch_slices: None\n";
  EXPECT_TRUE(ParseBootLog(bar).warnings.empty());
  BootLog cut = ParseBootLog(
      "(Worker_TP0 pid=1) INFO 11-06 12:08:54 [gpu_worker.py:349] Available KV cache memory: 46"
      "(EngineCore_DP0 pid=2) INFO 11-06 12:08:55 [kv_cache_utils.py:1229] GPU KV cache size: 715,072 tokens\n");
  ASSERT_EQ(cut.warnings.size(), 2u) << Joined(cut.warnings);
  EXPECT_EQ(cut.warnings[0],
            "line 1: a record of Worker_TP0 was cut mid-line by another process's output and its tail was not found: "
            "'Available KV cache memory: 46'");
  EXPECT_EQ(cut.warnings[1], "line 1: truncated 'Available KV cache memory' line: 'Available KV cache memory: 46'");
  EXPECT_FALSE(cut.FindWorker("Worker_TP0"));  // no figure from the cut line
  EXPECT_EQ(cut.kv_tokens, (std::vector<std::int64_t>{715072}));
}

}  // namespace
}  // namespace ppdeploy
