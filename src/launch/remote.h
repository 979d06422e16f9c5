// Running a command on a node through the remote shell, never through a local shell.
//
// PPDEPLOY_REMOTE_SHELL is an argv prefix in which "{host}" stands for the node (default
// `ssh -o BatchMode=yes {host} --`). ppdeploy spawns that prefix directly (posix_spawn, no local
// shell) and appends the command for the node as ONE argument: its argv POSIX-shell-quoted word by
// word and joined with spaces. ssh joins whatever follows the host into one command line for the
// node's login shell, so that shell splits it back into exactly the argv ppdeploy rendered, with
// every metacharacter literal; a prefix ending in `sh -c` (kubectl exec, docker exec) reads the
// same single word. The node's login shell must be POSIX (sh, bash, dash, zsh).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "launch/process.h"
#include "launch/render.h"

namespace ppdeploy::launch {

/// The prefix with every "{host}" replaced by `host`, then ShellJoin(remote_argv) as one word.
std::vector<std::string> RemoteShellArgv(const std::vector<std::string>& prefix, const std::string& host,
                                         const std::vector<std::string>& remote_argv);

/// What a step runs on its node. Bare: `env NAME=VALUE ... ARGV` (a remote shell forwards no
/// environment). Docker: the argv (its variables are `-e` options already). Throws Error when a
/// bare argv[0] holds '=' (env(1) would take it for a variable).
std::vector<std::string> NodeCommand(const RenderedStep& step, bool bare);

/// The line a node prints first, before it execs the step's command: "ppdeploy-remote-pid <pid>".
inline constexpr std::string_view kRemotePidMarker = "ppdeploy-remote-pid ";

/// `argv` wrapped so that the node reports the pid of the process that runs it (the same pid after
/// exec): sh -c 'echo "ppdeploy-remote-pid $$"; exec "$@"' ppdeploy-remote ARGV...
std::vector<std::string> WithRemotePid(const std::vector<std::string>& argv);

/// The pid reported by the first kRemotePidMarker line of `log_text`, 0 when there is none.
int RemotePidFromLog(std::string_view log_text);

/// RunCaptured(RemoteShellArgv(prefix, host, remote_argv)).
CommandOutput RunOnNode(const std::vector<std::string>& prefix, const std::string& host,
                        const std::vector<std::string>& remote_argv, int timeout_ms);

}  // namespace ppdeploy::launch
