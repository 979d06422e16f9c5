// `ppdeploy preflight`: DSA index-share safety of a layer split (docs/seed.md §6-§7, issue 3/8).
#include <memory>

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

PreflightReport RunPreflight(const PreflightOptions& o) { return PreflightReportOf(o.deployment.Resolve()); }

}  // namespace

RunFunction DeclarePreflight(CLI::App* sub) {
  auto o = std::make_shared<PreflightOptions>();
  o->deployment.Add(sub);
  sub->get_option("--partition")->required();
  sub->add_option("--format", o->format, "table, json, md or csv")->capture_default_str();
  return [o](CommandIo& io) {
    OutputFormat format = ParseOutputFormat(o->format, {"table", "json", "md", "csv"});
    PreflightReport r = RunPreflight(*o);
    RenderPreflight(r, format, io.out);
    return r.safe() ? ExitCode::kOk : ExitCode::kCheckFailed;
  };
}

}  // namespace ppdeploy::cli
