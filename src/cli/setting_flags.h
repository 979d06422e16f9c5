// The deployment flags of every front-end (plan, preflight, calibrate, cmd, defaultcheck, start),
// generated from the settings table (deploy/settings_table.cc): one --<setting> flag per row,
// the row's older spellings kept working as aliases (`--tp` for `--tp-size`), --profile and
// --defaults, and the shorthands that set several settings at once. A new setting needs no code
// here.
#pragma once

#include <CLI/CLI.hpp>
#include <map>
#include <set>
#include <string>
#include <string_view>

#include "deploy/settings.h"

namespace ppdeploy::cli {

/// The settings given on a command line.
class SettingFlags {
 public:
  std::string profile_path;   ///< --profile FILE (env PPDEPLOY_PROFILE); default ./ppdeploy.toml if present
  std::string defaults_path;  ///< --defaults FILE replaces the built-in data/deployments/default.toml

  /// Declares on `sub`: --profile (alias --deployment) and --defaults ("Profile" group), one flag
  /// per setting ("Settings" group; a row's aliases are hidden options named in its help line),
  /// and the shorthands --num-speculative-tokens/--mtp K (spec_method mtp with K tokens; 0 = none)
  /// and --no-calibration (calibration ""). The settings in `except` get no flag: the front-end
  /// gives that name another meaning (plan's `--gpus N` is a total).
  void Add(CLI::App* sub, const std::set<std::string>& except = {});

  /// Whether the setting `key` was given on the command line (any spelling) or by Set().
  bool Given(std::string_view key) const;

  /// Sets `key` as if given as `flag` (calibrate takes the model and the version from a log).
  void Set(const std::string& key, std::string value, std::string flag);

  /// The settings given: key -> value and the spelling typed (the setting's origin). Shorthands:
  /// a split typed as --partition also gives pp_size its segment count unless --pp-size/--pp is
  /// given; --mtp sets what --spec-method / --num-spec-tokens do not; --no-calibration wins over
  /// --calibration. Throws Error when two spellings of one setting are both given.
  std::map<std::string, FlagValue> Flags() const;

 private:
  struct Spelling {
    std::string key;
    std::string value;
    CLI::Option* option = nullptr;
  };
  std::map<std::string, Spelling> spellings_;  ///< flag name -> its option (stable addresses for CLI11)
  std::map<std::string, FlagValue> set_;       ///< Set() values
  int num_speculative_tokens_ = -1;
  bool no_calibration_ = false;
  CLI::Option* mtp_option_ = nullptr;

  bool GivenOnCommandLine(std::string_view key) const;
  void ApplyShorthands(std::map<std::string, FlagValue>& f) const;
};

}  // namespace ppdeploy::cli
