// The record kinds of the vLLM log reader (log_kinds.h). Every matcher reads its line left to right with a
// Cursor (hand-written string_view scanning: no regex, no recursion, no exceptions). Formats: vllm-rules.md
// §2 (row named in each comment), the V0 formats of memory-overheads.md §1, and the vLLM 0.19 formats (marked
// "0.19") seen in the llm-d-planner logs whose facts are in tests/data/llmd-v0.19, checked against vLLM's
// source where the comment names a file. The `example` of each kind is a constructed line in its format
// (values of the seed deployment, /work/shared/seed/digest.en.md, where they fit) or a verbatim line of
// /work/shared/reference/boot-logs-examples.json (named).
#include "vllm/log_kinds.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <optional>
#include <type_traits>
#include <vector>

#include "core/escape.h"
#include "vllm/log_records.h"

namespace ppdeploy {
namespace {

constexpr std::size_t npos = std::string_view::npos;

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsSpace(char c) { return c == ' ' || c == '\t'; }

/// Left-to-right reader over one line. Every Read* returns false (and leaves `ok` false) on a mismatch;
/// `hit_end` tells whether the mismatch was the end of the line.
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
    std::size_t b = std::min(pos, s.size());
    std::size_t e = std::min(s.find_first_of(stops, b), s.size());
    pos = e;
    return s.substr(b, e - b);
  }
};

void Problem(LogKindContext& ctx, std::string_view kind, const Cursor& c) {
  ctx.Problem(kind, c.s, c.pos, c.hit_end || c.pos >= c.s.size());
}

/// The text after marker `m` in `s`, or npos if absent.
std::size_t After(std::string_view s, std::string_view m) {
  std::size_t at = s.find(m);
  return at == npos ? npos : at + m.size();
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
    out.emplace_back(EscapeForMessage(key, 200), EscapeForMessage(value, 4096));
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

void FillArgs(LogKindContext& ctx, LaunchArgs& a, std::string_view what) {
  auto bad = [&](const std::string& key, const std::string& value, std::string_view type) {
    ctx.Warn(fmt::format("{}: '{}' is not {}: '{}'", what, key, type, EscapeForMessage(value, 80)));
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

/// `X GiB` right after the anchor (one optional space before X).
bool GiBAfter(std::string_view m, std::size_t a, double& v, Cursor& c) {
  c = Cursor{m, a};
  c.SkipSpaces();
  return c.Double(v) && c.GiB();
}

// ---- the matchers, one per kind, in table order ----

// §2 "KV budget": `Available KV cache memory: %.2f GiB` / format_gib (may be negative).
void AvailableKv(LogKindContext& ctx, std::string_view m, std::size_t a) {
  Cursor c;
  double v = 0;
  if (GiBAfter(m, a, v, c)) {
    ctx.Worker().available_kv_gib = v;
  } else {
    Problem(ctx, "'Available KV cache memory'", c);
  }
}

// §2 "Capacity": `GPU KV cache size: %s tokens` (then, since 2026-08-04, `, Maximum concurrency ...`).
void KvTokens(LogKindContext& ctx, std::string_view m, std::size_t a) {
  Cursor c{m, a};
  c.SkipSpaces();
  std::int64_t v = 0;
  if (c.Int(v, true) && c.Lit(" tokens")) {
    ctx.Boot().kv_tokens.push_back(v);
    ctx.Boot().kv_tokens_process.push_back(ctx.ProcessKey());
  } else {
    Problem(ctx, "'GPU KV cache size'", c);
  }
}

// §2 "Capacity": `Maximum concurrency for %s tokens per request: %.2fx`.
void MaxConcurrencyLine(LogKindContext& ctx, std::string_view m, std::size_t a) {
  Cursor c{m, a};
  MaxConcurrency mc;
  if (c.Int(mc.tokens_per_request, true) && c.Lit(" tokens per request:") && (c.SkipSpaces(), c.Double(mc.x)) &&
      c.Lit("x")) {
    mc.process = ctx.ProcessKey();
    ctx.Boot().max_concurrency.push_back(std::move(mc));
  } else {
    Problem(ctx, "'Maximum concurrency'", c);
  }
}

// §2 "Model weights": `Model loading took %.4f GB|GiB [memory] and %.6f seconds`.
void ModelLoading(LogKindContext& ctx, std::string_view m, std::size_t a) {
  Cursor c{m, a};
  double gib = 0, s = 0;
  if (c.Double(gib) && c.GiB()) {
    WorkerLog& w = ctx.Worker();
    w.model_loading_gib = gib;
    c.Opt(" memory");
    if (c.Lit(" and ") && c.Double(s) && c.Lit(" seconds")) {
      w.model_loading_s = s;
    } else {
      Problem(ctx, "'Model loading took'", c);
    }
  } else {
    Problem(ctx, "'Model loading took'", c);
  }
}

// V0: `Loading model weights took %.4f GB` (boot-logs-examples.json DEV-GQA-02).
void V0Weights(LogKindContext& ctx, std::string_view m, std::size_t a) {
  Cursor c{m, a};
  double gib = 0;
  if (c.Double(gib) && c.GiB()) {
    ctx.Worker().model_loading_gib = gib;
  } else {
    Problem(ctx, "'Loading model weights took'", c);
  }
}

// §2 "CG estimate": `Estimated CUDA graph memory: %.2f GiB total`.
void CgEstimate(LogKindContext& ctx, std::string_view m, std::size_t a) {
  Cursor c;
  double v = 0;
  if (GiBAfter(m, a, v, c)) {
    ctx.Worker().cuda_graph_estimate_gib = v;
  } else {
    Problem(ctx, "'Estimated CUDA graph memory'", c);
  }
}

// §2 "CG actual vs estimate": `CUDA graph pool memory: %s GiB (actual), %s GiB (estimated), difference: ...`.
void CgPool(LogKindContext& ctx, std::string_view m, std::size_t a) {
  Cursor c{m, a};
  double act = 0, est = 0;
  if (c.Double(act) && c.GiB() && c.Lit(" (actual), ")) {
    WorkerLog& w = ctx.Worker();
    w.cuda_graph_actual_gib = act;
    if (c.Double(est) && c.GiB() && c.Lit(" (estimated)")) {
      w.cuda_graph_pool_estimated_gib = est;
    } else {
      Problem(ctx, "'CUDA graph pool memory'", c);
    }
  } else {
    Problem(ctx, "'CUDA graph pool memory'", c);
  }
}

// §2 "Graph capture": `Graph capturing finished in %.0f secs, took %.2f GiB`.
void GraphCapture(LogKindContext& ctx, std::string_view m, std::size_t a) {
  Cursor c{m, a};
  double s = 0, gib = 0;
  if (c.Double(s) && c.Lit(" secs, took ") && c.Double(gib) && c.GiB()) {
    WorkerLog& w = ctx.Worker();
    w.graph_capture_s = s;
    w.graph_capture_gib = gib;
  } else {
    Problem(ctx, "'Graph capturing finished'", c);
  }
}

// §2 "kv-cache-memory override": `Initial free memory X GiB, reserved Y GiB memory for KV Cache as specified
// by kv_cache_memory_bytes config ...` (v0.11: `reserved Y.YYGiB`). 0.19's profiling line `Initial free
// memory: X GiB; Requested memory: ...` is another kind (not matched here).
bool AcceptKvOverride(std::string_view m, std::size_t) { return m.find("kv_cache_memory_bytes") != npos; }
void KvOverride(LogKindContext& ctx, std::string_view m, std::size_t a) {
  Cursor c{m, a};
  double free = 0, res = 0;
  if (c.Double(free) && c.GiB() && c.Lit(", reserved ") && c.Double(res) && c.GiB() && c.Lit(" memory for KV Cache")) {
    WorkerLog& w = ctx.Worker();
    w.initial_free_gib = free;
    w.kv_cache_memory_override_gib = res;
  } else {
    Problem(ctx, "kv_cache_memory_bytes 'Initial free memory'", c);
  }
}

// §2 "CG util hint": `The current --gpu-memory-utilization=%.4f is equivalent to --gpu-memory-utilization=%.4f
// without CUDA graph memory profiling.`
void CgHint(LogKindContext& ctx, std::string_view m, std::size_t a) {
  Cursor c{m, a};
  double eq = 0;
  if (c.Double(eq)) {
    WorkerLog& w = ctx.Worker();
    w.cg_hint_equivalent_util = eq;
    std::size_t b = After(m, "current --gpu-memory-utilization=");
    Cursor c2{m, b == npos ? m.size() : b};
    double cur = 0;
    if (b != npos && c2.Double(cur)) w.cg_hint_current_util = cur;
  } else {
    Problem(ctx, "CUDA graph utilization hint", c);
  }
}

// §2 "Block size": `Setting kv cache block size to %d for %s backend.` / `Forcing kv cache block size to ...`.
bool AcceptBlockSize(std::string_view m, std::size_t) {
  return m.find("Setting kv cache block size") != npos || m.find("Forcing kv cache block size") != npos;
}
void BlockSize(LogKindContext& ctx, std::string_view m, std::size_t a) {
  Cursor c{m, a};
  int bs = 0;
  std::string_view backend;
  if (c.Int32(bs) && c.Lit(" for ") && !(backend = c.Until(" ")).empty() && c.Lit(" backend")) {
    BootLog& b = ctx.Boot();
    if (b.block_size && *b.block_size != bs)
      ctx.Warn(fmt::format("kv cache block size changes from {} to {}", *b.block_size, bs));
    b.block_size = bs;
    b.block_size_backend = EscapeForMessage(backend, 100);
  } else {
    Problem(ctx, "kv cache block size", c);
  }
}

// §2 "PP split": `Hidden layers were unevenly partitioned: [%s]. ...` (before 2025-04-08 without brackets).
void Partition(LogKindContext& ctx, std::string_view m, std::size_t a) {
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
    ctx.Boot().partition = std::move(parts);
  } else {
    Problem(ctx, "'Hidden layers were unevenly partitioned'", c);
  }
}

// §2 "Override": `Overriding num_gpu_blocks=%d with num_gpu_blocks_override=%d`.
void BlocksOverride(LogKindContext& ctx, std::string_view m, std::size_t a) {
  Cursor c{m, a};
  std::int64_t from = 0, to = 0;
  if (c.Int(from) && c.Lit(" with num_gpu_blocks_override=") && c.Int(to)) {
    ctx.Boot().num_gpu_blocks_computed = from;
    ctx.Boot().num_gpu_blocks_override = to;
  } else {
    Problem(ctx, "'Overriding num_gpu_blocks'", c);
  }
}

// §2 "Init total": `init engine (profile, create kv cache, warmup model) took %.2f seconds|s [(compilation: ..)]`.
void InitEngine(LogKindContext& ctx, std::string_view m, std::size_t a) {
  Cursor c{m, a};
  double s = 0;
  if (c.Double(s) && (c.Opt(" seconds") || c.Lit(" s"))) {
    ctx.Boot().init_engine_s = s;
    double comp = 0;
    if (c.Opt(" (compilation: ") && c.Double(comp)) ctx.Boot().init_engine_compilation_s = comp;
  } else {
    Problem(ctx, "'init engine ... took'", c);
  }
}

// §2 "Not-enough-KV error" (`_check_enough_kv_cache_memory`; some versions print "models's").
void NotEnoughKv(LogKindContext& ctx, std::string_view m, std::size_t a) {
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
        Problem(ctx, "not-enough-KV-cache error (estimated maximum model length)", c2);
      }
    }
    ctx.Boot().not_enough_kv = e;
  } else {
    Problem(ctx, "not-enough-KV-cache error", c);
  }
  ctx.Fatal(m);
}

// V0: `The model's max seq len (L) is larger than the maximum number of tokens that can be stored in KV cache (K).`
void MaxSeqLen(LogKindContext& ctx, std::string_view m, std::size_t a) {
  Cursor c{m, a};
  MaxSeqLenError e;
  std::size_t b = After(m, "max seq len (");
  Cursor c1{m, b == npos ? m.size() : b};
  if (c.Int(e.kv_tokens) && c.Lit(")") && b != npos && c1.Int(e.max_seq_len)) {
    ctx.Boot().max_seq_len_error = e;
  } else {
    Problem(ctx, "V0 max-seq-len error", c.ok ? c1 : c);
  }
  ctx.Fatal(m);
}

// `No available memory for the cache blocks. Try increasing gpu_memory_utilization ...`.
void NoMemory(LogKindContext& ctx, std::string_view m, std::size_t) {
  ctx.Boot().no_available_memory = true;
  ctx.Fatal(m);
}

// `non-default args: {'k': v, ...}` (API server, a Python dict repr).
void LaunchArgsLine(LogKindContext& ctx, std::string_view m, std::size_t a) {
  Cursor c{m, a};
  if (c.Lit("{")) {
    LaunchArgs args;
    bool closed = ScanKeyValues(m, c.pos, true, args.raw);
    if (!closed) Problem(ctx, "'non-default args'", Cursor{m, m.size()});
    FillArgs(ctx, args, "non-default args");
    ctx.Boot().launch_args = std::move(args);
  } else {
    Problem(ctx, "'non-default args'", c);
  }
}

// `Initializing a V1 LLM engine (vX) with config: k=v, ...` / `Initializing an LLM engine (vX) with config:`.
bool AcceptEngineConfig(std::string_view m, std::size_t) {
  return m.find("Initializing a V1 LLM engine") != npos || m.find("Initializing an LLM engine") != npos;
}
void EngineConfig(LogKindContext& ctx, std::string_view m, std::size_t a) {
  Cursor c{m, a};
  std::string_view v = c.Until(") ");
  if (!v.empty() && v.size() < 100) ctx.SetVersion(v, "engine config line");
  std::size_t b = After(m, "with config: ");
  if (b != npos) {
    LaunchArgs args;
    ScanKeyValues(m, b, false, args.raw);
    FillArgs(ctx, args, "engine config");
    ctx.Boot().engine_config = std::move(args);
  }
}

/// The version text after a version marker: `[:] [v]X` with X starting with a digit, or "".
std::string_view VersionText(std::string_view m, std::size_t a) {
  Cursor c{m, a};
  c.Opt(":");
  c.SkipSpaces();
  c.Opt("v");
  std::string_view v = c.Until(" ,;)");
  return (v.empty() || !IsDigit(v[0]) || v.size() >= 100) ? std::string_view() : v;
}
bool AcceptVersion(std::string_view m, std::size_t a) { return !VersionText(m, a).empty(); }
void VersionAt(LogKindContext& ctx, std::string_view m, std::size_t a) {
  ctx.SetVersion(VersionText(m, a), "version line");
}

// `vLLM API server version X` (API server start).
void ApiVersion(LogKindContext& ctx, std::string_view m, std::size_t a) { VersionAt(ctx, m, a); }
// `vLLM version X`, `vLLM version: X`.
void VllmVersion(LogKindContext& ctx, std::string_view m, std::size_t a) { VersionAt(ctx, m, a); }

// `Starting vLLM API server 0 on http://0.0.0.0:8000` (older: `Starting vLLM API server on ...`).
void ApiServerStart(LogKindContext& ctx, std::string_view, std::size_t) { ctx.Boot().api_server_started = true; }

// uvicorn's `INFO:     Application startup complete.` (the server answers from here on).
void AppStartup(LogKindContext& ctx, std::string_view, std::size_t) { ctx.Boot().api_server_started = true; }

// §2 "Memory profile detail": V1 DEBUG one-liner `Memory profiling takes %.2f seconds. Total non KV cache
// memory: ...` or the first line of the V0 block `Memory profiling takes %.2f seconds`.
void MemoryProfiling(LogKindContext& ctx, std::string_view m, std::size_t a) {
  Cursor c{m, a};
  double s = 0;
  if (!(c.Double(s) && c.Lit(" seconds"))) {
    Problem(ctx, "'Memory profiling takes'", c);
    return;
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
    if (!c.ok) Problem(ctx, "V1 'Memory profiling takes' (DEBUG)", c);
    ctx.Worker().v1_profile = p;
  } else {  // V0 block, first line (its other lines are continuation lines of the same record)
    WorkerLog& w = ctx.Worker();
    if (!w.v0_profile) w.v0_profile.emplace();
    w.v0_profile->profile_s = s;
  }
}

V0MemoryProfile& V0Profile(LogKindContext& ctx) {
  WorkerLog& w = ctx.Worker();
  if (!w.v0_profile) w.v0_profile.emplace();
  return *w.v0_profile;
}

// V0 block, second line: `the current vLLM instance can use total_gpu_memory (%.2fGiB) x gpu_memory_utilization
// (%.2f) = %.2fGiB`.
void V0Budget(LogKindContext& ctx, std::string_view m, std::size_t a) {
  Cursor c{m, a};
  V0MemoryProfile& p = V0Profile(ctx);
  double total = 0, util = 0, req = 0;
  if (c.Double(total) && c.GiB() && c.Lit(") x gpu_memory_utilization (") && c.Double(util) && c.Lit(") = ") &&
      c.Double(req) && c.GiB()) {
    p.total_gpu_gib = total;
    p.gpu_memory_utilization = util;
    p.requested_gib = req;
  } else {
    Problem(ctx, "V0 memory profile 'total_gpu_memory'", c);
  }
}

// V0 block, third line: `model weights take %.2fGiB; non_torch_memory takes %.2fGiB; PyTorch activation peak
// memory takes %.2fGiB; the rest of the memory reserved for KV Cache is %.2fGiB.`
void V0Breakdown(LogKindContext& ctx, std::string_view m, std::size_t a) {
  Cursor c{m, a};
  V0MemoryProfile& p = V0Profile(ctx);
  double v = 0;
  if (c.Double(v) && c.GiB()) p.weights_gib = v;
  if (c.Lit("; non_torch_memory takes ") && c.Double(v) && c.GiB()) p.non_torch_gib = v;
  if (c.Lit("; PyTorch activation peak memory takes ") && c.Double(v) && c.GiB()) p.activation_peak_gib = v;
  if (c.Lit("; the rest of the memory reserved for KV Cache is ") && c.Double(v) && c.GiB()) p.kv_cache_gib = v;
  if (!c.ok) Problem(ctx, "V0 memory profile 'model weights take'", c);
}

// V0 one-liner: `Memory profiling results: total_gpu_memory=23.58GiB initial_memory_usage=...
// gpu_memory_utilization=0.90`.
void V0Results(LogKindContext& ctx, std::string_view m, std::size_t a) {
  V0MemoryProfile& p = ctx.Worker().v0_profile.emplace();
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
  if (!c.ok || fields < 7) Problem(ctx, "V0 'Memory profiling results'", c);
}

// V0: `# GPU blocks: N, # CPU blocks: M` (`# cuda blocks`, `# neuron blocks`; "GPU blocks: N" in copies).
bool AcceptV0Blocks(std::string_view m, std::size_t) {
  return m.find("GPU blocks: ") != npos || m.find("# cuda blocks: ") != npos || m.find("CPU blocks: ") != npos ||
         m.find("# neuron blocks: ") != npos;
}
void V0Blocks(LogKindContext& ctx, std::string_view m, std::size_t a) {
  Cursor c{m, a};
  std::int64_t g = 0, k = 0;
  if (m.substr(0, a).ends_with("CPU blocks: ")) {  // only "CPU blocks: M"
    if (c.Int(k)) ctx.Boot().num_cpu_blocks = k;
  } else if (c.Int(g)) {
    ctx.Boot().num_gpu_blocks = g;
    if (c.Opt(", # CPU blocks: ") || c.Opt(", CPU blocks: ")) {
      if (c.Int(k)) ctx.Boot().num_cpu_blocks = k;
    }
  }
  if (!c.ok) Problem(ctx, "V0 '# GPU blocks'", c);
}

// 0.19 (APIServer, v1/metrics/loggers.py): `Engine 000: vllm cache_config_info with initialization after num_gpu_blocks
// is: N`.
void BlocksInfo(LogKindContext& ctx, std::string_view m, std::size_t a) {
  Cursor c{m, a};
  std::int64_t n = 0;
  if (c.Int(n)) {
    ctx.Boot().num_gpu_blocks = n;
  } else {
    Problem(ctx, "'num_gpu_blocks is'", c);
  }
}

// The one-line memory summary of vllm/v1/worker/gpu_worker.py: N era (memory-overheads.md §1 row "N") `Actual
// usage is C GiB for consumed memory (weights + non-torch), A GiB for peak activation, and G GiB for CUDAGraph
// memory`; v0.10-0.19 `Actual usage is W GiB for weight, A GiB for peak activation, N GiB for non-torch memory,
// and G GiB for CUDAGraph memory` (N may be negative), `Current kv cache memory in use is X GiB` (v0.10: `X
// bytes`). Also the start-up refusal `Free memory on device [cuda:N ](F/T GiB) on startup is less than desired
// GPU memory utilization (U, R GiB).` (§1.7; 0.19 names the device).
void UsageSummary(LogKindContext& ctx, std::string_view m, std::size_t) {
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
  std::string device;
  field("Free memory on device ", [&](Cursor& c) {
    if (!c.Opt("(")) {  // 0.19: "cuda:1 ("
      std::string_view dev = c.Until(" (");
      if (dev.size() > 40 || !c.Lit(" (")) return false;
      device = EscapeForMessage(dev, 40);
    }
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
  std::size_t less = After(m, "is less than desired GPU memory utilization (");
  if (less != npos && u.free_at_startup_gib) {
    InsufficientFreeMemoryError e;
    e.device = device;
    e.free_gib = f;
    e.total_gib = t;
    Cursor c{m, less};
    if (c.Double(util) && c.Lit(", ") && c.Double(req) && c.GiB()) {
      e.gpu_memory_utilization = util;
      e.requested_gib = req;
    } else {
      Problem(ctx, "'Free memory on device ... is less than desired'", c);
    }
    ctx.Boot().insufficient_free_memory = e;
    ctx.Fatal(m);
    return;
  }
  field("Actual usage is ", [&](Cursor& c) {
    double v = 0;
    if (!(c.Double(v) && c.GiB())) return false;
    if (c.Opt(" for consumed memory")) {  // N
      u.consumed_gib = v;
      if (!(c.SkipPast(", ") && c.Double(v) && c.GiB() && c.Lit(" for peak activation"))) return false;
      u.peak_activation_gib = v;
    } else if (c.Lit(" for weight")) {  // 0.19
      u.weights_gib = v;
      if (!(c.Lit(", ") && c.Double(v) && c.GiB() && c.Lit(" for peak activation"))) return false;
      u.peak_activation_gib = v;
      if (!(c.Lit(", ") && c.Double(v) && c.GiB() && c.Lit(" for non-torch memory"))) return false;
      u.non_torch_gib = v;
    } else {
      return false;
    }
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
    if (!c.Double(v)) return false;
    if (c.Opt(" bytes")) {  // v0.10: "... in use is 9232221491 bytes."
      u.kv_cache_in_use_gib = v / (1024.0 * 1024.0 * 1024.0);
      return true;
    }
    if (c.GiB()) {
      u.kv_cache_in_use_gib = v;
      return true;
    }
    return false;
  });
  if (bad) Problem(ctx, "memory usage summary ('Free memory on device' / 'Actual usage is')", bad_at);
  ctx.Worker().usage_summary = u;
}

// §2 "DCP multiplier": `Multiplying the GPU KV cache size by the dcp_world_size %d.` / `... cp_world_size %d (...)`.
void CpMultiplier(LogKindContext& ctx, std::string_view m, std::size_t a) {
  Cursor c{m, a};
  int n = 0;
  if (c.SkipPast("_world_size ") && c.Int32(n)) {
    ctx.Boot().kv_tokens_cp_multiplier = n;
  } else {
    Problem(ctx, "'Multiplying the GPU KV cache size'", c);
  }
}

// §2 "kv dtype": `Using %s data type to store kv cache. ...`.
/// The word X of `Using X<anchor>` when the anchor starts at `e` (X: 1-99 bytes, no space), else "".
std::string_view UsingWord(std::string_view m, std::size_t e) {
  if (e < 7) return {};
  std::size_t u = m.rfind("Using ", e - 6);
  if (u == npos || e - (u + 6) == 0 || e - (u + 6) >= 100) return {};
  std::string_view w = m.substr(u + 6, e - (u + 6));
  return w.find(' ') == npos ? w : std::string_view();
}
constexpr std::string_view kDtypeAnchor = " data type to store kv cache";
bool AcceptKvDtype(std::string_view m, std::size_t a) { return !UsingWord(m, a - kDtypeAnchor.size()).empty(); }
void KvDtype(LogKindContext& ctx, std::string_view m, std::size_t a) {
  ctx.Boot().kv_cache_dtype_logged = EscapeForMessage(UsingWord(m, a - kDtypeAnchor.size()), 100);
}

// §2 "DSA cache dtype", four fixed texts and the generic `Using %s KV cache format for %s backend.`.
void DsaCustomFp8(LogKindContext& ctx, std::string_view, std::size_t) { ctx.Boot().dsa_kv_cache_format = "fp8_ds_mla"; }
void DsaStandardFp8(LogKindContext& ctx, std::string_view, std::size_t) { ctx.Boot().dsa_kv_cache_format = "fp8"; }
void DsaBf16(LogKindContext& ctx, std::string_view, std::size_t) { ctx.Boot().dsa_kv_cache_format = "bfloat16"; }
constexpr std::string_view kFormatAnchor = " KV cache format for ";
bool AcceptDsaGeneric(std::string_view m, std::size_t a) { return !UsingWord(m, a - kFormatAnchor.size()).empty(); }
void DsaGeneric(LogKindContext& ctx, std::string_view m, std::size_t a) {
  ctx.Boot().dsa_kv_cache_format = EscapeForMessage(UsingWord(m, a - kFormatAnchor.size()), 100);
}

// The ASCII-art banner of newer versions: `█▄█▀ ... version 0.19.0` (API server, tests/data/llmd-v0.19).
void Banner(LogKindContext& ctx, std::string_view m, std::size_t a) {
  Cursor c{m, a};
  std::string_view v = c.Until(" ");
  if (!v.empty() && v.size() < 100) ctx.SetVersion(v, "banner");
}

/// "N/A" or an integer.
bool RankValue(Cursor& c, std::optional<int>& out) {
  if (c.Opt("N/A")) return true;
  int v = 0;
  if (!c.Int32(v)) return false;
  out = v;
  return true;
}

// `rank R in world size W is assigned as DP rank d, PP rank p, [PCP rank c, ]TP rank t, EP rank e|N/A[, EPLB
// rank N/A]` (distributed/parallel_state.py; 0.19 in tests/data/llmd-v0.19).
constexpr std::string_view kRankAnchor = " in world size ";
bool AcceptRank(std::string_view m, std::size_t a) {
  std::size_t w = a - kRankAnchor.size();
  return w >= 6 && m.rfind("rank ", w) != npos && m.find(" is assigned as ", a) != npos;
}
void RankLine(LogKindContext& ctx, std::string_view m, std::size_t a) {
  std::size_t r = m.rfind("rank ", a - kRankAnchor.size());
  RankAssignment ra;
  Cursor c{m, r + 5};
  int v = 0;
  if (!(c.Int32(v) && c.Lit(" in world size "))) {
    Problem(ctx, "rank assignment", c);
    return;
  }
  ra.rank = v;
  if (!(c.Int32(v) && c.Lit(" is assigned as "))) {
    Problem(ctx, "rank assignment", c);
    return;
  }
  ra.world_size = v;
  while (c.ok && !c.AtEnd()) {
    std::string_view group = c.Until(" ,");
    if (!c.Lit(" rank ")) break;
    std::optional<int> value;
    if (!RankValue(c, value)) break;
    if (group == "DP")
      ra.dp = value;
    else if (group == "PP")
      ra.pp = value;
    else if (group == "PCP")
      ra.pcp = value;
    else if (group == "TP")
      ra.tp = value;
    else if (group == "DCP")
      ra.dcp = value;
    else if (group == "EP")
      ra.ep = value;
    if (!c.Opt(", ")) break;
  }
  if (!c.ok || !ra.pp || !ra.tp) {
    Problem(ctx, "rank assignment", c);
    return;
  }
  ctx.AssignRanks(ra);
}

// `world_size=W rank=R local_rank=L distributed_init_method=tcp://... backend=nccl` (parallel_state.py).
void DistInit(LogKindContext& ctx, std::string_view m, std::size_t a) {
  RankAssignment ra;
  auto key = [&](std::string_view k, std::optional<int>& out) {
    std::size_t at = 0;
    while ((at = m.find(k, at)) != npos && at < a) {
      if (at == 0 || m[at - 1] == ' ') {
        Cursor c{m, at + k.size()};
        int v = 0;
        if (c.Int32(v)) out = v;
        return;
      }
      at += k.size();
    }
  };
  key("world_size=", ra.world_size);
  key("rank=", ra.rank);
  key("local_rank=", ra.local_rank);
  if (!ra.world_size || !ra.rank) {
    Problem(ctx, "'world_size=... rank=...' (distributed init)", Cursor{m, a});
    return;
  }
  ctx.AssignRanks(ra);
}

// `Traceback (most recent call last):` (logger.exception and uncaught exceptions).
void TracebackStart(LogKindContext&, std::string_view, std::size_t) {}

// Each starts with a byte pair that is rare in log text (the pre-filter's cost is the pairs it has to check).
constexpr std::string_view kTriggers[] = {"KV cache",
                                          "kv cache",
                                          "CUDA graph",
                                          "gpu-memory",
                                          "Maximum concurrency",
                                          "Model loading",
                                          "weights t",
                                          "(profile",
                                          "Graph capturing",
                                          "Initial free",
                                          "blocks: ",
                                          "_blocks",
                                          "Hidden layers",
                                          "To serve",
                                          "-default args",
                                          "LLM",
                                          "Actual usage",
                                          "Using ",
                                          "\xe2\x96\x88",
                                          "world size",
                                          "_init_method",
                                          "Traceback",
                                          "Application startup",
                                          "Memory profiling",
                                          "No available",
                                          "Free memory"};

using R = LogKindRole;
// clang-format off
constexpr LogKind kKinds[] = {
    {"available_kv", "Available KV cache memory:", R::kFigure, AvailableKv, nullptr, false,
     "(Worker_TP0 pid=591236) INFO 11-06 12:08:54 [gpu_worker.py:349] Available KV cache memory: 46.80 GiB"},
    {"kv_tokens", "GPU KV cache size:", R::kPool, KvTokens, nullptr, true,
     "(EngineCore_DP0 pid=591074) INFO 11-06 12:08:55 [kv_cache_utils.py:1229] GPU KV cache size: 715,072 tokens"},
    {"max_concurrency", "Maximum concurrency for ", R::kFigure, MaxConcurrencyLine, nullptr, false,
     "INFO 07-09 09:47:46 [kv_cache_utils.py:720] Maximum concurrency for 1,024 tokens per request: 788.86x"},
    {"model_loading", "Model loading took ", R::kFigure, ModelLoading, nullptr, false,
     "(Worker_PP0_TP0 pid=210) INFO 08-21 18:02:00 [v1/worker/gpu_model_runner.py:4820] Model loading took 47.85 GiB memory and 120.502592 seconds"},
    {"v0_weights", "Loading model weights took ", R::kFigure, V0Weights, nullptr, false,
     "Loading model weights took 14.9888 GB"},
    {"cuda_graph_estimate", "Estimated CUDA graph memory: ", R::kFigure, CgEstimate, nullptr, false,
     "(Worker_PP1_TP0 pid=214) INFO 08-21 18:03:00 [v1/worker/gpu_model_runner.py:5955] Estimated CUDA graph memory: 1.31 GiB total"},
    {"cuda_graph_pool", "CUDA graph pool memory: ", R::kFigure, CgPool, nullptr, false,
     "(Worker_PP1_TP0 pid=214) INFO 08-21 18:04:00 [v1/worker/gpu_worker.py:597] CUDA graph pool memory: 1.49 GiB (actual), 1.31 GiB (estimated), difference: 0.18 GiB (13.7%)."},
    {"graph_capture", "Graph capturing finished in ", R::kFigure, GraphCapture, nullptr, false,
     "(Worker_PP1_TP0 pid=214) INFO 08-21 18:04:00 [v1/worker/gpu_model_runner.py:6046] Graph capturing finished in 29 secs, took 1.49 GiB"},
    {"kv_cache_memory_override", "Initial free memory ", R::kFigure, KvOverride, AcceptKvOverride, false,
     "(Worker_TP0 pid=1) INFO 08-01 00:00:00 [gpu_worker.py:300] Initial free memory 78.52 GiB, reserved 20.00 GiB memory for KV Cache as specified by kv_cache_memory_bytes config and skipped memory profiling."},
    {"cuda_graph_hint", "is equivalent to --gpu-memory-utilization=", R::kFigure, CgHint, nullptr, false,
     "(Worker_TP0 pid=1) INFO 08-01 00:00:02 [gpu_worker.py:3] CUDA graph memory profiling is enabled (default since v0.21.0). The current --gpu-memory-utilization=0.9200 is equivalent to --gpu-memory-utilization=0.9036 without CUDA graph memory profiling."},
    {"block_size", "kv cache block size to ", R::kFigure, BlockSize, AcceptBlockSize, false,
     "INFO 03-12 00:00:00 [interface.py:1] Setting kv cache block size to 64 for FLASHMLA_SPARSE backend."},
    {"partition", "Hidden layers were unevenly partitioned: ", R::kFigure, Partition, nullptr, false,
     "INFO 05-01 00:00:00 [utils.py:1] Hidden layers were unevenly partitioned: [19,20,20,19]. This can be manually overridden using the VLLM_PP_LAYER_PARTITION environment variable"},
    {"num_gpu_blocks_override", "Overriding num_gpu_blocks=", R::kFigure, BlocksOverride, nullptr, false,
     "(Worker_PP0_TP0 pid=210) INFO 08-21 18:03:00 [v1/core/kv_cache_utils.py:829] Overriding num_gpu_blocks=0 with num_gpu_blocks_override=512"},
    {"init_engine", "init engine (profile, create kv cache, warmup model) took ", R::kEngineReady, InitEngine, nullptr, false,
     "(EngineCore_DP0 pid=208) INFO 08-21 18:04:01 [v1/engine/core.py:283] init engine (profile, create kv cache, warmup model) took 84.91 seconds"},
    {"not_enough_kv", "To serve at least one request with the model", R::kFatal, NotEnoughKv, nullptr, false,
     "ValueError: To serve at least one request with the models's max seq len (262144), (62.00 GiB KV cache is needed, which is larger than the available KV cache memory (48.66 GiB). Based on the available memory, the estimated maximum model length is 205728. Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine."},
    {"max_seq_len_error", "is larger than the maximum number of tokens that can be stored in KV cache (", R::kFatal, MaxSeqLen, nullptr, false,
     "ValueError: The model's max seq len (20000) is larger than the maximum number of tokens that can be stored in KV cache (23648). Try increasing `gpu_memory_utilization`."},
    {"no_available_memory", "No available memory for the cache blocks", R::kFatal, NoMemory, nullptr, false,
     "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine."},
    {"launch_args", "non-default args: ", R::kLaunchArgs, LaunchArgsLine, nullptr, false,
     "(APIServer pid=7) INFO 08-21 18:00:00 [entrypoints/utils.py:233] non-default args: {'model': '/m/GLM-5', 'max_model_len': 524288, 'tensor_parallel_size': 4, 'pipeline_parallel_size': 2, 'gpu_memory_utilization': 0.95}"},
    {"engine_config", "LLM engine (v", R::kEngineConfig, EngineConfig, AcceptEngineConfig, false,
     "(EngineCore_DP0 pid=208) INFO 08-21 18:00:10 [v1/engine/core.py:105] Initializing a V1 LLM engine (v0.19.0) with config: model='/m/GLM-5', dtype=torch.bfloat16, max_seq_len=524288, tensor_parallel_size=4, pipeline_parallel_size=2"},
    {"api_server_version", "vLLM API server version ", R::kVersion, ApiVersion, AcceptVersion, false,
     "INFO 12-01 00:00:00 [api_server.py:1] vLLM API server version 0.6.4"},
    {"vllm_version", "vLLM version", R::kVersion, VllmVersion, AcceptVersion, false,
     "INFO 08-01 00:00:00 [__init__.py:1] vLLM version 0.10.1"},
    {"api_server_start", "Starting vLLM API server", R::kReady, ApiServerStart, nullptr, false,
     "(APIServer pid=7) INFO 08-21 18:04:05 [entrypoints/openai/api_server.py:1] Starting vLLM API server 0 on http://0.0.0.0:8000"},
    {"app_startup", "Application startup complete", R::kReady, AppStartup, nullptr, false,
     "(APIServer pid=7) INFO:     Application startup complete."},
    {"memory_profiling", "Memory profiling takes ", R::kFigure, MemoryProfiling, nullptr, false,
     "(Worker_PP0_TP0 pid=210) DEBUG 08-21 18:03:00 [v1/worker/gpu_worker.py:435] Memory profiling takes 17.96 seconds. Total non KV cache memory: 53.34GiB; torch peak memory increase: 2.36GiB; non-torch forward increase memory: 3.13GiB; weights memory: 47.85GiB."},
    {"v0_budget", "the current vLLM instance can use total_gpu_memory (", R::kFigure, V0Budget, nullptr, false,
     "the current vLLM instance can use total_gpu_memory (79.11GiB) x gpu_memory_utilization (0.90) = 71.20GiB"},
    {"v0_breakdown", "model weights take ", R::kFigure, V0Breakdown, nullptr, false,
     "model weights take 37.50GiB; non_torch_memory takes 1.20GiB; PyTorch activation peak memory takes 4.10GiB; the rest of the memory reserved for KV Cache is 28.40GiB."},
    {"v0_results", "Memory profiling results: ", R::kFigure, V0Results, nullptr, false,
     "Memory profiling results: total_gpu_memory=23.58GiB initial_memory_usage=15.34GiB peak_torch_memory=17.06GiB memory_usage_post_profile=15.35GiB non_torch_memory=0.35GiB kv_cache_size=3.81GiB gpu_memory_utilization=0.90"},
    {"v0_blocks", " blocks: ", R::kPool, V0Blocks, AcceptV0Blocks, false,
     "GPU blocks: 1952, # CPU blocks: 2048"},
    {"num_gpu_blocks_info", "num_gpu_blocks is: ", R::kPool, BlocksInfo, nullptr, false,
     "(APIServer pid=7) DEBUG 08-21 18:04:07 [v1/metrics/loggers.py:273] Engine 000: vllm cache_config_info with initialization after num_gpu_blocks is: 11395"},
    {"usage_summary", "Free memory on device ", R::kFigure, UsageSummary, nullptr, false,
     "(Worker_PP1_TP0 pid=214) DEBUG 08-21 18:04:00 [v1/worker/gpu_worker.py:661] Free memory on device (78.32/79.25 GiB) on startup. Desired GPU memory utilization is (0.95, 75.29 GiB). Actual usage is 50.2 GiB for weight, 3.2 GiB for peak activation, 6.33 GiB for non-torch memory, and 1.49 GiB for CUDAGraph memory. Replace gpu_memory_utilization config with `--kv-cache-memory=16707812474` (15.56 GiB) to fit into requested memory, or `--kv-cache-memory=17714445107` (16.5 GiB) to fully utilize gpu memory. Current kv cache memory in use is 15.56 GiB."},
    {"usage_summary_tail", "Actual usage is ", R::kFigure, UsageSummary, nullptr, false,
     "Actual usage is 56.89 GiB for consumed memory (weights + non-torch), 0.76 GiB for peak activation, and 0.32 GiB for CUDAGraph memory. Current kv cache memory in use is 27.85 GiB."},
    {"cp_multiplier", "Multiplying the GPU KV cache size by the ", R::kFigure, CpMultiplier, nullptr, false,
     "INFO 05-01 00:00:00 [kv_cache_utils.py:1] Multiplying the GPU KV cache size by the cp_world_size 8 (pcp_world_size 2 * dcp_world_size 4)."},
    {"kv_dtype", " data type to store kv cache", R::kFigure, KvDtype, AcceptKvDtype, false,
     "INFO 05-01 00:00:00 [cache.py:1] Using fp8 data type to store kv cache. It reduces the GPU memory footprint and boosts the performance."},
    {"dsa_custom_fp8", "Using custom fp8 kv-cache format for DeepSeek", R::kFigure, DsaCustomFp8, nullptr, false,
     "INFO 10-01 00:00:00 [models/config.py:1] Using custom fp8 kv-cache format for DeepSeekV3.2"},
    {"dsa_fp8_ds_mla", "Using DeepSeek's fp8_ds_mla KV cache format", R::kFigure, DsaCustomFp8, nullptr, false,
     "INFO 05-01 00:00:00 [mla_attention.py:1] Using DeepSeek's fp8_ds_mla KV cache format. To use standard fp8 kv-cache format, please set `--attention-backend FLASHINFER_MLA_SPARSE`"},
    {"dsa_standard_fp8", "Using standard fp8 KV cache format", R::kFigure, DsaStandardFp8, nullptr, false,
     "INFO 08-01 00:00:00 [mla_attention.py:1] Using standard fp8 KV cache format. To use DeepSeek's fp8_ds_mla KV cache format, please set `--attention-backend FLASHMLA_SPARSE`"},
    {"dsa_bf16", "Using bfloat16 kv-cache for DeepSeek", R::kFigure, DsaBf16, nullptr, false,
     "INFO 10-01 00:00:00 [models/config.py:1] Using bfloat16 kv-cache for DeepSeekV3.2"},
    {"dsa_format", " KV cache format for ", R::kFigure, DsaGeneric, AcceptDsaGeneric, false,
     "INFO 08-01 00:00:00 [mla_attention.py:1] Using fp8_ds_mla KV cache format for FLASHMLA_SPARSE backend."},
    {"banner_version", "\xe2\x96\x88  version ", R::kVersion, Banner, nullptr, false,
     "(APIServer pid=7) INFO 08-21 18:00:00 [entrypoints/utils.py:299]  \xe2\x96\x84\xe2\x96\x84 \xe2\x96\x84\xe2\x96\x88 \xe2\x96\x88     \xe2\x96\x88     \xe2\x96\x88 \xe2\x96\x80\xe2\x96\x84\xe2\x96\x80 \xe2\x96\x88  version 0.19.0"},
    {"banner_version_1", "\xe2\x96\x88 version ", R::kVersion, Banner, nullptr, false,
     "\xe2\x96\x88 version 0.20.1"},
    {"rank_assignment", " in world size ", R::kFigure, RankLine, AcceptRank, false,
     "(Worker pid=214) INFO 08-21 18:00:30 [distributed/parallel_state.py:1716] rank 4 in world size 8 is assigned as DP rank 0, PP rank 1, PCP rank 0, TP rank 0, EP rank N/A, EPLB rank N/A"},
    {"distributed_init", " distributed_init_method=", R::kFigure, DistInit, nullptr, false,
     "(Worker pid=214) INFO 08-21 18:00:29 [distributed/parallel_state.py:1203] world_size=8 rank=4 local_rank=4 distributed_init_method=tcp://127.0.0.1:29500 backend=nccl"},
    {"traceback", "Traceback (most recent call last)", R::kError, TracebackStart, nullptr, false,
     "(EngineCore_DP0 pid=208) Traceback (most recent call last):"},
};
// clang-format on

/// For each kind, the bit of the first trigger its anchor contains (0 if none: a table error the tests catch).
const std::array<std::uint32_t, std::size(kKinds)>& KindTriggerBits() {
  static const auto bits = [] {
    std::array<std::uint32_t, std::size(kKinds)> b{};
    for (std::size_t k = 0; k < std::size(kKinds); ++k)
      for (std::size_t t = 0; t < std::size(kTriggers); ++t)
        if (kKinds[k].anchor.find(kTriggers[t]) != npos) {
          b[k] = 1u << t;
          break;
        }
    return b;
  }();
  return bits;
}
static_assert(std::size(kTriggers) <= 32);

}  // namespace

namespace {

/// The triggers indexed by their first two bytes: a line is scanned once, byte pair by byte pair, against an
/// 8 KiB bitmap (most lines hold no pair that starts a trigger) instead of once per trigger.
struct TriggerIndex {
  std::array<std::uint64_t, 1024> bits{};                      // 65,536 pairs
  std::vector<std::pair<std::uint16_t, std::uint32_t>> masks;  // pair -> triggers starting with it (sorted)
  TriggerIndex() {
    for (std::size_t t = 0; t < std::size(kTriggers); ++t) {
      std::string_view tr = kTriggers[t];
      auto p = static_cast<std::uint16_t>((static_cast<unsigned char>(tr[0]) << 8) | static_cast<unsigned char>(tr[1]));
      bits[p >> 6] |= std::uint64_t{1} << (p & 63);
      auto it = std::find_if(masks.begin(), masks.end(), [&](const auto& m) { return m.first == p; });
      if (it == masks.end()) {
        masks.emplace_back(p, 0);
        it = masks.end() - 1;
      }
      it->second |= 1u << t;
    }
    std::sort(masks.begin(), masks.end());
  }
  std::uint32_t Scan(std::string_view s) const {
    std::uint32_t found = 0;
    const auto* b = reinterpret_cast<const unsigned char*>(s.data());
    for (std::size_t i = 0; i + 1 < s.size(); ++i) {
      auto p = static_cast<std::uint16_t>((b[i] << 8) | b[i + 1]);
      if (!((bits[p >> 6] >> (p & 63)) & 1)) continue;
      auto it = std::lower_bound(masks.begin(), masks.end(), std::pair<std::uint16_t, std::uint32_t>(p, 0));
      for (std::uint32_t m = it->second & ~found; m;) {
        int t = __builtin_ctz(m);
        m &= m - 1;
        if (s.substr(i, kTriggers[t].size()) == kTriggers[t]) found |= 1u << t;
      }
    }
    return found;
  }
};

const TriggerIndex& Triggers() {
  static const TriggerIndex index;
  return index;
}

}  // namespace

std::optional<LogKindHit> FindLogKind(std::string_view line, std::size_t first) {
  std::uint32_t found = Triggers().Scan(line);
  if (!found) return std::nullopt;
  const auto& bits = KindTriggerBits();
  for (std::size_t k = first; k < std::size(kKinds); ++k) {
    if (!(found & bits[k])) continue;
    std::size_t at = line.find(kKinds[k].anchor);
    if (at == npos) continue;
    std::size_t after = at + kKinds[k].anchor.size();
    if (kKinds[k].accept && !kKinds[k].accept(line, after)) continue;
    return LogKindHit{k, after};
  }
  return std::nullopt;
}

std::span<const LogKind> LogKinds() { return kKinds; }
std::span<const std::string_view> LogKindTriggers() { return kTriggers; }

bool IsExceptionLine(std::string_view line) {
  std::size_t i = 0;
  while (i < line.size() && line[i] == ' ') ++i;
  std::size_t b = i;
  if (i >= line.size() || !(IsAlpha(line[i]) || line[i] == '_')) return false;
  while (i < line.size() && i - b < 120 && (IsAlpha(line[i]) || IsDigit(line[i]) || line[i] == '_' || line[i] == '.'))
    ++i;
  std::string_view name = line.substr(b, i - b);
  if (!(name.ends_with("Error") || name.ends_with("Exception") || name == "KeyboardInterrupt")) return false;
  if (b > 0) return false;  // indented: part of a traceback's source lines
  return i == line.size() || line.substr(i, 2) == ": ";
}

}  // namespace ppdeploy
