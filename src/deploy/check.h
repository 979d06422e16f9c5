// The result of one check or decision about a deployment (the launch gates, the resolver's
// decisions): pass, warn (passes, but the operator must read it) or fail (refused). Pure.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ppdeploy {

enum class CheckStatus { kPass, kWarn, kFail };

/// "pass", "warn", "FAIL".
std::string_view CheckStatusName(CheckStatus status);

struct CheckResult {
  std::string name;  ///< e.g. "dsa-pp", "layer-partition", "speculation"
  CheckStatus status = CheckStatus::kPass;
  std::vector<std::string> messages;  ///< lines for the operator (figures included)
  bool Failed() const { return status == CheckStatus::kFail; }
};

}  // namespace ppdeploy
