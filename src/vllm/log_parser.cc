// vLLM boot-log reader: records (log_records.h) -> kinds (log_kinds.h) -> boots (this file). See log_parser.h.
#include "vllm/log_parser.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <deque>
#include <unordered_map>
#include <unordered_set>

#include "core/escape.h"
#include "vllm/log_kinds.h"
#include "vllm/log_records.h"

namespace ppdeploy {
namespace {

constexpr std::size_t npos = std::string_view::npos;
/// No known message line is shorter ("GPU blocks: 1" is 13 bytes).
constexpr std::size_t kShortestKnownLine = 12;
/// More boots than this in one file are merged into the last one (bounds memory on hostile input).
constexpr std::size_t kMaxBoots = 10000;

bool IsRanked(const LogProcess& p) { return p.dp || p.pp || p.pcp || p.tp || p.dcp || p.ep || p.rank; }

/// A name that identifies one process within a boot: its key is the name; other names (`Worker` before the
/// rename, `RayWorkerWrapper`, `VllmWorkerProcess`) are keyed "name pid=N".
bool IsUniqueName(const LogProcess& p) {
  return IsRanked(p) || p.name.starts_with("EngineCore") || p.name == "APIServer";
}

/// Per-boot state.
struct BootAcc {
  BootLog log;
  std::int64_t first_line = 1, last_line = 0;
  std::unordered_map<std::string, std::size_t> worker_index;
  std::unordered_map<std::int64_t, RankAssignment> ranks_by_pid;
  std::unordered_map<std::string, std::int64_t> pid_by_name;
  std::unordered_set<std::string> engine_keys;
  bool seen_args = false, seen_body = false, api = false;
  bool ready_api = false, ready_engine = false, pool = false;
  std::optional<BootFailure> failure;
  std::vector<std::string> warnings;
  std::int64_t suppressed = 0;
  bool ready() const { return api ? ready_api : ready_engine; }
};

class Parser final : public LogKindContext {
 public:
  explicit Parser(const LogParseOptions& o) : opts_(o) { boots_.emplace_back(); }

  BootLog Run(std::string_view text) {
    LogSplitStats st = SplitLogRecords(text, [this](const LogRecord& r) { Record(r); });
    boots_.back().last_line = st.lines;
    if (boots_.size() == 1 && st.records == 0) boots_.clear();  // empty input: no boot
    FileWarnings(st);
    return Finish(st);
  }

  // ---- LogKindContext ----
  BootLog& Boot() override { return boots_.back().log; }
  const std::string& ProcessKey() const override { return key_; }
  WorkerLog& Worker() override {
    BootAcc& b = boots_.back();
    auto it = b.worker_index.find(key_);
    if (it != b.worker_index.end()) return b.log.workers[it->second];
    b.worker_index.emplace(key_, b.log.workers.size());
    WorkerLog w;
    w.key = key_;
    w.process = proc_;
    if (proc_.pid) {
      auto r = b.ranks_by_pid.find(*proc_.pid);
      if (r != b.ranks_by_pid.end()) w.ranks = r->second;
    }
    b.log.workers.push_back(std::move(w));
    return b.log.workers.back();
  }
  void Problem(std::string_view kind, std::string_view line, std::size_t at, bool truncated) override {
    BootAcc& b = boots_.back();
    if (b.warnings.size() >= kMaxLogWarnings) {
      ++b.suppressed;
      return;
    }
    at = std::min(at, line.size());
    std::size_t from = at > 100 ? at - 100 : 0;  // the text around where parsing stopped
    // A malformed line names the byte where reading stopped ("729,\xff280 tokens": 0xff), in hex when it is
    // not printable ASCII, so an invisible or binary byte is found without a hex dump.
    std::string stop;
    if (auto bad = FindInvalidUtf8(line)) {
      stop = fmt::format(" (invalid UTF-8 byte 0x{:02x} at byte {} of the message)",
                         static_cast<unsigned char>(line[*bad]), *bad);
    } else if (!truncated && at < line.size()) {
      const auto ch = static_cast<unsigned char>(line[at]);
      const auto cp = ch >= 0x80 ? DecodeUtf8At(line, at) : std::nullopt;
      stop = cp ? fmt::format(" (stops at byte {} of the message: '{}')", at,
                              EscapeForMessage(line.substr(at, cp->length), 0))
             : ch > 0x20 && ch < 0x7f
                 ? fmt::format(" (stops at byte {} of the message: '{}')", at, static_cast<char>(ch))
                 : fmt::format(" (stops at byte {} of the message: 0x{:02x})", at, ch);
    }
    Warn(fmt::format("{} {} line{}: '{}{}'", truncated ? "truncated" : "malformed", kind, stop, from > 0 ? "..." : "",
                     EscapeForMessage(line.substr(from), 160)));
  }
  void Warn(std::string message) override {
    BootAcc& b = boots_.back();
    if (b.warnings.size() >= kMaxLogWarnings) {
      ++b.suppressed;
      return;
    }
    b.warnings.push_back(fmt::format("{}: {}", Where(line_no_), message));
  }
  void SetVersion(std::string_view v, std::string_view source) override {
    BootLog& b = Boot();
    std::string s = EscapeForMessage(v, 100);
    if (!b.version) {
      b.version = s;
    } else if (*b.version != s && !b.version->starts_with(s) && !s.starts_with(*b.version)) {
      Warn(fmt::format("a second vLLM version '{}' ({}) differs from '{}'", s, source, *b.version));
    }
  }
  void AssignRanks(const RankAssignment& ra) override {
    BootAcc& b = boots_.back();
    if (proc_.pid) {
      b.ranks_by_pid[*proc_.pid] = ra;
      for (WorkerLog& w : b.log.workers)
        if (w.process.pid == proc_.pid) w.ranks = ra;
    }
    Worker().ranks = ra;
  }
  void Fatal(std::string_view what) override { Cause(what); }

 private:
  LogParseOptions opts_;
  std::deque<BootAcc> boots_;  // deque: a new boot moves no other
  std::vector<std::string> file_warnings_;
  std::int64_t recognized_ = 0;
  std::int64_t line_no_ = 0;
  std::int64_t record_line_ = 0;
  bool may_fail_ = true;  // the current record can fail the boot (ERROR level or no header)
  std::string key_;       // current record's process key
  LogProcess proc_;       // current record's process
  struct CachedProcess {
    std::string key;
    LogProcess proc;
  };
  std::unordered_map<std::string, CachedProcess> proc_cache_;
  std::string cache_key_;

  std::string Where(std::int64_t line) const {
    return opts_.source.empty() ? fmt::format("line {}", line) : fmt::format("{}:{}", opts_.source, line);
  }

  void SetProcess(const LogRecord& r) {
    if (r.process.empty() && !r.pid) {
      key_.clear();
      proc_ = LogProcess{};
      return;
    }
    cache_key_.assign(r.process);
    cache_key_.push_back('\0');
    char digits[24];
    auto [end, ec] = std::to_chars(digits, digits + sizeof digits, r.pid.value_or(-1));
    (void)ec;
    cache_key_.append(digits, end);
    auto it = proc_cache_.find(cache_key_);
    if (it == proc_cache_.end()) {
      CachedProcess c;
      c.proc = ParseLogProcessName(r.process);
      c.proc.pid = r.pid;
      bool known = IsUniqueName(c.proc);
      c.key = known ? c.proc.name : fmt::format("{} pid={}", c.proc.name, r.pid.value_or(0));
      if (proc_cache_.size() > 100000) proc_cache_.clear();  // hostile input: many distinct prefixes
      it = proc_cache_.emplace(cache_key_, std::move(c)).first;
    }
    key_ = it->second.key;
    proc_ = it->second.proc;
  }

  void NewBoot(std::int64_t line) {
    // A record rejoined late (its tail came after a restart) can carry a line before the current boot's start:
    // it stays in the current boot, so boots keep their order.
    if (boots_.size() >= kMaxBoots || line <= boots_.back().first_line) return;
    boots_.back().last_line = line - 1;
    boots_.emplace_back();
    boots_.back().first_line = line;
  }

  /// Whether a line of `role` cannot belong to the current boot (see BootSummary); records what it saw.
  void BootRole(LogKindRole role) {
    BootAcc* b = &boots_.back();
    switch (role) {
      case LogKindRole::kVersion:
        if (b->seen_args || b->seen_body) b = (NewBoot(record_line_), &boots_.back());
        b->api = true;
        break;
      case LogKindRole::kLaunchArgs:
        if (b->seen_args || b->seen_body) b = (NewBoot(record_line_), &boots_.back());
        b->seen_args = b->api = true;
        break;
      case LogKindRole::kEngineConfig:
        if (b->engine_keys.count(key_)) b = (NewBoot(record_line_), &boots_.back());
        b->engine_keys.insert(key_);
        break;
      case LogKindRole::kPool:
        b->pool = b->seen_body = true;
        break;
      case LogKindRole::kReady:
      case LogKindRole::kEngineReady:
        b->seen_body = true;
        break;
      case LogKindRole::kFigure:
      case LogKindRole::kFatal:
      case LogKindRole::kError:
        b->seen_body = true;
        break;
    }
  }

  void Ready(bool api_level) {
    BootAcc& b = boots_.back();
    bool was = b.ready();
    if (api_level) {
      b.ready_api = true;
    } else {
      b.ready_engine = true;
    }
    if (!was && b.ready() && b.failure) {
      Warn(fmt::format("an error at {} did not stop the boot (the server became ready): {}", Where(b.failure->line),
                       b.failure->message));
      b.failure.reset();
    }
  }

  /// An ERROR record or a traceback: the boot fails unless the server becomes ready after it.
  void Error(std::string_view message) {
    BootAcc& b = boots_.back();
    if (b.ready() || b.failure) return;
    BootFailure f;
    f.line = line_no_;
    f.process = EscapeForMessage(key_, 200);
    f.message = EscapeForMessage(message, 300);
    b.failure = std::move(f);
  }

  /// An exception line or a known fatal line: the root cause (the first one of the boot).
  void Cause(std::string_view text) {
    BootAcc& b = boots_.back();
    if (b.ready()) return;
    if (!b.failure) Error(text);
    if (b.failure && b.failure->cause.empty()) {
      b.failure->cause_line = line_no_;
      b.failure->cause = EscapeForMessage(text, 300);
    }
  }

  void Record(const LogRecord& r) {
    record_line_ = r.line;
    SetProcess(r);
    // A ranked worker or an engine core with another pid: a restart. (Not APIServer: several API servers may
    // share the name, and in a container it is pid 1 in every boot.)
    if (proc_.pid && (IsRanked(proc_) || proc_.name.starts_with("EngineCore"))) {
      BootAcc& b = boots_.back();
      auto [it, inserted] = b.pid_by_name.emplace(key_, *proc_.pid);
      if (!inserted && it->second != *proc_.pid) {
        NewBoot(r.line);
        boots_.back().pid_by_name.emplace(key_, *proc_.pid);
      }
    }
    if (r.process == "APIServer" || r.outer_process == "APIServer") boots_.back().api = true;
    bool error_level = r.level == "ERROR" || r.level == "CRITICAL";
    // A traceback in a DEBUG/INFO/WARNING record is information (logger.debug(..., exc_info=True)); one in an
    // ERROR record or on raw stderr is an error.
    may_fail_ = error_level || r.level.empty();
    bool known = false;
    for (std::size_t i = 0; i < r.lines.size(); ++i) {
      line_no_ = r.lines[i].line;
      std::string_view m = r.lines[i].text;
      if (i == 0 && error_level) Error(m);
      if (m.size() >= kShortestKnownLine && Dispatch(m)) {
        ++recognized_;
        known = true;
      }
      if (may_fail_ && IsExceptionLine(m)) Cause(m);
    }
    // A known record cut by another process's output whose tail never came may have lost part of a figure.
    // (Progress bars are cut like that all the time: their tail comes many lines later, or never.)
    if (r.truncated && known && file_warnings_.size() < 20) {
      file_warnings_.push_back(fmt::format(
          "{}: a record{} was cut mid-line by another process's output and its tail was not found: '{}'", Where(r.line),
          key_.empty() ? "" : " of " + EscapeForMessage(key_, 100), EscapeForMessage(r.lines.back().text, 120)));
    }
    // Rejoined with a tail found later: the figure read is a guess at which piece belongs where, so it is said.
    if (r.recovered && known && file_warnings_.size() < 20) {
      file_warnings_.push_back(fmt::format(
          "{}: a record{} was cut mid-line by another process's output and rejoined with a tail from a later line; "
          "read as '{}' (check the figure)",
          Where(r.line), key_.empty() ? "" : " of " + EscapeForMessage(key_, 100),
          EscapeForMessage(r.lines.front().text, 120)));
    }
  }

  /// Tries the kinds on one message line; true if one matched.
  bool Dispatch(std::string_view m) {
    bool known = false;
    auto kinds = LogKinds();
    for (std::optional<LogKindHit> hit = FindLogKind(m); hit; hit = FindLogKind(m, hit->index + 1)) {
      const LogKind& kind = kinds[hit->index];
      // The boot tracker sees the role first: a version line of a new boot must land in the new boot.
      BootRole(kind.role);
      kind.parse(*this, m, hit->after_anchor);
      known = true;
      if (kind.role == LogKindRole::kReady) Ready(true);
      if (kind.role == LogKindRole::kEngineReady) Ready(false);
      if (kind.role == LogKindRole::kError && may_fail_) Error(m);
      if (!kind.also_others) break;
    }
    return known;
  }

  void FileWarnings(const LogSplitStats& st) {
    if (st.nul_runs > 0) {
      file_warnings_.insert(
          file_warnings_.begin(),
          fmt::format("{}: binary data: {} NUL bytes in {} runs (a log truncated under a running writer?); the text "
                      "after a run is read as a new record",
                      Where(st.first_nul_line), st.nul_bytes, st.nul_runs));
    }
    if (st.longest_line > (std::int64_t{1} << 20)) {
      file_warnings_.push_back(
          fmt::format("{}: very long line ({} bytes)", Where(st.longest_line_no), st.longest_line));
    }
  }

  BootLog Finish(const LogSplitStats& st) {
    std::vector<BootSummary> list;
    for (std::size_t i = 0; i < boots_.size(); ++i) {
      BootAcc& b = boots_[i];
      BootSummary s;
      s.index = static_cast<int>(i + 1);
      s.first_line = b.first_line;
      s.last_line = std::max(b.first_line, b.last_line);
      s.ready = b.ready();
      s.failure = b.failure;
      s.status = b.failure ? BootStatus::kFailed : b.pool ? BootStatus::kComplete : BootStatus::kIncomplete;
      s.version = b.log.version;
      s.partition = b.log.partition;
      if (!b.log.kv_tokens.empty()) s.kv_tokens = *std::min_element(b.log.kv_tokens.begin(), b.log.kv_tokens.end());
      s.num_gpu_blocks = b.log.num_gpu_blocks;
      list.push_back(std::move(s));
    }
    int chosen = 0;
    std::string boot_error;
    if (opts_.boot > 0) {
      if (static_cast<std::size_t>(opts_.boot) <= list.size()) {
        chosen = opts_.boot;
      } else {
        boot_error = fmt::format("{}: boot {} was asked for, the log holds {} boot{}",
                                 opts_.source.empty() ? "the log" : opts_.source, opts_.boot, list.size(),
                                 list.size() == 1 ? "" : "s");
      }
    } else {
      for (const BootSummary& s : list)
        if (s.status == BootStatus::kComplete) chosen = s.index;
      if (chosen == 0 && !list.empty()) chosen = list.back().index;
    }
    BootLog out;
    std::vector<std::string> boot_warnings;
    std::int64_t suppressed = 0;
    if (chosen > 0) {
      BootAcc& b = boots_[static_cast<std::size_t>(chosen - 1)];
      out = std::move(b.log);
      boot_warnings = std::move(b.warnings);
      suppressed = b.suppressed;
    }
    out.source = opts_.source;
    out.boot_list = std::move(list);
    out.boots = static_cast<std::int64_t>(out.boot_list.size());
    out.boot = chosen;
    out.boot_requested = opts_.boot > 0;
    out.boot_error = boot_error;
    if (chosen > 0) {
      out.status = out.boot_list[static_cast<std::size_t>(chosen - 1)].status;
      out.failure = out.boot_list[static_cast<std::size_t>(chosen - 1)].failure;
    }
    out.lines = st.lines;
    out.recognized_lines = recognized_;
    // warnings: about the whole file, which boot, then the chosen boot's
    std::vector<std::string> all = std::move(file_warnings_);
    if (out.boots > 1) all.push_back("the log holds more than one boot: " + out.DescribeBoot());
    if (!boot_error.empty()) all.push_back(boot_error);
    for (auto& w : boot_warnings) all.push_back(std::move(w));
    if (all.size() > kMaxLogWarnings) {
      suppressed += static_cast<std::int64_t>(all.size() - kMaxLogWarnings);
      all.resize(kMaxLogWarnings);
    }
    if (suppressed > 0) all.push_back(fmt::format("... {} more warnings not shown", suppressed));
    out.warnings = std::move(all);
    return out;
  }
};

}  // namespace

std::string_view ToString(BootStatus s) {
  switch (s) {
    case BootStatus::kIncomplete:
      return "incomplete";
    case BootStatus::kComplete:
      return "complete";
    case BootStatus::kFailed:
      return "failed";
  }
  return "?";
}

LogProcess ParseLogProcessName(std::string_view name) {
  LogProcess p;
  p.name = EscapeForMessage(name, 200);
  auto int_at = [&](std::size_t at, std::size_t end, std::optional<int>& out) {
    int v = 0;
    std::size_t k = at;
    while (k < end && name[k] >= '0' && name[k] <= '9' && k - at < 9) v = v * 10 + (name[k++] - '0');
    if (k == at || k != end) return;
    out = v;
  };
  std::size_t r = name.find("rank=");
  if (r != npos) {
    std::size_t e = r + 5;
    while (e < name.size() && name[e] >= '0' && name[e] <= '9') ++e;
    int_at(r + 5, e, p.rank);
  }
  // "Worker_DP0_PP1_TP2_EP5", "EngineCore_DP0": rank parts are <LETTERS><digits> after '_'.
  std::size_t i = name.find('_');
  while (i != npos && i < name.size()) {
    std::size_t e = name.find('_', i + 1);
    std::size_t end = e == npos ? name.size() : e;
    std::size_t k = i + 1;
    while (k < end && ((name[k] >= 'A' && name[k] <= 'Z') || (name[k] >= 'a' && name[k] <= 'z'))) ++k;
    std::string_view letters = name.substr(i + 1, k - i - 1);
    if (letters == "DP")
      int_at(k, end, p.dp);
    else if (letters == "PP")
      int_at(k, end, p.pp);
    else if (letters == "PCP")
      int_at(k, end, p.pcp);
    else if (letters == "TP")
      int_at(k, end, p.tp);
    else if (letters == "DCP")
      int_at(k, end, p.dcp);
    else if (letters == "EP")
      int_at(k, end, p.ep);
    i = e;
  }
  return p;
}

const WorkerLog* BootLog::FindWorker(std::string_view key) const {
  for (const auto& w : workers) {
    if (w.key == key) return &w;
  }
  return nullptr;
}

std::string BootLog::Where(std::int64_t line) const {
  return source.empty() ? fmt::format("line {}", line) : fmt::format("{}:{}", source, line);
}

std::string BootLog::WhereBoot() const {
  if (boot <= 0 || static_cast<std::size_t>(boot) > boot_list.size()) return source.empty() ? "the log" : source;
  const BootSummary& b = boot_list[static_cast<std::size_t>(boot - 1)];
  return source.empty() ? fmt::format("lines {}-{}", b.first_line, b.last_line)
                        : fmt::format("{}:{}-{}", source, b.first_line, b.last_line);
}

std::string BootLog::DescribeBoot() const {
  if (boot <= 0 || static_cast<std::size_t>(boot) > boot_list.size())
    return boot_error.empty() ? std::string("no boot") : boot_error;
  const BootSummary& b = boot_list[static_cast<std::size_t>(boot - 1)];
  std::string s = fmt::format("boot {} of {} ({}, {}", boot, boot_list.size(), WhereBoot(), ToString(b.status));
  if (b.failure) {
    s += fmt::format(" at line {}: {}", b.failure->cause.empty() ? b.failure->line : b.failure->cause_line,
                     b.failure->cause.empty() ? b.failure->message : b.failure->cause);
  }
  if (boot_requested) {
    s += ", chosen with --boot";
  } else if (b.status == BootStatus::kComplete && boot_list.size() > 1) {
    s += ", the last complete one";
  }
  s += ")";
  for (const BootSummary& o : boot_list) {
    if (o.index == boot || (o.index < boot && o.status != BootStatus::kFailed)) continue;
    s += fmt::format("; boot {} ({}) {}", o.index,
                     source.empty() ? fmt::format("lines {}-{}", o.first_line, o.last_line)
                                    : fmt::format("{}:{}-{}", source, o.first_line, o.last_line),
                     ToString(o.status));
    if (o.failure) {
      s += fmt::format(" at line {}: {}", o.failure->cause.empty() ? o.failure->line : o.failure->cause_line,
                       o.failure->cause.empty() ? o.failure->message : o.failure->cause);
    }
  }
  return s;
}

BootLog ParseBootLog(std::string_view text, const LogParseOptions& options) {
  try {
    return Parser(options).Run(text);
  } catch (const std::bad_alloc&) {
    throw;
  } catch (const std::exception& e) {  // fmt or a logic slip: never let a log crash the caller
    BootLog log;
    log.source = options.source;
    log.warnings.push_back(std::string("internal parser error: ") + e.what());
    return log;
  }
}

BootLog ParseBootLog(std::string_view text) { return ParseBootLog(text, LogParseOptions{}); }

}  // namespace ppdeploy
