// The remote shell as an argv: {host} substitution, the node's command as one quoted word that a
// POSIX shell on the node splits back into exactly the rendered argv, env(1) for the variables,
// the pid report, and the captured runner (exit codes, output, timeouts; no shell).
#include "launch/remote.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>

#include "core/error.h"
#include "deploy_test_util.h"
#include "launch/launch_test_util.h"

namespace ppdeploy::launch {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(RemoteShellTest, PrefixWithHostThenOneQuotedWord) {
  auto argv = RemoteShellArgv({"ssh", "-o", "BatchMode=yes", "{host}", "--"}, "h1", {"vllm", "serve", "/m o'd"});
  EXPECT_THAT(argv, ElementsAre("ssh", "-o", "BatchMode=yes", "h1", "--", "vllm serve '/m o'\\''d'"));
  // {host} inside a word, more than once, and a host that itself reads "{host}".
  EXPECT_THAT(RemoteShellArgv({"kubectl", "exec", "pod-{host}", "--", "sh", "-c"}, "{host}", {"true"}),
              ElementsAre("kubectl", "exec", "pod-{host}", "--", "sh", "-c", "true"));
  EXPECT_THAT(RemoteShellArgv({"x", "{host}:{host}"}, "a", {"b"}), ElementsAre("x", "a:a", "b"));
}

/// The error text resolving `flags` throws ("" when it resolves).
std::string ResolveError(const std::map<std::string, std::string>& flags) {
  try {
    ppdeploy::testing::ResolvedWith(flags);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// PPDEPLOY_REMOTE_SHELL is an argv prefix: the issue's default, words split on blanks or a JSON list
// (for a word with a blank), {host} required; host names that ssh would read as options are refused.
TEST(RemoteShellTest, SettingIsAnArgvPrefixAndBadValuesAreRefused) {
  EXPECT_THAT(ppdeploy::testing::ResolvedWith().request.remote_shell,
              ElementsAre("ssh", "-o", "BatchMode=yes", "{host}", "--"));
  EXPECT_THAT(ppdeploy::testing::ResolvedWith({{"remote_shell", "  ssh\t-p 2222  {host} "}}).request.remote_shell,
              ElementsAre("ssh", "-p", "2222", "{host}"));
  EXPECT_THAT(
      ppdeploy::testing::ResolvedWith({{"remote_shell", R"(["ssh", "-o", "ProxyCommand=nc -X 5 %h %p", "{host}"])"}})
          .request.remote_shell,
      ElementsAre("ssh", "-o", "ProxyCommand=nc -X 5 %h %p", "{host}"));
  EXPECT_THAT(ResolveError({{"remote_shell", "ssh h0 --"}}),
              HasSubstr("remote_shell (flag --remote-shell): expected an argv prefix in which {host} stands for the "
                        "node, e.g. \"ssh -o BatchMode=yes {host} --\", got \"ssh h0 --\""));
  EXPECT_THAT(ResolveError({{"remote_shell", "   "}}), HasSubstr("expected an argv prefix naming the remote shell"));
  EXPECT_THAT(ResolveError({{"remote_shell", R"(["ssh", 1])"}}), HasSubstr("expected a JSON list of strings"));
  EXPECT_THAT(ResolveError({{"remote_shell", "[ssh"}}), HasSubstr("expected a JSON list of strings"));
  EXPECT_THAT(ResolveError({{"nodes", "h0,-oProxyCommand=touch x"}}),
              HasSubstr("nodes (flag --nodes): expected host names that do not start with '-'"));
  EXPECT_THAT(ResolveError({{"nodes", "h0,h\n1"}}), HasSubstr("host names without control characters"));
  EXPECT_THAT(ResolveError({{"nodes", "h0,h0"}}), HasSubstr("h0 appears twice"));
}

TEST(RemoteShellTest, TheNodesShellReadsBackTheExactArgv) {
  // What a node's login shell does with the word ssh hands it: sh -c WORD.
  const std::vector<std::string> hostile = {"plain", "two words", "it's", "\"dq\"", "$(touch PWNED)",
                                            "`id`",  "a;b|c&d",   "*",    "~/x",    "back\\slash",
                                            "",      "new\nline", "$HOME"};
  std::vector<std::string> argv{"printf", "[%s]\\n"};
  argv.insert(argv.end(), hostile.begin(), hostile.end());
  auto word = RemoteShellArgv({"{host}"}, "node", argv).back();
  testing::TempDir dir;
  auto r = RunCaptured({"/bin/sh", "-c", "cd " + ShellQuote(dir.path()) + " && " + word}, 30000);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string expected;
  for (const auto& h : hostile) expected += "[" + h + "]\n";
  EXPECT_EQ(r.out, expected);
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/PWNED"));
}

TEST(RemoteShellTest, NodeCommandPassesVariablesThroughEnvAndReportsThePid) {
  RenderedStep bare{"h1", "serve", {"vllm", "serve", "m"}, {{"NCCL_SOCKET_IFNAME", "eth0"}, {"VLLM_HOST_IP", "h1"}}};
  EXPECT_THAT(NodeCommand(bare, true),
              ElementsAre("env", "NCCL_SOCKET_IFNAME=eth0", "VLLM_HOST_IP=h1", "vllm", "serve", "m"));
  EXPECT_THAT(NodeCommand(bare, false), ElementsAre("vllm", "serve", "m"));  // docker: they are -e already
  RenderedStep odd{"h1", "serve", {"/opt/a=b/vllm", "serve"}, {{"X", "1"}}};
  EXPECT_THROW(NodeCommand(odd, true), Error);
  auto wrapped = WithRemotePid({"sh", "-c", "echo child; exit 3"});
  auto r = RunCaptured(wrapped, 30000);
  EXPECT_EQ(r.exit_code, 3);
  const int pid = RemotePidFromLog(r.out);
  EXPECT_GT(pid, 0);
  EXPECT_THAT(r.out, HasSubstr("ppdeploy-remote-pid " + std::to_string(pid) + "\nchild\n"));
  EXPECT_EQ(RemotePidFromLog("vLLM log\nppdeploy-remote-pid 42\r\n"), 42);
  EXPECT_EQ(RemotePidFromLog("ppdeploy-remote-pid x\n"), 0);
  EXPECT_EQ(RemotePidFromLog(""), 0);
}

TEST(RunCapturedTest, ExitCodesOutputMissingExecutableAndTimeout) {
  auto ok = RunCaptured({"sh", "-c", "echo out; echo err >&2; exit 7"}, 30000);
  EXPECT_TRUE(ok.started);
  EXPECT_EQ(ok.exit_code, 7);
  EXPECT_EQ(ok.out, "out\n");
  EXPECT_EQ(ok.err, "err\n");
  EXPECT_EQ(ok.Summary(), "exit 7: err");
  auto missing = RunCaptured({"/nonexistent/ppdeploy-no-such-shell", "h"}, 30000);
  EXPECT_FALSE(missing.started);
  EXPECT_THAT(missing.Summary(), HasSubstr("cannot start '/nonexistent/ppdeploy-no-such-shell'"));
  auto slow = RunCaptured({"sh", "-c", "sleep 60 & sleep 60"}, 500);  // a child keeps the pipes open too
  EXPECT_TRUE(slow.timed_out);
  EXPECT_EQ(slow.exit_code, 128 + SIGKILL);  // killed with its process group, not left to sleep 60 s
}

}  // namespace
}  // namespace ppdeploy::launch
