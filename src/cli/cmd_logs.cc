// ppdeploy logs: the server's log (<run-dir>/vllm.log), its tail, or follow it while it runs.
#include <fmt/format.h>
#include <fmt/ostream.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "cli/command.h"
#include "cli/launch_options.h"
#include "cli/multinode_cli.h"
#include "core/error.h"
#include "core/escape.h"
#include "io/files.h"

namespace ppdeploy::cli {
namespace {

struct LogsOptions {
  std::string run_dir;
  int tail = 100;
  bool follow = false;
  std::string node;  ///< multi-node: this node's log
};

ExitCode RunLogs(const LogsOptions& o, CommandIo& io) {
  const std::string run_dir = EffectiveRunDir(o.run_dir);
  auto state = launch::ReadRunState(run_dir);
  if (!state) Fail("nothing was started: no {} (run `ppdeploy start`)", launch::StatePath(run_dir));
  if (!o.node.empty()) SelectNodeLog(*state, o.node, run_dir, o.tail, io.out);
  std::string text = launch::TailFile(state->log_path, o.tail);
  io.out << text;
  io.out.flush();
  if (!o.follow) return ExitCode::kOk;
  // Follow a regular file only: opening a FIFO would wait for a writer, a device has no end to seek to.
  if (!IsRegularFile(state->log_path))
    Fail("--follow: {} is not a regular file; ppdeploy follows only the log file it wrote",
         QuoteForMessage(state->log_path));
  std::ifstream in(state->log_path, std::ios::binary);
  in.seekg(0, std::ios::end);
  std::streamoff offset = in.tellg();
  int idle_after_exit_ms = 0;
  while (idle_after_exit_ms < 1000) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    std::ifstream f(state->log_path, std::ios::binary);
    f.seekg(0, std::ios::end);
    std::streamoff size = f.tellg();
    if (size < offset) offset = 0;  // truncated by a new start
    if (size > offset) {
      f.seekg(offset);
      std::string chunk(static_cast<size_t>(size - offset), '\0');
      f.read(chunk.data(), size - offset);
      io.out << chunk;
      io.out.flush();
      offset = size;
      continue;
    }
    launch::ReapIfChild(state->pid);
    if (!launch::ProcessAlive(state->pid, state->proc_start_ticks)) idle_after_exit_ms += 200;
  }
  return ExitCode::kOk;
}

}  // namespace

RunFunction DeclareLogs(CLI::App* sub) {
  auto opts = std::make_shared<LogsOptions>();
  AddRunDirOption(sub, opts->run_dir);
  sub->add_option("--tail,-n", opts->tail, "last N lines (default 100; 0 = all)")->check(CLI::NonNegativeNumber);
  sub->add_flag("--follow,-f", opts->follow, "keep printing new lines until the server exits (Ctrl-C to leave)");
  sub->add_option("--node", opts->node, "multi-node: the log of this node (as NODES names it)");
  return [opts](CommandIo& io) { return RunLogs(*opts, io); };
}

}  // namespace ppdeploy::cli
