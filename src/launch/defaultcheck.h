// `ppdeploy defaultcheck` (docs/seed.md §8): the generated argv (order included) and every
// injected environment variable of the default deployment against the expected defaults
// committed in data/launch/expected-default.json; for a multi-node deployment every node's step
// (node, role, argv and environment) against an expectation with one entry per step.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "launch/render.h"

namespace ppdeploy::launch {

/// One node's step of a multi-node expectation.
struct ExpectedStep {
  std::string node, role;
  std::vector<std::string> argv;
  std::vector<EnvVar> env;  ///< the step's environment on its node
};

struct ExpectedDefault {
  std::vector<std::string> argv;
  std::vector<EnvVar> env;               ///< injected variables, in injection order
  std::vector<ExpectedStep> steps = {};  ///< schema /2 (multi-node), in start order; empty for /1
};

/// Parses schema "ppdeploy.expected-default/1": {"argv": [..], "env": {"NAME": "VALUE", ...}}
/// (env compared as a set), or "/2" (multi-node): {"steps": [{"node", "role", "argv", "env"}, ...]}.
/// Throws Error naming `source` and the field.
ExpectedDefault ParseExpectedDefault(std::string_view json_text, const std::string& source);

/// The expected-default document for a rendered launch (to regenerate the committed file): /1 for
/// one node, /2 with every step for a multi-node launch.
std::string ExpectedDefaultJson(const RenderedLaunch& rendered);

struct DriftReport {
  bool drift = false;
  std::vector<std::string> lines;  ///< a diff: "- expected" / "+ actual" lines with argv positions
};

/// Compares the single-node step's argv (an LCS diff, so an insertion shows as one line) and
/// the injected environment (missing, extra or changed values); with a /2 expectation, every
/// step's node, role, argv and environment, each line naming the step.
DriftReport CompareToExpected(const RenderedLaunch& rendered, const ExpectedDefault& expected);

}  // namespace ppdeploy::launch
