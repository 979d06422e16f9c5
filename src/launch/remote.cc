#include "launch/remote.h"

#include <fmt/format.h>

#include <charconv>

#include "core/error.h"

namespace ppdeploy::launch {

std::vector<std::string> RemoteShellArgv(const std::vector<std::string>& prefix, const std::string& host,
                                         const std::vector<std::string>& remote_argv) {
  std::vector<std::string> out;
  for (std::string word : prefix) {
    for (size_t pos = word.find("{host}"); pos != std::string::npos; pos = word.find("{host}", pos + host.size()))
      word.replace(pos, 6, host);
    out.push_back(std::move(word));
  }
  out.push_back(ShellJoin(remote_argv));
  return out;
}

std::vector<std::string> NodeCommand(const RenderedStep& step, bool bare) {
  if (!bare || step.env.empty()) return step.argv;
  if (!step.argv.empty() && step.argv[0].find('=') != std::string::npos)
    Fail("{} on {}: the executable '{}' contains '=': env(1) would read it as a variable", step.role, step.node,
         step.argv[0]);
  std::vector<std::string> out{"env"};
  for (const auto& e : step.env) out.push_back(e.name + "=" + e.value);
  out.insert(out.end(), step.argv.begin(), step.argv.end());
  return out;
}

std::vector<std::string> WithRemotePid(const std::vector<std::string>& argv) {
  std::vector<std::string> out{"sh", "-c", fmt::format("echo \"{}$$\"; exec \"$@\"", kRemotePidMarker),
                               "ppdeploy-remote"};
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

int RemotePidFromLog(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    std::string_view line = text.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
    if (line.substr(0, kRemotePidMarker.size()) == kRemotePidMarker) {
      line.remove_prefix(kRemotePidMarker.size());
      while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
      int pid = 0;
      auto [ptr, ec] = std::from_chars(line.data(), line.data() + line.size(), pid);
      if (ec == std::errc() && ptr == line.data() + line.size() && pid > 0) return pid;
    }
    if (end == std::string_view::npos) break;
    pos = end + 1;
  }
  return 0;
}

CommandOutput RunOnNode(const std::vector<std::string>& prefix, const std::string& host,
                        const std::vector<std::string>& remote_argv, int timeout_ms) {
  return RunCaptured(RemoteShellArgv(prefix, host, remote_argv), timeout_ms);
}

}  // namespace ppdeploy::launch
