// Record splitter of the vLLM log reader (see log_records.h for how vLLM writes records).
#include "vllm/log_records.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

namespace ppdeploy {
namespace {

constexpr std::size_t npos = std::string_view::npos;
/// Text before the first record start of a physical line that is at most this long is a line lead added
/// by a log collector (docker compose `vllm-1  | `, `2026-04-19 12:59:18.350 | `, journald, k8s) and dropped.
constexpr std::size_t kMaxLead = 96;
/// A record holds at most this many message lines; more header-less lines start a new record of the same
/// process (bounds memory on inputs that never repeat a header).
constexpr std::size_t kMaxRecordLines = 256;
/// Interrupted records wait this many physical lines for their tail, at most this many at a time.
constexpr int kMaxOpenAge = 8;
constexpr std::size_t kMaxOpen = 4;

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || IsDigit(c) || c == '_' || c == '-' || c == '.' || c == ':';
}

struct Prefix {
  std::string_view name, extra;
  std::int64_t pid = 0;
  std::size_t end = 0;  // after ')' and one optional space
};

/// `(name pid=N[, extra])` at text[p] (`(pid=N)` for Ray tasks, `(VllmWorker rank=3 pid=N)` in v0.9-v0.10).
std::optional<Prefix> ParsePrefix(std::string_view t, std::size_t p) {
  if (p >= t.size() || t[p] != '(') return std::nullopt;
  std::size_t i = p + 1;
  std::size_t name_end = i;
  while (name_end < t.size() && name_end - i < 100 && IsNameChar(t[name_end])) ++name_end;
  std::size_t k = name_end;
  if (t.substr(k, 6) == " rank=") {  // "VllmWorker rank=3"
    std::size_t d = k + 6;
    while (d < t.size() && d - k < 16 && IsDigit(t[d])) ++d;
    if (d == k + 6) return std::nullopt;
    name_end = k = d;
  }
  if (name_end > i) {
    if (k >= t.size() || t[k] != ' ') return std::nullopt;
    ++k;
  }
  if (t.substr(k, 4) != "pid=") return std::nullopt;
  k += 4;
  std::size_t d0 = k;
  std::int64_t pid = 0;
  while (k < t.size() && IsDigit(t[k]) && k - d0 < 12) pid = pid * 10 + (t[k++] - '0');
  if (k == d0) return std::nullopt;
  std::size_t extra_begin = k;
  if (k < t.size() && t[k] == ',') {  // Ray: ", ip=10.0.0.2"
    while (k < t.size() && t[k] != ')' && t[k] != '(' && k - extra_begin < 100) ++k;
  }
  if (k >= t.size() || t[k] != ')') return std::nullopt;
  Prefix out;
  out.name = t.substr(i, name_end - i);
  out.pid = pid;
  out.extra = t.substr(extra_begin, k - extra_begin);
  ++k;
  if (k < t.size() && t[k] == ' ') ++k;
  out.end = k;
  return out;
}

constexpr std::string_view kLevels[] = {"INFO", "DEBUG", "WARNING", "ERROR", "CRITICAL", "WARN"};

/// `LEVEL MM-DD HH:MM:SS[.fff] [file:line] ` (or the pre-2024 `file:line] `) at text[p].
struct Header {
  std::string_view level, time, source;
  std::size_t end = 0;
};
std::optional<Header> ParseHeader(std::string_view t, std::size_t p) {
  std::string_view level;
  for (std::string_view lv : kLevels) {
    if (t.substr(p, lv.size()) == lv && p + lv.size() < t.size() && t[p + lv.size()] == ' ') {
      level = lv;
      break;
    }
  }
  if (level.empty()) return std::nullopt;
  std::size_t k = p + level.size() + 1;
  // MM-DD HH:MM:SS
  static constexpr char kShape[] = "00-00 00:00:00";
  if (k + 14 > t.size()) return std::nullopt;
  for (std::size_t j = 0; j < 14; ++j) {
    char want = kShape[j];
    char c = t[k + j];
    if (want == '0' ? !IsDigit(c) : c != want) return std::nullopt;
  }
  std::size_t time_begin = k;
  k += 14;
  if (k < t.size() && (t[k] == '.' || t[k] == ',')) {  // milliseconds (custom logging configs)
    std::size_t d = k + 1;
    while (d < t.size() && IsDigit(t[d]) && d - k < 10) ++d;
    if (d > k + 1) k = d;
  }
  std::string_view time = t.substr(time_begin, k - time_begin);
  if (k >= t.size() || t[k] != ' ') return std::nullopt;
  ++k;
  bool bracket = k < t.size() && t[k] == '[';
  if (bracket) ++k;
  std::size_t src_begin = k;
  while (k < t.size() && t[k] != ']' && t[k] != ' ' && k - src_begin < 300) ++k;
  if (k >= t.size() || t[k] != ']' || k == src_begin) return std::nullopt;
  // the source ends in ":<lineno>"
  std::size_t d = k;
  while (d > src_begin && IsDigit(t[d - 1])) --d;
  if (d == k || d == src_begin || t[d - 1] != ':') return std::nullopt;
  Header h;
  h.level = level;
  h.time = time;
  h.source = t.substr(src_begin, k - src_begin);
  ++k;
  if (k < t.size() && t[k] == ' ') ++k;
  h.end = k;
  return h;
}

/// The level word's start of a header whose date's '-' is at text[dash], or npos.
std::size_t HeaderStartAtDash(std::string_view t, std::size_t dash) {
  if (dash < 7 || dash + 12 > t.size()) return npos;
  if (!IsDigit(t[dash - 1]) || !IsDigit(t[dash - 2]) || t[dash - 3] != ' ') return npos;
  if (!IsDigit(t[dash + 1]) || !IsDigit(t[dash + 2]) || t[dash + 3] != ' ' || t[dash + 6] != ':') return npos;
  for (std::string_view lv : kLevels) {
    if (dash - 3 >= lv.size() && t.substr(dash - 3 - lv.size(), lv.size()) == lv) return dash - 3 - lv.size();
  }
  return npos;
}

void StripAnsi(std::string_view in, std::string& out) {
  out.clear();
  out.reserve(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '\x1b') {
      out.push_back(in[i]);
      continue;
    }
    if (i + 1 < in.size() && in[i + 1] == '[') {
      std::size_t j = i + 2;
      while (j < in.size() && !(in[j] >= 0x40 && in[j] <= 0x7e)) ++j;
      i = j;  // skip the final byte too (loop ++)
    }
  }
}

struct Span {
  std::int64_t line = 0;
  bool owned = false;  // in Rec::arena, else in the input
  std::size_t off = 0, len = 0;
};

struct Rec {
  std::int64_t line = 0;
  std::string process, extra, outer, level, time, source;
  std::optional<std::int64_t> pid;
  std::string arena;
  std::vector<Span> spans;
  bool recovered = false, truncated = false, ended_crlf = false;
  int age = 0;

  void SetHead(const LogRecordStart* h) {
    process.clear();
    extra.clear();
    outer.clear();
    level.clear();
    time.clear();
    source.clear();
    pid.reset();
    if (!h) return;
    process.assign(h->process);
    extra.assign(h->process_extra);
    outer.assign(h->outer_process);
    level.assign(h->level);
    time.assign(h->time);
    source.assign(h->source);
    pid = h->pid;
  }
  void CopyHead(const Rec& o) {
    process = o.process;
    extra = o.extra;
    outer = o.outer;
    level = o.level;
    time = o.time;
    source = o.source;
    pid = o.pid;
  }
  bool SameHead(const LogRecordStart& h) const {
    return process == h.process && pid == h.pid && extra == h.process_extra && level == h.level && time == h.time &&
           source == h.source;
  }
};

struct FoundStart {
  std::size_t pos = 0;
  LogRecordStart start;
};

/// The first record start at or after `from`, parsed.
std::optional<FoundStart> FindStart(std::string_view text, std::size_t from) {
  const char* base = text.data();
  const std::size_t n = text.size();
  // The first '(' that opens a process prefix. A prefix without a name (Ray's `(pid=N)`) counts mid-line only
  // when a header follows it, so a message that mentions "(pid=123)" is not cut.
  std::optional<FoundStart> paren;
  for (std::size_t i = from; i < n;) {
    const void* hit = std::memchr(base + i, '(', n - i);
    if (!hit) break;
    std::size_t at = static_cast<std::size_t>(static_cast<const char*>(hit) - base);
    i = at + 1;
    std::optional<LogRecordStart> st = ParseLogRecordStart(text, at);  // at a '(': a prefix or nothing
    if (st && (!st->process.empty() || at == 0 || !st->level.empty())) {
      paren = FoundStart{at, *st};
      break;
    }
  }
  // The first header (found from its date's '-') before that.
  const std::size_t limit = paren ? paren->pos : n;
  for (std::size_t i = from; i < limit;) {
    const void* hit = std::memchr(base + i, '-', limit - i);
    if (!hit) break;
    std::size_t at = static_cast<std::size_t>(static_cast<const char*>(hit) - base);
    i = at + 1;
    std::size_t s = HeaderStartAtDash(text, at);
    if (s == npos || s < from) continue;
    if (std::optional<LogRecordStart> st = ParseLogRecordStart(text, s)) return FoundStart{s, *st};
  }
  return paren;
}

enum class Boundary { kNone, kCr, kNul };

class Splitter {
 public:
  Splitter(std::string_view text, const std::function<void(const LogRecord&)>& sink) : text_(text), sink_(sink) {}

  LogSplitStats Run() {
    std::size_t start = 0;
    while (start < text_.size()) {
      const char* nl = static_cast<const char*>(std::memchr(text_.data() + start, '\n', text_.size() - start));
      std::size_t end = nl ? static_cast<std::size_t>(nl - text_.data()) : text_.size();
      std::string_view line = text_.substr(start, end - start);
      start = end + 1;
      ++stats_.lines;
      if (static_cast<std::int64_t>(line.size()) > stats_.longest_line) {
        stats_.longest_line = static_cast<std::int64_t>(line.size());
        stats_.longest_line_no = stats_.lines;
      }
      bool crlf = false;
      while (!line.empty() && line.back() == '\r') {
        line.remove_suffix(1);
        crlf = true;
      }
      if (line.empty()) {  // blank: ignored (it ends no record, continuations may follow)
        AgeOpen();
        continue;
      }
      Line(line, stats_.lines, crlf);
      AgeOpen();
    }
    if (pending_) Emit(std::exchange(pending_, nullptr));
    while (!open_.empty()) {
      Rec* r = open_.front();
      open_.erase(open_.begin());
      r->truncated = true;
      ++stats_.truncated;
      Emit(r);
    }
    return stats_;
  }

 private:
  std::string_view text_;
  const std::function<void(const LogRecord&)>& sink_;
  LogSplitStats stats_;
  std::vector<std::unique_ptr<Rec>> all_;
  std::vector<Rec*> free_;
  Rec* pending_ = nullptr;  // ended at the previous line end: may get continuation lines
  Rec* owner_ = nullptr;    // receives the text at the current position of the current line
  std::vector<Rec*> open_;  // interrupted mid-line, waiting for their tail (oldest first)
  std::string strip_buf_;
  std::vector<LogRecordLine> lines_;
  // per line
  std::int64_t ln_ = 0;
  bool first_text_ = true;  // nothing of this physical line has been given to a record yet
  bool line_start_ = true;  // only a dropped lead precedes the current position on this line

  Rec* NewRec(const LogRecordStart* h, std::int64_t line) {
    Rec* r;
    if (!free_.empty()) {
      r = free_.back();
      free_.pop_back();
    } else {
      all_.push_back(std::make_unique<Rec>());
      r = all_.back().get();
    }
    r->line = line;
    r->SetHead(h);
    r->arena.clear();
    r->spans.clear();
    r->recovered = r->truncated = r->ended_crlf = false;
    r->age = 0;
    return r;
  }

  bool InInput(std::string_view s) const {
    return s.data() >= text_.data() && s.data() + s.size() <= text_.data() + text_.size();
  }

  Span Store(Rec* r, std::string_view piece) {
    Span sp;
    sp.line = ln_;
    sp.len = piece.size();
    if (InInput(piece)) {
      sp.off = static_cast<std::size_t>(piece.data() - text_.data());
    } else {
      sp.owned = true;
      sp.off = r->arena.size();
      r->arena.append(piece);
    }
    return sp;
  }

  /// Adds `piece` as a new message line of r; returns the record that holds it (a fresh record of the same
  /// process when r is full).
  Rec* AddLine(Rec* r, std::string_view piece) {
    if (r->spans.size() >= kMaxRecordLines) {
      Rec* next = NewRec(nullptr, ln_);
      next->CopyHead(*r);
      Emit(r);
      r = next;
    }
    r->spans.push_back(Store(r, piece));
    return r;
  }

  /// Appends `piece` to r's last message line (the tail of an interrupted line).
  void Concat(Rec* r, std::string_view piece) {
    if (r->spans.empty()) {
      r->spans.push_back(Store(r, piece));
      return;
    }
    Span& last = r->spans.back();
    if (last.owned && last.off + last.len == r->arena.size()) {
      r->arena.append(piece);
      last.len += piece.size();
      return;
    }
    std::string joined;
    joined.reserve(last.len + piece.size());
    joined.append(last.owned ? std::string_view(r->arena).substr(last.off, last.len)
                             : text_.substr(last.off, last.len));
    joined.append(piece);
    last.owned = true;
    last.off = r->arena.size();
    last.len = joined.size();
    r->arena.append(joined);
  }

  void Emit(Rec* r) {
    lines_.clear();
    for (const Span& sp : r->spans) {
      std::string_view s = sp.owned ? std::string_view(r->arena).substr(sp.off, sp.len) : text_.substr(sp.off, sp.len);
      lines_.push_back(LogRecordLine{sp.line, s});
    }
    if (lines_.empty()) lines_.push_back(LogRecordLine{r->line, {}});
    LogRecord rec;
    rec.line = r->line;
    rec.process = r->process;
    rec.pid = r->pid;
    rec.process_extra = r->extra;
    rec.outer_process = r->outer;
    rec.level = r->level;
    rec.time = r->time;
    rec.source = r->source;
    rec.lines = lines_;
    rec.recovered = r->recovered;
    rec.truncated = r->truncated;
    ++stats_.records;
    sink_(rec);
    free_.push_back(r);
  }

  void EmitPending() {
    if (pending_) Emit(std::exchange(pending_, nullptr));
  }

  void Interrupt(Rec* r) {
    r->age = 0;
    open_.push_back(r);
    if (open_.size() > kMaxOpen) {
      Rec* old = open_.front();
      open_.erase(open_.begin());
      old->truncated = true;
      ++stats_.truncated;
      Emit(old);
    }
  }

  void AgeOpen() {
    for (std::size_t i = 0; i < open_.size();) {
      if (++open_[i]->age > kMaxOpenAge) {
        Rec* r = open_[i];
        open_.erase(open_.begin() + static_cast<std::ptrdiff_t>(i));
        r->truncated = true;
        ++stats_.truncated;
        Emit(r);
      } else {
        ++i;
      }
    }
  }

  void Line(std::string_view raw, std::int64_t ln, bool crlf) {
    ln_ = ln;
    std::string_view l = raw;
    if (std::memchr(raw.data(), '\x1b', raw.size())) {
      StripAnsi(raw, strip_buf_);
      l = strip_buf_;
      ++stats_.ansi_lines;
    }
    owner_ = nullptr;
    first_text_ = true;
    line_start_ = true;
    bool has_cr = std::memchr(l.data(), '\r', l.size()) != nullptr;
    bool has_nul = std::memchr(l.data(), '\0', l.size()) != nullptr;
    if (!has_cr && !has_nul) {
      Segment(l, Boundary::kNone);
    } else {
      std::size_t b = 0;
      Boundary before = Boundary::kNone;
      while (true) {
        std::size_t e = b;
        while (e < l.size() && l[e] != '\r' && l[e] != '\0') ++e;
        if (e > b) Segment(l.substr(b, e - b), before);
        if (e >= l.size()) break;
        if (l[e] == '\0') {
          std::size_t r = e;
          while (r < l.size() && l[r] == '\0') ++r;
          ++stats_.nul_runs;
          stats_.nul_bytes += static_cast<std::int64_t>(r - e);
          if (stats_.first_nul_line == 0) stats_.first_nul_line = ln;
          before = Boundary::kNul;
          b = r;
        } else {
          ++stats_.bare_crs;
          before = Boundary::kCr;
          b = e + 1;
        }
      }
    }
    if (owner_) {
      owner_->ended_crlf = crlf;
      // every path that gave text to owner_ has already delivered the previous pending record
      EmitPending();
      pending_ = std::exchange(owner_, nullptr);
    }
  }

  void Segment(std::string_view seg, Boundary before) {
    std::size_t pos = 0;
    std::size_t seg_text_start = 0;  // after a dropped lead
    std::optional<FoundStart> next = FindStart(seg, 0);
    while (true) {
      std::size_t pre_end = next ? next->pos : seg.size();
      if (pre_end > pos) {
        std::string_view pre = seg.substr(pos, pre_end - pos);
        if (first_text_) {
          if (!open_.empty()) {  // the tail of a record another process interrupted
            Rec* r = open_.back();
            open_.pop_back();
            if (before == Boundary::kNone) {
              Concat(r, pre);
            } else {
              r = AddLine(r, pre);
            }
            r->recovered = true;
            ++stats_.recovered;
            EmitPending();
            owner_ = r;
            first_text_ = false;
            line_start_ = false;
          } else if (next && pos == 0 && before == Boundary::kNone && pre.size() <= kMaxLead) {
            seg_text_start = next->pos;  // a collector's line lead: dropped; the start is still a line start
          } else if (pending_) {         // a header-less line continues the record before it
            owner_ = AddLine(std::exchange(pending_, nullptr), pre);
            first_text_ = false;
            line_start_ = false;
          } else {
            owner_ = AddLine(NewRec(nullptr, ln_), pre);
            first_text_ = false;
            line_start_ = false;
          }
        } else if (owner_) {
          owner_ = AddLine(owner_, pre);
        } else {
          EmitPending();
          owner_ = AddLine(NewRec(nullptr, ln_), pre);
        }
      }
      if (!next) return;
      const std::size_t st = next->pos;
      const LogRecordStart h = next->start;
      next = FindStart(seg, h.end);
      std::size_t q = next ? next->pos : seg.size();
      std::string_view msg = seg.substr(h.end, q - h.end);
      if (line_start_ && pending_ && pending_->ended_crlf && pending_->SameHead(h)) {
        owner_ = AddLine(std::exchange(pending_, nullptr), msg);  // NewLineFormatter continuation
      } else {
        if (owner_) {
          if (st > seg_text_start) {
            Interrupt(owner_);
          } else {
            Emit(owner_);
          }
          owner_ = nullptr;
        }
        if (st > seg_text_start) ++stats_.mid_line_starts;
        EmitPending();
        owner_ = AddLine(NewRec(&h, ln_), msg);
      }
      first_text_ = false;
      line_start_ = false;
      pos = q;
    }
  }
};

}  // namespace

std::optional<LogRecordStart> ParseLogRecordStart(std::string_view text, std::size_t pos) {
  LogRecordStart out;
  std::size_t p = pos;
  bool any_prefix = false;
  for (int depth = 0; depth < 4; ++depth) {
    std::optional<Prefix> px = ParsePrefix(text, p);
    if (!px) break;
    if (any_prefix) out.outer_process = out.process;
    out.process = px->name;
    out.pid = px->pid;
    out.process_extra = px->extra;
    any_prefix = true;
    p = px->end;
  }
  std::optional<Header> h = ParseHeader(text, p);
  if (h) {
    out.level = h->level;
    out.time = h->time;
    out.source = h->source;
    p = h->end;
  } else if (!any_prefix) {
    return std::nullopt;
  }
  out.end = p;
  return out;
}

std::size_t FindLogRecordStart(std::string_view text, std::size_t from) {
  std::optional<FoundStart> f = FindStart(text, from);
  return f ? f->pos : npos;
}

LogSplitStats SplitLogRecords(std::string_view text, const std::function<void(const LogRecord&)>& sink) {
  return Splitter(text, sink).Run();
}

}  // namespace ppdeploy
