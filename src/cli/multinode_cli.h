// The multi-node side of the launch subcommands (start, wait, status, logs, stop): each
// subcommand calls one of these at a single dispatch point; the orchestration itself is
// launch/multinode.h.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>

#include "cli/command.h"
#include "launch/prepare.h"
#include "launch/process.h"

namespace ppdeploy::cli {

/// `ppdeploy start` of a multi-node launch: refuses placeholders and a run that is still alive,
/// probes every node over the remote shell, gates again with what they reported (the `nodes` gate,
/// the nodes' GPU types in the plan), prints the gates and the commands, then starts the steps in
/// order (launch::StartNodes). `summary` is `start`'s record of the resolver's decisions.
ExitCode RunStartMultiNode(launch::PreparedLaunch prepared, const std::string& run_dir_flag, bool dry_run,
                           nlohmann::json (*summary)(const launch::PreparedLaunch&), CommandIo& io);

/// For `wait`: every step of a multi-node run that exited without `ppdeploy stop`, named with its
/// node and role and its log's last `tail` lines; nullopt when all live (or one node).
std::optional<std::string> DeadNodesReport(const launch::RunState& state, const std::string& run_dir, int tail);

/// For `status`: one line per step of a multi-node run (nothing for one node).
void PrintNodeStatus(std::ostream& out, const launch::RunState& state, const std::string& run_dir);
/// For `status --format json`: "nodes": [...] added to `j` (nothing for one node).
void AddNodeStatus(nlohmann::ordered_json& j, const launch::RunState& state, const std::string& run_dir);

/// For `logs --node HOST`: the node's earlier steps' logs are printed (tails, with headers) and
/// `state`'s log and pid become its last step's, which `logs` then shows (and follows). Throws
/// Error when the run is not multi-node or has no such node.
void SelectNodeLog(launch::RunState& state, const std::string& node, const std::string& run_dir, int tail,
                   std::ostream& out);

/// `ppdeploy stop` of a multi-node run (head first, then every worker; idempotent); nullopt when
/// the run directory holds no multi-node run.
std::optional<ExitCode> StopMultiNodeRun(const std::string& run_dir, double grace_s, CommandIo& io);

}  // namespace ppdeploy::cli
