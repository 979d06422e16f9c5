// The subcommand table of the ppdeploy binary.
//
// Every subcommand is one row of kCommands (src/cli/commands.cc): its name, summary, exit codes,
// examples and the function that declares its options on the CLI11 subcommand and returns the
// function that runs it. Each lives in its own file src/cli/cmd_<name>.cc, whose work is a
// Run<Name>(options) function returning a result that the run function renders to the streams
// main() gives it. Commands never print errors and never exit: they throw ppdeploy::Error
// (main prints "ppdeploy: error: ..." and exits 1) or return an ExitCode.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <iosfwd>
#include <span>
#include <string_view>

#include "core/error.h"

namespace ppdeploy::cli {

/// The streams a command writes to, and whether they are terminals (progress only on a TTY).
struct CommandIo {
  std::ostream& out;
  std::ostream& err;
  bool out_is_tty = false;
  bool err_is_tty = false;
};

/// What a subcommand's run function looks like.
using RunFunction = std::function<ExitCode(CommandIo&)>;

/// One row of the subcommand table.
struct CommandSpec {
  std::string_view name;
  std::string_view summary;     ///< one line for `ppdeploy --help`
  std::string_view exit_codes;  ///< "Exit codes: ..." line of its --help ("" = 0 ok, 1 error)
  std::string_view examples;    ///< example lines of its --help, one per line, without "Examples:"
  /// Declares the subcommand's options on `sub`; returns the function main() calls when it was
  /// chosen. Options must be stored in state owned by the returned closure.
  RunFunction (*declare)(CLI::App* sub);
};

/// Every subcommand, in --help order.
std::span<const CommandSpec> Commands();

/// Adds every row of Commands() to `app` (summary, footer with exit codes and examples) and
/// returns the subcommands with their run functions.
std::vector<std::pair<CLI::App*, RunFunction>> DeclareCommands(CLI::App& app);

}  // namespace ppdeploy::cli
