// Reader of vLLM start-up ("boot") logs of every version, V0 (<= v0.10) to N (2026-08).
//
// Pure: the input is the log text, nothing is read, printed or thrown. Used by `ppdeploy calibrate` and
// `ppdeploy wait` to recover the measured figures (weights, KV budget, CUDA graphs, KV tokens) of a real boot.
//
// Three layers:
//  1. log_records.h splits the bytes into records the way vLLM's logging wrote them (CR, LF, CRLF,
//     NewLineFormatter continuations, ANSI colour, NUL runs, records interleaved mid-line by two processes) and
//     keys each record by its process prefix (`(Worker_PP1_TP3 pid=..)`, `(EngineCore_DP0 pid=..)`,
//     `(RayWorkerWrapper pid=.., ip=..)`, `(VllmWorker rank=2 pid=..)`, none = the driver / a snippet).
//  2. log_kinds.h: a table of record kinds, each a small matcher over one message line (its fixed text, the
//     boot role it plays, its parser).
//  3. This file: boots. A log may hold several boots (a restart appends to the same file); every figure below
//     is the chosen boot's: by default the last complete one (LogParseOptions::boot picks another), and
//     BootLog::boot_list says what every boot did, including a failed boot's error and traceback cause.
//
// Source of every line format: docs/vllm-rules.md §2 ("Log lines: format strings and
// suggested regexes"), §1.12 (capacity lines, which process prints what), §1.7/§1.8 (memory profiling,
// overrides) and docs/memory-overheads.md §1 (what the memory columns mean in each era); the vLLM 0.19 formats from
// the llm-d-planner boot logs in tests/data/llmd-v0.19. Each field below names the line it comes from; "§2
// <row>" is the row of the table in docs/vllm-rules.md §2.
//
// Robustness: ParseBootLog never throws and never crashes on any byte sequence (fuzzed by
// fuzz/log_parser_fuzz.cc and fuzz/log_records_fuzz.cc). A known line that cannot be fully parsed leaves its
// fields unset and adds a warning naming the file and line (at most kMaxLogWarnings, then one summary entry);
// non-printable bytes in messages are escaped (`\x00`, `U+200B`).
// Performance: linear in the input; ~100 MB in well under 2 s (bench/log_parser_bench.cc).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ppdeploy {

/// A vLLM process as named by its log prefix (docs/vllm-rules.md §2 "Process prefix" / "Names").
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

/// A process's place in the parallel layout as it logged it itself (by pid; a worker is first named `Worker`,
/// then `Worker_TP0`), from either line of `distributed/parallel_state.py`:
///  - `rank R in world size W is assigned as DP rank d, PP rank p, [PCP rank c, ]TP rank t, EP rank e|N/A[, EPLB
///    rank ...]` (since ~v0.8; printed by every worker, V0 Ray workers and the V0 driver included);
///  - `world_size=W rank=R local_rank=L distributed_init_method=... backend=...` (INFO since v0.11, DEBUG before).
/// "N/A" parts stay unset.
struct RankAssignment {
  std::optional<int> rank, world_size, local_rank;
  std::optional<int> dp, pp, pcp, tp, dcp, ep;
};

/// V0 engine memory profile (<= v0.10, INFO), two formats (docs/vllm-rules.md §2 "Memory profile detail"):
///  - the block `Memory profiling takes %.2f seconds` / `the current vLLM instance can use total_gpu_memory
///    (%.2fGiB) x gpu_memory_utilization (%.2f) = %.2fGiB` / `model weights take %.2fGiB; non_torch_memory
///    takes %.2fGiB; PyTorch activation peak memory takes %.2fGiB; the rest of the memory reserved for KV
///    Cache is %.2fGiB.` (three lines; the continuation lines usually have no prefix);
///  - the older one-liner `Memory profiling results: total_gpu_memory=23.58GiB initial_memory_usage=15.34GiB
///    peak_torch_memory=17.06GiB memory_usage_post_profile=15.35GiB non_torch_memory=0.35GiB
///    kv_cache_size=3.81GiB gpu_memory_utilization=0.90` (the boot-log examples (docs/sources.md §3) DEV-GQA-02).
/// All sizes GiB as printed (2 decimals). Meaning of the columns by era: docs/memory-overheads.md §1.
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

/// V1 memory profiling result (`MemoryProfilingResult.__repr__`, DEBUG only in V1; docs/vllm-rules.md §2 "Memory
/// profile detail"): `Memory profiling takes %.2f seconds. Total non KV cache memory: XGiB; torch peak memory increase:
/// XGiB; [non-torch forward increase memory: XGiB | total consumed (from mem_get_info): XGiB]; weights memory: XGiB.`
/// (the third field changed in July 2026). GiB as printed (format_gib).
struct V1MemoryProfile {
  std::optional<double> profile_s;
  std::optional<double> non_kv_gib;               ///< "Total non KV cache memory"
  std::optional<double> torch_peak_increase_gib;  ///< "torch peak memory increase"
  std::optional<double> non_torch_increase_gib;   ///< "non-torch forward increase memory" (up to July 2026)
  std::optional<double> total_consumed_gib;       ///< "total consumed (from mem_get_info)" (since July 2026)
  std::optional<double> weights_gib;              ///< "weights memory"
};

/// The one-line memory summary of newer versions (`gpu_worker.py`, N era, docs/memory-overheads.md §1 row "N"):
/// `Free memory on device (F/T GiB) on startup. Desired GPU memory utilization is (U, R GiB). Actual usage is
/// C GiB for consumed memory (weights + non-torch), A GiB for peak activation, and G GiB for CUDAGraph memory.
/// [Replace gpu_memory_utilization config with `--kv-cache-memory=B1` (x GiB) to fit into requested memory,
/// or `--kv-cache-memory=B2` (y GiB) to fully utilize gpu memory.] Current kv cache memory in use is K GiB.`
/// N-era semantics: "peak activation" includes the CUDA-graph estimate; "CUDAGraph memory" is the actual pool.
struct MemoryUsageSummary {
  std::optional<double> free_at_startup_gib;     ///< F
  std::optional<double> total_gib;               ///< T (torch/vLLM total, docs/memory-overheads.md §2)
  std::optional<double> gpu_memory_utilization;  ///< U
  std::optional<double> requested_gib;           ///< R = ceil(T x U)
  std::optional<double> consumed_gib;            ///< C: weights + non-torch (+ persistent buffers)
  /// vLLM 0.19 prints the parts instead of C: `Actual usage is W GiB for weight, A GiB for peak activation, N GiB
  /// for non-torch memory, and G GiB for CUDAGraph memory.` (tests/data/llmd-v0.19).
  std::optional<double> weights_gib;                       ///< W
  std::optional<double> non_torch_gib;                     ///< N
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
  /// docs/vllm-rules.md §2 "Model weights": `Model loading took X GB|GiB [memory] and S seconds` (v0.8.0 printed "GB"
  /// but the value was already bytes/2^30), and the V0 form `Loading model weights took X GB`.
  std::optional<double> model_loading_gib;
  std::optional<double> model_loading_s;
  /// docs/vllm-rules.md §2 "KV budget": `Available KV cache memory: X GiB` (v0.9.1+; may be negative).
  std::optional<double> available_kv_gib;
  /// docs/vllm-rules.md §2 "CG estimate" (since 2026-03-07): `Estimated CUDA graph memory: X GiB total`.
  std::optional<double> cuda_graph_estimate_gib;
  /// docs/vllm-rules.md §2 "CG actual vs estimate": `CUDA graph pool memory: X GiB (actual), Y GiB (estimated), ...`.
  std::optional<double> cuda_graph_actual_gib;
  std::optional<double> cuda_graph_pool_estimated_gib;  ///< the Y of that line
  /// docs/vllm-rules.md §2 "Graph capture": `Graph capturing finished in N secs, took X GiB` (v0.8 -> N).
  std::optional<double> graph_capture_gib;
  std::optional<double> graph_capture_s;
  /// docs/vllm-rules.md §2 "kv-cache-memory override": `Initial free memory X GiB, reserved Y GiB memory for KV Cache
  /// as specified by kv_cache_memory_bytes config ...` (v0.11: `reserved Y.YYGiB`). Y rounded to 0.01 GiB; the exact
  /// bytes are in LaunchArgs::kv_cache_memory_bytes when the log echoes the launch args.
  std::optional<double> kv_cache_memory_override_gib;
  std::optional<double> initial_free_gib;  ///< the X of that line
  /// docs/vllm-rules.md §2 "CG util hint": `The current --gpu-memory-utilization=A is equivalent to
  /// --gpu-memory-utilization=B without CUDA graph memory profiling.`
  std::optional<double> cg_hint_current_util;     ///< A
  std::optional<double> cg_hint_equivalent_util;  ///< B
  std::optional<V0MemoryProfile> v0_profile;
  std::optional<V1MemoryProfile> v1_profile;
  std::optional<MemoryUsageSummary> usage_summary;
  /// The process's own rank line (see RankAssignment), matched by pid across renames.
  std::optional<RankAssignment> ranks;
};

/// One `Maximum concurrency for T tokens per request: X.XXx` (docs/vllm-rules.md §2 "Capacity", §1.12).
struct MaxConcurrency {
  std::int64_t tokens_per_request = 0;  ///< T (thousands separators removed)
  double x = 0.0;                       ///< X
  std::string process;                  ///< key of the printing process ("" = no prefix), e.g. "EngineCore_DP1"
};

/// The not-enough-KV error (docs/vllm-rules.md §2 "Not-enough-KV error", `_check_enough_kv_cache_memory`):
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
/// (`request_memory`, docs/vllm-rules.md §1.7).
struct InsufficientFreeMemoryError {
  std::string device;                            ///< "cuda:1" in v0.19's `Free memory on device cuda:1 (F/T GiB)`
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

/// What a boot came to.
enum class BootStatus {
  kIncomplete,  ///< no pool figure and no error: the log stops before the KV cache was allocated
  kComplete,    ///< the KV pool was logged (`GPU KV cache size`, `# GPU blocks`) and no error stopped the boot
  kFailed,      ///< an ERROR record, a traceback, an exception line or a known fatal line before the server was ready
};
std::string_view ToString(BootStatus s);

/// Why a boot failed. `line` is where the failure shows first (the first ERROR record or traceback of the
/// boot), `cause` the root cause: the first exception line (`ValueError: To serve at least one request ...`;
/// the innermost raise is printed first) or known fatal line.
struct BootFailure {
  std::int64_t line = 0;
  std::string process;  ///< key of the process that printed it
  std::string message;  ///< the first line of the failure, escaped
  std::int64_t cause_line = 0;
  std::string cause;  ///< escaped; "" when no exception line was seen
};

/// One boot of a log: lines [first_line, last_line]. A boot starts at an API-server version line or banner or a
/// `non-default args` line when the boot before already printed `non-default args` or got past them (printed
/// any figure, error or ready line), at an engine config line when the same process already printed one in
/// the boot before, or where a ranked process name (`Worker_TP0`, `VllmWorker rank=2`, `EngineCore_DP0`)
/// reappears with a different pid.
struct BootSummary {
  int index = 0;  ///< 1-based
  std::int64_t first_line = 0, last_line = 0;
  BootStatus status = BootStatus::kIncomplete;
  bool ready = false;  ///< `Starting vLLM API server`, `Application startup complete` or `init engine ... took`
  std::optional<std::string> version;
  std::vector<int> partition;
  std::optional<std::int64_t> kv_tokens;  ///< min of its `GPU KV cache size` lines
  std::optional<std::int64_t> num_gpu_blocks;
  std::optional<BootFailure> failure;
};

/// How to read a log.
struct LogParseOptions {
  std::string source;  ///< the file name, for messages ("boot.log:12: ..."); "" = "line 12: ..."
  int boot = 0;        ///< 1-based boot to use; 0 = the last complete boot (else the last boot)
};

/// Everything recognised in the chosen boot of a log. Fields are unset when the line never appeared in it.
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

  /// docs/vllm-rules.md §2 "Block size": `Setting kv cache block size to N for X backend.` (since 2026-03-09) or
  /// `Forcing kv cache block size to N for X backend.` (before). Last seen wins (a change adds a warning).
  std::optional<int> block_size;
  std::optional<std::string> block_size_backend;  ///< X, e.g. "FlashMLA", "FLASHMLA_SPARSE"
  /// docs/vllm-rules.md §2 "PP split": `Hidden layers were unevenly partitioned: [a,b,...]` (one line, since
  /// 2025-04-08) or `Hidden layers were unevenly partitioned: a,b,...` followed by a second line (before).
  std::vector<int> partition;
  /// docs/vllm-rules.md §2 "Capacity": every `GPU KV cache size: N tokens` value in order (both the two-line format and
  /// the one-line format since 2026-08-04). Up to v0.11.0 EngineCore may print one per worker (§1.12): the real pool is
  /// the minimum.
  std::vector<std::int64_t> kv_tokens;
  std::vector<std::string> kv_tokens_process;   ///< parallel to kv_tokens: the printing process key (DP>1: per engine)
  std::vector<MaxConcurrency> max_concurrency;  ///< every `Maximum concurrency ...` in order
  /// docs/vllm-rules.md §2 "DCP multiplier" (<= 2026-04-27): `Multiplying the GPU KV cache size by the dcp_world_size
  /// N.` or
  /// `... by the cp_world_size N (pcp_world_size a * dcp_world_size b).` -> N.
  std::optional<int> kv_tokens_cp_multiplier;
  /// V0: `# GPU blocks: N, # CPU blocks: M` (also `GPU blocks: N`, `# cuda blocks: N`, `# neuron blocks: N`).
  std::optional<std::int64_t> num_gpu_blocks;
  std::optional<std::int64_t> num_cpu_blocks;
  /// docs/vllm-rules.md §1.8 / §2 "Override": `Overriding num_gpu_blocks=A with num_gpu_blocks_override=B`: A computed,
  /// B final.
  std::optional<std::int64_t> num_gpu_blocks_computed;
  std::optional<std::int64_t> num_gpu_blocks_override;
  /// docs/vllm-rules.md §2 "kv dtype": `Using X data type to store kv cache.` -> X (e.g. "fp8").
  std::optional<std::string> kv_cache_dtype_logged;
  /// docs/vllm-rules.md §2 "DSA cache dtype": "fp8_ds_mla" (`Using custom fp8 kv-cache format for DeepSeekV3.2`, `Using
  /// DeepSeek's fp8_ds_mla KV cache format`), "fp8" (`Using standard fp8 KV cache format`), "bfloat16"
  /// (`Using bfloat16 kv-cache for DeepSeekV3.2`) or X of `Using X KV cache format for Y backend.`.
  std::optional<std::string> dsa_kv_cache_format;
  std::optional<NotEnoughKvError> not_enough_kv;                        ///< last occurrence
  std::optional<MaxSeqLenError> max_seq_len_error;                      ///< V0, last occurrence
  std::optional<InsufficientFreeMemoryError> insufficient_free_memory;  ///< last occurrence
  bool no_available_memory = false;  ///< `No available memory for the cache blocks` was seen
  /// docs/vllm-rules.md §2 "Init total": `init engine (profile, create kv cache, warmup model) took X seconds|s
  /// [(compilation: Y s)]`. Last seen.
  std::optional<double> init_engine_s;
  std::optional<double> init_engine_compilation_s;
  std::optional<LaunchArgs> launch_args;    ///< from `non-default args: {...}` (last occurrence)
  std::optional<LaunchArgs> engine_config;  ///< from `Initializing ... LLM engine (vX) with config: ...` (last)
  /// Number of boots in the log (boot_list.size()); > 1 adds a warning naming the boot used.
  std::int64_t boots = 0;

  // ---- boots (see BootSummary) ----
  std::string source;                  ///< LogParseOptions::source
  std::vector<BootSummary> boot_list;  ///< every boot, in order
  /// The boot these figures are from (1-based), 0 when there is none (empty input, or LogParseOptions::boot
  /// out of range: then every figure is unset and `boot_error` says why).
  int boot = 0;
  bool boot_requested = false;                  ///< chosen by LogParseOptions::boot, not by default
  std::string boot_error;                       ///< "boot.log: --boot 3: the log holds 2 boots", else ""
  BootStatus status = BootStatus::kIncomplete;  ///< the chosen boot's
  std::optional<BootFailure> failure;           ///< the chosen boot's
  /// "boot.log:12" or "line 12" (no source).
  std::string Where(std::int64_t line) const;
  /// "boot.log:10-240" (the chosen boot's lines) or "boot.log" / "the log".
  std::string WhereBoot() const;
  /// One line: "boot 2 of 3 (boot.log:120-340, complete, the last complete one); boot 3 (lines 341-400)
  /// failed at line 390: ValueError: ..." (the other boots only when they failed or are later).
  std::string DescribeBoot() const;

  std::int64_t lines = 0;             ///< lines in the input
  /// Message lines that matched a known kind (parsed or not), every boot. A physical line that two processes
  /// shared, or that CRs cut, can hold several.
  std::int64_t recognized_lines = 0;
  /// Human-readable problems: "<file>:N: truncated <kind>: '<snippet>'" ("line N:" without a source),
  /// malformed numbers, binary data, interleaved records, conflicting values. Never fatal. Only the chosen
  /// boot's, plus those about the whole file.
  std::vector<std::string> warnings;
};

/// At most this many warnings are kept; then one "... N more warnings" entry is appended.
inline constexpr std::size_t kMaxLogWarnings = 200;

/// Parses a vLLM start-up log (any version, any mix of processes, possibly coloured, truncated or
/// corrupt). Never throws (std::bad_alloc aside) and keeps no reference to `text`.
BootLog ParseBootLog(std::string_view text);
BootLog ParseBootLog(std::string_view text, const LogParseOptions& options);

}  // namespace ppdeploy
