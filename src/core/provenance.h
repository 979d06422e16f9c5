// Where a figure in a plan comes from. Every memory figure the planner prints carries one.
#pragma once

#include <string>

namespace ppdeploy {

enum class Provenance {
  kMeasured,    ///< read from a real log or checkpoint headers
  kCalibrated,  ///< derived from a calibration profile (a real boot of this or a nearby layout)
  kEstimated,   ///< a documented estimate (docs/memory-overheads.md §7)
  kRule,        ///< exact vLLM arithmetic
  kGiven,       ///< given by the user (flag or file)
};

inline const char* ToString(Provenance p) {
  switch (p) {
    case Provenance::kMeasured: return "measured";
    case Provenance::kCalibrated: return "calibrated";
    case Provenance::kEstimated: return "estimated";
    case Provenance::kRule: return "rule";
    case Provenance::kGiven: return "given";
  }
  return "estimated";
}

}  // namespace ppdeploy
