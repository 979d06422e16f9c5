// How the launch commands (and `rebalance`, which runs the same steps) print the results of
// launch::StartServer / StopServer / WaitForServer / ComparePoolAndCalibrate.
#pragma once

#include "cli/command.h"
#include "launch/server.h"

namespace ppdeploy::cli {

/// Prints a start result; returns the exit code `start` gives for it. `run_dir_flag` is what the user passed
/// (repeated in the "next:" hint when not empty).
ExitCode RenderStart(const launch::StartResult& result, const launch::PreparedLaunch& prepared, CommandIo& io,
                     const std::string& run_dir_flag);
/// Prints a stop result (exit 0).
void RenderStop(const launch::StopResult& result, CommandIo& io);
/// Prints a wait result and, when ready, the pool comparison; returns `wait`'s exit code (0 ready, 1 died or
/// timed out, 130 interrupted).
ExitCode RenderWait(const launch::WaitResult& result, const launch::PoolCheck* pool, CommandIo& io);

/// launch::WaitForServer with progress on stderr (cli/progress.h), Ctrl-C handled (cli/interrupt.h), and the
/// pool comparison once ready; prints what `wait` prints and returns its exit code.
ExitCode WaitAndReport(const std::string& run_dir, launch::WaitOptions options, CommandIo& io);

}  // namespace ppdeploy::cli
