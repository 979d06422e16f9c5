// `ppdeploy preflight`: DSA index-share safety of a layer split (docs/seed.md §6-§7, issue 3/8).
#include <memory>
#include <ostream>

#include "cli/command.h"
#include "cli/deployment_options.h"
#include "cli/preflight_check.h"
#include "core/error.h"
#include "report/split_render.h"

namespace ppdeploy::cli {
namespace {

struct PreflightOptions {
  DeploymentOptions deployment;
  std::string format = "table";
};

// The resolver's warnings (an empty --partition read as vLLM's default split, an empty --vllm, a 0-layer
// stage, ...) go to stderr as plan shows them: preflight's report is the index-share analysis only.
PreflightReport RunPreflight(const PreflightOptions& o, std::ostream& err) {
  const ResolvedDeployment resolved = o.deployment.Resolve();
  for (const auto& note : resolved.notes)
    if (note.starts_with("warning: ")) err << "ppdeploy: " << note << "\n";
  return PreflightReportOf(resolved);
}

}  // namespace

RunFunction DeclarePreflight(CLI::App* sub) {
  auto o = std::make_shared<PreflightOptions>();
  o->deployment.Add(sub);
  sub->get_option("--partition")->required();
  sub->add_option("--format", o->format, "table, json, md or csv")->capture_default_str();
  return [o](CommandIo& io) {
    OutputFormat format = ParseOutputFormat(o->format, {"table", "json", "md", "csv"});
    PreflightReport r = RunPreflight(*o, io.err);
    RenderPreflight(r, format, io.out);
    return r.safe() ? ExitCode::kOk : ExitCode::kCheckFailed;
  };
}

}  // namespace ppdeploy::cli
