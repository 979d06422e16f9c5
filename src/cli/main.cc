// ppdeploy: plan, launch and verify vLLM deployments of large MLA/DSA MoE models.
// Only this file prints errors and chooses the exit code.
#include <unistd.h>

#include <iostream>

#include "cli/command.h"
#include "core/error.h"

int main(int argc, char** argv) {
  using namespace ppdeploy;
  CLI::App app{
      "ppdeploy - plan, launch and verify vLLM deployments of large MLA/DSA mixture-of-experts models.\n"
      "Exit codes: 0 ok; 1 error or refused launch; 2 a check found a problem; 130 interrupted.",
      "ppdeploy"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "ppdeploy 0.1.0");
  app.footer(
      "Examples:\n"
      "  ppdeploy plan                                   # the seed's deployment, every layout, the best split\n"
      "  ppdeploy plan --model deepseek-v3 --gpu h200 --gpus 8 --format json\n"
      "  ppdeploy preflight --partition 41,37            # DSA index-share safety of a split\n"
      "  ppdeploy calibrate --log boot.log --out cal.json\n"
      "  ppdeploy cmd && ppdeploy start && ppdeploy wait # launch with the seed's gates\n"
      "  ppdeploy sim --port 8000 & ppdeploy degen --url http://127.0.0.1:8000\n"
      "Run 'ppdeploy <command> --help' for the options and examples of a command.");
  auto commands = cli::DeclareCommands(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);  // prints help (rc 0) or the parse error with usage
    return rc == 0 ? 0 : static_cast<int>(ExitCode::kError);
  }
  cli::CommandIo io{std::cout, std::cerr, isatty(STDOUT_FILENO) != 0, isatty(STDERR_FILENO) != 0};
  for (auto& [sub, run] : commands) {
    if (!sub->parsed()) continue;
    try {
      ExitCode rc = run(io);
      std::cout.flush();
      return static_cast<int>(rc);
    } catch (const std::exception& e) {
      std::cout.flush();
      std::cerr << "ppdeploy: error: " << e.what() << "\n";
      return static_cast<int>(ExitCode::kError);
    }
  }
  return static_cast<int>(ExitCode::kError);
}
