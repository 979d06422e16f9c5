// What main() adds to a command line CLI11 refused, and how it echoes values.
//
// "Did you mean" for a mistyped subcommand or long option (issue 23 item 9: `ppdeploy plna` and
// `ppdeploy plan --tpp 4` answered only "A subcommand is required" / "not expected").
//
// The candidates are the names registered on the CLI11 app (src/cli/commands.cc): the subcommands, and
// the long options of the app or of the chosen subcommand. The closest name by optimal-string-alignment
// distance (Levenshtein plus adjacent transpositions: "plna" -> "plan" is 1) is suggested when the
// distance is at most a third of the typed name's length (at least 1, at most 3); ties go to the name
// sharing the longer prefix with the typed one ("tpp": "tp" rather than "pp").
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace ppdeploy::cli {

/// Optimal-string-alignment edit distance (insertions, deletions, substitutions, adjacent transpositions).
std::size_t EditDistance(std::string_view a, std::string_view b);

/// The closest of `candidates` to `typed` under the rule above; "" when none is close enough.
std::string ClosestName(std::string_view typed, const std::vector<std::string>& candidates);

/// The hint for a command line CLI11 refused: "did you mean `plan`?" for the first unknown subcommand or
/// long option that has a close registered name, "" when there is none. `args` are argv[1..].
std::string DidYouMean(const CLI::App& app, const std::vector<std::string>& args);

/// `message` with every run of more than 40 digits cut to its first 20 and "... (N digits)" (issue 23 item 9: a
/// numeric error echoed a 300-digit number). main() applies it to every error it prints.
std::string CapLongNumbers(std::string_view message);

}  // namespace ppdeploy::cli
