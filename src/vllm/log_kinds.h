// The table of record kinds of the vLLM log reader: one entry per known message (docs/vllm-rules.md §2 and the
// vLLM 0.19 lines of tests/data/llmd-v0.19), each a small matcher over one message line. The reader
// (log_parser.cc) finds a kind by its fixed text, tells the boot tracker the kind's role, and lets the
// matcher store the figures through a LogKindContext. Internal to src/vllm; exposed for the tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "vllm/log_parser.h"

namespace ppdeploy {

/// What a kind means for telling boots apart (see BootSummary) and their outcome.
enum class LogKindRole {
  kFigure,        ///< a figure of the boot under way
  kVersion,       ///< the API server's version line or banner: starts a boot unless the boot just started
  kLaunchArgs,    ///< `non-default args`: starts a boot unless this boot has none and got no further
  kEngineConfig,  ///< `Initializing ... LLM engine`: starts a boot when the same process already printed one
  kPool,          ///< the KV pool was sized: the boot is complete unless it fails
  kReady,         ///< the API server is up: later errors do not fail the boot
  kEngineReady,   ///< the engine finished starting (`init engine ... took`): the same for a boot without API server
  kFatal,         ///< vLLM's own refusal (not enough KV memory, free memory below the request): the boot failed
  kError,         ///< a traceback starts
};

/// What a matcher can do with a line (implemented by the reader).
class LogKindContext {
 public:
  virtual ~LogKindContext() = default;
  virtual BootLog& Boot() = 0;                        ///< the current boot's figures
  virtual WorkerLog& Worker() = 0;                    ///< the current record's process in that boot
  virtual const std::string& ProcessKey() const = 0;  ///< its key ("" = no prefix)
  /// A known line that did not parse: `at` is where parsing stopped, `truncated` when the line ran out there.
  virtual void Problem(std::string_view kind, std::string_view line, std::size_t at, bool truncated) = 0;
  /// A warning; the reader adds the file and line.
  virtual void Warn(std::string message) = 0;
  virtual void SetVersion(std::string_view version, std::string_view source) = 0;
  virtual void AssignRanks(const RankAssignment& ranks) = 0;  ///< the current process's rank line
  virtual void Fatal(std::string_view what) = 0;              ///< a known fatal line (escaped by the reader)
};

/// Parses a line of the kind; `after_anchor` is the position just after the anchor.
using LogKindParse = void (*)(LogKindContext& ctx, std::string_view line, std::size_t after_anchor);
/// Whether a line that holds the anchor is of the kind after all (e.g. "Using X data type ..." names a dtype).
using LogKindAccept = bool (*)(std::string_view line, std::size_t after_anchor);

/// One record kind. A line is of this kind when it contains `anchor` and `accept` (when set) agrees. Kinds are
/// tried in table order; after a match the search stops, except for `also_others` kinds (the one-line
/// capacity format holds two kinds). A line that is of a kind but does not parse is still of that kind: its
/// figures stay unset and `parse` reports the problem.
struct LogKind {
  std::string_view name;    ///< e.g. "available_kv"
  std::string_view anchor;  ///< fixed text, e.g. "Available KV cache memory:"
  LogKindRole role;
  LogKindParse parse;
  LogKindAccept accept = nullptr;
  bool also_others = false;
  std::string_view example;  ///< a line of this kind (format from the source named in log_kinds.cc)
};

/// Every kind, in matching order.
std::span<const LogKind> LogKinds();

/// The quick pre-filter: every kind's anchor contains one of these; a line that contains none is skipped
/// without trying any kind (most lines of a real log: requests, stats).
std::span<const std::string_view> LogKindTriggers();

/// The first kind (at index `first` or later in LogKinds()) that `line` is of: its index and the position just
/// after its anchor. nullopt when the line is of no kind.
struct LogKindHit {
  std::size_t index = 0;
  std::size_t after_anchor = 0;
};
std::optional<LogKindHit> FindLogKind(std::string_view line, std::size_t first = 0);

/// The exception line of a Python traceback: `ValueError: ...`, `torch.OutOfMemoryError: CUDA out of memory`,
/// `pydantic_core._pydantic_core.ValidationError: 1 validation error ...`, `AssertionError` alone.
bool IsExceptionLine(std::string_view line);

}  // namespace ppdeploy
