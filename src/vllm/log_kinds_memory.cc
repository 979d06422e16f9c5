// The memory and pool figures of a vLLM boot log (log_matchers.h): the KV budget and capacity lines, weights,
// CUDA graphs, the V0 and V1 memory profiles and summaries, vLLM's refusals. Formats as in log_kinds.cc.
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

// docs/vllm-rules.md §2 "KV budget": `Available KV cache memory: %.2f GiB` / format_gib (may be negative).
void AvailableKv(LogKindContext& ctx, std::string_view m, std::size_t a) {
  Cursor c;
  double v = 0;
  if (GiBAfter(m, a, v, c)) {
    ctx.Worker().available_kv_gib = v;
  } else {
    Problem(ctx, "'Available KV cache memory'", c);
  }
}

// docs/vllm-rules.md §2 "Capacity": `GPU KV cache size: %s tokens` (then, since 2026-08-04, `, Maximum concurrency
// ...`).
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

// docs/vllm-rules.md §2 "Capacity": `Maximum concurrency for %s tokens per request: %.2fx`.
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

// docs/vllm-rules.md §2 "Model weights": `Model loading took %.4f GB|GiB [memory] and %.6f seconds`.
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

// V0: `Loading model weights took %.4f GB` (the boot-log examples (docs/sources.md §3) DEV-GQA-02).
void V0Weights(LogKindContext& ctx, std::string_view m, std::size_t a) {
  Cursor c{m, a};
  double gib = 0;
  if (c.Double(gib) && c.GiB()) {
    ctx.Worker().model_loading_gib = gib;
  } else {
    Problem(ctx, "'Loading model weights took'", c);
  }
}

// docs/vllm-rules.md §2 "CG estimate": `Estimated CUDA graph memory: %.2f GiB total`.
void CgEstimate(LogKindContext& ctx, std::string_view m, std::size_t a) {
  Cursor c;
  double v = 0;
  if (GiBAfter(m, a, v, c)) {
    ctx.Worker().cuda_graph_estimate_gib = v;
  } else {
    Problem(ctx, "'Estimated CUDA graph memory'", c);
  }
}

// docs/vllm-rules.md §2 "CG actual vs estimate": `CUDA graph pool memory: %s GiB (actual), %s GiB (estimated),
// difference: ...`.
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

// docs/vllm-rules.md §2 "Graph capture": `Graph capturing finished in %.0f secs, took %.2f GiB`.
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

// docs/vllm-rules.md §2 "kv-cache-memory override": `Initial free memory X GiB, reserved Y GiB memory for KV Cache as
// specified by kv_cache_memory_bytes config ...` (v0.11: `reserved Y.YYGiB`). 0.19's profiling line `Initial free
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

// docs/vllm-rules.md §2 "CG util hint": `The current --gpu-memory-utilization=%.4f is equivalent to
// --gpu-memory-utilization=%.4f without CUDA graph memory profiling.`
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

// docs/vllm-rules.md §2 "Override": `Overriding num_gpu_blocks=%d with num_gpu_blocks_override=%d`.
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

// docs/vllm-rules.md §2 "Not-enough-KV error" (`_check_enough_kv_cache_memory`; some versions print "models's").
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

// docs/vllm-rules.md §2 "Memory profile detail": V1 DEBUG one-liner `Memory profiling takes %.2f seconds. Total non KV
// cache memory: ...` or the first line of the V0 block `Memory profiling takes %.2f seconds`.
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

static V0MemoryProfile& V0Profile(LogKindContext& ctx) {
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

// The one-line memory summary of vllm/v1/worker/gpu_worker.py: N era (docs/memory-overheads.md §1 row "N") `Actual
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

// docs/vllm-rules.md §2 "DCP multiplier": `Multiplying the GPU KV cache size by the dcp_world_size %d.` / `...
// cp_world_size %d (...)`.
void CpMultiplier(LogKindContext& ctx, std::string_view m, std::size_t a) {
  Cursor c{m, a};
  int n = 0;
  if (c.SkipPast("_world_size ") && c.Int32(n)) {
    ctx.Boot().kv_tokens_cp_multiplier = n;
  } else {
    Problem(ctx, "'Multiplying the GPU KV cache size'", c);
  }
}

}  // namespace ppdeploy::log_kinds
