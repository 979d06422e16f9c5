// Renders the `vllm serve` command of a resolved, gated deployment: argv and injected
// environment, bare or wrapped in `docker run`, one node or per-node commands (Ray, or vLLM's
// native --nnodes/--node-rank/--master-addr/--headless where the version has them), and a
// POSIX-shell preview in which every argv element stays one word.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "deploy/resolve.h"
#include "launch/gates.h"

namespace ppdeploy::launch {

struct EnvVar {
  std::string name;
  std::string value;
  bool operator==(const EnvVar&) const = default;
};

/// One command to run on one node.
struct RenderedStep {
  std::string node;               ///< "local" for single-node, else a host name
  std::string role;               ///< "serve", "ray-head", "ray-worker", "serve-headless"
  std::vector<std::string> argv;  ///< argv[0] is the executable (looked up in PATH)
  /// Variables the step adds to the environment. Bare: set in the process environment (and as a
  /// prefix in the preview). Docker: already in argv as `-e NAME=VALUE`; listed here as well.
  std::vector<EnvVar> env;
};

struct RenderedLaunch {
  bool multi_node = false;
  std::string executor;  ///< "mp" (single node), "ray" or "native" (multi-node)
  /// In the order to run them: Ray head, Ray workers, `vllm serve` on the head; or the native
  /// mode's headless workers (rank 1..n-1), then the head (rank 0).
  std::vector<RenderedStep> steps;
  std::vector<std::string> notices;
  /// The vLLM variables injected into every step (VLLM_PP_LAYER_PARTITION, VLLM_USE_V2_MODEL_RUNNER),
  /// in injection order; what `defaultcheck` compares.
  std::vector<EnvVar> injected_env;
};

/// The `serve MODEL --flag value ...` arguments (without the executable), in a fixed order: the
/// settings' own flags in the settings table's serve order (deploy/settings_table.cc: each
/// always, or only when not vLLM's default, as its row says), then the decisions:
/// --disable-custom-all-reduce, speculation (--speculative-config JSON, or the legacy flags),
/// --hf-overrides (the gates'), then the extra arguments as given.
std::vector<std::string> ServeArgs(const ResolvedDeployment& d, const std::string& hf_overrides);

/// Renders the gated launch: the resolved decisions (split, runner, speculation, all-reduce) and
/// the gates' --hf-overrides. Throws Error for an env name that is not a shell identifier or more
/// nodes needed than NODES lists (placeholders are used when NODES is empty, with a notice).
RenderedLaunch RenderLaunch(const ResolvedDeployment& d, const GateReport& gates);

/// Whether `host` is an IPv4 or IPv6 address (optionally in brackets) rather than a name.
bool IsIpLiteral(std::string_view host);

/// POSIX-shell quoting: the word unchanged when it only has [A-Za-z0-9_@%+=:,./-], else
/// single-quoted with ' written as '\''. "" -> ''.
std::string ShellQuote(std::string_view word);

/// Words quoted and joined with spaces.
std::string ShellJoin(const std::vector<std::string>& argv);

/// One step as a shell command: `NAME=value ... argv` for bare steps (env prefix), plain argv for
/// docker steps. `multiline` breaks before each option with " \\\n    " (still one command).
std::string PreviewStep(const RenderedStep& step, bool bare, bool multiline);

}  // namespace ppdeploy::launch
