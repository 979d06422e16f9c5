#include "memory/overheads.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/embedded_data.h"
#include "core/error.h"
#include "core/escape.h"
#include "core/json_fields.h"
#include "core/units.h"

namespace ppdeploy {
namespace {

constexpr std::string_view kConstantsSource = "data/memory/constants.json";

FittedConstant ReadConstant(const nlohmann::json& obj, std::string_view key, const JsonContext& c) {
  auto it = obj.find(std::string(key));
  if (it == obj.end()) Fail("{}: required constant is missing", c.Where(key));
  JsonContext cc = c.Child(key);
  RequireObject(*it, cc);
  FittedConstant f;
  f.value = ReqNumber(*it, "value", cc, -1e6);
  f.plus_minus = ReqNumber(*it, "plus_minus", cc, 0.0);
  f.source = ReqString(*it, "source", cc);
  return f;
}

Interval GibInterval(const FittedConstant& f, double times = 1.0) {
  return Interval::Around(GiBToBytes(f.value * times), GiBToBytes(f.plus_minus * std::abs(times)));
}
std::int64_t Round(double bytes) { return static_cast<std::int64_t>(std::llround(bytes)); }
// A term's detail text, formatted only when the caller wants descriptions.
template <typename... A>
std::string Fmt(bool describe, fmt::format_string<A...> f, A&&... a) {
  return describe ? fmt::format(f, std::forward<A>(a)...) : std::string();
}

bool MatchList(const nlohmann::json& match, std::string_view key, const std::string& value, const JsonContext& c) {
  auto it = match.find(std::string(key));
  if (it == match.end()) return true;
  if (!it->is_array()) Fail("{}: expected a list of strings", c.Where(key));
  for (const auto& v : *it) {
    if (!v.is_string()) Fail("{}: expected a list of strings, got {}", c.Where(key), ShortJson(v));
    if (v.get<std::string>() == value) return true;
  }
  return false;
}

const std::vector<std::pair<nlohmann::json, MemoryConstants>>& EmbeddedSets() {
  static const auto sets = [] {
    const std::string source(kConstantsSource);
    auto text = FindEmbedded("memory/constants.json");
    if (!text) Fail("{}: not embedded in this binary", source);
    return ParseMemoryConstants(ParseJsonText(*text, source), source);
  }();
  return sets;
}

// log2(TP / 2) for TP >= 2.
double Doublings(int tp) { return tp <= 2 ? 0.0 : std::log2(static_cast<double>(tp) / 2.0); }

}  // namespace

std::vector<std::pair<nlohmann::json, MemoryConstants>> ParseMemoryConstants(const nlohmann::json& j,
                                                                             const std::string& source) {
  JsonContext ctx{source, ""};
  RequireObject(j, ctx);
  if (ReqString(j, "schema", ctx) != "ppdeploy.memory-constants/1")
    Fail("{}: unsupported schema {} (expected ppdeploy.memory-constants/1)", ctx.Where("schema"),
         QuoteForMessage(ReqString(j, "schema", ctx)));
  auto model_it = j.find("model");
  if (model_it == j.end()) Fail("{}: required object is missing", ctx.Where("model"));
  JsonContext mc = ctx.Child("model");
  RequireObject(*model_it, mc);
  MemoryConstants base;
  base.sampler_bytes_per_logit = ReadConstant(*model_it, "sampler_bytes_per_logit", mc);
  base.forward_fixed_gib = ReadConstant(*model_it, "forward_fixed_gib", mc);
  base.cuda_graph_base_gib = ReadConstant(*model_it, "cuda_graph_base_gib", mc);
  base.cuda_graph_per_layer_gib = ReadConstant(*model_it, "cuda_graph_per_layer_gib", mc);
  base.cuda_graph_moe_layer_factor = ReadConstant(*model_it, "cuda_graph_moe_layer_factor", mc);
  auto sets = j.find("sets");
  if (sets == j.end() || !sets->is_array() || sets->empty()) Fail("{}: expected a non-empty list", ctx.Where("sets"));
  std::vector<std::pair<nlohmann::json, MemoryConstants>> out;
  int idx = 0;
  for (const auto& s : *sets) {
    JsonContext sc = ctx.Child(fmt::format("sets[{}]", idx++));
    RequireObject(s, sc);
    MemoryConstants k = base;
    k.name = ReqString(s, "name", sc);
    k.source = ReqString(s, "source", sc);
    auto match = s.find("match");
    if (match == s.end() || !match->is_object()) Fail("{}: expected an object", sc.Where("match"));
    for (auto it = match->begin(); it != match->end(); ++it)
      if (it.key() != "gpu_arch" && it.key() != "vllm_rows" && it.key() != "nvswitch")
        Fail("{}: unknown key {} (expected gpu_arch, vllm_rows, nvswitch)", sc.Where("match"),
             QuoteForMessage(it.key()));
    k.cuda_context_gib = ReadConstant(s, "cuda_context_gib", sc);
    k.cuda_context_distributed_gib = ReadConstant(s, "cuda_context_distributed_gib", sc);
    k.runtime_gib = ReadConstant(s, "runtime_gib", sc);
    k.runtime_distributed_gib = ReadConstant(s, "runtime_distributed_gib", sc);
    k.tp_comm_gib = ReadConstant(s, "tp_comm_gib", sc);
    k.tp_comm_per_doubling_gib = ReadConstant(s, "tp_comm_per_doubling_gib", sc);
    k.profile_workspace_gib = ReadConstant(s, "profile_workspace_gib", sc);
    k.profile_workspace_tp_gib = ReadConstant(s, "profile_workspace_tp_gib", sc);
    k.cuda_graph_scale = ReadConstant(s, "cuda_graph_scale", sc);
    out.emplace_back(*match, std::move(k));
  }
  if (!out.back().first.empty()) Fail("{}: the last set must match everything (\"match\": {{}})", ctx.Where("sets"));
  return out;
}

MemoryConstants DefaultMemoryConstants(const GpuSpec& gpu, const VllmProfile& vllm) {
  const std::string source(kConstantsSource);
  int idx = 0;
  for (const auto& [match, k] : EmbeddedSets()) {
    JsonContext c{source, fmt::format("sets[{}].match", idx++)};
    if (!MatchList(match, "gpu_arch", gpu.arch, c) || !MatchList(match, "vllm_rows", vllm.name, c)) continue;
    if (auto nv = match.find("nvswitch"); nv != match.end()) {
      if (!nv->is_boolean()) Fail("{}: expected a boolean", c.Where("nvswitch"));
      if (nv->get<bool>() != gpu.nvswitch) continue;
    }
    return k;
  }
  return EmbeddedSets().back().second;
}

std::pair<int, int> DefaultBatchLimits(const GpuSpec& gpu, const VllmProfile& vllm) {
  if (gpu.total_gib >= 160.0 && vllm.large_gpu_batch_defaults) return {16384, 1024};
  if (gpu.large_batch_defaults()) return {8192, 1024};
  return {2048, 256};
}

std::vector<int> CudaGraphCaptureSizes(const VllmProfile& vllm, int max_num_seqs, int k, int mbt) {
  const int max_size = std::max(1, std::min({max_num_seqs * (1 + k) * 2, 512, mbt}));
  std::vector<int> sizes;
  for (int s : {1, 2, 4})
    if (s <= max_size) sizes.push_back(s);
  const bool step16 = vllm.cuda_graph_capture == CudaGraphCapture::kStep16FullAndPiecewise;
  for (int s = 8; s <= max_size; s += (step16 && s >= 256) ? 16 : 8) sizes.push_back(s);
  if (sizes.back() != max_size && max_size == mbt) sizes.push_back(max_size);  // + mbt when it is the cap
  return sizes;
}

Interval StageMemory::budget() const {
  return AddIndependent(AddIndependent(non_torch, activation), cuda_graph_estimate);
}

namespace {

// One stage's estimate under way: its inputs, the figures every term reads, and the terms so far.
struct Estimate {
  const ModelConfig& m;
  const VllmProfile& vllm;
  const StageInputs& in;
  const MemoryConstants& k;
  StageMemory out;
  int tp = 1;
  double mbt = 1, H = 0, act_bytes = 2;
  bool distributed = false, n_era = false;
  /// Persistent torch buffers made during the profile run: non-torch ("consumed") in the N era, the torch
  /// peak increase before it.
  MemoryColumn persistent = MemoryColumn::kActivation;
  int moe_layers = 0;  ///< MoE layers on the stage, the last stage's MTP layers included

  Estimate(const ModelConfig& model, const VllmProfile& v, const StageInputs& i, const MemoryConstants& c)
      : m(model), vllm(v), in(i), k(c) {
    tp = std::max(1, in.tensor_parallel_size);
    mbt = std::max(1, in.max_num_batched_tokens);
    H = m.hidden_size;
    act_bytes = std::max(1, in.activation_dtype_bytes);
    distributed = in.world_size() > 1;
    n_era = vllm.accounting == MemoryAccounting::kNConsumed;
    persistent = n_era ? MemoryColumn::kNonTorch : MemoryColumn::kActivation;
    moe_layers = in.local_layers - in.dense_mlp_layers + (in.last() && in.mtp_on ? in.mtp_layers : 0);
  }
  // The source text only when describing (the optimiser's inner loop needs the figures alone).
  void Add(std::string name, const char* source, std::string detail, Interval bytes, MemoryColumn col) {
    out.terms.push_back(
        MemoryTerm{std::move(name), in.describe ? std::string(source) : std::string(), std::move(detail), bytes, col});
  }
};

// Outside the budget: the CUDA context (before the init snapshot); NCCL's communicators where the snapshot
// came before them.
void AddContext(Estimate& e) {
  const MemoryConstants& k = e.k;
  const FittedConstant& ctx = e.distributed ? k.cuda_context_distributed_gib : k.cuda_context_gib;
  e.Add("CUDA context",
        "torch/CUDA init, plus NCCL communicators when world > 1 (gpu_worker.py init_device, before "
        "the init MemorySnapshot since #25359)",
        Fmt(e.in.describe, "{} ({})", ctx.value, ctx.source), GibInterval(ctx),
        e.vllm.accounting == MemoryAccounting::kV1Absolute ? MemoryColumn::kNonTorch : MemoryColumn::kOutsideBudget);
  if (e.vllm.nccl_in_non_torch && e.distributed) {
    // Before #25359 (2025-09-23) the snapshot was taken before NCCL init: its memory is non-torch.
    FittedConstant nccl = k.cuda_context_distributed_gib;
    nccl.value -= k.cuda_context_gib.value;
    e.Add("NCCL init", "communicators created after the init snapshot (gpu_worker.py, before #25359)",
          Fmt(e.in.describe, "{:.2f} GiB (distributed - single context)", nccl.value), GibInterval(nccl),
          MemoryColumn::kNonTorch);
  }
}

// Non-torch growth during the profile run: the CUDA runtime and the TP communication buffers.
void AddRuntime(Estimate& e) {
  const MemoryConstants& k = e.k;
  const FittedConstant& rt = e.distributed ? k.runtime_distributed_gib : k.runtime_gib;
  e.Add("CUDA runtime",
        "kernels loaded lazily and cuBLAS/cuBLASLt workspaces at the first forward (memory_profiling "
        "non-torch increase, memory-overheads.md §3)",
        Fmt(e.in.describe, "{} ({})", rt.value, e.distributed ? "world > 1" : "world 1"), GibInterval(rt),
        MemoryColumn::kNonTorch);
  if (e.tp <= 1) return;
  FittedConstant comm = k.tp_comm_gib;
  comm.value += k.tp_comm_per_doubling_gib.value * Doublings(e.tp);
  comm.plus_minus += k.tp_comm_per_doubling_gib.plus_minus * Doublings(e.tp);
  e.Add("TP communication",
        "NCCL channel / NVLS buffers allocated at the first all-reduce of the profile run, custom "
        "all-reduce IPC buffers (device_communicators/custom_all_reduce.py)",
        Fmt(e.in.describe, "{:.2f} GiB at TP{} ({} + {} x log2(TP/2))", comm.value, e.tp, k.tp_comm_gib.value,
            k.tp_comm_per_doubling_gib.value),
        GibInterval(comm), MemoryColumn::kNonTorch);
}

// The profile run's workspaces: the MoE modular kernel's, the DSA indexer's prefill buffer and the
// sparse-MLA prefill workspace.
struct Workspaces {
  Interval moe = Interval::Exact(0), dsa = Interval::Exact(0), mla = Interval::Exact(0);
  std::string moe_detail;
};

Workspaces ProfileWorkspaces(const Estimate& e) {
  const ModelConfig& m = e.m;
  Workspaces w;
  // The MoE modular kernel's workspaces (fused_moe/modular_kernel.py FusedMoEModularKernel,
  // TritonExperts.workspace_shapes): M x topk x max(N, K) and M x topk x max(2N, K) elements.
  if (m.n_routed_experts > 0 && e.moe_layers > 0) {
    const double ie = m.moe_intermediate_size;
    const double ie_local = e.in.expert_shards > e.tp ? ie : ie / e.tp;  // EP keeps whole experts
    const double elems = e.mbt * m.num_experts_per_tok * (std::max(ie_local, e.H) + std::max(2 * ie_local, e.H));
    w.moe = Interval::Relative(Round(e.act_bytes * elems), 0.05);
    w.moe_detail = Fmt(e.in.describe, "{} B x {} tokens x top-{} x (max({:.0f}, {:.0f}) + max({:.0f}, {:.0f}))",
                       e.act_bytes, e.mbt, m.num_experts_per_tok, ie_local, e.H, 2 * ie_local, e.H);
  }
  // DSA: the indexer's prefill buffer (v1/attention/backends/mla/indexer.py
  // get_max_prefill_buffer_size: 40 x max_model_len rows of index_head_dim + 4 x head_dim/128
  // bytes) and the sparse-MLA prefill workspace (flashmla_sparse.py get_prefill_workspace_size:
  // 5 x max_model_len rows of (kv_lora_rank + rope) bf16), both sized by max_model_len.
  if (m.dsa) {
    const std::int64_t row = m.index_head_dim + 4 * (m.index_head_dim / 128);
    w.dsa = Interval::Relative(40 * e.in.max_model_len * row + kMiB, 0.01);
    w.mla = Interval::Relative(5 * e.in.max_model_len * (m.kv_lora_rank + m.qk_rope_head_dim) * 2, 0.01);
  }
  return w;
}

// Persistent torch buffers of the profile run: the shared workspace (since #27532) and the PP receive buffers.
void AddPersistentBuffers(Estimate& e, const Workspaces& w) {
  const ModelConfig& m = e.m;
  if (e.vllm.workspace_manager) {
    // One WorkspaceManager buffer (v1/worker/workspace.py, #27532): grown to its largest user.
    Interval ws = MaxOf(MaxOf(w.moe, w.dsa), w.mla);
    if (ws.value > 0) {
      std::string who = !e.in.describe                     ? ""
                        : ws.value == w.mla.value && m.dsa ? "sparse-MLA prefill 5 x max_model_len x 1152 B"
                        : ws.value == w.dsa.value && m.dsa ? "DSA indexer 40 x max_model_len x 132 B"
                                                           : "MoE " + w.moe_detail;
      e.Add("shared workspace",
            "WorkspaceManager (#27532, 2025-12-12): the max of the MoE modular-kernel, DSA indexer "
            "and sparse-MLA prefill workspaces, kept after the profile run",
            Fmt(e.in.describe, "max(MoE {:.3f} GiB, DSA indexer {:.3f} GiB, sparse-MLA {:.3f} GiB) = {}",
                ToGiB(w.moe.value), ToGiB(w.dsa.value), ToGiB(w.mla.value), who),
            ws, e.persistent);
    }
  }
  if (!e.in.first()) {
    // Intermediate tensors a non-first stage receives (gpu_model_runner.py _dummy_run:
    // make_empty_intermediate_tensors): hidden_states + residual, [mbt, hidden].
    e.Add("PP receive buffers", "gpu_model_runner.py _dummy_run make_empty_intermediate_tensors (non-first PP ranks)",
          Fmt(e.in.describe, "2 x {} tokens x {} x {} B", e.mbt, e.H, e.act_bytes),
          Interval::Exact(Round(2 * e.mbt * e.H * e.act_bytes)), e.persistent);
  }
}

// The forward's transient: the widest dense MLP temporaries (gate_up + act) and the residual stream
// (docs/memory-overheads.md §4 F = 2 B x mbt x (3 I/TP + 4 H)); MoE-only stages keep the residual stream and any
// shared expert; plus the workspaces allocated per forward before the WorkspaceManager, the DSA dummy logits
// and the image's profile workspace.
Interval ForwardPeak(const Estimate& e, const Workspaces& w, std::string& detail) {
  const ModelConfig& m = e.m;
  const MemoryConstants& k = e.k;
  double mlp_width = 0;
  if (e.in.dense_mlp_layers > 0) mlp_width = m.intermediate_size > 0 ? m.intermediate_size : m.moe_intermediate_size;
  double shared = m.shared_expert_intermediate_size > 0
                      ? m.shared_expert_intermediate_size
                      : static_cast<double>(m.n_shared_experts) * m.moe_intermediate_size;
  if (e.moe_layers > 0) mlp_width = std::max(mlp_width, shared);
  Interval forward = Interval::Relative(Round(e.act_bytes * e.mbt * (3.0 * mlp_width / e.tp + 4.0 * e.H)), 0.25);
  detail = Fmt(e.in.describe, "{} B x {} x (3 x {:.0f}/TP{} + 4 x {:.0f})", e.act_bytes, e.mbt, mlp_width, e.tp, e.H);
  if (!e.vllm.workspace_manager) {
    // Before the WorkspaceManager the MoE / DSA workspaces are allocated per forward.
    forward = AddIndependent(forward, AddIndependent(w.moe, MaxOf(w.dsa, w.mla)));
    if (e.in.describe) detail += " + MoE / DSA workspaces allocated in the forward";
  }
  if (m.dsa && e.vllm.dsa_dummy_logits) {
    // VLLM_SPARSE_INDEXER_MAX_LOGITS_MB = 512 (#36178): the indexer's dummy logits.
    forward = AddIndependent(forward, Interval::Exact(512 * kMiB));
    if (e.in.describe) detail += " + 512 MiB DSA dummy logits";
  }
  Interval profile_ws =
      AddIndependent(GibInterval(k.profile_workspace_gib), GibInterval(k.profile_workspace_tp_gib, 1.0 / e.tp));
  forward = AddIndependent(forward, profile_ws);
  if (profile_ws.value != 0)
    detail += Fmt(e.in.describe, " + profile workspace {:.2f} + {:.2f} / TP{} GiB ({})", k.profile_workspace_gib.value,
                  k.profile_workspace_tp_gib.value, e.tp, k.profile_workspace_tp_gib.source);
  return forward;
}

// Sampler (last stage): _dummy_sampler_run on min(max_num_seqs, mbt) requests over the full vocab (logits
// gathered on every TP rank, float32), with the hidden states still alive; speculative decoding adds the
// rejection sampler's float32 target logits / probs.
Interval SamplerPeak(const Estimate& e, std::string& detail) {
  if (!e.in.last()) return Interval::Exact(0);
  const double reqs = std::min<double>(e.in.max_num_seqs, e.mbt);
  const double logits = reqs * e.m.vocab_size;
  double per = e.k.sampler_bytes_per_logit.value + (e.act_bytes - 2);
  double pm = e.k.sampler_bytes_per_logit.plus_minus;
  if (e.in.mtp_on) {
    per *= 1.5;
    pm *= 1.5;
  }
  detail = Fmt(e.in.describe, "{:.1f} B x {} reqs x vocab {}{} + hidden states {} x {} x {} B", per, reqs,
               e.m.vocab_size, e.in.mtp_on ? " (x1.5: rejection sampler)" : "", e.mbt, e.H, e.act_bytes);
  return AddIndependent(Interval::Around(Round(per * logits), Round(pm * logits)),
                        Interval::Exact(Round(e.mbt * e.H * e.act_bytes)));
}

// The transient peak of the profile run: the larger of the forward and the sampler phase.
void AddTransientPeak(Estimate& e, const Workspaces& w) {
  std::string forward_detail, sampler_detail;
  const Interval forward = ForwardPeak(e, w, forward_detail);
  const Interval sampler = SamplerPeak(e, sampler_detail);
  const bool sampler_binds = sampler.value > forward.value;
  Interval transient = AddIndependent(sampler_binds ? sampler : forward, GibInterval(e.k.forward_fixed_gib));
  e.Add("transient peak",
        "gpu_model_runner.py profile_run: _dummy_run(max_num_batched_tokens) then _dummy_sampler_run on "
        "the last rank; the peak is the larger phase (memory_profiling torch peak)",
        Fmt(e.in.describe, "max(forward {:.3f} GiB = {}, sampler {:.3f} GiB{}) + {:.2f} GiB", ToGiB(forward.value),
            forward_detail, ToGiB(sampler.value), sampler_detail.empty() ? "" : " = " + sampler_detail,
            e.k.forward_fixed_gib.value),
        transient, MemoryColumn::kActivation);
}

// The CUDA-graph pool captured after the KV allocation (outside the budget), and the estimate the version
// subtracts from the budget where it does.
void AddCudaGraphs(Estimate& e) {
  const StageInputs& in = e.in;
  const MemoryConstants& k = e.k;
  if (in.enforce_eager) return;
  const int spec_k = in.last() && in.mtp_on ? in.num_speculative_tokens : 0;
  std::vector<int> sizes = CudaGraphCaptureSizes(e.vllm, in.max_num_seqs, spec_k, in.max_num_batched_tokens);
  int n_full = 0;
  if (e.vllm.cuda_graph_capture == CudaGraphCapture::kStep16FullAndPiecewise)
    for (int s : sizes) n_full += s >= 1 + spec_k && s <= in.max_num_seqs * (1 + spec_k);
  const double graphs = (static_cast<double>(sizes.size()) + n_full) / 102.0;
  const double layer_units = (in.local_layers - e.moe_layers + (in.last() && in.mtp_on ? in.mtp_layers : 0)) +
                             k.cuda_graph_moe_layer_factor.value * e.moe_layers;
  const double scale = k.cuda_graph_scale.value;
  double pool = scale * graphs * (k.cuda_graph_base_gib.value + k.cuda_graph_per_layer_gib.value * layer_units);
  double pm = graphs * std::sqrt(std::pow(k.cuda_graph_scale.plus_minus * pool / std::max(scale, 1e-9) / graphs, 2) +
                                 std::pow(scale * k.cuda_graph_base_gib.plus_minus, 2) +
                                 std::pow(scale * k.cuda_graph_per_layer_gib.plus_minus * layer_units, 2));
  std::string detail =
      Fmt(in.describe, "{} x {:.2f} x ({} + {} x {:.1f} layer units) GiB, {} PIECEWISE + {} FULL graphs", scale, graphs,
          k.cuda_graph_base_gib.value, k.cuda_graph_per_layer_gib.value, layer_units, sizes.size(), n_full);
  if (in.last() && in.mtp_on) {
    // The drafter captures its own graphs on the last rank (docs/seed.md §6: 0.76 -> 1.49 GiB with MTP k=3).
    const double drafter = scale * graphs * (1 + in.num_speculative_tokens) *
                           (k.cuda_graph_base_gib.value +
                            k.cuda_graph_per_layer_gib.value * k.cuda_graph_moe_layer_factor.value * in.mtp_layers);
    pool += drafter;
    pm += 0.3 * drafter;
    detail += Fmt(in.describe, " + drafter {:.2f} GiB ((1 + k) x one layer's graphs)", drafter);
  }
  Interval actual = Interval::Around(GiBToBytes(pool), GiBToBytes(pm));
  e.Add("CUDA graph pool",
        "gpu_model_runner.py capture_model after the KV allocation (logged 'Graph capturing finished "
        "... took'); outside the budget, its excess over the estimate must fit in (1 - util) x total",
        detail, actual, MemoryColumn::kOutsideBudget);
  const bool subtracted =
      e.vllm.subtracts_cuda_graph_estimate && (in.v2_model_runner || e.vllm.cuda_graph_estimate_v1_runner);
  if (subtracted)
    e.Add("CUDA graph estimate",
          "gpu_model_runner.py profile_cudagraph_memory (#30515), subtracted by default since "
          "v0.21 (#38284): the first two captures of each mode extrapolated to every size",
          Fmt(in.describe, "= the pool model ({} runner)", in.v2_model_runner ? "V2" : "V1"), actual,
          MemoryColumn::kCudaGraphEstimate);
}

// The version's columns: each term booked where its column says.
void BookColumns(StageMemory& out) {
  out.non_torch = out.activation = out.cuda_graph_estimate = out.cuda_graph_actual = Interval::Exact(0);
  out.cuda_context = Interval::Exact(0);
  for (const auto& t : out.terms) {
    switch (t.column) {
      case MemoryColumn::kNonTorch:
        out.non_torch = AddIndependent(out.non_torch, t.bytes);
        break;
      case MemoryColumn::kActivation:
        out.activation = AddIndependent(out.activation, t.bytes);
        break;
      case MemoryColumn::kCudaGraphEstimate:
        out.cuda_graph_estimate = AddIndependent(out.cuda_graph_estimate, t.bytes);
        break;
      case MemoryColumn::kOutsideBudget:
        if (t.name == "CUDA graph pool") out.cuda_graph_actual = t.bytes;
        break;
    }
    if (t.name == "CUDA context" && t.column == MemoryColumn::kOutsideBudget) out.cuda_context = t.bytes;
  }
}

}  // namespace

StageMemory EstimateStageMemory(const ModelConfig& m, const GpuSpec& gpu, const VllmProfile& vllm,
                                const StageInputs& in, const MemoryConstants& k) {
  (void)gpu;
  Estimate e(m, vllm, in, k);
  AddContext(e);
  AddRuntime(e);
  const Workspaces w = ProfileWorkspaces(e);
  AddPersistentBuffers(e, w);
  AddTransientPeak(e, w);
  AddCudaGraphs(e);
  BookColumns(e.out);
  // What a calibration left unexplained for this stage role (so its own boot is reproduced exactly).
  const std::int64_t residual = RoleResidual(k, in);
  if (residual != 0) {
    Interval r = Interval::Exact(residual);
    e.Add("calibration residual", "what the calibration boot's available memory left unexplained for this stage role",
          Fmt(in.describe, "{:.3f} GiB", ToGiB(residual)), r, MemoryColumn::kActivation);
    e.out.activation = AddIndependent(e.out.activation, r);
  }
  return std::move(e.out);
}

std::int64_t RoleResidual(const MemoryConstants& k, const StageInputs& in) {
  if (in.pipeline_parallel_size == 1) return k.residual_single;
  if (in.first()) return k.residual_first;
  if (in.last()) return k.residual_last;
  return k.residual_middle;
}

}  // namespace ppdeploy
