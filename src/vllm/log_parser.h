// Parser for vLLM start-up ("boot") logs of every version, V0 (<= v0.10) to N (2026-08).
//
// Pure: the input is the log text, nothing is read, printed or thrown. Used by `ppdeploy calibrate`
// (issue 3) to recover the measured figures (weights, KV budget, CUDA graphs, KV tokens) of a real boot.
//
// Source of every line format: /work/shared/reference/vllm-rules.md §2 ("Log lines: format strings and
// suggested regexes"), §1.12 (capacity lines, which process prints what), §1.7/§1.8 (memory profiling,
// overrides) and memory-overheads.md §1 (what the memory columns mean in each era). Each field below names
// the line it comes from; "§2 <row>" is the row of the table in vllm-rules.md §2.
//
// Line layout (§2): `[ANSI](<proc> pid=<pid>)[ANSI] <LEVEL> <MM-DD HH:MM:SS> [<file>:<line>] <message>`.
// The process prefix and the header are optional (V0 logs and copied snippets have neither). The parser
// looks for each known message anywhere in the line after the process prefix, so extra prefixes (docker
// `name | `, journald timestamps) do not matter. ANSI escape sequences are removed anywhere in a line.
//
// Robustness: ParseBootLog never throws and never crashes on any byte sequence (fuzzed by
// fuzz/log_parser_fuzz.cc). A known line that cannot be fully parsed leaves its fields unset and adds a
// human-readable entry to BootLog::warnings (at most kMaxLogWarnings, then one summary entry).
// Performance: linear in the input; ~100 MB in well under 2 s (bench/log_parser_bench.cc).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ppdeploy {

/// A vLLM process as named by its log prefix (§2 "Process prefix" / "Names").
///   v0.11+: `Worker[_DP{d}][_PP{p}][_PCP{c}][_TP{t}][_DCP{k}][_EP{e}]` (a part only when that size > 1);
///   v0.9-v0.10: `VllmWorker rank={r}`; engine: `EngineCore` or `EngineCore_DP{d}`; API server: `APIServer`.
/// Unknown names (`VllmWorkerProcess`, `RayWorkerWrapper`, ...) keep only `name` and `pid`.
struct LogProcess {
  std::string name;                             ///< as printed before " pid=", e.g. "Worker_PP1_TP0"; "" for no prefix
  std::optional<std::int64_t> pid;              ///< the pid=N of the prefix
  std::optional<int> dp, pp, pcp, tp, dcp, ep;  ///< ranks parsed from `_DPd`/`_PPp`/... parts of the name
  std::optional<int> rank;                      ///< `VllmWorker rank=N` (v0.9-v0.10): the global worker rank
};

/// Parses a process name such as "Worker_DP0_PP1_TP2_EP5", "VllmWorker rank=3", "EngineCore_DP0".
/// Parts that are not rank parts are ignored. Never throws.
LogProcess ParseLogProcessName(std::string_view name);

/// V0 engine memory profile (<= v0.10, INFO), two formats (§2 "Memory profile detail"):
///  - the block `Memory profiling takes %.2f seconds` / `the current vLLM instance can use total_gpu_memory
///    (%.2fGiB) x gpu_memory_utilization (%.2f) = %.2fGiB` / `model weights take %.2fGiB; non_torch_memory
///    takes %.2fGiB; PyTorch activation peak memory takes %.2fGiB; the rest of the memory reserved for KV
///    Cache is %.2fGiB.` (three lines; the continuation lines usually have no prefix);
///  - the older one-liner `Memory profiling results: total_gpu_memory=23.58GiB initial_memory_usage=15.34GiB
///    peak_torch_memory=17.06GiB memory_usage_post_profile=15.35GiB non_torch_memory=0.35GiB
///    kv_cache_size=3.81GiB gpu_memory_utilization=0.90` (boot-logs-examples.json DEV-GQA-02).
/// All sizes GiB as printed (2 decimals). Meaning of the columns by era: memory-overheads.md §1.
struct V0MemoryProfile {
  std::optional<double> profile_s;                      ///< block: "takes X seconds"
  std::optional<double> total_gpu_gib;                  ///< block "total_gpu_memory (X GiB)" / one-liner
  std::optional<double> gpu_memory_utilization;         ///< block / one-liner
  std::optional<double> requested_gib;                  ///< block: "= X GiB" (total x util)
  std::optional<double> weights_gib;                    ///< block: "model weights take"
  std::optional<double> non_torch_gib;                  ///< block "non_torch_memory takes" / one-liner
  std::optional<double> activation_peak_gib;            ///< block: "PyTorch activation peak memory takes"
  std::optional<double> kv_cache_gib;                   ///< block "reserved for KV Cache is" / one-liner kv_cache_size
  std::optional<double> initial_memory_usage_gib;       ///< one-liner
  std::optional<double> peak_torch_memory_gib;          ///< one-liner
  std::optional<double> memory_usage_post_profile_gib;  ///< one-liner
};

/// V1 memory profiling result (`MemoryProfilingResult.__repr__`, DEBUG only in V1; §2 "Memory profile
/// detail"): `Memory profiling takes %.2f seconds. Total non KV cache memory: XGiB; torch peak memory
/// increase: XGiB; [non-torch forward increase memory: XGiB | total consumed (from mem_get_info): XGiB];
/// weights memory: XGiB.` (the third field changed in July 2026). GiB as printed (format_gib).
struct V1MemoryProfile {
  std::optional<double> profile_s;
  std::optional<double> non_kv_gib;               ///< "Total non KV cache memory"
  std::optional<double> torch_peak_increase_gib;  ///< "torch peak memory increase"
  std::optional<double> non_torch_increase_gib;   ///< "non-torch forward increase memory" (up to July 2026)
  std::optional<double> total_consumed_gib;       ///< "total consumed (from mem_get_info)" (since July 2026)
  std::optional<double> weights_gib;              ///< "weights memory"
};

/// The one-line memory summary of newer versions (`gpu_worker.py`, N era, memory-overheads.md §1 row "N"):
/// `Free memory on device (F/T GiB) on startup. Desired GPU memory utilization is (U, R GiB). Actual usage is
/// C GiB for consumed memory (weights + non-torch), A GiB for peak activation, and G GiB for CUDAGraph memory.
/// [Replace gpu_memory_utilization config with `--kv-cache-memory=B1` (x GiB) to fit into requested memory,
/// or `--kv-cache-memory=B2` (y GiB) to fully utilize gpu memory.] Current kv cache memory in use is K GiB.`
/// N-era semantics: "peak activation" includes the CUDA-graph estimate; "CUDAGraph memory" is the actual pool.
struct MemoryUsageSummary {
  std::optional<double> free_at_startup_gib;               ///< F
  std::optional<double> total_gib;                         ///< T (torch/vLLM total, memory-overheads.md §2)
  std::optional<double> gpu_memory_utilization;            ///< U
  std::optional<double> requested_gib;                     ///< R = ceil(T x U)
  std::optional<double> consumed_gib;                      ///< C: weights + non-torch (+ persistent buffers)
  std::optional<double> peak_activation_gib;               ///< A: transient peak + CG estimate
  std::optional<double> cuda_graph_gib;                    ///< G: actual graph pool
  std::optional<std::int64_t> fit_kv_cache_memory_bytes;   ///< B1: exact bytes that fit the request
  std::optional<std::int64_t> full_kv_cache_memory_bytes;  ///< B2: exact bytes that fill the GPU
  std::optional<double> kv_cache_in_use_gib;               ///< K
};

/// Figures printed by one process (a GPU worker, or EngineCore / no prefix when the worker runs inside it:
/// TP=1 in V1, the driver worker in V0). GiB values are as printed (rounded to 0.01, or 4 decimals for
/// "Model loading took" before 2026-01-07). If a process prints a line twice, the last value wins.
struct WorkerLog {
  std::string key;     ///< BootLog::workers key: the name, or "name pid=N" for names without rank parts
  LogProcess process;  ///< parsed prefix
  /// §2 "Model weights": `Model loading took X GB|GiB [memory] and S seconds` (v0.8.0 printed "GB" but the
  /// value was already bytes/2^30), and the V0 form `Loading model weights took X GB`.
  std::optional<double> model_loading_gib;
  std::optional<double> model_loading_s;
  /// §2 "KV budget": `Available KV cache memory: X GiB` (v0.9.1+; may be negative).
  std::optional<double> available_kv_gib;
  /// §2 "CG estimate" (since 2026-03-07): `Estimated CUDA graph memory: X GiB total`.
  std::optional<double> cuda_graph_estimate_gib;
  /// §2 "CG actual vs estimate": `CUDA graph pool memory: X GiB (actual), Y GiB (estimated), ...`.
  std::optional<double> cuda_graph_actual_gib;
  std::optional<double> cuda_graph_pool_estimated_gib;  ///< the Y of that line
  /// §2 "Graph capture": `Graph capturing finished in N secs, took X GiB` (v0.8 -> N).
  std::optional<double> graph_capture_gib;
  std::optional<double> graph_capture_s;
  /// §2 "kv-cache-memory override": `Initial free memory X GiB, reserved Y GiB memory for KV Cache as
  /// specified by kv_cache_memory_bytes config ...` (v0.11: `reserved Y.YYGiB`). Y rounded to 0.01 GiB; the
  /// exact bytes are in LaunchArgs::kv_cache_memory_bytes when the log echoes the launch args.
  std::optional<double> kv_cache_memory_override_gib;
  std::optional<double> initial_free_gib;  ///< the X of that line
  /// §2 "CG util hint": `The current --gpu-memory-utilization=A is equivalent to
  /// --gpu-memory-utilization=B without CUDA graph memory profiling.`
  std::optional<double> cg_hint_current_util;     ///< A
  std::optional<double> cg_hint_equivalent_util;  ///< B
  std::optional<V0MemoryProfile> v0_profile;
  std::optional<V1MemoryProfile> v1_profile;
  std::optional<MemoryUsageSummary> usage_summary;
};

/// One `Maximum concurrency for T tokens per request: X.XXx` (§2 "Capacity", §1.12).
struct MaxConcurrency {
  std::int64_t tokens_per_request = 0;  ///< T (thousands separators removed)
  double x = 0.0;                       ///< X
  std::string process;                  ///< key of the printing process ("" = no prefix), e.g. "EngineCore_DP1"
};

/// The not-enough-KV error (§2 "Not-enough-KV error", `_check_enough_kv_cache_memory`):
/// `To serve at least one request with the model's max seq len (L), (X GiB KV cache is needed, which is
/// larger than the available KV cache memory (Y GiB). [Based on the available memory, the estimated maximum
/// model length is M.] Try ...`. Some versions print "models's"; both are accepted.
struct NotEnoughKvError {
  std::int64_t max_seq_len = 0;                         ///< L
  double needed_gib = 0.0;                              ///< X
  double available_gib = 0.0;                           ///< Y
  std::optional<std::int64_t> estimated_max_model_len;  ///< M (absent in older versions)
};

/// The V0 error `The model's max seq len (L) is larger than the maximum number of tokens that can be stored
/// in KV cache (K).` (V0 `_verify_args`/`_check_enough_kv_cache_memory` predecessor).
struct MaxSeqLenError {
  std::int64_t max_seq_len = 0;  ///< L
  std::int64_t kv_tokens = 0;    ///< K
};

/// The start-up refusal `Free memory on device (F/T GiB) on startup is less than desired GPU memory
/// utilization (U, R GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.`
/// (`request_memory`, vllm-rules.md §1.7).
struct InsufficientFreeMemoryError {
  double free_gib = 0.0;                         ///< F
  double total_gib = 0.0;                        ///< T
  std::optional<double> gpu_memory_utilization;  ///< U
  std::optional<double> requested_gib;           ///< R
};

/// Launch arguments echoed by the log. Two sources:
///  - the API server's `non-default args: {'k': v, ...}` (a Python dict repr; `arg_utils`/`cli_args`/`utils`);
///  - the engine's `Initializing a V1 LLM engine (vX) with config: k=v, k=v, ...` / `Initializing an LLM
///    engine (vX) with config: ...` (effective values; `max_seq_len` maps to max_model_len).
/// Only keys that are present are set; `raw` keeps every key with its value text as printed.
struct LaunchArgs {
  std::optional<int> tensor_parallel_size;
  std::optional<int> pipeline_parallel_size;
  std::optional<int> data_parallel_size;
  std::optional<int> decode_context_parallel_size;
  std::optional<bool> enable_expert_parallel;
  std::optional<std::int64_t> max_model_len;
  std::optional<double> gpu_memory_utilization;
  std::optional<std::string> kv_cache_dtype;
  std::optional<int> block_size;
  std::optional<std::string> speculative_config;  ///< the value text as printed (dict / object repr / None)
  std::optional<bool> enforce_eager;
  std::optional<std::int64_t> kv_cache_memory_bytes;
  std::optional<std::int64_t> num_gpu_blocks_override;
  std::optional<std::int64_t> max_num_seqs;
  std::optional<std::int64_t> max_num_batched_tokens;
  std::optional<std::string> model;
  std::optional<std::string> quantization;
  std::optional<std::string> dtype;
  std::vector<std::pair<std::string, std::string>> raw;  ///< every key -> value text, in order
};

/// Everything recognised in one boot log. Fields are unset when the line never appeared.
struct BootLog {
  /// vLLM version, first seen of: `vLLM API server version X`, `vLLM version X`, `vLLM version: X`, the
  /// banner `... version X` (ASCII-art lines with U+2588), `Initializing a V1 LLM engine (vX)` /
  /// `Initializing an LLM engine (vX)`. A different later version adds a warning.
  std::optional<std::string> version;
  bool api_server_started = false;  ///< a `Starting vLLM API server ...` line was seen

  /// Per-process figures, in order of first appearance (see WorkerLog).
  std::vector<WorkerLog> workers;
  /// The worker with this key (e.g. "Worker_PP1_TP0", "VllmWorker rank=2", "EngineCore_DP0", "" = no
  /// prefix), or nullptr.
  const WorkerLog* FindWorker(std::string_view key) const;

  /// §2 "Block size": `Setting kv cache block size to N for X backend.` (since 2026-03-09) or
  /// `Forcing kv cache block size to N for X backend.` (before). Last seen wins (a change adds a warning).
  std::optional<int> block_size;
  std::optional<std::string> block_size_backend;  ///< X, e.g. "FlashMLA", "FLASHMLA_SPARSE"
  /// §2 "PP split": `Hidden layers were unevenly partitioned: [a,b,...]` (one line, since 2025-04-08) or
  /// `Hidden layers were unevenly partitioned: a,b,...` followed by a second line (before).
  std::vector<int> partition;
  /// §2 "Capacity": every `GPU KV cache size: N tokens` value in order (both the two-line format and the
  /// one-line format since 2026-08-04). Up to v0.11.0 EngineCore may print one per worker (§1.12): the real
  /// pool is the minimum.
  std::vector<std::int64_t> kv_tokens;
  std::vector<std::string> kv_tokens_process;   ///< parallel to kv_tokens: the printing process key (DP>1: per engine)
  std::vector<MaxConcurrency> max_concurrency;  ///< every `Maximum concurrency ...` in order
  /// §2 "DCP multiplier" (<= 2026-04-27): `Multiplying the GPU KV cache size by the dcp_world_size N.` or
  /// `... by the cp_world_size N (pcp_world_size a * dcp_world_size b).` -> N.
  std::optional<int> kv_tokens_cp_multiplier;
  /// V0: `# GPU blocks: N, # CPU blocks: M` (also `GPU blocks: N`, `# cuda blocks: N`, `# neuron blocks: N`).
  std::optional<std::int64_t> num_gpu_blocks;
  std::optional<std::int64_t> num_cpu_blocks;
  /// §1.8 / §2 "Override": `Overriding num_gpu_blocks=A with num_gpu_blocks_override=B`: A computed, B final.
  std::optional<std::int64_t> num_gpu_blocks_computed;
  std::optional<std::int64_t> num_gpu_blocks_override;
  /// §2 "kv dtype": `Using X data type to store kv cache.` -> X (e.g. "fp8").
  std::optional<std::string> kv_cache_dtype_logged;
  /// §2 "DSA cache dtype": "fp8_ds_mla" (`Using custom fp8 kv-cache format for DeepSeekV3.2`, `Using
  /// DeepSeek's fp8_ds_mla KV cache format`), "fp8" (`Using standard fp8 KV cache format`), "bfloat16"
  /// (`Using bfloat16 kv-cache for DeepSeekV3.2`) or X of `Using X KV cache format for Y backend.`.
  std::optional<std::string> dsa_kv_cache_format;
  std::optional<NotEnoughKvError> not_enough_kv;                        ///< last occurrence
  std::optional<MaxSeqLenError> max_seq_len_error;                      ///< V0, last occurrence
  std::optional<InsufficientFreeMemoryError> insufficient_free_memory;  ///< last occurrence
  bool no_available_memory = false;  ///< `No available memory for the cache blocks` was seen
  /// §2 "Init total": `init engine (profile, create kv cache, warmup model) took X seconds|s
  /// [(compilation: Y s)]`. Last seen.
  std::optional<double> init_engine_s;
  std::optional<double> init_engine_compilation_s;
  std::optional<LaunchArgs> launch_args;    ///< from `non-default args: {...}` (last occurrence)
  std::optional<LaunchArgs> engine_config;  ///< from `Initializing ... LLM engine (vX) with config: ...` (last)
  /// Number of `non-default args` lines (one per API-server start). A log holding several boots gives > 1 and
  /// a warning: single values are then the last boot's, lists hold every boot's values.
  std::int64_t boots = 0;

  std::int64_t lines = 0;             ///< lines in the input
  std::int64_t recognized_lines = 0;  ///< lines that matched a known kind (parsed or not)
  /// Human-readable problems: "line N: truncated <kind>: '<snippet>'", "line N: malformed number in
  /// <kind>: ...", binary data, conflicting values. Never fatal.
  std::vector<std::string> warnings;
};

/// At most this many warnings are kept; then one "... N more warnings" entry is appended.
inline constexpr std::size_t kMaxLogWarnings = 200;

/// Parses a vLLM start-up log (any version, any mix of processes, possibly coloured, truncated or
/// corrupt). Never throws (std::bad_alloc aside) and keeps no reference to `text`.
BootLog ParseBootLog(std::string_view text);

}  // namespace ppdeploy
