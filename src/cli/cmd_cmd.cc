// ppdeploy cmd: the resolved settings (and where each came from), the rendered vllm serve
// command, then the launch gates (seed deploy.sh `cmd`, digest §8). Starts nothing.
#include <fmt/format.h>
#include <fmt/ostream.h>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/launch_options.h"
#include "core/error.h"

namespace ppdeploy::cli {
namespace {

nlohmann::ordered_json ToJson(const launch::PreparedLaunch& p) {
  nlohmann::ordered_json j;
  j["schema"] = "ppdeploy.launch-cmd/1";
  j["settings"] = nlohmann::ordered_json::array();
  for (const auto& s : p.settings)
    j["settings"].push_back({{"key", s.key}, {"value", s.value}, {"source", launch::SourceName(s.source)},
                             {"origin", s.origin}});
  j["vllm_version"] = p.caps.name;
  j["runtime"] = p.profile.runtime;
  j["multi_node"] = p.rendered.multi_node;
  j["executor"] = p.rendered.executor;
  j["notices"] = p.rendered.notices;
  j["injected_env"] = nlohmann::ordered_json::object();
  for (const auto& e : p.rendered.injected_env) j["injected_env"][e.name] = e.value;
  j["steps"] = nlohmann::ordered_json::array();
  for (const auto& s : p.rendered.steps) {
    nlohmann::ordered_json env = nlohmann::ordered_json::object();
    for (const auto& e : s.env) env[e.name] = e.value;
    j["steps"].push_back({{"node", s.node}, {"role", s.role}, {"argv", s.argv}, {"env", env},
                          {"preview", launch::PreviewStep(s, p.profile.runtime == "bare", false)}});
  }
  j["gates"] = nlohmann::ordered_json::array();
  for (const auto& g : p.gates.results)
    j["gates"].push_back({{"gate", g.gate}, {"status", launch::GateStatusName(g.status)}, {"messages", g.messages}});
  j["refused"] = p.gates.Refused();
  j["exit_code"] = p.gates.ExitCode();
  return j;
}

RunFunction AddCmdCommand(CLI::App& app) {
  auto* sub = app.add_subcommand("cmd", "Show the resolved settings, the rendered vllm serve command and the gates");
  auto opts = std::make_shared<LaunchOptions>();
  auto format = std::make_shared<std::string>("text");
  AddLaunchOptions(sub, *opts);
  sub->add_option("--format", *format, "text | json")->check(CLI::IsMember({"text", "json"}));
  sub->footer(
      "Exit codes: 0 every gate passes; 1 a gate refuses the launch or a setting is invalid.\n"
      "Examples:\n"
      "  ppdeploy cmd                                   # the seed's default: TP4/PP2, 41,37, MTP k=3\n"
      "  PP_LAYER_PARTITION=39,39 ppdeploy cmd\n"
      "  TP_SIZE=8 PP_SIZE=1 MAX_MODEL_LEN=352000 ppdeploy cmd\n"
      "  PP_SIZE=4 TP_SIZE=2 ppdeploy cmd               # refused (exit 1)\n"
      "  ppdeploy cmd --runtime bare --port 8001 --format json");
  return [opts, format](CommandIo& io) {
    auto prepared = PrepareFromCli(*opts);
    if (*format == "json") {
      io.out << ToJson(prepared).dump(2) << "\n";
      return prepared.gates.ExitCode();
    }
    PrintSettings(io.out, prepared.settings);
    PrintCommand(io.out, prepared);
    PrintGates(io.out, prepared.gates);
    return prepared.gates.ExitCode();
  };
}

}  // namespace

PPDEPLOY_COMMAND(40, AddCmdCommand);

}  // namespace ppdeploy::cli
