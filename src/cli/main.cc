// ppdeploy: plan, launch and verify vLLM deployments of large MLA/DSA MoE models.
// Only this file prints errors and chooses the exit code.
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <iostream>

#include "cli/command.h"
#include "cli/parse_errors.h"
#include "core/error.h"
#include "io/output_file.h"

namespace {

/// std::cout through a CheckedFdBuffer for the whole run, restored before exit.
class CheckedStdout {
 public:
  CheckedStdout() : previous_(std::cout.rdbuf(&buffer_)) {}
  ~CheckedStdout() { std::cout.rdbuf(previous_); }
  /// The exit code once stdout is flushed: a failed write (a full disk, /dev/full) is an error
  /// (exit 1, saying how much was written); EPIPE (the reader left, `| head`) ends quietly.
  int Finish(int rc) {
    std::cout.flush();
    const int err = buffer_.error();
    if (err == 0 || err == EPIPE) return rc;
    std::cerr << "ppdeploy: error: stdout: cannot write: " << std::strerror(err) << " (" << buffer_.bytes_written()
              << " bytes were written)\n";
    return static_cast<int>(ppdeploy::ExitCode::kError);
  }

 private:
  ppdeploy::CheckedFdBuffer buffer_{STDOUT_FILENO};
  std::streambuf* previous_;
};

}  // namespace

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
  // Before the subcommands are declared: they copy it. A value CLI11 echoes is capped like ours.
  app.failure_message(
      [](const CLI::App* a, const CLI::Error& e) { return cli::CapLongNumbers(CLI::FailureMessage::simple(a, e)); });
  auto commands = cli::DeclareCommands(app);
  // A write past `ulimit -f` fails with EFBIG (and is reported) instead of killing the process.
  std::signal(SIGXFSZ, SIG_IGN);
  CheckedStdout checked;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);  // prints help (rc 0) or the parse error with usage
    if (rc != 0) {
      const std::string hint = cli::DidYouMean(app, std::vector<std::string>(argv + 1, argv + argc));
      if (!hint.empty()) std::cerr << "ppdeploy: " << hint << "\n";
    }
    return checked.Finish(rc == 0 ? 0 : static_cast<int>(ExitCode::kError));
  }
  cli::CommandIo io{std::cout, std::cerr, isatty(STDOUT_FILENO) != 0, isatty(STDERR_FILENO) != 0};
  for (auto& [sub, run] : commands) {
    if (!sub->parsed()) continue;
    try {
      return checked.Finish(static_cast<int>(run(io)));
    } catch (const std::exception& e) {
      std::cout.flush();
      std::cerr << "ppdeploy: error: " << cli::CapLongNumbers(e.what()) << "\n";
      return checked.Finish(static_cast<int>(ExitCode::kError));
    }
  }
  return checked.Finish(static_cast<int>(ExitCode::kError));
}
