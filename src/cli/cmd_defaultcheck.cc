// ppdeploy defaultcheck: the generated argv (order included) and every injected environment
// variable against data/launch/expected-default.json (seed deploy.sh `defaultcheck`, docs/seed.md §8).
#include <fmt/format.h>
#include <fmt/ostream.h>

#include "cli/command.h"
#include "cli/launch_options.h"
#include "core/embedded_data.h"
#include "core/error.h"
#include "io/files.h"
#include "launch/defaultcheck.h"

namespace ppdeploy::cli {
namespace {

struct DefaultcheckOptions {
  LaunchOptions launch;
  std::string expected_path;
  std::string write_expected;
};

ExitCode RunDefaultcheck(const DefaultcheckOptions& o, CommandIo& io) {
  auto prepared = PrepareFromCli(o.launch);
  if (!o.write_expected.empty()) {
    WriteFileText(o.write_expected, launch::ExpectedDefaultJson(prepared.rendered));
    fmt::print(io.out, "wrote {}\n", o.write_expected);
  }
  std::string text, source;
  if (!o.expected_path.empty()) {
    text = ReadFileText(o.expected_path);
    source = o.expected_path;
  } else {
    auto e = FindEmbedded("launch/expected-default.json");
    if (!e) Fail("data/launch/expected-default.json is not embedded in this binary");
    text = std::string(*e);
    source = "built-in data/launch/expected-default.json";
  }
  auto expected = launch::ParseExpectedDefault(text, source);
  auto drift = launch::CompareToExpected(prepared.rendered, expected);
  const bool refused = prepared.gates.Refused();
  if (!drift.drift && !refused && !expected.steps.empty()) {
    fmt::print(io.out, "defaultcheck: OK: {} steps match {} (node, role, argv in order, environment):\n",
               expected.steps.size(), source);
    for (const auto& s : expected.steps)
      fmt::print(io.out, "  {} on {}: {} argv elements, {} env vars\n", s.role, s.node, s.argv.size(), s.env.size());
    return ExitCode::kOk;
  }
  if (!drift.drift && !refused) {
    fmt::print(io.out, "defaultcheck: OK: {} argv elements (order included) and {} injected env vars match {}\n",
               expected.argv.size(), expected.env.size(), source);
    return ExitCode::kOk;
  }
  if (drift.drift) {
    fmt::print(io.out, "defaultcheck: DRIFT against {} (- expected, + generated):\n", source);
    for (const auto& l : drift.lines) fmt::print(io.out, "  {}\n", l);
    bool any = false;
    for (const auto& s : prepared.deployment.request.settings) {
      if (s.source == SettingSource::kDefault || s.source == SettingSource::kVllmDefault) continue;
      if (!any) fmt::print(io.out, "settings not from the defaults:\n");
      any = true;
      fmt::print(io.out, "  {}={} ({})\n", s.key, launch::ShellQuote(s.value), s.origin);
    }
  }
  if (refused) {
    fmt::print(io.out, "defaultcheck: the gates refuse this deployment:\n");
    PrintGates(io.out, prepared);
  }
  return ExitCode::kCheckFailed;
}

}  // namespace

RunFunction DeclareDefaultcheck(CLI::App* sub) {
  auto opts = std::make_shared<DefaultcheckOptions>();
  AddLaunchOptions(sub, opts->launch);
  sub->add_option("--expected", opts->expected_path,
                  "expected-default JSON (default: built-in data/launch/expected-default.json)");
  sub->add_option("--write-expected", opts->write_expected,
                  "write the current argv and env as an expected-default JSON file, then compare");
  return [opts](CommandIo& io) { return RunDefaultcheck(*opts, io); };
}

}  // namespace ppdeploy::cli
