// The launch, engine and process facts of a vLLM boot log (log_matchers.h): the non-default args and engine
// config (Python-repr key/value lists), versions and banners, rank lines, block size, layer split, KV dtypes,
// server readiness, tracebacks. Formats as in log_kinds.cc.
#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "core/escape.h"
#include "vllm/log_cursor.h"
#include "vllm/log_matchers.h"
#include "vllm/log_parser.h"

namespace ppdeploy::log_kinds {

// ---- Python-repr key/value lists (non-default args dict, engine config) ----

/// Scans one value up to a top-level ',' (or '}' when `dict`), honouring quotes and brackets.
static std::string_view ScanValue(std::string_view s, std::size_t& pos, bool dict) {
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
static bool ScanKeyValues(std::string_view s, std::size_t pos, bool dict,
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

static std::string Unquote(std::string_view v) {
  if (v.size() >= 2 && (v.front() == '\'' || v.front() == '"') && v.back() == v.front()) {
    return std::string(v.substr(1, v.size() - 2));
  }
  return std::string(v);
}

static void FillArgs(LogKindContext& ctx, LaunchArgs& a, std::string_view what) {
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

// docs/vllm-rules.md §2 "Block size": `Setting kv cache block size to %d for %s backend.` / `Forcing kv cache block
// size to ...`.
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

// docs/vllm-rules.md §2 "PP split": `Hidden layers were unevenly partitioned: [%s]. ...` (before 2025-04-08 without
// brackets).
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

// docs/vllm-rules.md §2 "Init total": `init engine (profile, create kv cache, warmup model) took %.2f seconds|s
// [(compilation: ..)]`.
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
static std::string_view VersionText(std::string_view m, std::size_t a) {
  Cursor c{m, a};
  c.Opt(":");
  c.SkipSpaces();
  c.Opt("v");
  std::string_view v = c.Until(" ,;)");
  return (v.empty() || !IsDigit(v[0]) || v.size() >= 100) ? std::string_view() : v;
}
bool AcceptVersion(std::string_view m, std::size_t a) { return !VersionText(m, a).empty(); }
static void VersionAt(LogKindContext& ctx, std::string_view m, std::size_t a) {
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

// docs/vllm-rules.md §2 "kv dtype": `Using %s data type to store kv cache. ...`.
/// The word X of `Using X<anchor>` when the anchor starts at `e` (X: 1-99 bytes, no space), else "".
static std::string_view UsingWord(std::string_view m, std::size_t e) {
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

// docs/vllm-rules.md §2 "DSA cache dtype", four fixed texts and the generic `Using %s KV cache format for %s backend.`.
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
static bool RankValue(Cursor& c, std::optional<int>& out) {
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

}  // namespace ppdeploy::log_kinds
