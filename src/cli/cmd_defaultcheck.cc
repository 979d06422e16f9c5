// ppdeploy defaultcheck: the generated argv (order included) and every injected environment
// variable against data/launch/expected-default.json (seed deploy.sh `defaultcheck`, digest §8).
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

RunFunction AddDefaultcheckCommand(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "defaultcheck", "Compare the generated argv and injected env with the committed expected defaults (drift: exit 2)");
  auto opts = std::make_shared<DefaultcheckOptions>();
  AddLaunchOptions(sub, opts->launch);
  sub->add_option("--expected", opts->expected_path,
                  "expected-default JSON (default: built-in data/launch/expected-default.json)");
  sub->add_option("--write-expected", opts->write_expected,
                  "write the current argv and env as an expected-default JSON file, then compare");
  sub->footer(
      "Settings from flags, environment and profile file apply, so a changed default or an override shows as drift.\n"
      "Exit codes: 0 no drift; 2 drift (a diff is printed) or a gate refuses the default; 1 error.\n"
      "Examples:\n"
      "  ppdeploy defaultcheck\n"
      "  PP_LAYER_PARTITION=39,39 ppdeploy defaultcheck   # exit 2\n"
      "  ppdeploy defaultcheck --defaults my-defaults.toml");
  return [opts](CommandIo& io) {
    auto prepared = PrepareFromCli(opts->launch);
    if (!opts->write_expected.empty()) {
      WriteFileText(opts->write_expected, launch::ExpectedDefaultJson(prepared.rendered));
      fmt::print(io.out, "wrote {}\n", opts->write_expected);
    }
    std::string text, source;
    if (!opts->expected_path.empty()) {
      text = ReadFileText(opts->expected_path);
      source = opts->expected_path;
    } else {
      auto e = FindEmbedded("launch/expected-default.json");
      if (!e) Fail("data/launch/expected-default.json is not embedded in this binary");
      text = std::string(*e);
      source = "built-in data/launch/expected-default.json";
    }
    auto expected = launch::ParseExpectedDefault(text, source);
    auto drift = launch::CompareToExpected(prepared.rendered, expected);
    const bool refused = prepared.gates.Refused();
    if (!drift.drift && !refused) {
      fmt::print(io.out, "defaultcheck: OK: {} argv elements (order included) and {} injected env vars match {}\n",
                 expected.argv.size(), expected.env.size(), source);
      return 0;
    }
    if (drift.drift) {
      fmt::print(io.out, "defaultcheck: DRIFT against {} (- expected, + generated):\n", source);
      for (const auto& l : drift.lines) fmt::print(io.out, "  {}\n", l);
      bool any = false;
      for (const auto& s : prepared.settings) {
        if (s.source == launch::SettingSource::kDefault) continue;
        if (!any) fmt::print(io.out, "settings not from the defaults:\n");
        any = true;
        fmt::print(io.out, "  {}={} ({})\n", s.key, launch::ShellQuote(s.value), s.origin);
      }
    }
    if (refused) {
      fmt::print(io.out, "defaultcheck: the gates refuse this deployment:\n");
      PrintGates(io.out, prepared.gates);
    }
    return 2;
  };
}

}  // namespace

PPDEPLOY_COMMAND(41, AddDefaultcheckCommand);

}  // namespace ppdeploy::cli
