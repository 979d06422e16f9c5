// `ppdeploy defaultcheck` (seed digest §8): the generated argv (order included) and every
// injected environment variable of the default deployment against the expected defaults
// committed in data/launch/expected-default.json.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "launch/render.h"

namespace ppdeploy::launch {

struct ExpectedDefault {
  std::vector<std::string> argv;
  std::vector<EnvVar> env;  ///< injected variables, in injection order
};

/// Parses schema "ppdeploy.expected-default/1": {"argv": [..], "env": {"NAME": "VALUE", ...}}
/// (env compared as a set). Throws Error naming `source` and the field.
ExpectedDefault ParseExpectedDefault(std::string_view json_text, const std::string& source);

/// The expected-default document for a rendered launch (to regenerate the committed file).
std::string ExpectedDefaultJson(const RenderedLaunch& rendered);

struct DriftReport {
  bool drift = false;
  std::vector<std::string> lines;  ///< a diff: "- expected" / "+ actual" lines with argv positions
};

/// Compares the single-node step's argv (an LCS diff, so an insertion shows as one line) and
/// the injected environment (missing, extra or changed values).
DriftReport CompareToExpected(const RenderedLaunch& rendered, const ExpectedDefault& expected);

}  // namespace ppdeploy::launch
