// Issue 14, interaction: Ctrl-C (SIGINT) during `degen`, `needle`, `verify` and `wait` exits 130 with what was
// measured on disk; a heartbeat line when stderr is not a terminal; `start` refuses a busy port; the URL
// commands default to the server ppdeploy started; each subcommand's --help shows its own examples.
// `rebalance` is interrupted in tests/cli/rebalance_e2e_test.cc. Sims decode slowly (sleeping, not CPU).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/async_run.h"
#include "launch/launch_test_util.h"
#include "subprocess_util.h"

namespace ppdeploy {
namespace {

using launch::testing::FreeLoopbackPort;
using launch::testing::ReadAll;
using launch::testing::RunPpdeploy;
using launch::testing::TempDir;
using ::testing::HasSubstr;
using ::testing::Not;

const std::string kTests = std::string(PPDEPLOY_SOURCE_DIR) + "/tests/launch";

int Lines(const std::string& text) { return static_cast<int>(std::count(text.begin(), text.end(), '\n')); }

// A sim that answers at 50 ms per token (a 40-token answer takes 2 s) and 2 ms per prompt token of prefill.
class SlowSim {
 public:
  explicit SlowSim(const TempDir& dir)
      : sim_({PPDEPLOY_BINARY, "sim", "--port", "0", "--itl-ms", "50", "--prefill-ms-per-token", "2"},
             dir.path() + "/sim.out", dir.path() + "/sim.err") {
    url_ = ppdeploy::testing::SimUrl(sim_.WaitForOutput("listening on", 20));
  }
  ~SlowSim() {
    sim_.Signal(SIGTERM);
    sim_.Wait(10);
  }
  const std::string& url() const { return url_; }

 private:
  ppdeploy::testing::Child sim_;
  std::string url_;
};

TEST(InterruptCliTest, CtrlCDuringDegenExits130WithTheFinishedTrialsInTheJsonlAndTheSummary) {
  TempDir dir;
  SlowSim sim(dir);
  ASSERT_FALSE(sim.url().empty());
  const std::string jsonl = dir.path() + "/degen.jsonl";
  testing::AsyncPpdeploy degen(
      {"degen", "--url", sim.url(), "--trials", "8", "--concurrency", "2", "--max-tokens", "40", "--out-jsonl", jsonl},
      {{"PPDEPLOY_HEARTBEAT_S", "0.2"}}, dir.path(), "degen");
  ASSERT_TRUE(degen.WaitUntil([&] { return Lines(ReadAll(jsonl)) >= 1; }, 60)) << degen.Err();
  degen.Signal(SIGINT);
  ASSERT_EQ(degen.Wait(30), 130) << degen.Out() << degen.Err();
  const int finished = Lines(ReadAll(jsonl));
  EXPECT_GE(finished, 1);
  EXPECT_LT(finished, 8);
  EXPECT_THAT(degen.Out(), HasSubstr("| trials |"));  // the summary of the finished trials
  EXPECT_THAT(degen.Err(), HasSubstr("ppdeploy degen: interrupted after"));
  EXPECT_THAT(degen.Err(), HasSubstr("degen: "));  // heartbeat: "degen: N/8 done, ..."
  EXPECT_THAT(degen.Err(), HasSubstr("/8 done"));
}

TEST(InterruptCliTest, CtrlCDuringNeedleExits130WithTheFinishedCells) {
  TempDir dir;
  SlowSim sim(dir);
  ASSERT_FALSE(sim.url().empty());
  const std::string jsonl = dir.path() + "/needle.jsonl";
  // 1K..4K prompts: 2-8 s of prefill each at 2 ms per token.
  testing::AsyncPpdeploy needle(
      {"needle", "--url", sim.url(), "--lengths", "1K,2K,3K,4K", "--depths", "50", "--out-jsonl", jsonl}, {},
      dir.path(), "needle");
  ASSERT_TRUE(needle.WaitUntil([&] { return Lines(ReadAll(jsonl)) >= 1; }, 60)) << needle.Err();
  needle.Signal(SIGINT);
  ASSERT_EQ(needle.Wait(30), 130) << needle.Out() << needle.Err();
  EXPECT_GE(Lines(ReadAll(jsonl)), 1);
  EXPECT_LT(Lines(ReadAll(jsonl)), 4);
  EXPECT_THAT(needle.Err(), HasSubstr("ppdeploy needle: interrupted after"));
}

TEST(InterruptCliTest, CtrlCDuringVerifyExits130WithAPartialResultListingTheMissingSteps) {
  TempDir dir;
  SlowSim sim(dir);
  ASSERT_FALSE(sim.url().empty());
  const std::string out = dir.path() + "/verify.json";
  testing::AsyncPpdeploy verify({"verify", "--url", sim.url(), "--out", out, "--skip", "needle,probes", "--trials", "4",
                                 "--degen-max-tokens", "40", "--bench-requests", "2", "--bench-output-len", "8"},
                                {}, dir.path(), "verify");
  // Interrupt once the smoke step is on disk (the degeneration step then runs for >= 2 s).
  ASSERT_TRUE(verify.WaitUntil(
      [&] {
        auto j = nlohmann::json::parse(ReadAll(out), nullptr, false);
        return !j.is_discarded() && j.contains("verify") && j["verify"]["steps"].contains("smoke");
      },
      60))
      << verify.Err();
  verify.Signal(SIGINT);
  ASSERT_EQ(verify.Wait(30), 130) << verify.Out() << verify.Err();
  const auto j = nlohmann::json::parse(ReadAll(out));
  EXPECT_EQ(j["verify"]["steps"]["server"]["status"], "ok");
  EXPECT_EQ(j["verify"]["steps"]["smoke"]["status"], "ok");
  EXPECT_THAT(j["verify"]["missing"].dump(), HasSubstr("bench"));
  // The server facts are there with their sources even so (a bare sim: no boot log, no nvidia-smi here).
  EXPECT_THAT(j["facts"]["metrics"]["source"].get<std::string>(), HasSubstr("/metrics"));
  EXPECT_TRUE(j["facts"]["boot_log"].contains("unavailable")) << j["facts"].dump();
}

TEST(InterruptCliTest, CtrlCDuringWaitExits130AndTheRunStateRecordsIt) {
  TempDir dir;
  const std::map<std::string, std::string> env = {
      {"RUNTIME", "bare"},         {"VLLM_BIN", kTests + "/standin_ab_vllm.sh"}, {"PPDEPLOY_SIM", PPDEPLOY_BINARY},
      {"STANDIN_DIR", dir.path()}, {"STANDIN_SIM_ARGS", "--startup-delay-s 60"}, {"PPDEPLOY_HEARTBEAT_S", "0.1"},
      {"HOST", "127.0.0.1"},       {"PORT", std::to_string(FreeLoopbackPort())}};
  auto start = RunPpdeploy({"start"}, env, dir.path());
  ASSERT_EQ(start.rc, 0) << start.out << start.err;
  {
    testing::AsyncPpdeploy wait({"wait", "--interval", "0.2", "--timeout", "60"}, env, dir.path(), "wait");
    // The heartbeat shows what the polls see: /health answers 503 during the sim's startup delay.
    ASSERT_TRUE(wait.WaitUntil([&] { return wait.Err().find("/health answered 503") != std::string::npos; }, 30))
        << wait.Out() << wait.Err();
    wait.Signal(SIGINT);
    EXPECT_EQ(wait.Wait(10), 130) << wait.Out() << wait.Err();
  }
  const auto state = nlohmann::json::parse(ReadAll(dir.path() + "/.ppdeploy/run/state.json"));
  EXPECT_EQ(state["wait"]["outcome"], "interrupted");
  EXPECT_THAT(state["wait"]["last"].get<std::string>(), HasSubstr("503"));  // /health during the startup delay
  EXPECT_EQ(state["ready_time_unix_ms"], 0);
  EXPECT_EQ(RunPpdeploy({"stop", "--grace", "2"}, env, dir.path()).rc, 0);
}

TEST(StartCliTest, RefusesABusyPortAndStartsNothing) {
  TempDir dir;
  // Another server on the port: a listening socket.
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(fd, 4), 0);
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const int port = ntohs(addr.sin_port);
  auto start = RunPpdeploy({"start"},
                           {{"RUNTIME", "bare"},
                            {"VLLM_BIN", kTests + "/standin_ab_vllm.sh"},
                            {"HOST", "127.0.0.1"},
                            {"PORT", std::to_string(port)}},
                           dir.path());
  close(fd);
  EXPECT_EQ(start.rc, 1) << start.out << start.err;
  EXPECT_THAT(start.err, HasSubstr(std::to_string(port)));
  EXPECT_THAT(start.err, HasSubstr("accepts connections"));
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/.ppdeploy/run/state.json"));
}

TEST(UrlDefaultCliTest, ProbesWithoutUrlNameTheRunDirectoryWhenNothingWasStarted) {
  TempDir dir;
  auto r = RunPpdeploy({"degen", "--trials", "1", "--run-dir", dir.path() + "/nothing"}, {}, dir.path());
  EXPECT_EQ(r.rc, 1);
  EXPECT_THAT(r.err, HasSubstr(dir.path() + "/nothing"));
  EXPECT_THAT(r.err, HasSubstr("--url"));
}

TEST(HelpCliTest, EverySubcommandShowsItsOwnExamples) {
  TempDir dir;
  for (const char* sub : {"degen", "needle", "probe", "verify", "verdict", "wait", "rebalance", "bench"}) {
    auto r = RunPpdeploy({sub, "--help"}, {}, dir.path());
    EXPECT_EQ(r.rc, 0) << sub;
    EXPECT_THAT(r.out, HasSubstr(std::string("ppdeploy ") + sub + " ")) << sub << ":\n" << r.out;
    EXPECT_THAT(r.out, Not(HasSubstr("ppdeploy plan --format html > plan.html"))) << sub;  // a top-level example
  }
}

}  // namespace
}  // namespace ppdeploy
