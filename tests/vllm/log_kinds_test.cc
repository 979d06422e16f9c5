// One test per record kind of the vLLM log reader (src/vllm/log_kinds.h): each kind's example line (a
// constructed line in the format its table entry cites, with the seed deployment's figures from
// docs/seed.md where they fit, or a verbatim line of
// the boot-log examples (docs/sources.md §3)) is found as that kind and gives the figures written in it.
// A kind added to the table without a check here fails EveryKindHasItsOwnCheck.
#include "vllm/log_kinds.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <string>

#include "vllm/log_parser.h"
#include "vllm/log_records.h"

namespace ppdeploy {
namespace {

using Check = std::function<void(const BootLog&)>;

const WorkerLog& W(const BootLog& b, const std::string& key) {
  static const WorkerLog none;
  const WorkerLog* w = b.FindWorker(key);
  EXPECT_NE(w, nullptr) << "no worker " << key;
  return w ? *w : none;
}

const std::map<std::string, Check>& Checks() {
  static const std::map<std::string, Check> checks = {
      {"available_kv", [](const BootLog& b) { EXPECT_DOUBLE_EQ(*W(b, "Worker_TP0").available_kv_gib, 46.80); }},
      {"kv_tokens",
       [](const BootLog& b) {
         EXPECT_EQ(b.kv_tokens, (std::vector<std::int64_t>{715072}));
         EXPECT_EQ(b.kv_tokens_process, (std::vector<std::string>{"EngineCore_DP0"}));
       }},
      {"max_concurrency",
       [](const BootLog& b) {
         ASSERT_EQ(b.max_concurrency.size(), 1u);
         EXPECT_EQ(b.max_concurrency[0].tokens_per_request, 1024);
         EXPECT_DOUBLE_EQ(b.max_concurrency[0].x, 788.86);
       }},
      {"model_loading",
       [](const BootLog& b) {
         EXPECT_DOUBLE_EQ(*W(b, "Worker_PP0_TP0").model_loading_gib, 47.85);
         EXPECT_DOUBLE_EQ(*W(b, "Worker_PP0_TP0").model_loading_s, 120.502592);
       }},
      {"v0_weights", [](const BootLog& b) { EXPECT_DOUBLE_EQ(*W(b, "").model_loading_gib, 14.9888); }},
      {"cuda_graph_estimate",
       [](const BootLog& b) { EXPECT_DOUBLE_EQ(*W(b, "Worker_PP1_TP0").cuda_graph_estimate_gib, 1.31); }},
      {"cuda_graph_pool",
       [](const BootLog& b) {
         EXPECT_DOUBLE_EQ(*W(b, "Worker_PP1_TP0").cuda_graph_actual_gib, 1.49);
         EXPECT_DOUBLE_EQ(*W(b, "Worker_PP1_TP0").cuda_graph_pool_estimated_gib, 1.31);
       }},
      {"graph_capture",
       [](const BootLog& b) {
         EXPECT_DOUBLE_EQ(*W(b, "Worker_PP1_TP0").graph_capture_gib, 1.49);
         EXPECT_DOUBLE_EQ(*W(b, "Worker_PP1_TP0").graph_capture_s, 29);
       }},
      {"kv_cache_memory_override",
       [](const BootLog& b) {
         EXPECT_DOUBLE_EQ(*W(b, "Worker_TP0").kv_cache_memory_override_gib, 20.00);
         EXPECT_DOUBLE_EQ(*W(b, "Worker_TP0").initial_free_gib, 78.52);
       }},
      {"cuda_graph_hint",
       [](const BootLog& b) {
         EXPECT_DOUBLE_EQ(*W(b, "Worker_TP0").cg_hint_current_util, 0.92);
         EXPECT_DOUBLE_EQ(*W(b, "Worker_TP0").cg_hint_equivalent_util, 0.9036);
       }},
      {"block_size",
       [](const BootLog& b) {
         EXPECT_EQ(b.block_size, 64);
         EXPECT_EQ(b.block_size_backend, "FLASHMLA_SPARSE");
       }},
      {"partition",
       [](const BootLog& b) {
         EXPECT_EQ(b.partition, (std::vector<int>{19, 20, 20, 19}));
       }},
      {"num_gpu_blocks_override",
       [](const BootLog& b) {
         EXPECT_EQ(b.num_gpu_blocks_computed, 0);
         EXPECT_EQ(b.num_gpu_blocks_override, 512);
       }},
      {"init_engine", [](const BootLog& b) { EXPECT_DOUBLE_EQ(*b.init_engine_s, 84.91); }},
      {"not_enough_kv",
       [](const BootLog& b) {
         ASSERT_TRUE(b.not_enough_kv);
         EXPECT_EQ(b.not_enough_kv->max_seq_len, 262144);
         EXPECT_DOUBLE_EQ(b.not_enough_kv->needed_gib, 62.00);
         EXPECT_DOUBLE_EQ(b.not_enough_kv->available_gib, 48.66);
         EXPECT_EQ(b.not_enough_kv->estimated_max_model_len, 205728);
         EXPECT_EQ(b.status, BootStatus::kFailed);  // vLLM refused to start
       }},
      {"max_seq_len_error",
       [](const BootLog& b) {
         EXPECT_EQ(b.max_seq_len_error->max_seq_len, 20000);
         EXPECT_EQ(b.max_seq_len_error->kv_tokens, 23648);
         EXPECT_EQ(b.status, BootStatus::kFailed);
       }},
      {"no_available_memory",
       [](const BootLog& b) {
         EXPECT_TRUE(b.no_available_memory);
         EXPECT_EQ(b.status, BootStatus::kFailed);
       }},
      {"launch_args",
       [](const BootLog& b) {
         ASSERT_TRUE(b.launch_args);
         EXPECT_EQ(b.launch_args->tensor_parallel_size, 4);
         EXPECT_EQ(b.launch_args->pipeline_parallel_size, 2);
         EXPECT_EQ(b.launch_args->max_model_len, 524288);
         EXPECT_DOUBLE_EQ(*b.launch_args->gpu_memory_utilization, 0.95);
         EXPECT_EQ(b.launch_args->model, "/m/GLM-5");
       }},
      {"engine_config",
       [](const BootLog& b) {
         EXPECT_EQ(b.version, "0.19.0");
         ASSERT_TRUE(b.engine_config);
         EXPECT_EQ(b.engine_config->max_model_len, 524288);
         EXPECT_EQ(b.engine_config->pipeline_parallel_size, 2);
       }},
      {"api_server_version", [](const BootLog& b) { EXPECT_EQ(b.version, "0.6.4"); }},
      {"vllm_version", [](const BootLog& b) { EXPECT_EQ(b.version, "0.10.1"); }},
      {"api_server_start", [](const BootLog& b) { EXPECT_TRUE(b.api_server_started); }},
      {"app_startup",
       [](const BootLog& b) {
         EXPECT_TRUE(b.api_server_started);
         EXPECT_TRUE(b.boot_list.at(0).ready);
       }},
      {"memory_profiling",
       [](const BootLog& b) {
         const auto& p = *W(b, "Worker_PP0_TP0").v1_profile;
         EXPECT_DOUBLE_EQ(*p.profile_s, 17.96);
         EXPECT_DOUBLE_EQ(*p.non_kv_gib, 53.34);
         EXPECT_DOUBLE_EQ(*p.torch_peak_increase_gib, 2.36);
         EXPECT_DOUBLE_EQ(*p.non_torch_increase_gib, 3.13);
         EXPECT_DOUBLE_EQ(*p.weights_gib, 47.85);
       }},
      {"v0_budget",
       [](const BootLog& b) {
         const auto& p = *W(b, "").v0_profile;
         EXPECT_DOUBLE_EQ(*p.total_gpu_gib, 79.11);
         EXPECT_DOUBLE_EQ(*p.gpu_memory_utilization, 0.90);
         EXPECT_DOUBLE_EQ(*p.requested_gib, 71.20);
       }},
      {"v0_breakdown",
       [](const BootLog& b) {
         const auto& p = *W(b, "").v0_profile;
         EXPECT_DOUBLE_EQ(*p.weights_gib, 37.50);
         EXPECT_DOUBLE_EQ(*p.non_torch_gib, 1.20);
         EXPECT_DOUBLE_EQ(*p.activation_peak_gib, 4.10);
         EXPECT_DOUBLE_EQ(*p.kv_cache_gib, 28.40);
       }},
      {"v0_results", [](const BootLog& b) { EXPECT_DOUBLE_EQ(*W(b, "").v0_profile->kv_cache_gib, 3.81); }},
      {"v0_blocks",
       [](const BootLog& b) {
         EXPECT_EQ(b.num_gpu_blocks, 1952);
         EXPECT_EQ(b.num_cpu_blocks, 2048);
         EXPECT_EQ(b.status, BootStatus::kComplete);
       }},
      {"num_gpu_blocks_info", [](const BootLog& b) { EXPECT_EQ(b.num_gpu_blocks, 11395); }},
      {"usage_summary",
       [](const BootLog& b) {
         const auto& u = *W(b, "Worker_PP1_TP0").usage_summary;
         EXPECT_DOUBLE_EQ(*u.free_at_startup_gib, 78.32);
         EXPECT_DOUBLE_EQ(*u.total_gib, 79.25);
         EXPECT_DOUBLE_EQ(*u.gpu_memory_utilization, 0.95);
         EXPECT_DOUBLE_EQ(*u.requested_gib, 75.29);
         EXPECT_DOUBLE_EQ(*u.weights_gib, 50.2);
         EXPECT_DOUBLE_EQ(*u.peak_activation_gib, 3.2);
         EXPECT_DOUBLE_EQ(*u.non_torch_gib, 6.33);
         EXPECT_DOUBLE_EQ(*u.cuda_graph_gib, 1.49);
         EXPECT_EQ(u.fit_kv_cache_memory_bytes, 16707812474);
         EXPECT_EQ(u.full_kv_cache_memory_bytes, 17714445107);
         EXPECT_DOUBLE_EQ(*u.kv_cache_in_use_gib, 15.56);
         EXPECT_FALSE(u.consumed_gib);
       }},
      {"usage_summary_tail",
       [](const BootLog& b) {
         const auto& u = *W(b, "").usage_summary;
         EXPECT_DOUBLE_EQ(*u.consumed_gib, 56.89);
         EXPECT_DOUBLE_EQ(*u.peak_activation_gib, 0.76);
         EXPECT_DOUBLE_EQ(*u.cuda_graph_gib, 0.32);
         EXPECT_DOUBLE_EQ(*u.kv_cache_in_use_gib, 27.85);
       }},
      {"cp_multiplier", [](const BootLog& b) { EXPECT_EQ(b.kv_tokens_cp_multiplier, 8); }},
      {"kv_dtype", [](const BootLog& b) { EXPECT_EQ(b.kv_cache_dtype_logged, "fp8"); }},
      {"dsa_custom_fp8", [](const BootLog& b) { EXPECT_EQ(b.dsa_kv_cache_format, "fp8_ds_mla"); }},
      {"dsa_fp8_ds_mla", [](const BootLog& b) { EXPECT_EQ(b.dsa_kv_cache_format, "fp8_ds_mla"); }},
      {"dsa_standard_fp8", [](const BootLog& b) { EXPECT_EQ(b.dsa_kv_cache_format, "fp8"); }},
      {"dsa_bf16", [](const BootLog& b) { EXPECT_EQ(b.dsa_kv_cache_format, "bfloat16"); }},
      {"dsa_format", [](const BootLog& b) { EXPECT_EQ(b.dsa_kv_cache_format, "fp8_ds_mla"); }},
      {"banner_version", [](const BootLog& b) { EXPECT_EQ(b.version, "0.19.0"); }},
      {"banner_version_1", [](const BootLog& b) { EXPECT_EQ(b.version, "0.20.1"); }},
      {"rank_assignment",
       [](const BootLog& b) {
         const RankAssignment& r = *W(b, "Worker pid=214").ranks;
         EXPECT_EQ(r.rank, 4);
         EXPECT_EQ(r.world_size, 8);
         EXPECT_EQ(r.dp, 0);
         EXPECT_EQ(r.pp, 1);
         EXPECT_EQ(r.pcp, 0);
         EXPECT_EQ(r.tp, 0);
         EXPECT_FALSE(r.ep);  // "EP rank N/A"
       }},
      {"distributed_init",
       [](const BootLog& b) {
         const RankAssignment& r = *W(b, "Worker pid=214").ranks;
         EXPECT_EQ(r.world_size, 8);
         EXPECT_EQ(r.rank, 4);
         EXPECT_EQ(r.local_rank, 4);
       }},
      {"traceback",
       [](const BootLog& b) {
         EXPECT_EQ(b.status, BootStatus::kFailed);
         EXPECT_EQ(b.failure->message, "Traceback (most recent call last):");
         EXPECT_EQ(b.failure->process, "EngineCore_DP0");
       }},
  };
  return checks;
}

TEST(LogKindsTest, EveryKindHasItsOwnCheck) {
  for (const LogKind& k : LogKinds()) EXPECT_TRUE(Checks().count(std::string(k.name))) << k.name;
  EXPECT_EQ(Checks().size(), LogKinds().size());
}

TEST(LogKindsTest, EachExampleIsItsKindAndGivesItsFigures) {
  auto kinds = LogKinds();
  for (std::size_t i = 0; i < kinds.size(); ++i) {
    const LogKind& k = kinds[i];
    SCOPED_TRACE(std::string(k.name));
    std::string_view message = k.example;
    // The kind is found in the message as the reader sees it (after the prefix and header).
    if (auto start = ParseLogRecordStart(k.example, 0)) message = message.substr(start->end);
    auto hit = FindLogKind(message);
    ASSERT_TRUE(hit.has_value());
    EXPECT_EQ(kinds[hit->index].name, k.name);
    BootLog log = ParseBootLog(k.example);
    EXPECT_EQ(log.recognized_lines, 1);
    for (const auto& w : log.warnings) ADD_FAILURE() << w;
    auto it = Checks().find(std::string(k.name));
    if (it != Checks().end()) it->second(log);
  }
}

TEST(LogKindsTest, EveryAnchorHoldsATrigger) {
  // The pre-filter skips lines without any trigger: a kind whose anchor holds none would never be tried.
  for (const LogKind& k : LogKinds()) {
    bool any = false;
    for (std::string_view t : LogKindTriggers()) any |= k.anchor.find(t) != std::string_view::npos;
    EXPECT_TRUE(any) << k.name << ": " << k.anchor;
  }
  EXPECT_LE(LogKindTriggers().size(), 32u);
}

TEST(LogKindsTest, AcceptRejectsLookAlikes) {
  // Lines that hold an anchor but are not of its kind.
  EXPECT_FALSE(FindLogKind("Using default MoE config. Performance might be sub-optimal!"));
  EXPECT_FALSE(FindLogKind("vLLM version mismatch between the API server and the engine"));
  EXPECT_FALSE(FindLogKind("Initial free memory: 77.64 GiB; Requested memory: 0.950000 (util), 75.23 GiB"));
  EXPECT_FALSE(FindLogKind("Using the LLM engine (v1) API"));
  EXPECT_FALSE(FindLogKind("rank 0 in world size 4 is waiting for its peers"));
  // ... and one that holds two kinds: the one-line capacity format since 2026-08-04 (docs/vllm-rules.md §2).
  std::string_view both =
      "GPU KV cache size: 729,280 tokens, Maximum concurrency for 524,288 tokens per request: 1.39x";
  auto first = FindLogKind(both);
  ASSERT_TRUE(first);
  EXPECT_EQ(LogKinds()[first->index].name, "kv_tokens");
  auto second = FindLogKind(both, first->index + 1);
  ASSERT_TRUE(second);
  EXPECT_EQ(LogKinds()[second->index].name, "max_concurrency");
}

TEST(LogKindsTest, ExceptionLines) {
  EXPECT_TRUE(IsExceptionLine("ValueError: To serve at least one request with the model's max seq len (8192)"));
  EXPECT_TRUE(IsExceptionLine("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 786.00 MiB."));
  EXPECT_TRUE(IsExceptionLine("pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig"));
  EXPECT_TRUE(IsExceptionLine("AssertionError"));
  EXPECT_TRUE(IsExceptionLine("RuntimeError: Engine core initialization failed. See root cause above."));
  EXPECT_FALSE(IsExceptionLine("    raise ValueError("));         // a traceback's source line
  EXPECT_FALSE(IsExceptionLine("  File \"core.py\", line 857"));  // a frame
  EXPECT_FALSE(IsExceptionLine("UserWarning: pkg_resources is deprecated"));
  EXPECT_FALSE(IsExceptionLine("Failed to import from vllm._C with ModuleNotFoundError(\"No module\")"));
  EXPECT_FALSE(IsExceptionLine("ErrorHandler installed"));
}

}  // namespace
}  // namespace ppdeploy
