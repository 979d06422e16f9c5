// Calibration from a real vLLM boot log (issue 3, `ppdeploy calibrate`): the per-rank available
// KV memory (logged, or inferred for the binding rank from the logged pool and the per-rank page
// sizes when only local rank 0 printed it; docs/vllm-rules.md §2 "Which process prints it"), written as
// a Calibration that `plan --calibration FILE` uses for other splits, KV dtypes and lengths.
//
// Every figure the log reader parses is used (issue 12), also from a boot that failed:
//  - vLLM's not-enough-KV refusal states the available KV memory of the worker that raised it: it is
//    that stage's figure (at PP > 1 the stage whose need for one max_model_len request is the stated
//    need; vLLM checks the workers in rank order), and the planner must reproduce the stated need and
//    vLLM's estimated maximum model length;
//  - the V0 refusal "max seq len (L) is larger than the maximum number of tokens that can be stored in
//    KV cache (K)" states the pool (K = num_gpu_blocks x block_size), from which the binding rank is
//    inferred like a logged pool;
//  - a boot that died after loading weights still gives the weights figures (`weights_only`: compared
//    with the planner's weights, but no calibration file, which needs an available-KV figure);
//  - weights + non-torch memory (the V0 profile, the N-era memory summary) is kept per stage;
//  - "Total non KV cache memory" (the V1 DEBUG profile line, before the N era): total x util - non-KV
//    [- the CUDA-graph estimate where the row subtracts it] cross-checks each logged "Available KV cache
//    memory" (listed under `used`, a warning when they differ by more than 0.02 GiB), and is the figure of
//    a stage that printed no available-KV line (instead of inferring it from the pool).
// A failed boot with none of these figures is refused with its error.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "layout/planner.h"
#include "vllm/log_parser.h"

namespace ppdeploy {

/// Where one rank's available KV figure comes from.
struct CalibratedRank {
  int pp_rank = 0;
  double available_kv_gib = 0;
  double uncertainty_gib = 0.005;  ///< printed with two decimals; larger when inferred
  bool inferred = false;
  std::string source;                 ///< e.g. "logged by Worker_PP1_TP0"
  bool from_refusal = false;          ///< the figure is the available memory vLLM's not-enough-KV refusal states
  std::optional<double> weights_gib;  ///< the stage's logged weights ("Model loading took"), the largest rank
};

struct LogCalibration {
  Calibration calibration;
  LayoutSpec layout;
  int block_size = 0;
  std::int64_t max_model_len = 0;
  int decode_context_parallel_size = 1;          ///< the flag's, else the log's launch arguments or DCP multiplier line
  std::optional<std::int64_t> logged_kv_tokens;  ///< the pool as logged (min over lines)
  std::optional<std::int64_t> logged_blocks;     ///< num_gpu_blocks implied by it (the lowest of the span)
  /// The logged pool is any of logged_blocks .. logged_blocks + span - 1 (v0.10+ prints num_blocks // groups x
  /// block_size, so a hybrid model's tokens leave `groups` block counts possible).
  int logged_blocks_span = 1;
  std::vector<CalibratedRank> ranks;
  std::vector<std::string> warnings;
  /// Which figures were used, one line each ("available KV, PP rank 0: ...", "pool: ...", "refusal: ...").
  std::vector<std::string> used;
  /// The chosen boot failed: where and why (escaped); its figures before the failure are still used.
  std::string failure;
  /// The boot has weights figures only (no available KV, pool or refusal): `calibration` has no usable
  /// available-KV figure and must not be written or planned with.
  bool weights_only = false;
  /// PP ranks without any KV figure because vLLM stopped at another stage's refusal; `calibration` then
  /// lacks them and must not be written.
  std::vector<int> missing_ranks;
  /// Whether `calibration` can be written and planned with (every stage has an available-KV figure).
  bool writable() const { return !weights_only && missing_ranks.empty(); }
  std::optional<NotEnoughKvError> refusal;  ///< vLLM's not-enough-KV refusal, when the boot printed one
  int refusal_pp_rank = -1;                 ///< the stage it was attributed to (-1: none)
};

/// Whether a boot carries a figure calibrate can use (available KV, a pool, a refusal that states memory or
/// tokens, weights).
bool HasCalibrationFigures(const BootLog& log);

/// Builds a calibration for deployment `d` (model, GPU, vLLM profile) from the chosen boot of a parsed log
/// (BootLog::boot: the last complete one unless LogParseOptions::boot picked another). Launch facts come from
/// the log's "non-default args" when present, else from `layout_hint` / `d`. Each PP stage keeps the smallest
/// available KV memory over its TP ranks (vLLM sizes the stage's pool from it). Workers are placed on PP ranks
/// by their own rank lines, their names, or (V0 at PP 2) the driver's stage and their weights.
/// Throws Error naming the file and line when the chosen boot failed (its error's root cause), when the
/// requested boot does not exist, and when no rank's available memory can be found or inferred.
LogCalibration CalibrateFromLog(const BootLog& log, const Deployment& d, const LayoutSpec& layout_hint);

/// Throws the Error CalibrateFromLog throws for a boot that cannot be calibrated from (a failed boot without
/// any usable figure, with its file, line and root cause; a requested boot that does not exist); returns
/// otherwise.
void RequireUsableBoot(const BootLog& log);

}  // namespace ppdeploy
