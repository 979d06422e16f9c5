// The calibration file (schema ppdeploy.calibration/1): what `ppdeploy calibrate` writes and
// `--calibration FILE` reads, one real boot's per-stage figures (memory/overheads.h Calibration).
// Pure: the caller reads and writes the text.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "memory/overheads.h"

namespace ppdeploy {

/// Parses a calibration JSON document; errors name `source` and the field.
Calibration ParseCalibration(const nlohmann::json& j, const std::string& source);
/// The document ParseCalibration reads back.
nlohmann::json CalibrationToJson(const Calibration& c);

}  // namespace ppdeploy
