// vLLM boot-log parser. Line formats: vllm-rules.md §2 (see log_parser.h). Hand-written std::string_view
// scanning: every known message is found with string_view::find on its fixed text, then its fields are
// read left to right by a Cursor. No regex, no recursion, no exceptions escape.
#include "vllm/log_parser.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string>
#include <unordered_map>

namespace ppdeploy {
namespace {

constexpr std::size_t npos = std::string_view::npos;
/// No known line is shorter ("GPU blocks: 1" is 13 bytes).
constexpr std::size_t kShortestKnownLine = 12;

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsSpace(char c) { return c == ' ' || c == '\t'; }

/// Keeps valid UTF-8 (so the strings can go into JSON), replaces control bytes and invalid sequences by '?'.
std::string Sanitize(std::string_view s, std::size_t max_len = 4096) {
  std::string out;
  out.reserve(std::min(s.size(), max_len));
  std::size_t i = 0;
  while (i < s.size() && out.size() < max_len) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      out.push_back(c >= 0x20 && c != 0x7f ? static_cast<char>(c) : (c == '\t' ? ' ' : '?'));
      ++i;
      continue;
    }
    std::size_t len = c >= 0xf5 ? 0 : c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 0;
    bool ok = len > 0 && i + len <= s.size();
    for (std::size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(s[i + k]) & 0xc0) == 0x80;
    if (ok && len == 3) {  // no overlongs, no surrogates
      auto c1 = static_cast<unsigned char>(s[i + 1]);
      ok = !(c == 0xe0 && c1 < 0xa0) && !(c == 0xed && c1 >= 0xa0);
    }
    if (ok && len == 4) {
      auto c1 = static_cast<unsigned char>(s[i + 1]);
      ok = !(c == 0xf0 && c1 < 0x90) && !(c == 0xf4 && c1 >= 0x90);
    }
    if (ok) {
      out.append(s.substr(i, len));
      i += len;
    } else {
      out.push_back('?');
      ++i;
    }
  }
  if (i < s.size()) out += "...";
  return out;
}

/// Left-to-right reader over one line. Every Read* returns false (and leaves `ok` false) on a mismatch;
/// `truncated()` tells whether the mismatch was the end of the line.
struct Cursor {
  std::string_view s;
  std::size_t pos = 0;
  bool ok = true;
  bool hit_end = false;

  bool Fail() {
    if (pos >= s.size()) hit_end = true;
    ok = false;
    return false;
  }
  bool AtEnd() const { return pos >= s.size(); }
  void SkipSpaces() {
    while (pos < s.size() && IsSpace(s[pos])) ++pos;
  }
  /// Consumes `lit` exactly.
  bool Lit(std::string_view lit) {
    if (!ok) return false;
    std::string_view rest = s.substr(std::min(pos, s.size()));
    if (rest.substr(0, lit.size()) == lit) {
      pos += lit.size();
      return true;
    }
    // A prefix of `lit` that runs to the end of the line is a truncation.
    if (rest.size() < lit.size() && lit.substr(0, rest.size()) == rest) pos = s.size();
    return Fail();
  }
  /// Consumes `lit` if it is next; no failure otherwise.
  bool Opt(std::string_view lit) {
    if (!ok) return false;
    if (s.substr(std::min(pos, s.size())).substr(0, lit.size()) == lit) {
      pos += lit.size();
      return true;
    }
    return false;
  }
  /// Moves just past the next `lit` at or after pos.
  bool SkipPast(std::string_view lit) {
    if (!ok) return false;
    std::size_t at = s.find(lit, pos);
    if (at == npos) {
      pos = s.size();
      return Fail();
    }
    pos = at + lit.size();
    return true;
  }
  /// A decimal number: optional '-', digits, optional fraction. No exponent, no inf/nan.
  bool Double(double& out) {
    if (!ok) return false;
    std::size_t b = pos;
    std::size_t e = pos;
    if (e < s.size() && s[e] == '-') ++e;
    std::size_t d0 = e;
    while (e < s.size() && IsDigit(s[e])) ++e;
    if (e == d0) return Fail();
    if (e < s.size() && s[e] == '.') {
      ++e;
      while (e < s.size() && IsDigit(s[e])) ++e;
    }
    double v = 0;
    auto r = std::from_chars(s.data() + b, s.data() + e, v);
    if (r.ec != std::errc() || !std::isfinite(v)) return Fail();
    pos = static_cast<std::size_t>(r.ptr - s.data());
    out = v;
    return true;
  }
  /// A non-negative integer, optionally with ',' thousands separators ("807,792"). At most 18 digits.
  bool Int(std::int64_t& out, bool commas = false) {
    if (!ok) return false;
    std::size_t e = pos;
    std::int64_t v = 0;
    int digits = 0;
    while (e < s.size()) {
      char c = s[e];
      if (IsDigit(c)) {
        if (++digits > 18) return Fail();
        v = v * 10 + (c - '0');
        ++e;
      } else if (commas && c == ',' && digits > 0 && e + 1 < s.size() && IsDigit(s[e + 1])) {
        ++e;
      } else {
        break;
      }
    }
    if (digits == 0) return Fail();
    pos = e;
    out = v;
    return true;
  }
  bool Int32(int& out) {
    std::int64_t v = 0;
    if (!Int(v)) return false;
    if (v > 1'000'000'000) return Fail();
    out = static_cast<int>(v);
    return true;
  }
  /// A size unit: "GiB" or "GB", optionally preceded by one space (format_gib values are printed as "12.3GiB").
  bool GiB() {
    if (!ok) return false;
    Opt(" ");
    if (Opt("GiB") || Opt("GB")) return true;
    return Fail();
  }
  /// Characters up to (not including) one of `stops` or the end.
  std::string_view Until(std::string_view stops) {
    std::size_t e = std::min(s.find_first_of(stops, pos), s.size());
    std::string_view r = s.substr(std::min(pos, s.size()), e - std::min(pos, s.size()));
    pos = e;
    return r;
  }
};

/// The text after position `at` of marker `m` in `s`, or npos if absent.
std::size_t After(std::string_view s, std::string_view m) {
  std::size_t at = s.find(m);
  return at == npos ? npos : at + m.size();
}

/// Removes ANSI escape sequences (ESC '[' params final-byte, and lone ESC).
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

// ---- Python-repr key/value lists (non-default args dict, engine config) ----

/// Scans one value up to a top-level ',' (or '}' when `dict`), honouring quotes and brackets.
std::string_view ScanValue(std::string_view s, std::size_t& pos, bool dict) {
  std::size_t b = pos;
  int depth = 0;
  char quote = 0;
  while (pos < s.size()) {
    char c = s[pos];
    if (quote) {
      if (c == '\\') {
        pos += 2;
        continue;
      }
      if (c == quote) quote = 0;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '(' || c == '[' || c == '{') {
      ++depth;
    } else if (c == ')' || c == ']' || c == '}') {
      if (depth == 0 && c == '}' && dict) break;
      if (depth > 0) --depth;
    } else if (c == ',' && depth == 0) {
      break;
    }
    ++pos;
  }
  pos = std::min(pos, s.size());
  std::string_view v = s.substr(b, pos - b);
  while (!v.empty() && IsSpace(v.back())) v.remove_suffix(1);
  return v;
}

/// Parses `'k': v, ...}` (dict = true, pos after '{') or `k=v, k=v` (dict = false). Returns false when
/// the dict is not closed (truncated line).
bool ScanKeyValues(std::string_view s, std::size_t pos, bool dict,
                   std::vector<std::pair<std::string, std::string>>& out) {
  for (int guard = 0; guard < 100000; ++guard) {
    while (pos < s.size() && IsSpace(s[pos])) ++pos;
    if (pos >= s.size()) return !dict;
    if (dict && s[pos] == '}') return true;
    std::string_view key;
    if (s[pos] == '\'' || s[pos] == '"') {
      char q = s[pos];
      std::size_t e = s.find(q, pos + 1);
      if (e == npos) return false;
      key = s.substr(pos + 1, e - pos - 1);
      pos = e + 1;
      while (pos < s.size() && IsSpace(s[pos])) ++pos;
      if (pos >= s.size() || s[pos] != ':') return false;
    } else {
      std::size_t b = pos;
      while (pos < s.size() && (IsAlpha(s[pos]) || IsDigit(s[pos]) || s[pos] == '_')) ++pos;
      key = s.substr(b, pos - b);
      if (key.empty() || pos >= s.size() || s[pos] != (dict ? ':' : '=')) return false;
    }
    ++pos;
    while (pos < s.size() && IsSpace(s[pos])) ++pos;
    std::string_view value = ScanValue(s, pos, dict);
    out.emplace_back(Sanitize(key, 200), Sanitize(value, 4096));
    if (pos < s.size() && s[pos] == ',') ++pos;
  }
  return false;
}

std::string Unquote(std::string_view v) {
  if (v.size() >= 2 && (v.front() == '\'' || v.front() == '"') && v.back() == v.front()) {
    return std::string(v.substr(1, v.size() - 2));
  }
  return std::string(v);
}

// ---- the parser ----

class Parser {
 public:
  BootLog Run(std::string_view text) {
    std::size_t start = 0;
    while (start < text.size()) {
      std::size_t nl = text.find('\n', start);
      bool terminated = nl != npos;
      std::size_t end = terminated ? nl : text.size();
      std::string_view line = text.substr(start, end - start);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      ++out_.lines;
      start = end + 1;
      if (line.size() < kShortestKnownLine) continue;  // fast path: blank and tiny lines hold nothing
      line_no_ = out_.lines;
      Line(line);
    }
    if (suppressed_ > 0) out_.warnings.push_back(fmt::format("... {} more warnings not shown", suppressed_));
    return std::move(out_);
  }

 private:
  BootLog out_;
  std::int64_t line_no_ = 0;
  std::int64_t suppressed_ = 0;
  bool warned_nul_ = false;
  int warned_long_ = 0;
  std::string ansi_buf_;
  std::unordered_map<std::string, std::size_t> worker_index_;
  std::string proc_key_;        // key of the current line's process ("" = no prefix)
  LogProcess proc_;             // the current line's process
  std::string v0_profile_key_;  // process of the last V0 "Memory profiling takes" line
  bool have_v0_profile_ = false;

  void Warn(std::string msg) {
    if (out_.warnings.size() < kMaxLogWarnings) {
      out_.warnings.push_back(std::move(msg));
    } else {
      ++suppressed_;
    }
  }
  /// A known line that did not parse: "truncated" when the fields ran out at the end of the line.
  void Problem(std::string_view kind, const Cursor& c) {
    if (out_.warnings.size() >= kMaxLogWarnings) {
      ++suppressed_;
      return;
    }
    bool truncated = c.hit_end || c.pos >= c.s.size();
    // Show the text around where parsing stopped (a long line is cut on both sides).
    std::size_t at = std::min(c.pos, c.s.size());
    std::size_t from = at > 100 ? at - 100 : 0;
    Warn(fmt::format("line {}: {} {} line: '{}{}'", line_no_, truncated ? "truncated" : "malformed", kind,
                     from > 0 ? "..." : "", Sanitize(c.s.substr(from), 160)));
  }

  WorkerLog& Worker() {
    auto it = worker_index_.find(proc_key_);
    if (it != worker_index_.end()) return out_.workers[it->second];
    worker_index_.emplace(proc_key_, out_.workers.size());
    WorkerLog w;
    w.key = proc_key_;
    w.process = proc_;
    out_.workers.push_back(std::move(w));
    return out_.workers.back();
  }
  WorkerLog& WorkerByKey(const std::string& key) {
    std::string saved = std::exchange(proc_key_, key);
    LogProcess saved_proc = proc_;
    auto it = worker_index_.find(key);
    if (it == worker_index_.end()) proc_ = LogProcess{};
    WorkerLog& w = Worker();
    proc_key_ = std::move(saved);
    proc_ = std::move(saved_proc);
    return w;
  }

  /// Finds `(<name> pid=<n>[, ...])` near the start; sets proc_/proc_key_; returns the message start.
  std::size_t Prefix(std::string_view l) {
    proc_key_.clear();
    proc_ = LogProcess{};
    std::size_t lim = std::min<std::size_t>(l.size(), 512);
    std::size_t p = l.substr(0, lim).find(" pid=");
    if (p == npos) return 0;
    std::size_t open = l.substr(0, p).rfind('(');
    if (open == npos || p - open > 200 || l.substr(open, p - open).find(')') != npos) return 0;
    Cursor c{l, p + 5};
    std::int64_t pid = 0;
    if (!c.Int(pid)) return 0;
    std::size_t close = l.find(')', c.pos);
    if (close == npos || close - c.pos > 200) return 0;
    std::string_view name = l.substr(open + 1, p - open - 1);
    proc_ = ParseLogProcessName(name);
    proc_.name = Sanitize(name, 200);
    proc_.pid = pid;
    bool ranked = proc_.dp || proc_.pp || proc_.pcp || proc_.tp || proc_.dcp || proc_.ep || proc_.rank;
    bool known = ranked || name == "Worker" || name.starts_with("EngineCore") || name == "APIServer";
    proc_key_ = known ? proc_.name : fmt::format("{} pid={}", proc_.name, pid);
    return close + 1;
  }

  void Line(std::string_view raw) {
    if (!warned_nul_ && raw.find('\0') != npos) {
      warned_nul_ = true;
      Warn(fmt::format("line {}: binary data (NUL bytes) in the input; such lines are scanned as text", line_no_));
    }
    if (raw.size() > (std::size_t{1} << 20) && warned_long_ < 3) {
      ++warned_long_;
      Warn(fmt::format("line {}: very long line ({} bytes)", line_no_, raw.size()));
    }
    std::string_view l = raw;
    if (l.find('\x1b') != npos) {
      StripAnsi(raw, ansi_buf_);
      l = ansi_buf_;
    }
    std::string_view m = l.substr(Prefix(l));
    if (Dispatch(m)) ++out_.recognized_lines;
  }

  /// Quick pre-filter: every known kind's fixed text contains one of these (checked by the test
  /// EveryKindIsRecognisedFromItsMarkerAlone). Most lines of a real log (requests, stats) contain none, and
  /// 15 finds are cheaper than the ~35 of the full dispatch.
  static bool MayBeKnown(std::string_view m) {
    static constexpr std::string_view kAnchors[] = {
        "emory",    "KV cache", "concurrency", "took",    "Graph capturing", "block",  "Hidden layers",
        "To serve", "args",     "LLM",         "weights", "Actual usage",    "Using ", "\xe2\x96\x88"};
    for (std::string_view anchor : kAnchors) {
      if (m.find(anchor) != npos) return true;
    }
    return false;
  }

  /// Returns true if the line is of a known kind.
  bool Dispatch(std::string_view m) {
    if (!MayBeKnown(m)) return false;
    std::size_t a;
    bool known = false;
    if ((a = After(m, "Available KV cache memory:")) != npos) {
      Cursor c{m, a};
      c.SkipSpaces();
      double v = 0;
      if (c.Double(v) && c.GiB()) {
        Worker().available_kv_gib = v;
      } else {
        Problem("'Available KV cache memory'", c);
      }
      return true;
    }
    if ((a = After(m, "GPU KV cache size:")) != npos) {
      Cursor c{m, a};
      c.SkipSpaces();
      std::int64_t v = 0;
      if (c.Int(v, true) && c.Lit(" tokens")) {
        out_.kv_tokens.push_back(v);
        out_.kv_tokens_process.push_back(proc_key_);
      } else {
        Problem("'GPU KV cache size'", c);
      }
      known = true;  // the one-line format continues with "Maximum concurrency"
    }
    if ((a = After(m, "Maximum concurrency for ")) != npos) {
      Cursor c{m, a};
      MaxConcurrency mc;
      if (c.Int(mc.tokens_per_request, true) && c.Lit(" tokens per request:") && (c.SkipSpaces(), c.Double(mc.x)) &&
          c.Lit("x")) {
        mc.process = proc_key_;
        out_.max_concurrency.push_back(std::move(mc));
      } else {
        Problem("'Maximum concurrency'", c);
      }
      return true;
    }
    if (known) return true;
    if ((a = After(m, "Model loading took ")) != npos) {
      Cursor c{m, a};
      double gib = 0, s = 0;
      if (c.Double(gib) && c.GiB()) {
        WorkerLog& w = Worker();
        w.model_loading_gib = gib;
        c.Opt(" memory");
        if (c.Lit(" and ") && c.Double(s) && c.Lit(" seconds")) {
          w.model_loading_s = s;
        } else {
          Problem("'Model loading took'", c);
        }
      } else {
        Problem("'Model loading took'", c);
      }
      return true;
    }
    if ((a = After(m, "Loading model weights took ")) != npos) {  // V0
      Cursor c{m, a};
      double gib = 0;
      if (c.Double(gib) && c.GiB()) {
        Worker().model_loading_gib = gib;
      } else {
        Problem("'Loading model weights took'", c);
      }
      return true;
    }
    if ((a = After(m, "Estimated CUDA graph memory: ")) != npos) {
      Cursor c{m, a};
      double v = 0;
      if (c.Double(v) && c.GiB()) {
        Worker().cuda_graph_estimate_gib = v;
      } else {
        Problem("'Estimated CUDA graph memory'", c);
      }
      return true;
    }
    if ((a = After(m, "CUDA graph pool memory: ")) != npos) {
      Cursor c{m, a};
      double act = 0, est = 0;
      if (c.Double(act) && c.GiB() && c.Lit(" (actual), ")) {
        WorkerLog& w = Worker();
        w.cuda_graph_actual_gib = act;
        if (c.Double(est) && c.GiB() && c.Lit(" (estimated)")) {
          w.cuda_graph_pool_estimated_gib = est;
        } else {
          Problem("'CUDA graph pool memory'", c);
        }
      } else {
        Problem("'CUDA graph pool memory'", c);
      }
      return true;
    }
    if ((a = After(m, "Graph capturing finished in ")) != npos) {
      Cursor c{m, a};
      double s = 0, gib = 0;
      if (c.Double(s) && c.Lit(" secs, took ") && c.Double(gib) && c.GiB()) {
        WorkerLog& w = Worker();
        w.graph_capture_s = s;
        w.graph_capture_gib = gib;
      } else {
        Problem("'Graph capturing finished'", c);
      }
      return true;
    }
    if ((a = After(m, "Initial free memory ")) != npos && m.find("kv_cache_memory_bytes") != npos) {
      Cursor c{m, a};
      double free = 0, res = 0;
      if (c.Double(free) && c.GiB() && c.Lit(", reserved ") && c.Double(res) && c.GiB() &&
          c.Lit(" memory for KV Cache")) {
        WorkerLog& w = Worker();
        w.initial_free_gib = free;
        w.kv_cache_memory_override_gib = res;
      } else {
        Problem("kv_cache_memory_bytes 'Initial free memory'", c);
      }
      return true;
    }
    if ((a = After(m, "is equivalent to --gpu-memory-utilization=")) != npos) {
      Cursor c{m, a};
      double eq = 0;
      if (c.Double(eq)) {
        WorkerLog& w = Worker();
        w.cg_hint_equivalent_util = eq;
        std::size_t b = After(m, "current --gpu-memory-utilization=");
        Cursor c2{m, b == npos ? m.size() : b};
        double cur = 0;
        if (b != npos && c2.Double(cur)) w.cg_hint_current_util = cur;
      } else {
        Problem("CUDA graph utilization hint", c);
      }
      return true;
    }
    if ((a = After(m, "kv cache block size to ")) != npos &&
        (m.find("Setting kv cache block size") != npos || m.find("Forcing kv cache block size") != npos)) {
      Cursor c{m, a};
      int bs = 0;
      std::string_view backend;
      if (c.Int32(bs) && c.Lit(" for ") && !(backend = c.Until(" ")).empty() && c.Lit(" backend")) {
        if (out_.block_size && *out_.block_size != bs) {
          Warn(fmt::format("line {}: kv cache block size changes from {} to {}", line_no_, *out_.block_size, bs));
        }
        out_.block_size = bs;
        out_.block_size_backend = Sanitize(backend, 100);
      } else {
        Problem("kv cache block size", c);
      }
      return true;
    }
    if ((a = After(m, "Hidden layers were unevenly partitioned: ")) != npos) {
      Cursor c{m, a};
      std::vector<int> parts;
      c.Opt("[");
      while (c.ok) {
        c.SkipSpaces();
        int v = 0;
        if (!c.Int32(v)) break;
        parts.push_back(v);
        c.SkipSpaces();
        if (!c.Opt(",")) break;
      }
      if (c.ok && !parts.empty()) {
        out_.partition = std::move(parts);
      } else {
        Problem("'Hidden layers were unevenly partitioned'", c);
      }
      return true;
    }
    if ((a = After(m, "Overriding num_gpu_blocks=")) != npos) {
      Cursor c{m, a};
      std::int64_t from = 0, to = 0;
      if (c.Int(from) && c.Lit(" with num_gpu_blocks_override=") && c.Int(to)) {
        out_.num_gpu_blocks_computed = from;
        out_.num_gpu_blocks_override = to;
      } else {
        Problem("'Overriding num_gpu_blocks'", c);
      }
      return true;
    }
    if ((a = After(m, "init engine (profile, create kv cache, warmup model) took ")) != npos) {
      Cursor c{m, a};
      double s = 0;
      if (c.Double(s) && (c.Opt(" seconds") || c.Lit(" s"))) {
        out_.init_engine_s = s;
        double comp = 0;
        if (c.Opt(" (compilation: ") && c.Double(comp)) out_.init_engine_compilation_s = comp;
      } else {
        Problem("'init engine ... took'", c);
      }
      return true;
    }
    if ((a = After(m, "To serve at least one request with the model")) != npos) {
      Cursor c{m, a};
      NotEnoughKvError e;
      double needed = 0, avail = 0;
      if (c.SkipPast("max seq len (") && c.Int(e.max_seq_len) && c.Lit("), (") && c.Double(needed) && c.GiB() &&
          c.Lit(" KV cache is needed") && c.SkipPast("available KV cache memory (") && c.Double(avail) && c.GiB() &&
          c.Lit(")")) {
        e.needed_gib = needed;
        e.available_gib = avail;
        std::size_t b = After(m, "estimated maximum model length is ");
        if (b != npos) {
          Cursor c2{m, b};
          std::int64_t mml = 0;
          if (c2.Int(mml, true)) {
            e.estimated_max_model_len = mml;
          } else {
            Problem("not-enough-KV-cache error (estimated maximum model length)", c2);
          }
        }
        out_.not_enough_kv = e;
      } else {
        Problem("not-enough-KV-cache error", c);
      }
      return true;
    }
    if ((a = After(m, "is larger than the maximum number of tokens that can be stored in KV cache (")) != npos) {
      Cursor c{m, a};
      MaxSeqLenError e;
      std::size_t b = After(m, "max seq len (");
      Cursor c1{m, b == npos ? m.size() : b};
      if (c.Int(e.kv_tokens) && c.Lit(")") && b != npos && c1.Int(e.max_seq_len)) {
        out_.max_seq_len_error = e;
      } else {
        Problem("V0 max-seq-len error", c.ok ? c1 : c);
      }
      return true;
    }
    if (m.find("No available memory for the cache blocks") != npos) {
      out_.no_available_memory = true;
      return true;
    }
    if ((a = After(m, "non-default args: ")) != npos) {
      Cursor c{m, a};
      if (c.Lit("{")) {
        LaunchArgs args;
        bool closed = ScanKeyValues(m, c.pos, true, args.raw);
        if (!closed) Problem("'non-default args'", Cursor{m, m.size()});
        FillArgs(args, "non-default args");
        out_.launch_args = std::move(args);
        if (++out_.boots == 2) {
          Warn(
              fmt::format("line {}: a second 'non-default args' line: the log holds more than one boot; single "
                          "values are the last boot's",
                          line_no_));
        }
      } else {
        Problem("'non-default args'", c);
      }
      return true;
    }
    if ((a = After(m, "LLM engine (v")) != npos &&
        (m.find("Initializing a V1 LLM engine") != npos || m.find("Initializing an LLM engine") != npos)) {
      Cursor c{m, a};
      std::string_view v = c.Until(") ");
      if (!v.empty() && v.size() < 100) SetVersion(v, "engine config line");
      std::size_t b = After(m, "with config: ");
      if (b != npos) {
        LaunchArgs args;
        ScanKeyValues(m, b, false, args.raw);
        FillArgs(args, "engine config");
        out_.engine_config = std::move(args);
      }
      return true;
    }
    if ((a = After(m, "vLLM API server version ")) != npos || (a = After(m, "vLLM version")) != npos) {
      Cursor c{m, a};
      c.Opt(":");
      c.SkipSpaces();
      c.Opt("v");
      std::string_view v = c.Until(" ,;)");
      if (!v.empty() && IsDigit(v[0]) && v.size() < 100) {
        SetVersion(v, "version line");
        return true;
      }
    }
    if (m.find("Starting vLLM API server") != npos) {
      out_.api_server_started = true;
      return true;
    }
    if ((a = After(m, "Memory profiling takes ")) != npos) {
      Cursor c{m, a};
      double s = 0;
      if (!(c.Double(s) && c.Lit(" seconds"))) {
        Problem("'Memory profiling takes'", c);
        return true;
      }
      if (c.Opt(". Total non KV cache memory:")) {  // V1 DEBUG one-liner
        V1MemoryProfile p;
        p.profile_s = s;
        double v = 0;
        c.SkipSpaces();
        if (c.Double(v) && c.GiB()) p.non_kv_gib = v;
        if (c.Lit("; torch peak memory increase: ") && c.Double(v) && c.GiB()) p.torch_peak_increase_gib = v;
        if (c.Lit("; ")) {
          if (c.Opt("non-torch forward increase memory: ")) {
            if (c.Double(v) && c.GiB()) p.non_torch_increase_gib = v;
          } else if (c.Opt("total consumed (from mem_get_info): ")) {
            if (c.Double(v) && c.GiB()) p.total_consumed_gib = v;
          }
          if (c.ok) c.Opt("; ");
        }
        if (c.ok && c.Lit("weights memory: ") && c.Double(v) && c.GiB()) p.weights_gib = v;
        if (!c.ok) Problem("V1 'Memory profiling takes' (DEBUG)", c);
        Worker().v1_profile = p;
      } else {  // V0 block, first line
        WorkerLog& w = Worker();
        if (!w.v0_profile) w.v0_profile.emplace();
        w.v0_profile->profile_s = s;
        v0_profile_key_ = proc_key_;
        have_v0_profile_ = true;
      }
      return true;
    }
    if ((a = After(m, "the current vLLM instance can use total_gpu_memory (")) != npos) {
      Cursor c{m, a};
      V0MemoryProfile& p = V0Profile();
      double total = 0, util = 0, req = 0;
      if (c.Double(total) && c.GiB() && c.Lit(") x gpu_memory_utilization (") && c.Double(util) && c.Lit(") = ") &&
          c.Double(req) && c.GiB()) {
        p.total_gpu_gib = total;
        p.gpu_memory_utilization = util;
        p.requested_gib = req;
      } else {
        Problem("V0 memory profile 'total_gpu_memory'", c);
      }
      return true;
    }
    if ((a = After(m, "model weights take ")) != npos) {
      Cursor c{m, a};
      V0MemoryProfile& p = V0Profile();
      double v = 0;
      if (c.Double(v) && c.GiB()) p.weights_gib = v;
      if (c.Lit("; non_torch_memory takes ") && c.Double(v) && c.GiB()) p.non_torch_gib = v;
      if (c.Lit("; PyTorch activation peak memory takes ") && c.Double(v) && c.GiB()) p.activation_peak_gib = v;
      if (c.Lit("; the rest of the memory reserved for KV Cache is ") && c.Double(v) && c.GiB()) p.kv_cache_gib = v;
      if (!c.ok) Problem("V0 memory profile 'model weights take'", c);
      return true;
    }
    if ((a = After(m, "Memory profiling results: ")) != npos) {
      V0MemoryProfile& p = Worker().v0_profile.emplace();
      Cursor c{m, a};
      int fields = 0;
      while (!c.AtEnd()) {
        c.SkipSpaces();
        std::string_view key = c.Until("= ");
        if (!c.Opt("=")) break;
        double v = 0;
        if (!c.Double(v)) break;
        bool gib = c.Opt("GiB") || c.Opt("GB");
        ++fields;
        if (key == "total_gpu_memory" && gib)
          p.total_gpu_gib = v;
        else if (key == "initial_memory_usage" && gib)
          p.initial_memory_usage_gib = v;
        else if (key == "peak_torch_memory" && gib)
          p.peak_torch_memory_gib = v;
        else if (key == "memory_usage_post_profile" && gib)
          p.memory_usage_post_profile_gib = v;
        else if (key == "non_torch_memory" && gib)
          p.non_torch_gib = v;
        else if (key == "kv_cache_size" && gib)
          p.kv_cache_gib = v;
        else if (key == "gpu_memory_utilization" && !gib)
          p.gpu_memory_utilization = v;
      }
      if (!c.ok || fields < 7) Problem("V0 'Memory profiling results'", c);
      return true;
    }
    if ((a = After(m, " blocks: ")) != npos &&
        (m.find("GPU blocks: ") != npos || m.find("# cuda blocks: ") != npos || m.find("CPU blocks: ") != npos ||
         m.find("# neuron blocks: ") != npos)) {
      // V0: "# GPU blocks: N, # CPU blocks: M" ("# cuda blocks", "# neuron blocks"; "GPU blocks: N" in copies).
      Cursor c{m, a};
      std::int64_t g = 0, k = 0;
      if (m.substr(0, a).ends_with("CPU blocks: ")) {  // only "CPU blocks: M"
        if (c.Int(k)) out_.num_cpu_blocks = k;
      } else if (c.Int(g)) {
        out_.num_gpu_blocks = g;
        if (c.Opt(", # CPU blocks: ") || c.Opt(", CPU blocks: ")) {
          if (c.Int(k)) out_.num_cpu_blocks = k;
        }
      }
      if (!c.ok) Problem("V0 '# GPU blocks'", c);
      return true;
    }
    if ((a = After(m, "Free memory on device (")) != npos || (a = After(m, "Actual usage is ")) != npos) {
      UsageSummary(m);
      return true;
    }
    if ((a = After(m, "Multiplying the GPU KV cache size by the ")) != npos) {
      Cursor c{m, a};
      int n = 0;
      if (c.SkipPast("_world_size ") && c.Int32(n)) {
        out_.kv_tokens_cp_multiplier = n;
      } else {
        Problem("'Multiplying the GPU KV cache size'", c);
      }
      return true;
    }
    if ((a = After(m, "Using ")) != npos) {
      std::size_t e;
      if ((e = m.find(" data type to store kv cache", a)) != npos) {
        out_.kv_cache_dtype_logged = Sanitize(m.substr(a, std::min<std::size_t>(e - a, 100)), 100);
        return true;
      }
      if (m.find("Using custom fp8 kv-cache format for DeepSeek") != npos ||
          m.find("Using DeepSeek's fp8_ds_mla KV cache format") != npos) {
        out_.dsa_kv_cache_format = "fp8_ds_mla";
        return true;
      }
      if (m.find("Using standard fp8 KV cache format") != npos) {
        out_.dsa_kv_cache_format = "fp8";
        return true;
      }
      if (m.find("Using bfloat16 kv-cache for DeepSeek") != npos) {
        out_.dsa_kv_cache_format = "bfloat16";
        return true;
      }
      if ((e = m.find(" KV cache format for ", a)) != npos && e - a < 100 && m.substr(a, e - a).find(' ') == npos) {
        out_.dsa_kv_cache_format = Sanitize(m.substr(a, e - a), 100);
        return true;
      }
    }
    // The ASCII-art banner of newer versions: "█▄█▀ ... version 0.19.2rc1.dev8+g4b7f5ea1a".
    if ((a = After(m, "\xe2\x96\x88  version ")) != npos || (a = After(m, "\xe2\x96\x88 version ")) != npos) {
      Cursor c{m, a};
      std::string_view v = c.Until(" ");
      if (!v.empty() && v.size() < 100) SetVersion(v, "banner");
      return true;
    }
    return false;
  }

  V0MemoryProfile& V0Profile() {
    // Continuation lines of the V0 block usually carry no prefix: attribute them to the block's process.
    WorkerLog& w = (proc_key_.empty() && have_v0_profile_) ? WorkerByKey(v0_profile_key_) : Worker();
    if (!w.v0_profile) w.v0_profile.emplace();
    return *w.v0_profile;
  }

  void UsageSummary(std::string_view m) {
    MemoryUsageSummary u;
    bool bad = false;
    Cursor bad_at{m, 0};
    auto field = [&](std::string_view marker, auto&& read) {
      std::size_t b = After(m, marker);
      if (b == npos) return;
      Cursor c{m, b};
      if (!read(c)) {
        bad = true;
        bad_at = c;
      }
    };
    double f = 0, t = 0, util = 0, req = 0;
    field("Free memory on device (", [&](Cursor& c) {
      if (c.Double(f) && c.Lit("/") && c.Double(t) && c.GiB() && c.Lit(")")) {
        u.free_at_startup_gib = f;
        u.total_gib = t;
        return true;
      }
      return false;
    });
    field("Desired GPU memory utilization is (", [&](Cursor& c) {
      if (c.Double(util) && c.Lit(", ") && c.Double(req) && c.GiB() && c.Lit(")")) {
        u.gpu_memory_utilization = util;
        u.requested_gib = req;
        return true;
      }
      return false;
    });
    // The refusal "... on startup is less than desired GPU memory utilization (U, R GiB)".
    std::size_t less = After(m, "is less than desired GPU memory utilization (");
    if (less != npos && u.free_at_startup_gib) {
      InsufficientFreeMemoryError e;
      e.free_gib = f;
      e.total_gib = t;
      Cursor c{m, less};
      if (c.Double(util) && c.Lit(", ") && c.Double(req) && c.GiB()) {
        e.gpu_memory_utilization = util;
        e.requested_gib = req;
      } else {
        Problem("'Free memory on device ... is less than desired'", c);
      }
      out_.insufficient_free_memory = e;
      return;
    }
    field("Actual usage is ", [&](Cursor& c) {
      double v = 0;
      if (!(c.Double(v) && c.GiB() && c.Lit(" for consumed memory"))) return false;
      u.consumed_gib = v;
      if (!(c.SkipPast(", ") && c.Double(v) && c.GiB() && c.Lit(" for peak activation"))) return false;
      u.peak_activation_gib = v;
      if (!(c.Lit(", and ") && c.Double(v) && c.GiB() && c.Lit(" for CUDAGraph memory"))) return false;
      u.cuda_graph_gib = v;
      return true;
    });
    field("`--kv-cache-memory=", [&](Cursor& c) {
      std::int64_t b1 = 0, b2 = 0;
      if (!(c.Int(b1) && c.Lit("`"))) return false;
      u.fit_kv_cache_memory_bytes = b1;
      if (c.SkipPast("`--kv-cache-memory=") && c.Int(b2) && c.Lit("`")) u.full_kv_cache_memory_bytes = b2;
      return c.ok;
    });
    field("Current kv cache memory in use is ", [&](Cursor& c) {
      double v = 0;
      if (c.Double(v) && c.GiB()) {
        u.kv_cache_in_use_gib = v;
        return true;
      }
      return false;
    });
    if (bad) Problem("memory usage summary ('Free memory on device' / 'Actual usage is')", bad_at);
    Worker().usage_summary = u;
  }

  void SetVersion(std::string_view v, std::string_view source) {
    std::string s = Sanitize(v, 100);
    if (!out_.version) {
      out_.version = s;
    } else if (*out_.version != s && !out_.version->starts_with(s) && !s.starts_with(*out_.version)) {
      Warn(fmt::format("line {}: a second vLLM version '{}' ({}) differs from '{}'", line_no_, s, source,
                       *out_.version));
    }
  }

  void FillArgs(LaunchArgs& a, std::string_view what) {
    auto bad = [&](const std::string& key, const std::string& value, std::string_view type) {
      Warn(fmt::format("line {}: {}: '{}' is not {}: '{}'", line_no_, what, key, type, Sanitize(value, 80)));
    };
    auto as_int = [&](const std::string& k, const std::string& v, auto& dst) {
      if (v == "None") return;
      Cursor c{v, 0};
      std::int64_t x = 0;
      bool neg = c.Opt("-");
      if (c.Int(x) && c.AtEnd() && !neg) {
        using T = typename std::remove_reference_t<decltype(dst)>::value_type;
        if (sizeof(T) < sizeof(std::int64_t) && x > 1'000'000'000) return bad(k, v, "an integer in range");
        dst = static_cast<T>(x);
      } else {
        bad(k, v, "a non-negative integer");
      }
    };
    auto as_double = [&](const std::string& k, const std::string& v, std::optional<double>& dst) {
      if (v == "None") return;
      Cursor c{v, 0};
      double x = 0;
      if (c.Double(x) && c.AtEnd()) {
        dst = x;
      } else {
        bad(k, v, "a number");
      }
    };
    auto as_bool = [&](const std::string& k, const std::string& v, std::optional<bool>& dst) {
      if (v == "True")
        dst = true;
      else if (v == "False")
        dst = false;
      else if (v != "None")
        bad(k, v, "True/False");
    };
    auto as_str = [&](const std::string& v, std::optional<std::string>& dst) {
      if (v != "None") dst = Unquote(v);
    };
    for (const auto& [k, v] : a.raw) {
      if (k == "tensor_parallel_size")
        as_int(k, v, a.tensor_parallel_size);
      else if (k == "pipeline_parallel_size")
        as_int(k, v, a.pipeline_parallel_size);
      else if (k == "data_parallel_size")
        as_int(k, v, a.data_parallel_size);
      else if (k == "decode_context_parallel_size")
        as_int(k, v, a.decode_context_parallel_size);
      else if (k == "enable_expert_parallel")
        as_bool(k, v, a.enable_expert_parallel);
      else if (k == "max_model_len" || k == "max_seq_len")
        as_int(k, v, a.max_model_len);
      else if (k == "gpu_memory_utilization")
        as_double(k, v, a.gpu_memory_utilization);
      else if (k == "kv_cache_dtype")
        as_str(v, a.kv_cache_dtype);
      else if (k == "block_size")
        as_int(k, v, a.block_size);
      else if (k == "speculative_config") {
        if (v != "None") a.speculative_config = v;
      } else if (k == "enforce_eager")
        as_bool(k, v, a.enforce_eager);
      else if (k == "kv_cache_memory_bytes")
        as_int(k, v, a.kv_cache_memory_bytes);
      else if (k == "num_gpu_blocks_override")
        as_int(k, v, a.num_gpu_blocks_override);
      else if (k == "max_num_seqs")
        as_int(k, v, a.max_num_seqs);
      else if (k == "max_num_batched_tokens")
        as_int(k, v, a.max_num_batched_tokens);
      else if (k == "model")
        as_str(v, a.model);
      else if (k == "quantization")
        as_str(v, a.quantization);
      else if (k == "dtype")
        as_str(v, a.dtype);
    }
  }
};

}  // namespace

LogProcess ParseLogProcessName(std::string_view name) {
  LogProcess p;
  p.name = Sanitize(name, 200);
  std::size_t r = name.find("rank=");
  if (r != npos) {
    Cursor c{name, r + 5};
    int v = 0;
    if (c.Int32(v)) p.rank = v;
  }
  // "Worker_DP0_PP1_TP2_EP5", "EngineCore_DP0": rank parts are <LETTERS><digits> after '_'.
  std::size_t i = name.find('_');
  while (i != npos && i < name.size()) {
    std::size_t e = name.find('_', i + 1);
    std::string_view part = name.substr(i + 1, (e == npos ? name.size() : e) - i - 1);
    std::size_t k = 0;
    while (k < part.size() && IsAlpha(part[k])) ++k;
    std::string_view letters = part.substr(0, k);
    Cursor c{part, k};
    int v = 0;
    if (k > 0 && c.Int32(v) && c.AtEnd()) {
      if (letters == "DP")
        p.dp = v;
      else if (letters == "PP")
        p.pp = v;
      else if (letters == "PCP")
        p.pcp = v;
      else if (letters == "TP")
        p.tp = v;
      else if (letters == "DCP")
        p.dcp = v;
      else if (letters == "EP")
        p.ep = v;
    }
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

BootLog ParseBootLog(std::string_view text) {
  try {
    return Parser().Run(text);
  } catch (const std::bad_alloc&) {
    throw;
  } catch (const std::exception& e) {  // fmt or a logic slip: never let a log crash the caller
    BootLog log;
    log.warnings.push_back(std::string("internal parser error: ") + e.what());
    return log;
  }
}

}  // namespace ppdeploy
