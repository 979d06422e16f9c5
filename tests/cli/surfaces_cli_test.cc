// Issue 23 item 9, the surfaces: "did you mean" for a mistyped subcommand or flag (`ppdeploy plna`, `ppdeploy plan
// --tpp 4` answered "A subcommand is required" / "not expected" only; the names come from the registered
// subcommand table), `start --help` on multi-node launches.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <regex>

#include "cli/command.h"
#include "cli/parse_errors.h"
#include "cli_runner.h"

namespace ppdeploy::cli {
namespace {

using ::testing::HasSubstr;

TEST(DidYouMeanTest, EditDistanceCountsAnAdjacentTranspositionAsOne) {
  EXPECT_EQ(EditDistance("plna", "plan"), 1u);
  EXPECT_EQ(EditDistance("tpp", "tp"), 1u);
  EXPECT_EQ(EditDistance("", "stop"), 4u);
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3u);
}

TEST(DidYouMeanTest, ClosestNamePrefersTheLongerCommonPrefixAndRefusesFarNames) {
  EXPECT_EQ(ClosestName("tpp", {"pp", "tp", "gpu"}), "tp");  // "pp" is as close, "tp" shares the prefix
  EXPECT_EQ(ClosestName("xyzzy", {"plan", "cmd"}), "");
  EXPECT_EQ(ClosestName("plan", {"plan", "plna"}), "");  // an existing name needs no suggestion
}

TEST(DidYouMeanTest, SuggestsTheRegisteredSubcommandAndTheSubcommandsOwnOption) {
  CLI::App app{"test", "ppdeploy"};
  DeclareCommands(app);
  EXPECT_EQ(DidYouMean(app, {"plna"}), "unknown command \"plna\": did you mean `plan`?");
  EXPECT_EQ(DidYouMean(app, {"rebalnce", "run", "41,37"}), "unknown command \"rebalnce\": did you mean `rebalance`?");
  EXPECT_EQ(DidYouMean(app, {"plan", "--tpp", "4"}), "unknown option --tpp: did you mean `--tp`?");
  EXPECT_EQ(DidYouMean(app, {"plan", "--formt=json"}), "unknown option --formt: did you mean `--format`?");
  EXPECT_EQ(DidYouMean(app, {"plan", "--tp", "4"}), "");
  EXPECT_EQ(DidYouMean(app, {"cmd", "--", "--enable-prefx-caching"}), "");  // passed through to vllm serve
}

TEST(DidYouMeanTest, TheBinarySaysDidYouMeanAndExitsOne) {
  auto sub = testing::RunPpdeploy("plna");
  EXPECT_EQ(sub.exit_code, 1) << sub.output;
  EXPECT_THAT(sub.output, HasSubstr("ppdeploy: unknown command \"plna\": did you mean `plan`?"));
  auto flag = testing::RunPpdeploy("plan --tpp 4");
  EXPECT_EQ(flag.exit_code, 1) << flag.output;
  EXPECT_THAT(flag.output, HasSubstr("ppdeploy: unknown option --tpp: did you mean `--tp`?"));
}

// Issue 23 item 9: a numeric error printed a 300-digit number. Runs of more than 40 digits are cut to 20.
TEST(SurfacesTest, Issue23ANumericErrorEchoesAtMostTwentyDigitsOfA300DigitNumber) {
  const std::string huge = "1" + std::string(299, '0');
  EXPECT_EQ(CapLongNumbers("got \"" + huge + "\" (300 bytes)"),
            "got \"10000000000000000000... (300 digits)\" (300 bytes)");
  EXPECT_EQ(CapLongNumbers("port 8000, 41,37, 729280"), "port 8000, 41,37, 729280");
  const std::regex forty_digits("[0-9]{41}");
  for (const std::string& args : {"plan --max-model-len " + huge, "verify --url http://127.0.0.1:1 --trials " + huge}) {
    auto r = testing::RunPpdeploy(args);
    EXPECT_EQ(r.exit_code, 1) << args << r.output;
    EXPECT_FALSE(std::regex_search(r.output, forty_digits)) << args << ": " << r.output;
    EXPECT_THAT(r.output, HasSubstr("10000000000000000000... (300")) << args;  // "(300 bytes)" / "(300 digits)"
  }
}

// Issue 23 item 9: `start --help` said multi-node layouts are not started; `start` starts them.
TEST(SurfacesTest, StartHelpSaysMultiNodeLayoutsAreStarted) {
  auto help = testing::RunPpdeploy("start --help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_THAT(help.output, HasSubstr("Multi-node layouts (NODES=head,worker,...) are started over the remote shell"));
  EXPECT_THAT(help.output, ::testing::Not(HasSubstr("are not started")));
}

}  // namespace
}  // namespace ppdeploy::cli
