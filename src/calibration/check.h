// The calibration checked against the planner (`ppdeploy calibrate`): the log's own layout planned with
// the calibration must reproduce the logged pool within the print rounding, and a not-enough-KV refusal
// must be reproduced (the stated need and vLLM's estimated maximum model length). Pure: no I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "calibration/log_facts.h"
#include "layout/planner.h"

namespace ppdeploy {

/// The planner's prediction of the log's own pool against the logged one.
struct CalibrationCheck {
  std::int64_t predicted_kv_tokens = 0;
  std::int64_t predicted_blocks = 0;
  std::int64_t blocks_lo = 0, blocks_hi = 0;  ///< what the two-decimal rounding of the inputs allows
  std::optional<std::int64_t> logged_kv_tokens;
  std::optional<std::int64_t> logged_blocks;
  /// The planner's prediction and the logged pool both lie in [blocks_lo, blocks_hi] (the calibration
  /// reproduces the logged pool within the print rounding). Each half is kept for the message.
  bool within_rounding = false;
  bool predicted_within = false;         ///< predicted_blocks in [blocks_lo, blocks_hi]
  bool logged_within = false;            ///< the logged pool (or one of its candidate block counts) in the interval
  std::int64_t estimated_kv_tokens = 0;  ///< the same layout with estimates instead (for comparison)
  std::vector<std::int64_t> bytes_per_token;        ///< per PP rank
  std::vector<std::int64_t> planned_weights_bytes;  ///< per PP rank: the planner's weights of the stage
  /// With a not-enough-KV refusal: the planner's need for one max_model_len request on the stage it was
  /// attributed to, and the longest max_model_len that fits (vLLM's estimate) over the rounding of the
  /// stated available memory; `refusal_reproduced` when the need prints as vLLM's and its estimate lies in
  /// [max_model_len_lo, max_model_len_hi] (or both say none).
  std::int64_t refusal_needed_bytes = 0;
  std::int64_t max_model_len_lo = 0, max_model_len_hi = 0;
  bool refusal_reproduced = false;
};

/// Plans the log's layout with the calibration and compares with the logged pool.
CalibrationCheck CheckCalibration(const LogCalibration& c, const Deployment& d);

}  // namespace ppdeploy
