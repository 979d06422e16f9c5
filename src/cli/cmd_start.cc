// ppdeploy start: runs the gates, then spawns the rendered command without a shell (posix_spawn),
// stdout/stderr to <run-dir>/vllm.log, and records <run-dir>/state.json with the resolved
// deployment request (seed deploy.sh `start`). The decisions are launch::StartServer's.
#include <fmt/format.h>
#include <fmt/ostream.h>

#include "cli/command.h"
#include "cli/launch_options.h"
#include "cli/multinode_cli.h"
#include "cli/server_render.h"
#include "core/error.h"
#include "launch/server.h"

namespace ppdeploy::cli {
namespace {

struct StartOptions {
  LaunchOptions launch;
  std::string run_dir;
  bool dry_run = false;
};

ExitCode RunStart(const StartOptions& o, CommandIo& io) {
  launch::PreparedLaunch prepared = PrepareFromCli(o.launch);
  if (prepared.rendered.multi_node)
    return RunStartMultiNode(std::move(prepared), o.run_dir, o.dry_run, launch::ResolvedSummary, io);
  PrintGates(io.out, prepared);
  for (const auto& g : prepared.gates.results) {
    if (g.status == launch::GateStatus::kPass) continue;
    for (const auto& m : g.messages)
      fmt::print(io.err, "ppdeploy: {}: {}: {}\n", g.name, launch::GateStatusName(g.status), m);
  }
  if (!prepared.gates.Refused()) PrintCommand(io.out, prepared);
  const launch::StartResult r = launch::StartServer(prepared, EffectiveRunDir(o.run_dir), o.dry_run);
  return RenderStart(r, prepared, io, o.run_dir);
}

}  // namespace

RunFunction DeclareStart(CLI::App* sub) {
  auto opts = std::make_shared<StartOptions>();
  AddLaunchOptions(sub, opts->launch);
  AddRunDirOption(sub, opts->run_dir);
  sub->add_flag("--dry-run", opts->dry_run, "run the gates and print the command; start nothing");
  return [opts](CommandIo& io) { return RunStart(*opts, io); };
}

}  // namespace ppdeploy::cli
