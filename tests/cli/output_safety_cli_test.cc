// Every writer of the binary refuses a target that is not a regular file, and a failed write is an
// error that says what was kept (issue 24: "`calibrate --out /dev/full` replaced the device with a 619-byte
// JSON file"; "`bench --out-jsonl` on a full device exits 0"; "`plan --format json > /dev/full` exits 0";
// "`calibrate --log /dev/zero` reads 4 GiB into memory"). The rules: docs/safety.md "Writes and reads".
// The character device is a test-made node where mknod is allowed, else a link to /dev/null in a temporary
// directory: a real device is never a target here, so a writer that ignored the rule harms only the link.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "subprocess_util.h"
#include "support/fake_checkpoint.h"

namespace ppdeploy {
namespace {

using testing::Child;
using testing::ReadAll;
using testing::TempDir;

/// One vLLM 0.19 boot in the seed's figures (41,37 -> 729,280 tokens; as tests/calibration/calibrate_cli_test.cc).
const std::string kBootLog =
    "(APIServer pid=100) INFO 08-21 18:00:00 [entrypoints/utils.py:233] non-default args: {'max_model_len': 524288, "
    "'tensor_parallel_size': 4, 'pipeline_parallel_size': 2, 'gpu_memory_utilization': 0.95}\n"
    "(EngineCore_DP0 pid=101) INFO 08-21 18:00:11 [distributed/utils.py:1] Hidden layers were unevenly partitioned: "
    "[41,37]. This can be manually overridden using the VLLM_PP_LAYER_PARTITION environment variable\n"
    "(Worker_PP0_TP0 pid=102) INFO 08-21 18:03:00 [v1/worker/gpu_worker.py:436] Available KV cache memory: 21.95 "
    "GiB\n"
    "(EngineCore_DP0 pid=101) INFO 08-21 18:03:01 [v1/core/kv_cache_utils.py:1319] GPU KV cache size: 729,280 "
    "tokens\n";

enum class Kind { kFifo, kDirectory, kCharDevice };

struct Target {
  std::string path;
  std::string refusal;  ///< the words of the expected message
};

/// Makes the target of `kind` in `dir`.
Target MakeTarget(const TempDir& dir, Kind kind) {
  const std::string path = dir / "target";
  switch (kind) {
    case Kind::kFifo:
      EXPECT_EQ(::mkfifo(path.c_str(), 0600), 0);
      return {path, "refused: it is a FIFO"};
    case Kind::kDirectory:
      EXPECT_EQ(::mkdir(path.c_str(), 0700), 0);
      return {path, "refused: it is a directory"};
    case Kind::kCharDevice:
      if (::mknod(path.c_str(), S_IFCHR | 0666, makedev(1, 3)) == 0) return {path, "refused: it is a character device"};
      EXPECT_EQ(::symlink("/dev/null", path.c_str()), 0);
      return {path, "refused: it is a symbolic link to a character device"};
  }
  return {};
}

/// True when the target still is what MakeTarget made.
bool StillThere(const std::string& path, Kind kind) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return false;
  switch (kind) {
    case Kind::kFifo:
      return S_ISFIFO(st.st_mode);
    case Kind::kDirectory:
      return S_ISDIR(st.st_mode) && std::filesystem::is_empty(path);
    case Kind::kCharDevice:
      return S_ISCHR(st.st_mode) || (S_ISLNK(st.st_mode) && std::filesystem::read_symlink(path) == "/dev/null");
  }
  return false;
}

/// The argv of each writer with `target` as its output. The URL is a closed port: the refusal must come
/// before any request, so no server is needed.
std::vector<std::string> WriterArgs(const std::string& writer, const std::string& target, const TempDir& dir) {
  if (writer == "calibrate") {
    std::ofstream(dir / "boot.log") << kBootLog;
    return {PPDEPLOY_BINARY, "calibrate", "--log", dir / "boot.log", "--model", "glm-5.3-w4a16", "--out", target};
  }
  if (writer == "plan") return {PPDEPLOY_BINARY, "plan", "--format", "json", "--out", target};
  if (writer == "bench") return {PPDEPLOY_BINARY, "bench", "--url", "http://127.0.0.1:1", "--out-jsonl", target};
  return {PPDEPLOY_BINARY, "verify", "--url", "http://127.0.0.1:1", "--out", target};
}

class WriterRefusesTest : public ::testing::TestWithParam<std::tuple<std::string, Kind>> {};

TEST_P(WriterRefusesTest, ANonRegularTargetUntouched) {
  const auto& [writer, kind] = GetParam();
  TempDir dir;
  const Target t = MakeTarget(dir, kind);
  Child c(WriterArgs(writer, t.path, dir), dir / "stdout", dir / "stderr");
  // Bounded: a writer that opened the FIFO would wait for a reader for ever.
  EXPECT_EQ(c.Wait(60), 1) << c.Err();
  EXPECT_NE(c.Err().find("ppdeploy: error: " + t.path + ": " + t.refusal), std::string::npos) << c.Err();
  EXPECT_NE(c.Err().find("it was not touched"), std::string::npos) << c.Err();
  EXPECT_TRUE(StillThere(t.path, kind));
  for (const auto& e : std::filesystem::directory_iterator(dir.path()))  // no temporary file beside it
    EXPECT_TRUE(e.path().filename().string().find(".tmp") == std::string::npos) << e.path();
}

INSTANTIATE_TEST_SUITE_P(Writers, WriterRefusesTest,
                         ::testing::Combine(::testing::Values("calibrate", "plan", "bench", "verify"),
                                            ::testing::Values(Kind::kFifo, Kind::kDirectory, Kind::kCharDevice)),
                         [](const auto& info) {
                           const Kind k = std::get<1>(info.param);
                           return std::get<0>(info.param) + (k == Kind::kFifo        ? "_Fifo"
                                                             : k == Kind::kDirectory ? "_Directory"
                                                                                     : "_CharDevice");
                         });

struct ShellRun {
  int exit_code = -1;
  std::string output;  ///< stdout and stderr, through a pipe (a pipe has no file size limit)
};

/// Runs shell text (the binary is "$PPD") with stdout and stderr on a pipe.
ShellRun Shell(const std::string& script) {
  const std::string cmd = "PPD='" + std::string(PPDEPLOY_BINARY) + "'; (" + script + ") 2>&1";
  ShellRun r;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  std::array<char, 4096> buf;
  std::size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.output.append(buf.data(), n);
  const int status = ::pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

TEST(FullDiskTest, PlanOutOverTheFileSizeLimitLeavesTheOldFile) {
  // `ulimit -f 4` (dash: 512-byte blocks, 2 KiB) is far below the JSON plan of the seed (tens of KiB).
  TempDir dir;
  const std::string out = dir / "plan.json";
  std::ofstream(out) << "old\n";
  auto r = Shell("ulimit -f 4; exec \"$PPD\" plan --format json --out '" + out + "'");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("ppdeploy: error: " + out + ": cannot write: File too large after "), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("bytes; the file was left as it was"), std::string::npos) << r.output;
  EXPECT_EQ(ReadAll(out), "old\n");
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), {}), 1);  // the temporary file is gone
}

TEST(FullDiskTest, StdoutOnAFullDeviceIsAnError) {
  auto r = Shell("\"$PPD\" plan --format json > /dev/full");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(r.output, "ppdeploy: error: stdout: cannot write: No space left on device (0 bytes were written)\n");
}

TEST(FullDiskTest, AClosedPipeEndsQuietly) {
  // SIGPIPE ignored (as under some supervisors): the write fails with EPIPE, which is no error message.
  TempDir dir;
  auto r = Shell("trap '' PIPE; (\"$PPD\" plan --format json 2>'" + dir / "err" + "'; echo $? > '" + dir / "rc" +
                 "') | true");
  EXPECT_EQ(ReadAll(dir / "rc"), "0\n") << r.output;
  EXPECT_EQ(ReadAll(dir / "err"), "");
}

TEST(FullDiskTest, BenchJsonlOverTheFileSizeLimitStopsAndCountsTheRecordsKept) {
  TempDir dir;
  Child sim({PPDEPLOY_BINARY, "sim", "--port", "0", "--ttft-ms", "1", "--itl-ms", "1"}, dir / "sim.out",
            dir / "sim.err");
  const std::string url = testing::SimUrl(sim.WaitForOutput("listening on", 10));
  ASSERT_FALSE(url.empty()) << sim.Err();
  const std::string jsonl = dir / "bench.jsonl";
  auto r =
      Shell("ulimit -f 4; exec \"$PPD\" bench --url " + url +
            " --concurrency 1 --requests 200 --warmup 0 --input-len 32 --output-len 4 --format json --out-jsonl '" +
            jsonl + "' > /dev/null");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  // "... cannot write: File too large after N records; the file keeps N complete records"
  const std::string key = "the file keeps ";
  const auto at = r.output.find(key);
  ASSERT_NE(at, std::string::npos) << r.output;
  const long kept = std::stol(r.output.substr(at + key.size()));
  EXPECT_GT(kept, 0);
  EXPECT_LT(kept, 200);
  std::istringstream lines(ReadAll(jsonl));
  std::string line;
  long n = 0;
  while (std::getline(lines, line)) {
    EXPECT_TRUE(nlohmann::json::accept(line)) << line;  // no torn last line
    ++n;
  }
  EXPECT_EQ(n, kept);
  sim.Signal(SIGTERM);
  EXPECT_EQ(sim.Wait(10), 0);
}

TEST(BoundedReadTest, DevZeroIsRefusedAfterAFewMiB) {
  // The commands; their time and memory are measured in docs/safety.md, not asserted here.
  auto c = Shell("exec \"$PPD\" calibrate --log /dev/zero");
  EXPECT_EQ(c.exit_code, 1);
  EXPECT_EQ(c.output,
            "ppdeploy: error: /dev/zero: cannot read: more than the limit of 8388608 bytes (not a regular file; read "
            "up to the limit)\n");
  auto v = Shell("exec \"$PPD\" verdict /dev/zero x.json");
  EXPECT_EQ(v.exit_code, 1);
  EXPECT_EQ(v.output, c.output);
}

}  // namespace
}  // namespace ppdeploy
