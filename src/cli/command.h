// Subcommand registry of the ppdeploy binary.
//
// Each subcommand lives in its own file src/cli/cmd_<name>.cc and registers itself with
// PPDEPLOY_COMMAND(order, AddXxxCommand). AddXxxCommand declares the CLI11 subcommand and its
// options, and returns the function that runs it. The run function writes to the streams in
// CommandIo and returns an exit code; it may throw ppdeploy::Error (main prints it, exit 1).
// Only main() prints errors and chooses the process exit code.
#pragma once

#include <functional>
#include <iosfwd>
#include <memory>
#include <vector>

#include <CLI/CLI.hpp>

namespace ppdeploy::cli {

/// The streams a command writes to, and whether they are terminals (progress only on a TTY).
struct CommandIo {
  std::ostream& out;
  std::ostream& err;
  bool out_is_tty = false;
  bool err_is_tty = false;
};

/// What a subcommand's run function looks like. Returns the exit code (see ExitCode).
using RunFunction = std::function<int(CommandIo&)>;

/// Declares one subcommand on `app`; returns the function main() calls when it was chosen.
/// Options parsed by CLI11 must be stored in state owned by the returned closure.
using AddCommandFunction = RunFunction (*)(CLI::App& app);

struct CommandRegistration {
  int order;  ///< position in --help
  AddCommandFunction add;
};

/// All registered subcommands, sorted by order.
std::vector<CommandRegistration>& CommandRegistry();

struct CommandRegistrar {
  CommandRegistrar(int order, AddCommandFunction add) { CommandRegistry().push_back({order, add}); }
};

}  // namespace ppdeploy::cli

#define PPDEPLOY_CONCAT_INNER(a, b) a##b
#define PPDEPLOY_CONCAT(a, b) PPDEPLOY_CONCAT_INNER(a, b)
/// Registers a subcommand: PPDEPLOY_COMMAND(10, AddPlanCommand);
#define PPDEPLOY_COMMAND(order, fn) \
  static ::ppdeploy::cli::CommandRegistrar PPDEPLOY_CONCAT(ppdeploy_command_, __LINE__)(order, fn)
