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

StageMemory EstimateStageMemory(const ModelConfig& m, const GpuSpec& gpu, const VllmProfile& vllm,
                                const StageInputs& in, const MemoryConstants& k) {
  (void)gpu;
  StageMemory out;
  const int tp = std::max(1, in.tensor_parallel_size);
  const double mbt = std::max(1, in.max_num_batched_tokens);
  const double H = m.hidden_size;
  const double act_bytes = std::max(1, in.activation_dtype_bytes);
  const bool distributed = in.world_size() > 1;
  const bool n_era = vllm.accounting == MemoryAccounting::kNConsumed;
  // Persistent torch buffers made during the profile run: non-torch ("consumed") in the N era,
  // the torch peak increase before it.
  const MemoryColumn persistent = n_era ? MemoryColumn::kNonTorch : MemoryColumn::kActivation;
  // The source text only when describing (the optimiser's inner loop needs the figures alone).
  auto add = [&](std::string name, const char* source, std::string detail, Interval bytes, MemoryColumn col) {
    out.terms.push_back(
        MemoryTerm{std::move(name), in.describe ? std::string(source) : std::string(), std::move(detail), bytes, col});
  };

  // --- outside the budget: the CUDA context (before the init snapshot) -----------------------
  const FittedConstant& ctx = distributed ? k.cuda_context_distributed_gib : k.cuda_context_gib;
  add("CUDA context",
      "torch/CUDA init, plus NCCL communicators when world > 1 (gpu_worker.py init_device, before "
      "the init MemorySnapshot since #25359)",
      Fmt(in.describe, "{} ({})", ctx.value, ctx.source), GibInterval(ctx),
      vllm.accounting == MemoryAccounting::kV1Absolute ? MemoryColumn::kNonTorch : MemoryColumn::kOutsideBudget);
  if (vllm.nccl_in_non_torch && distributed) {
    // Before #25359 (2025-09-23) the snapshot was taken before NCCL init: its memory is non-torch.
    FittedConstant nccl = k.cuda_context_distributed_gib;
    nccl.value -= k.cuda_context_gib.value;
    add("NCCL init", "communicators created after the init snapshot (gpu_worker.py, before #25359)",
        Fmt(in.describe, "{:.2f} GiB (distributed - single context)", nccl.value), GibInterval(nccl),
        MemoryColumn::kNonTorch);
  }

  // --- non-torch growth during the profile run ------------------------------------------------
  const FittedConstant& rt = distributed ? k.runtime_distributed_gib : k.runtime_gib;
  add("CUDA runtime",
      "kernels loaded lazily and cuBLAS/cuBLASLt workspaces at the first forward (memory_profiling "
      "non-torch increase, memory-overheads.md §3)",
      Fmt(in.describe, "{} ({})", rt.value, distributed ? "world > 1" : "world 1"), GibInterval(rt),
      MemoryColumn::kNonTorch);
  if (tp > 1) {
    FittedConstant comm = k.tp_comm_gib;
    comm.value += k.tp_comm_per_doubling_gib.value * Doublings(tp);
    comm.plus_minus += k.tp_comm_per_doubling_gib.plus_minus * Doublings(tp);
    add("TP communication",
        "NCCL channel / NVLS buffers allocated at the first all-reduce of the profile run, custom "
        "all-reduce IPC buffers (device_communicators/custom_all_reduce.py)",
        Fmt(in.describe, "{:.2f} GiB at TP{} ({} + {} x log2(TP/2))", comm.value, tp, k.tp_comm_gib.value,
            k.tp_comm_per_doubling_gib.value),
        GibInterval(comm), MemoryColumn::kNonTorch);
  }

  // --- persistent torch buffers of the profile run ---------------------------------------------
  // The MoE modular kernel's workspaces (fused_moe/modular_kernel.py FusedMoEModularKernel,
  // TritonExperts.workspace_shapes): M x topk x max(N, K) and M x topk x max(2N, K) elements.
  Interval moe_ws = Interval::Exact(0);
  std::string moe_detail;
  const int moe_layers = in.local_layers - in.dense_mlp_layers + (in.last() && in.mtp_on ? in.mtp_layers : 0);
  if (m.n_routed_experts > 0 && moe_layers > 0) {
    const double ie = m.moe_intermediate_size;
    const double ie_local = in.expert_shards > tp ? ie : ie / tp;  // EP keeps whole experts
    const double elems = mbt * m.num_experts_per_tok * (std::max(ie_local, H) + std::max(2 * ie_local, H));
    moe_ws = Interval::Relative(Round(act_bytes * elems), 0.05);
    moe_detail = Fmt(in.describe, "{} B x {} tokens x top-{} x (max({:.0f}, {:.0f}) + max({:.0f}, {:.0f}))", act_bytes,
                     mbt, m.num_experts_per_tok, ie_local, H, 2 * ie_local, H);
  }
  // DSA: the indexer's prefill buffer (v1/attention/backends/mla/indexer.py
  // get_max_prefill_buffer_size: 40 x max_model_len rows of index_head_dim + 4 x head_dim/128
  // bytes) and the sparse-MLA prefill workspace (flashmla_sparse.py get_prefill_workspace_size:
  // 5 x max_model_len rows of (kv_lora_rank + rope) bf16), both sized by max_model_len.
  Interval dsa_ws = Interval::Exact(0), mla_ws = Interval::Exact(0);
  if (m.dsa) {
    const std::int64_t row = m.index_head_dim + 4 * (m.index_head_dim / 128);
    dsa_ws = Interval::Relative(40 * in.max_model_len * row + kMiB, 0.01);
    mla_ws = Interval::Relative(5 * in.max_model_len * (m.kv_lora_rank + m.qk_rope_head_dim) * 2, 0.01);
  }
  if (vllm.workspace_manager) {
    // One WorkspaceManager buffer (v1/worker/workspace.py, #27532): grown to its largest user.
    Interval ws = MaxOf(MaxOf(moe_ws, dsa_ws), mla_ws);
    if (ws.value > 0) {
      std::string who = !in.describe                        ? ""
                        : ws.value == mla_ws.value && m.dsa ? "sparse-MLA prefill 5 x max_model_len x 1152 B"
                        : ws.value == dsa_ws.value && m.dsa ? "DSA indexer 40 x max_model_len x 132 B"
                                                            : "MoE " + moe_detail;
      add("shared workspace",
          "WorkspaceManager (#27532, 2025-12-12): the max of the MoE modular-kernel, DSA indexer "
          "and sparse-MLA prefill workspaces, kept after the profile run",
          Fmt(in.describe, "max(MoE {:.3f} GiB, DSA indexer {:.3f} GiB, sparse-MLA {:.3f} GiB) = {}",
              ToGiB(moe_ws.value), ToGiB(dsa_ws.value), ToGiB(mla_ws.value), who),
          ws, persistent);
    }
  }
  if (!in.first()) {
    // Intermediate tensors a non-first stage receives (gpu_model_runner.py _dummy_run:
    // make_empty_intermediate_tensors): hidden_states + residual, [mbt, hidden].
    add("PP receive buffers", "gpu_model_runner.py _dummy_run make_empty_intermediate_tensors (non-first PP ranks)",
        Fmt(in.describe, "2 x {} tokens x {} x {} B", mbt, H, act_bytes),
        Interval::Exact(Round(2 * mbt * H * act_bytes)), persistent);
  }

  // --- transient peak of the profile run -------------------------------------------------------
  // Forward: the widest dense MLP temporaries (gate_up + act) and the residual stream
  // (memory-overheads.md §4 F = 2 B x mbt x (3 I/TP + 4 H)); MoE-only stages keep the residual
  // stream and any shared expert.
  double mlp_width = 0;
  if (in.dense_mlp_layers > 0) mlp_width = m.intermediate_size > 0 ? m.intermediate_size : m.moe_intermediate_size;
  double shared = m.shared_expert_intermediate_size > 0
                      ? m.shared_expert_intermediate_size
                      : static_cast<double>(m.n_shared_experts) * m.moe_intermediate_size;
  if (moe_layers > 0) mlp_width = std::max(mlp_width, shared);
  Interval forward = Interval::Relative(Round(act_bytes * mbt * (3.0 * mlp_width / tp + 4.0 * H)), 0.25);
  std::string forward_detail =
      Fmt(in.describe, "{} B x {} x (3 x {:.0f}/TP{} + 4 x {:.0f})", act_bytes, mbt, mlp_width, tp, H);
  if (!vllm.workspace_manager) {
    // Before the WorkspaceManager the MoE / DSA workspaces are allocated per forward.
    forward = AddIndependent(forward, AddIndependent(moe_ws, MaxOf(dsa_ws, mla_ws)));
    if (in.describe) forward_detail += " + MoE / DSA workspaces allocated in the forward";
  }
  if (m.dsa && vllm.dsa_dummy_logits) {
    // VLLM_SPARSE_INDEXER_MAX_LOGITS_MB = 512 (#36178): the indexer's dummy logits.
    forward = AddIndependent(forward, Interval::Exact(512 * kMiB));
    if (in.describe) forward_detail += " + 512 MiB DSA dummy logits";
  }
  Interval profile_ws =
      AddIndependent(GibInterval(k.profile_workspace_gib), GibInterval(k.profile_workspace_tp_gib, 1.0 / tp));
  forward = AddIndependent(forward, profile_ws);
  if (profile_ws.value != 0)
    forward_detail +=
        Fmt(in.describe, " + profile workspace {:.2f} + {:.2f} / TP{} GiB ({})", k.profile_workspace_gib.value,
            k.profile_workspace_tp_gib.value, tp, k.profile_workspace_tp_gib.source);
  // Sampler (last stage): _dummy_sampler_run on min(max_num_seqs, mbt) requests over the full
  // vocab (logits gathered on every TP rank, float32), with the hidden states still alive;
  // speculative decoding adds the rejection sampler's float32 target logits / probs.
  Interval sampler = Interval::Exact(0);
  std::string sampler_detail;
  if (in.last()) {
    const double reqs = std::min<double>(in.max_num_seqs, mbt);
    const double logits = reqs * m.vocab_size;
    double per = k.sampler_bytes_per_logit.value + (act_bytes - 2);
    double pm = k.sampler_bytes_per_logit.plus_minus;
    if (in.mtp_on) {
      per *= 1.5;
      pm *= 1.5;
    }
    sampler = AddIndependent(Interval::Around(Round(per * logits), Round(pm * logits)),
                             Interval::Exact(Round(mbt * H * act_bytes)));
    sampler_detail = Fmt(in.describe, "{:.1f} B x {} reqs x vocab {}{} + hidden states {} x {} x {} B", per, reqs,
                         m.vocab_size, in.mtp_on ? " (x1.5: rejection sampler)" : "", mbt, H, act_bytes);
  }
  const bool sampler_binds = sampler.value > forward.value;
  Interval transient = AddIndependent(sampler_binds ? sampler : forward, GibInterval(k.forward_fixed_gib));
  add("transient peak",
      "gpu_model_runner.py profile_run: _dummy_run(max_num_batched_tokens) then _dummy_sampler_run on "
      "the last rank; the peak is the larger phase (memory_profiling torch peak)",
      Fmt(in.describe, "max(forward {:.3f} GiB = {}, sampler {:.3f} GiB{}) + {:.2f} GiB", ToGiB(forward.value),
          forward_detail, ToGiB(sampler.value), sampler_detail.empty() ? "" : " = " + sampler_detail,
          k.forward_fixed_gib.value),
      transient, MemoryColumn::kActivation);

  // --- CUDA graphs -----------------------------------------------------------------------------
  if (!in.enforce_eager) {
    const int spec_k = in.last() && in.mtp_on ? in.num_speculative_tokens : 0;
    std::vector<int> sizes = CudaGraphCaptureSizes(vllm, in.max_num_seqs, spec_k, in.max_num_batched_tokens);
    int n_full = 0;
    if (vllm.cuda_graph_capture == CudaGraphCapture::kStep16FullAndPiecewise)
      for (int s : sizes) n_full += s >= 1 + spec_k && s <= in.max_num_seqs * (1 + spec_k);
    const double graphs = (static_cast<double>(sizes.size()) + n_full) / 102.0;
    const double layer_units = (in.local_layers - moe_layers + (in.last() && in.mtp_on ? in.mtp_layers : 0)) +
                               k.cuda_graph_moe_layer_factor.value * moe_layers;
    const double scale = k.cuda_graph_scale.value;
    double pool = scale * graphs * (k.cuda_graph_base_gib.value + k.cuda_graph_per_layer_gib.value * layer_units);
    double pm = graphs * std::sqrt(std::pow(k.cuda_graph_scale.plus_minus * pool / std::max(scale, 1e-9) / graphs, 2) +
                                   std::pow(scale * k.cuda_graph_base_gib.plus_minus, 2) +
                                   std::pow(scale * k.cuda_graph_per_layer_gib.plus_minus * layer_units, 2));
    std::string detail =
        Fmt(in.describe, "{} x {:.2f} x ({} + {} x {:.1f} layer units) GiB, {} PIECEWISE + {} FULL graphs", scale,
            graphs, k.cuda_graph_base_gib.value, k.cuda_graph_per_layer_gib.value, layer_units, sizes.size(), n_full);
    if (in.last() && in.mtp_on) {
      // The drafter captures its own graphs on the last rank (seed §6: 0.76 -> 1.49 GiB with MTP k=3).
      const double drafter = scale * graphs * (1 + in.num_speculative_tokens) *
                             (k.cuda_graph_base_gib.value +
                              k.cuda_graph_per_layer_gib.value * k.cuda_graph_moe_layer_factor.value * in.mtp_layers);
      pool += drafter;
      pm += 0.3 * drafter;
      detail += Fmt(in.describe, " + drafter {:.2f} GiB ((1 + k) x one layer's graphs)", drafter);
    }
    Interval actual = Interval::Around(GiBToBytes(pool), GiBToBytes(pm));
    add("CUDA graph pool",
        "gpu_model_runner.py capture_model after the KV allocation (logged 'Graph capturing finished "
        "... took'); outside the budget, its excess over the estimate must fit in (1 - util) x total",
        detail, actual, MemoryColumn::kOutsideBudget);
    const bool subtracted =
        vllm.subtracts_cuda_graph_estimate && (in.v2_model_runner || vllm.cuda_graph_estimate_v1_runner);
    if (subtracted)
      add("CUDA graph estimate",
          "gpu_model_runner.py profile_cudagraph_memory (#30515), subtracted by default since "
          "v0.21 (#38284): the first two captures of each mode extrapolated to every size",
          Fmt(in.describe, "= the pool model ({} runner)", in.v2_model_runner ? "V2" : "V1"), actual,
          MemoryColumn::kCudaGraphEstimate);
  }

  // --- columns ---------------------------------------------------------------------------------
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
  const std::int64_t residual = RoleResidual(k, in);
  if (residual != 0) {
    Interval r = Interval::Exact(residual);
    add("calibration residual", "what the calibration boot's available memory left unexplained for this stage role",
        Fmt(in.describe, "{:.3f} GiB", ToGiB(residual)), r, MemoryColumn::kActivation);
    out.activation = AddIndependent(out.activation, r);
  }
  return out;
}

std::int64_t RoleResidual(const MemoryConstants& k, const StageInputs& in) {
  if (in.pipeline_parallel_size == 1) return k.residual_single;
  if (in.first()) return k.residual_first;
  if (in.last()) return k.residual_last;
  return k.residual_middle;
}

namespace {

FittedConstant Fitted(double value, double plus_minus, std::string source) {
  return FittedConstant{value, plus_minus, std::move(source)};
}

}  // namespace

MemoryConstants FitConstants(const Calibration& c, const std::vector<CalibrationStage>& stages,
                             const ModelConfig& model, const GpuSpec& gpu, const VllmProfile& vllm,
                             const MemoryConstants& defaults, std::vector<std::string>* notes) {
  MemoryConstants k = defaults;
  k.calibrated = true;
  k.name = "calibrated from " + c.source;
  k.source = c.source;
  auto note = [&](std::string s) {
    if (notes) notes->push_back(std::move(s));
  };
  const double rounding = 0.005;  // two printed decimals
  const size_t n = std::min(stages.size(), c.ranks.size());
  const bool distributed = c.tensor_parallel_size * c.pipeline_parallel_size > 1;
  const bool n_era = vllm.accounting == MemoryAccounting::kNConsumed;
  auto estimate = [&](size_t i) { return EstimateStageMemory(model, gpu, vllm, stages[i].inputs, k); };

  // 1. CUDA context (outside the budget).
  if (c.cuda_context_gib) {
    FittedConstant& ctx = distributed ? k.cuda_context_distributed_gib : k.cuda_context_gib;
    ctx = Fitted(*c.cuda_context_gib, rounding + 0.05, "calibration: logged CUDA context");
    note(fmt::format("CUDA context {:.2f} GiB from the calibration", *c.cuda_context_gib));
  }

  // 2. The communication / runtime constant from the non-torch column.
  double nt_sum = 0;
  int nt_n = 0;
  for (size_t i = 0; i < n; ++i) {
    const CalibrationRank& r = c.ranks[i];
    std::optional<double> logged;
    if (r.non_torch_gib) logged = *r.non_torch_gib;
    if (!logged && n_era && r.weights_plus_non_torch_gib)
      logged =
          *r.weights_plus_non_torch_gib - (r.model_loading_gib ? *r.model_loading_gib : ToGiB(stages[i].weights_bytes));
    if (!logged) continue;
    nt_sum += *logged - ToGiB(estimate(i).non_torch.value);
    ++nt_n;
  }
  if (nt_n > 0) {
    const double delta = nt_sum / nt_n;
    FittedConstant& target = c.tensor_parallel_size > 1 ? k.tp_comm_gib
                             : distributed              ? k.runtime_distributed_gib
                                                        : k.runtime_gib;
    target = Fitted(target.value + delta, rounding + 0.05, "calibration: the logged non-torch column");
    note(fmt::format("{} {:+.3f} GiB -> {:.3f} GiB from the non-torch column of {} rank(s)",
                     c.tensor_parallel_size > 1 ? "TP communication" : "CUDA runtime", delta, target.value, nt_n));
  }

  // 3. The CUDA-graph scale from the logged pools.
  double cg_ratio = 0;
  int cg_n = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!c.ranks[i].cuda_graph_gib) continue;
    const std::int64_t modelled = estimate(i).cuda_graph_actual.value;
    if (modelled <= 0) continue;
    cg_ratio += GiBToBytes(*c.ranks[i].cuda_graph_gib) / static_cast<double>(modelled);
    ++cg_n;
  }
  if (cg_n > 0) {
    const double ratio = cg_ratio / cg_n;
    k.cuda_graph_scale = Fitted(k.cuda_graph_scale.value * ratio, 0.1 * k.cuda_graph_scale.value * ratio,
                                "calibration: the logged CUDA-graph pools");
    note(fmt::format("CUDA-graph scale x{:.3f} -> {:.3f} from {} logged pool(s)", ratio, k.cuda_graph_scale.value,
                     cg_n));
  }

  // 4. The profile workspace factor from the activation column (N era: it includes the CG estimate).
  double act_sum = 0;
  int act_n = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!c.ranks[i].peak_activation_gib) continue;
    StageMemory s = estimate(i);
    double modelled = ToGiB(s.activation.value + (n_era ? s.cuda_graph_estimate.value : 0));
    act_sum += (*c.ranks[i].peak_activation_gib - modelled) * stages[i].inputs.tensor_parallel_size;
    ++act_n;
  }
  if (act_n > 0) {
    const double delta = act_sum / act_n;
    k.profile_workspace_tp_gib =
        Fitted(k.profile_workspace_tp_gib.value + delta,
               (rounding + 0.05) * c.tensor_parallel_size + 0.1 * std::abs(k.profile_workspace_tp_gib.value + delta),
               "calibration: the logged activation column");
    note(fmt::format("profile workspace {:+.3f} GiB x TP -> {:.3f} GiB / TP from the activation column of {} rank(s)",
                     delta, k.profile_workspace_tp_gib.value, act_n));
  } else {
    // Only the available memory is known: it sets the workspace factor (the least constrained term).
    double sum = 0;
    int cnt = 0;
    for (size_t i = 0; i < n; ++i) {
      StageMemory s = estimate(i);
      double avail = ToGiB(stages[i].requested_bytes - stages[i].weights_bytes - s.budget().value);
      sum += (avail - c.ranks[i].available_kv_gib) * stages[i].inputs.tensor_parallel_size;
      ++cnt;
    }
    if (cnt > 0) {
      const double delta = sum / cnt;
      k.profile_workspace_tp_gib =
          Fitted(k.profile_workspace_tp_gib.value + delta,
                 (rounding + 0.1) * c.tensor_parallel_size + 0.1 * std::abs(k.profile_workspace_tp_gib.value + delta),
                 "calibration: the logged available KV memory");
      note(
          fmt::format("profile workspace {:+.3f} GiB x TP from the available KV memory of {} rank(s) (no "
                      "activation figure logged)",
                      delta, cnt));
    }
  }

  // 5. What is left per rank, by role (so the boot itself is reproduced exactly): the mean
  // residual of the ranks of each role.
  k.residual_first = k.residual_middle = k.residual_last = k.residual_single = 0;
  std::int64_t sums[4] = {0, 0, 0, 0};
  int counts[4] = {0, 0, 0, 0};
  for (size_t i = 0; i < n; ++i) {
    StageMemory s = estimate(i);
    const std::int64_t avail = stages[i].requested_bytes - stages[i].weights_bytes - s.budget().value;
    const StageInputs& in = stages[i].inputs;
    const int role = in.pipeline_parallel_size == 1 ? 3 : in.first() ? 0 : in.last() ? 2 : 1;
    sums[role] += avail - GiBToBytes(c.ranks[i].available_kv_gib);
    ++counts[role];
  }
  auto mean = [&](int role) { return counts[role] ? sums[role] / counts[role] : 0; };
  if (c.pipeline_parallel_size > 1) {
    k.residual_first = mean(0);
    k.residual_last = mean(2);
    k.residual_middle = counts[1] ? mean(1) : (k.residual_first + k.residual_last) / 2;
    k.residual_single = (k.residual_first + k.residual_last) / 2;
  } else {
    k.residual_first = k.residual_middle = k.residual_last = k.residual_single = mean(3);
  }
  return k;
}

}  // namespace ppdeploy
