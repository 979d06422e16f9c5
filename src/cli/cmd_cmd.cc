// ppdeploy cmd: the resolved settings (and where each came from), the rendered vllm serve
// command, then the launch gates (seed deploy.sh `cmd`, docs/seed.md §8). Starts nothing.
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/launch_options.h"
#include "core/error.h"
#include "launch/remote.h"
#include "report/plan_render.h"

namespace ppdeploy::cli {
namespace {

struct CmdOptions {
  LaunchOptions launch;
  std::string format = "text";
};

nlohmann::ordered_json ToJson(const launch::PreparedLaunch& p) {
  const auto& q = p.deployment.request;
  nlohmann::ordered_json j;
  j["schema"] = "ppdeploy.launch-cmd/2";
  j["settings"] = SettingsToJson(q.settings);
  j["vllm_version"] = p.deployment.planner.vllm.name;
  j["runtime"] = q.runtime;
  j["spec_method"] = p.deployment.spec_method;
  j["num_speculative_tokens"] = p.deployment.num_spec_tokens;
  j["multi_node"] = p.rendered.multi_node;
  j["executor"] = p.rendered.executor;
  j["notes"] = p.deployment.notes;
  j["notices"] = p.rendered.notices;
  j["injected_env"] = nlohmann::ordered_json::object();
  for (const auto& e : p.rendered.injected_env) j["injected_env"][e.name] = e.value;
  j["steps"] = nlohmann::ordered_json::array();
  for (const auto& s : p.rendered.steps) {
    nlohmann::ordered_json env = nlohmann::ordered_json::object();
    for (const auto& e : s.env) env[e.name] = e.value;
    nlohmann::ordered_json step = {{"node", s.node},
                                   {"role", s.role},
                                   {"argv", s.argv},
                                   {"env", env},
                                   {"preview", launch::PreviewStep(s, q.runtime == "bare", false)}};
    // What ppdeploy spawns for it here: the remote shell, then the node's command as one quoted word.
    if (p.rendered.multi_node)
      step["local_argv"] = launch::RemoteShellArgv(q.remote_shell, s.node,
                                                   launch::WithRemotePid(launch::NodeCommand(s, q.runtime == "bare")));
    j["steps"].push_back(std::move(step));
  }
  j["gates"] = nlohmann::ordered_json::array();
  for (const auto& g : p.gates.results)
    j["gates"].push_back({{"gate", g.name}, {"status", launch::GateStatusName(g.status)}, {"messages", g.messages}});
  j["refused"] = p.gates.Refused();
  j["exit_code"] = p.gates.Refused() ? 1 : 0;
  // One element of `plan --format json`'s `detailed`: the same planner call for the same request.
  j["plan"] =
      p.plan_error.empty() ? nlohmann::ordered_json::parse(LayoutToJson(p.plan).dump()) : nlohmann::ordered_json();
  if (!p.plan_error.empty()) j["plan_error"] = p.plan_error;
  return j;
}

ExitCode RunCmd(const CmdOptions& o, CommandIo& io) {
  launch::PreparedLaunch prepared = PrepareFromCli(o.launch);
  if (o.format == "json") {
    io.out << ToJson(prepared).dump(2) << "\n";
  } else {
    PrintSettings(io.out, prepared.deployment.request.settings);
    PrintCommand(io.out, prepared);
    PrintGates(io.out, prepared);
  }
  return prepared.gates.Refused() ? ExitCode::kError : ExitCode::kOk;
}

}  // namespace

RunFunction DeclareCmd(CLI::App* sub) {
  auto opts = std::make_shared<CmdOptions>();
  AddLaunchOptions(sub, opts->launch);
  sub->add_option("--format", opts->format, "text | json")->check(CLI::IsMember({"text", "json"}));
  return [opts](CommandIo& io) { return RunCmd(*opts, io); };
}

}  // namespace ppdeploy::cli
