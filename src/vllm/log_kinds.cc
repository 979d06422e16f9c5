// The record kinds of the vLLM log reader (log_kinds.h). Every matcher reads its line left to right with a
// Cursor (hand-written string_view scanning: no regex, no recursion, no exceptions). Formats: docs/vllm-rules.md
// §2 (row named in each comment), the V0 formats of docs/memory-overheads.md §1, and the vLLM 0.19 formats (marked
// "0.19") seen in the llm-d-planner logs whose facts are in tests/data/llmd-v0.19, checked against vLLM's
// source where the comment names a file. The `example` of each kind is a constructed line in its format
// (values of the seed deployment, docs/seed.md, where they fit) or a verbatim line of
// the boot-log examples (docs/sources.md §3) (named).
#include "vllm/log_kinds.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "vllm/log_cursor.h"
#include "vllm/log_matchers.h"

namespace ppdeploy {
namespace {

using namespace log_kinds;  // NOLINT: the matchers and the cursor helpers of this reader

// Each starts with a byte pair that is rare in log text (the pre-filter's cost is the pairs it has to check).
constexpr std::string_view kTriggers[] = {"KV cache",
                                          "kv cache",
                                          "CUDA graph",
                                          "gpu-memory",
                                          "Maximum concurrency",
                                          "Model loading",
                                          "weights t",
                                          "(profile",
                                          "Graph capturing",
                                          "Initial free",
                                          "blocks: ",
                                          "_blocks",
                                          "Hidden layers",
                                          "To serve",
                                          "-default args",
                                          "LLM",
                                          "Actual usage",
                                          "Using ",
                                          "\xe2\x96\x88",
                                          "world size",
                                          "_init_method",
                                          "Traceback",
                                          "Application startup",
                                          "Memory profiling",
                                          "No available",
                                          "Free memory"};

using R = LogKindRole;
// clang-format off
constexpr LogKind kKinds[] = {
    {"available_kv", "Available KV cache memory:", R::kFigure, AvailableKv, nullptr, false,
     "(Worker_TP0 pid=591236) INFO 11-06 12:08:54 [gpu_worker.py:349] Available KV cache memory: 46.80 GiB"},
    {"kv_tokens", "GPU KV cache size:", R::kPool, KvTokens, nullptr, true,
     "(EngineCore_DP0 pid=591074) INFO 11-06 12:08:55 [kv_cache_utils.py:1229] GPU KV cache size: 715,072 tokens"},
    {"max_concurrency", "Maximum concurrency for ", R::kFigure, MaxConcurrencyLine, nullptr, false,
     "INFO 07-09 09:47:46 [kv_cache_utils.py:720] Maximum concurrency for 1,024 tokens per request: 788.86x"},
    {"model_loading", "Model loading took ", R::kFigure, ModelLoading, nullptr, false,
     "(Worker_PP0_TP0 pid=210) INFO 08-21 18:02:00 [v1/worker/gpu_model_runner.py:4820] Model loading took 47.85 GiB memory and 120.502592 seconds"},
    {"v0_weights", "Loading model weights took ", R::kFigure, V0Weights, nullptr, false,
     "Loading model weights took 14.9888 GB"},
    {"cuda_graph_estimate", "Estimated CUDA graph memory: ", R::kFigure, CgEstimate, nullptr, false,
     "(Worker_PP1_TP0 pid=214) INFO 08-21 18:03:00 [v1/worker/gpu_model_runner.py:5955] Estimated CUDA graph memory: 1.31 GiB total"},
    {"cuda_graph_pool", "CUDA graph pool memory: ", R::kFigure, CgPool, nullptr, false,
     "(Worker_PP1_TP0 pid=214) INFO 08-21 18:04:00 [v1/worker/gpu_worker.py:597] CUDA graph pool memory: 1.49 GiB (actual), 1.31 GiB (estimated), difference: 0.18 GiB (13.7%)."},
    {"graph_capture", "Graph capturing finished in ", R::kFigure, GraphCapture, nullptr, false,
     "(Worker_PP1_TP0 pid=214) INFO 08-21 18:04:00 [v1/worker/gpu_model_runner.py:6046] Graph capturing finished in 29 secs, took 1.49 GiB"},
    {"kv_cache_memory_override", "Initial free memory ", R::kFigure, KvOverride, AcceptKvOverride, false,
     "(Worker_TP0 pid=1) INFO 08-01 00:00:00 [gpu_worker.py:300] Initial free memory 78.52 GiB, reserved 20.00 GiB memory for KV Cache as specified by kv_cache_memory_bytes config and skipped memory profiling."},
    {"cuda_graph_hint", "is equivalent to --gpu-memory-utilization=", R::kFigure, CgHint, nullptr, false,
     "(Worker_TP0 pid=1) INFO 08-01 00:00:02 [gpu_worker.py:3] CUDA graph memory profiling is enabled (default since v0.21.0). The current --gpu-memory-utilization=0.9200 is equivalent to --gpu-memory-utilization=0.9036 without CUDA graph memory profiling."},
    {"block_size", "kv cache block size to ", R::kFigure, BlockSize, AcceptBlockSize, false,
     "INFO 03-12 00:00:00 [interface.py:1] Setting kv cache block size to 64 for FLASHMLA_SPARSE backend."},
    {"partition", "Hidden layers were unevenly partitioned: ", R::kFigure, Partition, nullptr, false,
     "INFO 05-01 00:00:00 [utils.py:1] Hidden layers were unevenly partitioned: [19,20,20,19]. This can be manually overridden using the VLLM_PP_LAYER_PARTITION environment variable"},
    {"num_gpu_blocks_override", "Overriding num_gpu_blocks=", R::kFigure, BlocksOverride, nullptr, false,
     "(Worker_PP0_TP0 pid=210) INFO 08-21 18:03:00 [v1/core/kv_cache_utils.py:829] Overriding num_gpu_blocks=0 with num_gpu_blocks_override=512"},
    {"init_engine", "init engine (profile, create kv cache, warmup model) took ", R::kEngineReady, InitEngine, nullptr, false,
     "(EngineCore_DP0 pid=208) INFO 08-21 18:04:01 [v1/engine/core.py:283] init engine (profile, create kv cache, warmup model) took 84.91 seconds"},
    {"not_enough_kv", "To serve at least one request with the model", R::kFatal, NotEnoughKv, nullptr, false,
     "ValueError: To serve at least one request with the models's max seq len (262144), (62.00 GiB KV cache is needed, which is larger than the available KV cache memory (48.66 GiB). Based on the available memory, the estimated maximum model length is 205728. Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine."},
    {"max_seq_len_error", "is larger than the maximum number of tokens that can be stored in KV cache (", R::kFatal, MaxSeqLen, nullptr, false,
     "ValueError: The model's max seq len (20000) is larger than the maximum number of tokens that can be stored in KV cache (23648). Try increasing `gpu_memory_utilization`."},
    {"no_available_memory", "No available memory for the cache blocks", R::kFatal, NoMemory, nullptr, false,
     "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine."},
    {"launch_args", "non-default args: ", R::kLaunchArgs, LaunchArgsLine, nullptr, false,
     "(APIServer pid=7) INFO 08-21 18:00:00 [entrypoints/utils.py:233] non-default args: {'model': '/m/GLM-5', 'max_model_len': 524288, 'tensor_parallel_size': 4, 'pipeline_parallel_size': 2, 'gpu_memory_utilization': 0.95}"},
    {"engine_config", "LLM engine (v", R::kEngineConfig, EngineConfig, AcceptEngineConfig, false,
     "(EngineCore_DP0 pid=208) INFO 08-21 18:00:10 [v1/engine/core.py:105] Initializing a V1 LLM engine (v0.19.0) with config: model='/m/GLM-5', dtype=torch.bfloat16, max_seq_len=524288, tensor_parallel_size=4, pipeline_parallel_size=2"},
    {"api_server_version", "vLLM API server version ", R::kVersion, ApiVersion, AcceptVersion, false,
     "INFO 12-01 00:00:00 [api_server.py:1] vLLM API server version 0.6.4"},
    {"vllm_version", "vLLM version", R::kVersion, VllmVersion, AcceptVersion, false,
     "INFO 08-01 00:00:00 [__init__.py:1] vLLM version 0.10.1"},
    {"api_server_start", "Starting vLLM API server", R::kReady, ApiServerStart, nullptr, false,
     "(APIServer pid=7) INFO 08-21 18:04:05 [entrypoints/openai/api_server.py:1] Starting vLLM API server 0 on http://0.0.0.0:8000"},
    {"app_startup", "Application startup complete", R::kReady, AppStartup, nullptr, false,
     "(APIServer pid=7) INFO:     Application startup complete."},
    {"memory_profiling", "Memory profiling takes ", R::kFigure, MemoryProfiling, nullptr, false,
     "(Worker_PP0_TP0 pid=210) DEBUG 08-21 18:03:00 [v1/worker/gpu_worker.py:435] Memory profiling takes 17.96 seconds. Total non KV cache memory: 53.34GiB; torch peak memory increase: 2.36GiB; non-torch forward increase memory: 3.13GiB; weights memory: 47.85GiB."},
    {"v0_budget", "the current vLLM instance can use total_gpu_memory (", R::kFigure, V0Budget, nullptr, false,
     "the current vLLM instance can use total_gpu_memory (79.11GiB) x gpu_memory_utilization (0.90) = 71.20GiB"},
    {"v0_breakdown", "model weights take ", R::kFigure, V0Breakdown, nullptr, false,
     "model weights take 37.50GiB; non_torch_memory takes 1.20GiB; PyTorch activation peak memory takes 4.10GiB; the rest of the memory reserved for KV Cache is 28.40GiB."},
    {"v0_results", "Memory profiling results: ", R::kFigure, V0Results, nullptr, false,
     "Memory profiling results: total_gpu_memory=23.58GiB initial_memory_usage=15.34GiB peak_torch_memory=17.06GiB memory_usage_post_profile=15.35GiB non_torch_memory=0.35GiB kv_cache_size=3.81GiB gpu_memory_utilization=0.90"},
    {"v0_blocks", " blocks: ", R::kPool, V0Blocks, AcceptV0Blocks, false,
     "GPU blocks: 1952, # CPU blocks: 2048"},
    {"num_gpu_blocks_info", "num_gpu_blocks is: ", R::kPool, BlocksInfo, nullptr, false,
     "(APIServer pid=7) DEBUG 08-21 18:04:07 [v1/metrics/loggers.py:273] Engine 000: vllm cache_config_info with initialization after num_gpu_blocks is: 11395"},
    {"usage_summary", "Free memory on device ", R::kFigure, UsageSummary, nullptr, false,
     "(Worker_PP1_TP0 pid=214) DEBUG 08-21 18:04:00 [v1/worker/gpu_worker.py:661] Free memory on device (78.32/79.25 GiB) on startup. Desired GPU memory utilization is (0.95, 75.29 GiB). Actual usage is 50.2 GiB for weight, 3.2 GiB for peak activation, 6.33 GiB for non-torch memory, and 1.49 GiB for CUDAGraph memory. Replace gpu_memory_utilization config with `--kv-cache-memory=16707812474` (15.56 GiB) to fit into requested memory, or `--kv-cache-memory=17714445107` (16.5 GiB) to fully utilize gpu memory. Current kv cache memory in use is 15.56 GiB."},
    {"usage_summary_tail", "Actual usage is ", R::kFigure, UsageSummary, nullptr, false,
     "Actual usage is 56.89 GiB for consumed memory (weights + non-torch), 0.76 GiB for peak activation, and 0.32 GiB for CUDAGraph memory. Current kv cache memory in use is 27.85 GiB."},
    {"cp_multiplier", "Multiplying the GPU KV cache size by the ", R::kFigure, CpMultiplier, nullptr, false,
     "INFO 05-01 00:00:00 [kv_cache_utils.py:1] Multiplying the GPU KV cache size by the cp_world_size 8 (pcp_world_size 2 * dcp_world_size 4)."},
    {"kv_dtype", " data type to store kv cache", R::kFigure, KvDtype, AcceptKvDtype, false,
     "INFO 05-01 00:00:00 [cache.py:1] Using fp8 data type to store kv cache. It reduces the GPU memory footprint and boosts the performance."},
    {"dsa_custom_fp8", "Using custom fp8 kv-cache format for DeepSeek", R::kFigure, DsaCustomFp8, nullptr, false,
     "INFO 10-01 00:00:00 [models/config.py:1] Using custom fp8 kv-cache format for DeepSeekV3.2"},
    {"dsa_fp8_ds_mla", "Using DeepSeek's fp8_ds_mla KV cache format", R::kFigure, DsaCustomFp8, nullptr, false,
     "INFO 05-01 00:00:00 [mla_attention.py:1] Using DeepSeek's fp8_ds_mla KV cache format. To use standard fp8 kv-cache format, please set `--attention-backend FLASHINFER_MLA_SPARSE`"},
    {"dsa_standard_fp8", "Using standard fp8 KV cache format", R::kFigure, DsaStandardFp8, nullptr, false,
     "INFO 08-01 00:00:00 [mla_attention.py:1] Using standard fp8 KV cache format. To use DeepSeek's fp8_ds_mla KV cache format, please set `--attention-backend FLASHMLA_SPARSE`"},
    {"dsa_bf16", "Using bfloat16 kv-cache for DeepSeek", R::kFigure, DsaBf16, nullptr, false,
     "INFO 10-01 00:00:00 [models/config.py:1] Using bfloat16 kv-cache for DeepSeekV3.2"},
    {"dsa_format", " KV cache format for ", R::kFigure, DsaGeneric, AcceptDsaGeneric, false,
     "INFO 08-01 00:00:00 [mla_attention.py:1] Using fp8_ds_mla KV cache format for FLASHMLA_SPARSE backend."},
    {"banner_version", "\xe2\x96\x88  version ", R::kVersion, Banner, nullptr, false,
     "(APIServer pid=7) INFO 08-21 18:00:00 [entrypoints/utils.py:299]  \xe2\x96\x84\xe2\x96\x84 \xe2\x96\x84\xe2\x96\x88 \xe2\x96\x88     \xe2\x96\x88     \xe2\x96\x88 \xe2\x96\x80\xe2\x96\x84\xe2\x96\x80 \xe2\x96\x88  version 0.19.0"},
    {"banner_version_1", "\xe2\x96\x88 version ", R::kVersion, Banner, nullptr, false,
     "\xe2\x96\x88 version 0.20.1"},
    {"rank_assignment", " in world size ", R::kFigure, RankLine, AcceptRank, false,
     "(Worker pid=214) INFO 08-21 18:00:30 [distributed/parallel_state.py:1716] rank 4 in world size 8 is assigned as DP rank 0, PP rank 1, PCP rank 0, TP rank 0, EP rank N/A, EPLB rank N/A"},
    {"distributed_init", " distributed_init_method=", R::kFigure, DistInit, nullptr, false,
     "(Worker pid=214) INFO 08-21 18:00:29 [distributed/parallel_state.py:1203] world_size=8 rank=4 local_rank=4 distributed_init_method=tcp://127.0.0.1:29500 backend=nccl"},
    {"traceback", "Traceback (most recent call last)", R::kError, TracebackStart, nullptr, false,
     "(EngineCore_DP0 pid=208) Traceback (most recent call last):"},
};
// clang-format on

/// For each kind, the bit of the first trigger its anchor contains (0 if none: a table error the tests catch).
const std::array<std::uint32_t, std::size(kKinds)>& KindTriggerBits() {
  static const auto bits = [] {
    std::array<std::uint32_t, std::size(kKinds)> b{};
    for (std::size_t k = 0; k < std::size(kKinds); ++k)
      for (std::size_t t = 0; t < std::size(kTriggers); ++t)
        if (kKinds[k].anchor.find(kTriggers[t]) != npos) {
          b[k] = 1u << t;
          break;
        }
    return b;
  }();
  return bits;
}
static_assert(std::size(kTriggers) <= 32);

}  // namespace

namespace {

/// The triggers indexed by their first two bytes: a line is scanned once, byte pair by byte pair, against an
/// 8 KiB bitmap (most lines hold no pair that starts a trigger) instead of once per trigger.
struct TriggerIndex {
  std::array<std::uint64_t, 1024> bits{};                      // 65,536 pairs
  std::vector<std::pair<std::uint16_t, std::uint32_t>> masks;  // pair -> triggers starting with it (sorted)
  TriggerIndex() {
    for (std::size_t t = 0; t < std::size(kTriggers); ++t) {
      std::string_view tr = kTriggers[t];
      auto p = static_cast<std::uint16_t>((static_cast<unsigned char>(tr[0]) << 8) | static_cast<unsigned char>(tr[1]));
      bits[p >> 6] |= std::uint64_t{1} << (p & 63);
      auto it = std::find_if(masks.begin(), masks.end(), [&](const auto& m) { return m.first == p; });
      if (it == masks.end()) {
        masks.emplace_back(p, 0);
        it = masks.end() - 1;
      }
      it->second |= 1u << t;
    }
    std::sort(masks.begin(), masks.end());
  }
  std::uint32_t Scan(std::string_view s) const {
    std::uint32_t found = 0;
    const auto* b = reinterpret_cast<const unsigned char*>(s.data());
    for (std::size_t i = 0; i + 1 < s.size(); ++i) {
      auto p = static_cast<std::uint16_t>((b[i] << 8) | b[i + 1]);
      if (!((bits[p >> 6] >> (p & 63)) & 1)) continue;
      auto it = std::lower_bound(masks.begin(), masks.end(), std::pair<std::uint16_t, std::uint32_t>(p, 0));
      for (std::uint32_t m = it->second & ~found; m;) {
        int t = __builtin_ctz(m);
        m &= m - 1;
        if (s.substr(i, kTriggers[t].size()) == kTriggers[t]) found |= 1u << t;
      }
    }
    return found;
  }
};

const TriggerIndex& Triggers() {
  static const TriggerIndex index;
  return index;
}

}  // namespace

std::optional<LogKindHit> FindLogKind(std::string_view line, std::size_t first) {
  std::uint32_t found = Triggers().Scan(line);
  if (!found) return std::nullopt;
  const auto& bits = KindTriggerBits();
  for (std::size_t k = first; k < std::size(kKinds); ++k) {
    if (!(found & bits[k])) continue;
    std::size_t at = line.find(kKinds[k].anchor);
    if (at == npos) continue;
    std::size_t after = at + kKinds[k].anchor.size();
    if (kKinds[k].accept && !kKinds[k].accept(line, after)) continue;
    return LogKindHit{k, after};
  }
  return std::nullopt;
}

std::span<const LogKind> LogKinds() { return kKinds; }
std::span<const std::string_view> LogKindTriggers() { return kTriggers; }

bool IsExceptionLine(std::string_view line) {
  std::size_t i = 0;
  while (i < line.size() && line[i] == ' ') ++i;
  std::size_t b = i;
  if (i >= line.size() || !(IsAlpha(line[i]) || line[i] == '_')) return false;
  while (i < line.size() && i - b < 120 && (IsAlpha(line[i]) || IsDigit(line[i]) || line[i] == '_' || line[i] == '.'))
    ++i;
  std::string_view name = line.substr(b, i - b);
  if (!(name.ends_with("Error") || name.ends_with("Exception") || name == "KeyboardInterrupt")) return false;
  if (b > 0) return false;  // indented: part of a traceback's source lines
  return i == line.size() || line.substr(i, 2) == ": ";
}

}  // namespace ppdeploy
