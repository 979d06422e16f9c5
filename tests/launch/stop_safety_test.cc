// `ppdeploy stop` signals only the server ppdeploy started (issue 24, docs/safety.md), through the real binary:
// a state file whose pid is 1, 0, -1 or 2^32 + 1 (which a cast to int read as 1, and stop then sent
// kill(-1, SIGTERM): every process the caller may signal), a recycled pid (a live unrelated `sleep` with another
// start time), a missing start time, a group ppdeploy did not create or another boot's id: nothing is
// signalled, exit 1, and a sibling `sleep` survives. Each case runs `ppdeploy stop` inside a child PID
// namespace (unshare --pid --fork --mount-proc, as root) so that even a stop that signalled everything could
// reach only the namespace's processes, never the test runner; without unshare the cases that could reach
// every process are skipped and the others run beside a guard process.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "launch/launch_test_util.h"
#include "launch/process.h"

namespace ppdeploy::launch {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;

bool PidNamespaceAvailable() {
  static const bool ok = RunCaptured({"unshare", "--pid", "--fork", "--mount-proc", "true"}, 30000).exit_code == 0;
  return ok;
}

// The shell run for one case: a sibling `sleep` in its own session (setsid: like a server ppdeploy spawned),
// the state file from the template with the sibling's pid, start time and this boot's id, `ppdeploy stop`,
// then whether the sibling lives.
const char* kScript = R"SH(set -u
RUN="$1"; PPDEPLOY="$2"
setsid sleep 60 & sib=$!
i=0
while [ "$(cut -d' ' -f2 /proc/$sib/stat)" != "(sleep)" ] && [ $i -lt 500 ]; do sleep 0.01; i=$((i+1)); done
ticks=$(cut -d' ' -f22 /proc/$sib/stat)
boot=$(cat /proc/sys/kernel/random/boot_id)
sed -e "s/@SIB@/$sib/g" -e "s/@TICKS@/$ticks/g" -e "s/@OTHER_TICKS@/$((ticks + 7))/g" -e "s/@BOOT@/$boot/g" \
  "$RUN/state.template" > "$RUN/state.json"
"$PPDEPLOY" stop --run-dir "$RUN" --grace 1 > "$RUN/stop.out" 2> "$RUN/stop.err"
rc=$?
st=$(cut -d' ' -f3 /proc/$sib/stat 2>/dev/null || true)
case "$st" in ""|Z|X) echo "sibling gone";; *) echo "sibling alive";; esac
kill -9 "$sib" 2>/dev/null
echo "rc=$rc"
)SH";

struct StopCase {
  std::string out;                 ///< "sibling alive|gone\nrc=N\n"
  std::string stop_out, stop_err;  ///< what `ppdeploy stop` printed (with the shell's stderr)
};

// One case: `identity_json` is the state's identity fields, e.g. `"pid": @SIB@, "proc_start_ticks": @TICKS@`.
StopCase RunStopCase(const std::string& identity_json, bool needs_namespace) {
  TempDir dir;
  const std::string run = dir.path() + "/run";
  std::filesystem::create_directories(run);
  std::ofstream(run + "/state.template")
      << R"({"schema": "ppdeploy.run-state/3", )" << identity_json
      << R"(, "argv": ["sleep", "60"], "env": {}, "start_time_unix_ms": 1, "log_path": ")" << run
      << R"(/vllm.log", "host": "127.0.0.1", "port": 8000})"
      << "\n";
  std::ofstream(dir.path() + "/case.sh") << kScript;
  std::vector<std::string> argv = {"sh", dir.path() + "/case.sh", run, PPDEPLOY_BINARY};
  if (needs_namespace || PidNamespaceAvailable())
    argv.insert(argv.begin(), {"unshare", "--pid", "--fork", "--mount-proc"});
  const CommandOutput r = RunCaptured(argv, 60000);
  EXPECT_FALSE(r.timed_out);
  return {r.out, testing::ReadAll(run + "/stop.out"), testing::ReadAll(run + "/stop.err") + r.err};
}

// A case whose pid a wrong stop could turn into "every process": only inside a PID namespace.
#define REQUIRE_PID_NAMESPACE() \
  if (!PidNamespaceAvailable()) GTEST_SKIP() << "needs unshare --pid (root): a wrong stop could signal every process"

TEST(StopSafetyTest, Pid1SignalsNothing) {
  REQUIRE_PID_NAMESPACE();
  // No start time, as in issue 24's case: the stop before it sent kill(-1, SIGTERM) for this state.
  const StopCase c = RunStopCase(R"("pid": 1)", true);
  EXPECT_EQ(c.out, "sibling alive\nrc=1\n") << c.stop_out << c.stop_err;
  EXPECT_THAT(c.stop_err, HasSubstr("pid 1 is not a process ppdeploy may signal"));
  EXPECT_THAT(c.stop_err, HasSubstr("nothing was signalled"));
}

TEST(StopSafetyTest, Pid2Pow32Plus1IsRefusedNotReadAs1) {
  REQUIRE_PID_NAMESPACE();
  const StopCase c = RunStopCase(R"("pid": 4294967297)", true);  // read as 1 before issue 24
  EXPECT_EQ(c.out, "sibling alive\nrc=1\n") << c.stop_out << c.stop_err;
  EXPECT_THAT(c.stop_err, HasSubstr("pid: value 4294967297 is out of range"));
}

TEST(StopSafetyTest, Pid0AndMinus1SignalNothing) {
  REQUIRE_PID_NAMESPACE();
  for (const char* pid : {"0", "-1"}) {
    const StopCase c = RunStopCase(
        fmt::format(R"("pid": {}, "proc_start_ticks": 0, "pgid": {}, "boot_id": "@BOOT@")", pid, pid), true);
    EXPECT_EQ(c.out, "sibling alive\nrc=1\n") << pid << ": " << c.stop_out << c.stop_err;
    EXPECT_THAT(c.stop_err, HasSubstr("pid")) << pid;
  }
}

TEST(StopSafetyTest, RecycledPidSignalsNothing) {
  const StopCase c =
      RunStopCase(R"("pid": @SIB@, "proc_start_ticks": @OTHER_TICKS@, "pgid": @SIB@, "boot_id": "@BOOT@")", false);
  EXPECT_EQ(c.out, "sibling alive\nrc=1\n") << c.stop_out << c.stop_err;
  EXPECT_THAT(c.stop_err, HasSubstr("is no longer the server ppdeploy started (start time differs); nothing was "
                                    "signalled"));
}

TEST(StopSafetyTest, MissingStartTimeSignalsNothing) {
  // A run state of an older ppdeploy: pid only. Before issue 24, stop killed the live process's group.
  const StopCase c = RunStopCase(R"("pid": @SIB@)", false);
  EXPECT_EQ(c.out, "sibling alive\nrc=1\n") << c.stop_out << c.stop_err;
  EXPECT_THAT(c.stop_err, HasSubstr("(an older ppdeploy wrote it)"));
  EXPECT_THAT(c.stop_err, HasSubstr("nothing was signalled"));
}

TEST(StopSafetyTest, ForeignGroupAndOtherBootSignalNothing) {
  for (
      const char* identity :
      {R"("pid": @SIB@, "proc_start_ticks": @TICKS@, "pgid": 1, "boot_id": "@BOOT@")",
       R"("pid": @SIB@, "proc_start_ticks": @TICKS@, "pgid": @SIB@, "boot_id": "00000000-0000-0000-0000-000000000000")"}) {
    const StopCase c = RunStopCase(identity, false);
    EXPECT_EQ(c.out, "sibling alive\nrc=1\n") << identity << ": " << c.stop_out << c.stop_err;
    EXPECT_THAT(c.stop_err, HasSubstr("nothing was signalled")) << identity;
  }
}

TEST(StopSafetyTest, TheVerifiedServerIsStopped) {
  // The harness sees a signal: with the sibling's true identity, stop ends it.
  const StopCase c =
      RunStopCase(R"("pid": @SIB@, "proc_start_ticks": @TICKS@, "pgid": @SIB@, "boot_id": "@BOOT@")", false);
  EXPECT_EQ(c.out, "sibling gone\nrc=0\n") << c.stop_out << c.stop_err;
  EXPECT_THAT(c.stop_out, HasSubstr("stopped: pid"));
}

}  // namespace
}  // namespace ppdeploy::launch
