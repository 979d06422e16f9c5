// The record splitter of the vLLM log reader: turns the bytes of a vLLM log into log records the way
// vLLM's logging wrote them. Pure (no I/O), never throws on any input (fuzzed by fuzz/log_records_fuzz.cc).
//
// How vLLM writes a record (sources, checked against vLLM's code):
//  - `vllm/logger.py`: format `"{VLLM_LOGGING_PREFIX}%(levelname)s %(asctime)s [%(fileinfo)s:%(lineno)d]
//    %(message)s"`, date format `%m-%d %H:%M:%S` (docs/vllm-rules.md §2); before 2024 `... %(filename)s:%(lineno)d]`
//    without the bracket. The header is optional for us: copied snippets and raw stderr have none.
//  - `vllm/logging_utils/formatter.py` NewLineFormatter: a multi-line message (or a traceback appended by
//    logger.exception) has every "\n" replaced by "\r\n" + the header, so its continuation lines end the
//    previous line with CR LF and repeat the exact header: they belong to the same record.
//  - ColoredFormatter / `_add_prefix`: ANSI colour codes around the level, time, file and process prefix.
//  - `_add_prefix` (vllm/utils/system_utils.py): every line a worker, engine or API-server process writes to
//    stdout/stderr starts with `(<name> pid=<pid>) `; Ray's log monitor writes `(<actor> pid=<pid>, ip=<ip>) `,
//    and nests it after the driver's (`(APIServer pid=1) (DPEngineCoreActor pid=5, ip=10.0.0.2) INFO ...`).
//  - Several processes share one stdout: a write that is not a whole line (tqdm progress bars end with CR,
//    writes larger than PIPE_BUF split) lets another process's record start mid-line; the interrupted
//    record's tail then starts the next physical line without any prefix.
//  - Files truncated under a running writer (logrotate copytruncate) hold runs of NUL bytes where the
//    writer's old offset was; the text after the run is a new record.
//
// So the splitter: splits physical lines on LF (a trailing CR is dropped and remembered); removes ANSI escape
// sequences; cuts a line at bare CRs and NUL runs (each piece is a new message line of the same record, or a
// new record if it starts with a prefix/header); finds record starts (`(name pid=N[, ...]) ` and/or a header)
// anywhere in a line and starts a new record there; joins NewLineFormatter continuation lines and header-less
// lines to the record they continue; and rejoins a record interrupted mid-line with its tail. Bytes are kept
// as they are (invalid UTF-8 included); messages quote them through core/escape.h (EscapeForMessage).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace ppdeploy {

/// One message line of a record and the physical line (1-based) it came from.
struct LogRecordLine {
  std::int64_t line = 0;
  std::string_view text;
};

/// One log record. Views are valid only during the callback that receives it.
struct LogRecord {
  std::int64_t line = 0;  ///< physical line (1-based) where the record starts
  /// The process prefix nearest to the header (`Worker_PP1_TP3`, `VllmWorker rank=2`, `RayWorkerWrapper`),
  /// "" when the record has none; `pid` its pid; `process_extra` what follows the pid (`, ip=10.0.0.2`).
  std::string_view process;
  std::optional<std::int64_t> pid;
  std::string_view process_extra;
  std::string_view outer_process;  ///< a Ray-forwarded record's outer prefix name (`APIServer`), else ""
  /// The header: level (`INFO`, `DEBUG`, `WARNING`, `ERROR`, `CRITICAL`), time (`08-21 18:00:00`), source
  /// (`gpu_worker.py:349`); all "" when the record has no header.
  std::string_view level, time, source;
  /// The message: [0] its first line, then continuation lines (NewLineFormatter's, header-less lines that
  /// follow, pieces after a bare CR or a NUL run). Never empty.
  std::span<const LogRecordLine> lines;
  bool recovered = false;  ///< interrupted mid-line by another record and rejoined with its tail
  bool truncated = false;  ///< interrupted mid-line by another record; its tail was never found
  bool has_header() const { return !level.empty(); }
};

/// What the splitter saw besides the records (for warnings).
struct LogSplitStats {
  std::int64_t lines = 0;     ///< physical lines (LF-separated; a last line without LF counts)
  std::int64_t records = 0;   ///< records delivered
  std::int64_t nul_runs = 0;  ///< runs of NUL bytes
  std::int64_t nul_bytes = 0;
  std::int64_t first_nul_line = 0;   ///< line of the first NUL run (0 = none)
  std::int64_t bare_crs = 0;         ///< CRs not at the end of a line
  std::int64_t ansi_lines = 0;       ///< lines that held ANSI escape sequences
  std::int64_t mid_line_starts = 0;  ///< records that started mid-line (another process interleaved)
  std::int64_t recovered = 0;        ///< interrupted records rejoined with their tail
  std::int64_t truncated = 0;        ///< interrupted records whose tail never came
  std::int64_t longest_line = 0;     ///< bytes
  std::int64_t longest_line_no = 0;
};

/// Splits `text` into records and calls `sink` once per record, in the order records are complete (an
/// interrupted record comes after the record that interrupted it). Linear in the input; no copy of lines
/// that need no change. Never throws (std::bad_alloc aside, or what `sink` throws).
LogSplitStats SplitLogRecords(std::string_view text, const std::function<void(const LogRecord&)>& sink);

/// A record start at `text[pos]`: one or more process prefixes and/or a header. `end` is where the message
/// starts. Exposed for tests and the fuzz target.
struct LogRecordStart {
  std::size_t end = 0;
  std::string_view process, process_extra, outer_process;
  std::optional<std::int64_t> pid;
  std::string_view level, time, source;
};
std::optional<LogRecordStart> ParseLogRecordStart(std::string_view text, std::size_t pos);

/// The position of the first record start at or after `from` in `text`, or npos.
std::size_t FindLogRecordStart(std::string_view text, std::size_t from);

}  // namespace ppdeploy
