// Calibration from a real vLLM boot log (issue 3, `ppdeploy calibrate`): the per-rank available
// KV memory (logged, or inferred for the binding rank from the logged pool and the per-rank page
// sizes when only local rank 0 printed it; vllm-rules.md §2 "Which process prints it"), written as
// a Calibration that `plan --calibration FILE` uses for other splits, KV dtypes and lengths.
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
  std::string source;  ///< e.g. "logged by Worker_PP1_TP0"
};

struct LogCalibration {
  Calibration calibration;
  LayoutSpec layout;
  int block_size = 0;
  std::int64_t max_model_len = 0;
  std::optional<std::int64_t> logged_kv_tokens;  ///< the pool as logged (min over lines)
  std::optional<std::int64_t> logged_blocks;     ///< num_gpu_blocks implied by it
  std::vector<CalibratedRank> ranks;
  std::vector<std::string> warnings;
};

/// Builds a calibration for deployment `d` (model, GPU, vLLM profile) from the chosen boot of a parsed log
/// (BootLog::boot: the last complete one unless LogParseOptions::boot picked another). Launch facts come from
/// the log's "non-default args" when present, else from `layout_hint` / `d`. Each PP stage keeps the smallest
/// available KV memory over its TP ranks (vLLM sizes the stage's pool from it). Workers are placed on PP ranks
/// by their own rank lines, their names, or (V0 at PP 2) the driver's stage and their weights.
/// Throws Error naming the file and line when the chosen boot failed (its error's root cause), when the
/// requested boot does not exist, and when no rank's available memory can be found or inferred.
LogCalibration CalibrateFromLog(const BootLog& log, const Deployment& d, const LayoutSpec& layout_hint);

/// Throws the Error CalibrateFromLog throws for a boot that cannot be calibrated from (a failed boot, with
/// its file, line and root cause; a requested boot that does not exist); returns otherwise.
void RequireUsableBoot(const BootLog& log);

/// The planner's prediction of the log's own pool against the logged one.
struct CalibrationCheck {
  std::int64_t predicted_kv_tokens = 0;
  std::int64_t predicted_blocks = 0;
  std::int64_t blocks_lo = 0, blocks_hi = 0;  ///< what the two-decimal rounding of the inputs allows
  std::optional<std::int64_t> logged_kv_tokens;
  std::optional<std::int64_t> logged_blocks;
  bool within_rounding = false;
  std::int64_t estimated_kv_tokens = 0;       ///< the same layout with estimates instead (for comparison)
  std::vector<std::int64_t> bytes_per_token;  ///< per PP rank
};

/// Plans the log's layout with the calibration and compares with the logged pool.
CalibrationCheck CheckCalibration(const LogCalibration& c, const Deployment& d);

}  // namespace ppdeploy
