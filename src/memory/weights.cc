#include "memory/weights.h"

#include <fmt/format.h>

#include <algorithm>
#include <regex>

#include "core/error.h"
#include "core/escape.h"
#include "core/units.h"

namespace ppdeploy {

std::int64_t SlotWeights::total_bytes() const {
  std::int64_t t = indexer_bytes;
  for (const auto& i : items) t += i.bytes;
  return t;
}

namespace {

// Decides whether a module is quantized under the model's quantization_config.
class QuantMatcher {
 public:
  explicit QuantMatcher(const QuantizationConfig& q) : q_(q) {
    if (q.ignore_is_substring) return;
    for (const auto& entry : q.ignore) {
      if (entry.rfind("re:", 0) == 0) {
        try {
          regexes_.emplace_back(entry.substr(3), std::regex::ECMAScript | std::regex::optimize);
        } catch (const std::regex_error&) {
          Fail("quantization_config.ignore: invalid regular expression {}", QuoteForMessage(entry));
        }
      } else {
        names_.push_back(entry);
      }
    }
  }
  bool Quantized(const std::string& module) const {
    if (q_.method == QuantizationConfig::Method::kNone) return false;
    if (q_.ignore_is_substring) {
      for (const auto& e : q_.ignore)
        if (!e.empty() && module.find(e) != std::string::npos) return false;
      return true;
    }
    for (const auto& n : names_)
      if (n == module) return false;
    for (const auto& r : regexes_)  // Python re.match: anchored at the start only
      if (std::regex_search(module, r, std::regex_constants::match_continuous)) return false;
    return true;
  }

 private:
  const QuantizationConfig& q_;
  std::vector<std::regex> regexes_;
  std::vector<std::string> names_;
};

struct Estimator {
  const ModelConfig& m;
  QuantMatcher matcher;

  std::int64_t Dense(std::int64_t elements) const { return elements * m.dtype_bytes; }

  // Bytes of a Linear layer weight [out, in] named `module`.
  std::int64_t Linear(std::int64_t out, std::int64_t in, const std::string& module, bool quantizable = true) const {
    const auto& q = m.quantization;
    if (!quantizable || !matcher.Quantized(module)) return Dense(out * in);
    if (q.method == QuantizationConfig::Method::kFp8) {
      std::int64_t scales = q.fp8_block_n > 0 ? CeilDiv(out, q.fp8_block_n) * CeilDiv(in, q.fp8_block_k) * 4 : 4;
      return out * in + scales;
    }
    std::int64_t groups = q.group_size > 0 ? CeilDiv(in, q.group_size) : 1;
    std::int64_t bytes = out * in * q.weight_bits / 8 + out * groups * 2;  // packed weights + 16-bit scales
    if (q.has_zero_points) bytes += out * groups * q.weight_bits / 8;      // packed zero points
    if (q.has_g_idx) bytes += in * 4;                                      // act-order index
    return bytes;
  }

  void Add(SlotWeights& s, const char* component, std::int64_t bytes, Shard shard) const {
    for (auto& item : s.items)
      if (item.component == component && item.shard == shard) {
        item.bytes += bytes;
        return;
      }
    s.items.push_back(WeightItem{component, bytes, shard});
  }

  void Attention(SlotWeights& s, int i) const {
    std::string p = "model.layers." + std::to_string(i) + ".self_attn.";
    const std::int64_t H = m.hidden_size;
    Add(s, "norms", Dense(2 * H), Shard::kReplicated);  // input_layernorm + post_attention_layernorm
    if (m.attention == AttentionKind::kMla) {
      const std::int64_t heads = m.num_attention_heads;
      const std::int64_t qk_head = m.qk_nope_head_dim + m.qk_rope_head_dim;
      if (m.q_lora_rank > 0) {
        Add(s, "attention", Linear(m.q_lora_rank, H, p + "q_a_proj"), Shard::kReplicated);
        Add(s, "attention", Dense(m.q_lora_rank), Shard::kReplicated);  // q_a_layernorm
        Add(s, "attention", Linear(heads * qk_head, m.q_lora_rank, p + "q_b_proj"), Shard::kTensorParallel);
      } else {
        Add(s, "attention", Linear(heads * qk_head, H, p + "q_proj"), Shard::kTensorParallel);
      }
      Add(s, "attention", Linear(m.kv_lora_rank + m.qk_rope_head_dim, H, p + "kv_a_proj_with_mqa"), Shard::kReplicated);
      Add(s, "attention", Dense(m.kv_lora_rank), Shard::kReplicated);  // kv_a_layernorm
      Add(s, "attention", Linear(heads * (m.qk_nope_head_dim + m.v_head_dim), m.kv_lora_rank, p + "kv_b_proj"),
          Shard::kTensorParallel);
      Add(s, "attention", Linear(H, heads * m.v_head_dim, p + "o_proj"), Shard::kTensorParallel);
      if (m.dsa) {
        std::string ip = p + "indexer.";
        const std::int64_t q_in = m.q_lora_rank > 0 ? m.q_lora_rank : H;
        s.indexer_bytes = Linear(static_cast<std::int64_t>(m.index_n_heads) * m.index_head_dim, q_in, ip + "wq_b") +
                          Linear(m.index_head_dim, H, ip + "wk") + Dense(2 * m.index_head_dim) /* k_norm */ +
                          Linear(m.index_n_heads, H, ip + "weights_proj", /*quantizable=*/false);
        s.has_indexer_tensors = true;
      }
    } else {
      const std::int64_t hd = m.head_dim;
      Add(s, "attention", Linear(m.num_attention_heads * hd, H, p + "q_proj"), Shard::kTensorParallel);
      Add(s, "attention_kv", Linear(m.num_key_value_heads * hd, H, p + "k_proj"), Shard::kKvHeads);
      Add(s, "attention_kv", Linear(m.num_key_value_heads * hd, H, p + "v_proj"), Shard::kKvHeads);
      Add(s, "attention", Linear(H, m.num_attention_heads * hd, p + "o_proj"), Shard::kTensorParallel);
      if (m.attention_bias) {
        Add(s, "attention", Dense(m.num_attention_heads * hd), Shard::kTensorParallel);
        Add(s, "attention_kv", Dense(2 * m.num_key_value_heads * hd), Shard::kKvHeads);
      }
      if (m.architecture.rfind("Qwen3", 0) == 0) Add(s, "norms", Dense(2 * hd), Shard::kReplicated);  // q/k norm
    }
  }

  void Mlp(SlotWeights& s, int i) const {
    std::string p = "model.layers." + std::to_string(i) + ".mlp.";
    const std::int64_t H = m.hidden_size;
    if (!m.IsMoeLayer(i)) {
      const std::int64_t I = m.intermediate_size;
      Add(s, "dense_mlp", Linear(I, H, p + "gate_proj") + Linear(I, H, p + "up_proj") + Linear(H, I, p + "down_proj"),
          Shard::kTensorParallel);
      return;
    }
    const std::int64_t E = m.n_routed_experts, Ie = m.moe_intermediate_size;
    std::string ep = p + "experts.0.";
    std::int64_t one_expert =
        Linear(Ie, H, ep + "gate_proj") + Linear(Ie, H, ep + "up_proj") + Linear(H, Ie, ep + "down_proj");
    Add(s, "routed_experts", E * one_expert, Shard::kExperts);
    Add(s, "router", Dense(E * H) + (m.attention == AttentionKind::kMla ? E * 4 : 0), Shard::kReplicated);
    std::int64_t shared_width = static_cast<std::int64_t>(m.n_shared_experts) * Ie;
    std::string sp = p + "shared_experts.";
    if (m.shared_expert_intermediate_size > 0) {
      shared_width = m.shared_expert_intermediate_size;
      sp = p + "shared_expert.";
      Add(s, "router", Dense(H), Shard::kReplicated);  // shared_expert_gate
    }
    if (shared_width > 0)
      Add(s, "shared_experts",
          Linear(shared_width, H, sp + "gate_proj") + Linear(shared_width, H, sp + "up_proj") +
              Linear(H, shared_width, sp + "down_proj"),
          Shard::kTensorParallel);
  }
};

void Finish(WeightTable& t) {
  t.total_bytes = 0;
  auto add = [&](const SlotWeights& s) { t.total_bytes += s.total_bytes(); };
  for (const auto& s : t.layers) add(s);
  for (const auto& s : t.mtp) add(s);
  add(t.embedding);
  add(t.final_norm);
  add(t.lm_head);
  add(t.other);
}

}  // namespace

WeightTable EstimateWeights(const ModelConfig& m) {
  Estimator e{m, QuantMatcher(m.quantization)};
  WeightTable t;
  t.source = "estimated from config.json" + (m.quantization.method == QuantizationConfig::Method::kNone
                                                 ? std::string(" (") + m.torch_dtype + ")"
                                                 : " + quantization_config (" + m.quantization.summary + ")");
  const std::int64_t H = m.hidden_size, V = m.vocab_size;
  for (int i = 0; i < m.num_hidden_layers; ++i) {
    SlotWeights s;
    e.Attention(s, i);
    e.Mlp(s, i);
    t.layers.push_back(std::move(s));
  }
  for (int k = 0; k < m.num_nextn_predict_layers; ++k) {
    int id = m.num_hidden_layers + k;
    SlotWeights s;
    e.Attention(s, id);
    e.Mlp(s, id);
    e.Add(s, "mtp_projection", e.Dense(2 * H * H), Shard::kReplicated);  // eh_proj: plain nn.Linear
    e.Add(s, "norms", e.Dense(3 * H), Shard::kReplicated);               // enorm, hnorm, shared_head.norm
    t.mtp.push_back(std::move(s));
  }
  t.embedding.items.push_back(WeightItem{"embedding", e.Dense(V * H), Shard::kVocab});
  t.final_norm.items.push_back(WeightItem{"norms", e.Dense(H), Shard::kReplicated});
  t.lm_head.items.push_back(WeightItem{"lm_head", e.Dense(V * H), Shard::kVocab});
  if (m.dsa && !t.layers.empty()) t.indexer_bytes_estimate = t.layers[0].indexer_bytes;
  Finish(t);
  return t;
}

namespace {

Shard ShardForName(const std::string& n) {
  auto has = [&](const char* s) { return n.find(s) != std::string::npos; };
  if (has("shared_expert")) return Shard::kTensorParallel;
  if (has(".experts.")) return Shard::kExperts;
  if (has("mlp.gate.") || has("e_score_correction_bias") || has("norm") || has("q_a_proj") || has("kv_a_proj") ||
      has("eh_proj"))
    return Shard::kReplicated;
  if (has("k_proj") || has("v_proj")) return Shard::kKvHeads;
  if (has("q_proj") || has("q_b_proj") || has("kv_b_proj") || has("o_proj") || has("gate_proj") || has("up_proj") ||
      has("down_proj") || has("gate_up_proj") || has("qkv_proj"))
    return Shard::kTensorParallel;
  return Shard::kReplicated;
}

const char* ComponentForName(const std::string& n) {
  auto has = [&](const char* s) { return n.find(s) != std::string::npos; };
  if (has("shared_expert")) return "shared_experts";
  if (has(".experts.")) return "routed_experts";
  if (has("mlp.gate.") || has("e_score_correction_bias")) return "router";
  if (has("self_attn.")) return "attention";
  if (has("eh_proj")) return "mtp_projection";
  if (has("norm")) return "norms";
  if (has("mlp.")) return "dense_mlp";
  return "other";
}

}  // namespace

WeightTable WeightsFromTensors(const ModelConfig& m, const std::vector<std::pair<std::string, std::int64_t>>& tensors,
                               const std::string& source) {
  WeightTable t;
  t.from_checkpoint = true;
  t.source = source;
  t.layers.resize(m.num_hidden_layers);
  t.mtp.resize(m.num_nextn_predict_layers);
  Estimator e{m, QuantMatcher(m.quantization)};
  auto add = [&](SlotWeights& s, const char* component, std::int64_t bytes, Shard shard) {
    e.Add(s, component, bytes, shard);
  };
  for (const auto& [name, bytes] : tensors) {
    const std::string kLayers = "model.layers.";
    if (name.rfind(kLayers, 0) == 0) {
      size_t p = kLayers.size(), q = p;
      while (q < name.size() && std::isdigit(static_cast<unsigned char>(name[q]))) ++q;
      if (q == p || q - p > 6 || q >= name.size() || name[q] != '.') {
        add(t.other, "other", bytes, Shard::kReplicated);
        continue;
      }
      int id = std::stoi(name.substr(p, q - p));
      std::string rest = name.substr(q);
      SlotWeights* slot = nullptr;
      if (id < m.num_hidden_layers) {
        slot = &t.layers[id];
      } else if (id - m.num_hidden_layers < m.num_nextn_predict_layers) {
        if (rest.find(".embed_tokens.") != std::string::npos || rest.find(".shared_head.head.") != std::string::npos)
          continue;  // the MTP module shares the target's embedding and lm_head
        slot = &t.mtp[id - m.num_hidden_layers];
      } else {
        add(t.other, "other", bytes, Shard::kReplicated);
        continue;
      }
      if (rest.find(".indexer.") != std::string::npos) {
        slot->indexer_bytes += bytes;
        slot->has_indexer_tensors = true;
      } else {
        add(*slot, ComponentForName(rest), bytes, ShardForName(rest));
      }
    } else if (name.rfind("model.embed_tokens.", 0) == 0) {
      add(t.embedding, "embedding", bytes, Shard::kVocab);
    } else if (name.rfind("lm_head.", 0) == 0) {
      add(t.lm_head, "lm_head", bytes, Shard::kVocab);
    } else if (name.rfind("model.norm.", 0) == 0) {
      add(t.final_norm, "norms", bytes, Shard::kReplicated);
    } else {
      add(t.other, "other", bytes, Shard::kReplicated);
    }
  }
  if (t.lm_head.items.empty() && !m.tie_word_embeddings) {
    // Some checkpoints tie implicitly; vLLM still allocates an lm_head of the embedding's size.
    t.lm_head = t.embedding;
    for (auto& i : t.lm_head.items) i.component = "lm_head";
  }
  if (m.dsa) {
    // Indexer size for layers vLLM builds an indexer on but the checkpoint has no tensors for.
    for (const auto& s : t.layers)
      if (s.has_indexer_tensors) {
        t.indexer_bytes_estimate = s.indexer_bytes;
        break;
      }
    if (t.indexer_bytes_estimate == 0) t.indexer_bytes_estimate = EstimateWeights(m).indexer_bytes_estimate;
  }
  Finish(t);
  return t;
}

std::int64_t PerGpuBytes(const SlotWeights& slot, const ShardParams& p, bool with_indexer,
                         std::int64_t indexer_estimate) {
  std::int64_t total = 0;
  const std::int64_t tp = std::max(1, p.tensor_parallel_size);
  for (const auto& item : slot.items) {
    switch (item.shard) {
      case Shard::kReplicated:
        total += item.bytes;
        break;
      case Shard::kTensorParallel:
        total += CeilDiv(item.bytes, tp);
        break;
      case Shard::kExperts:
        total += CeilDiv(item.bytes, std::max(1, p.expert_shards));
        break;
      case Shard::kVocab: {
        std::int64_t padded = CeilDiv(std::max(1, p.vocab_size), 64) * 64;
        std::int64_t rows = CeilDiv(padded, tp);
        // bytes per vocab row = item.bytes / vocab; per-rank rows include the padding.
        total += p.vocab_size > 0 ? item.bytes / p.vocab_size * rows : CeilDiv(item.bytes, tp);
        break;
      }
      case Shard::kKvHeads: {
        std::int64_t kv = std::max(1, p.num_kv_heads);
        std::int64_t per_rank_heads = std::max<std::int64_t>(1, kv / tp);
        total += item.bytes / kv * per_rank_heads;
        break;
      }
    }
  }
  if (with_indexer) total += slot.has_indexer_tensors ? slot.indexer_bytes : indexer_estimate;
  return total;
}

}  // namespace ppdeploy

namespace ppdeploy {
namespace {

// Bytes of a serving dtype name (vLLM --dtype), 0 for "auto".
int ServingDtypeBytes(const std::string& dtype, std::string* canonical) {
  if (dtype.empty() || dtype == "auto") return 0;
  if (dtype == "half" || dtype == "float16") {
    *canonical = "float16";
    return 2;
  }
  if (dtype == "bfloat16") {
    *canonical = "bfloat16";
    return 2;
  }
  if (dtype == "float" || dtype == "float32") {
    *canonical = "float32";
    return 4;
  }
  Fail("--dtype {}: expected auto, half, float16, bfloat16, float or float32", dtype);
}

// Components whose tensors are Linear weights (quantized by an online method).
bool LinearComponent(const std::string& c) {
  return c == "attention" || c == "attention_kv" || c == "dense_mlp" || c == "routed_experts" || c == "shared_experts";
}

void ScaleSlot(SlotWeights& s, double linear, double other, bool experts_only) {
  for (auto& item : s.items) {
    const bool lin = experts_only ? item.component == "routed_experts" : LinearComponent(item.component);
    item.bytes = static_cast<std::int64_t>(static_cast<double>(item.bytes) * (lin ? linear : other));
  }
  if (!experts_only) s.indexer_bytes = static_cast<std::int64_t>(static_cast<double>(s.indexer_bytes) * linear);
}

void ScaleTable(WeightTable& w, double linear, double other, bool experts_only) {
  for (auto& s : w.layers) ScaleSlot(s, linear, other, experts_only);
  for (auto& s : w.mtp) ScaleSlot(s, linear, other, experts_only);
  for (SlotWeights* s : {&w.embedding, &w.final_norm, &w.lm_head, &w.other}) ScaleSlot(*s, other, other, false);
  if (!experts_only) w.indexer_bytes_estimate = static_cast<std::int64_t>(w.indexer_bytes_estimate * linear);
  Finish(w);
}

}  // namespace

namespace {

// --dtype: every unquantized tensor and the activations in the serving dtype.
void ApplyServingDtype(ModelConfig& m, WeightTable& w, const std::string& dtype, std::vector<std::string>* notes) {
  auto note = [&](std::string s) {
    if (notes) notes->push_back(std::move(s));
  };
  const bool checkpoint_quantized = m.quantization.method != QuantizationConfig::Method::kNone;
  std::string canonical;
  int bytes = ServingDtypeBytes(dtype, &canonical);
  if (bytes == 0 && m.dtype_bytes == 4) {
    // vLLM serves float32 checkpoints in bfloat16 under --dtype auto (_get_and_verify_dtype).
    bytes = 2;
    canonical = "bfloat16";
    note("dtype auto: the float32 checkpoint is served in bfloat16 (vLLM _get_and_verify_dtype)");
  }
  if (bytes != 0 && (bytes != m.dtype_bytes || canonical != m.torch_dtype)) {
    const double f = static_cast<double>(bytes) / m.dtype_bytes;
    if (w.from_checkpoint) {
      // Headers: recast the unquantized tensors (quantized ones keep their packed storage).
      ScaleTable(w, checkpoint_quantized ? 1.0 : f, f, false);
    }
    note(fmt::format("--dtype {}: tensors and activations in {} ({} B per element, was {})", dtype, canonical, bytes,
                     m.torch_dtype));
    m.dtype_bytes = bytes;
    m.torch_dtype = canonical;
    if (!w.from_checkpoint) w = EstimateWeights(m);
  }
}

// --quantization: an online method on an unquantized checkpoint, or the checkpoint's own.
void ApplyQuantization(ModelConfig& m, WeightTable& w, const std::string& quantization,
                       std::vector<std::string>* notes) {
  auto note = [&](std::string s) {
    if (notes) notes->push_back(std::move(s));
  };
  using Method = QuantizationConfig::Method;
  const bool checkpoint_quantized = m.quantization.method != Method::kNone;
  static const std::vector<std::string> kCheckpointMethods = {
      "awq",      "awq_marlin",   "gptq",    "gptq_marlin",  "gptq_marlin_24", "compressed-tensors",
      "modelopt", "modelopt_fp4", "mxfp4",   "gguf",         "fbgemm_fp8",     "moe_wna16",
      "quark",    "auto-round",   "bitblas", "gptq_bitblas", "marlin",         "ptpc_fp8"};
  if (quantization == "fp8" && !checkpoint_quantized) {
    // Online fp8: Linear and expert weights in one byte + a float32 per-tensor scale.
    const double f = 1.0 / m.dtype_bytes;
    if (w.from_checkpoint) {
      ScaleTable(w, f, 1.0, false);
    } else {
      m.quantization.method = Method::kFp8;
      m.quantization.weight_bits = 8;
      m.quantization.fp8_block_n = m.quantization.fp8_block_k = 0;
      m.quantization.ignore = {"lm_head"};
      m.quantization.ignore_is_substring = true;
      m.quantization.summary = "online fp8 (dynamic per-tensor scales)";
      w = EstimateWeights(m);
    }
    note(
        "--quantization fp8: online fp8 weights (Fp8LinearMethod / Fp8MoEMethod), embedding / lm_head / norms / "
        "router stay in " +
        m.torch_dtype);
    return;
  }
  if (quantization == "experts_int8" && !checkpoint_quantized) {
    // ExpertsInt8MoEMethod: int8 experts with a per-channel scale in the model dtype.
    if (m.n_routed_experts == 0) Fail("--quantization experts_int8: {} has no routed experts", m.source);
    ScaleTable(w, 1.0 / m.dtype_bytes, 1.0, true);
    note("--quantization experts_int8: routed experts in int8 (online)");
    return;
  }
  if (quantization == "bitsandbytes" && !checkpoint_quantized) {
    // In-flight bitsandbytes 4-bit: 0.5 B per weight + a float32 absmax per block of 64.
    ScaleTable(w, (0.5 + 4.0 / 64.0) / m.dtype_bytes, 1.0, false);
    note("--quantization bitsandbytes: in-flight 4-bit NF4 (0.5 B + float32 absmax per 64 weights)");
    return;
  }
  if (quantization == "fp8" || quantization == "bitsandbytes" || quantization == "experts_int8" ||
      std::find(kCheckpointMethods.begin(), kCheckpointMethods.end(), quantization) != kCheckpointMethods.end()) {
    if (!checkpoint_quantized && quantization != "gguf")
      Fail(
          "--quantization {}: {} has no quantization_config; {} reads the checkpoint's own (online methods: fp8, "
          "experts_int8, bitsandbytes)",
          quantization, m.source, quantization);
    note(
        fmt::format("--quantization {}: the checkpoint's own quantization ({})", quantization, m.quantization.summary));
    return;
  }
  Fail(
      "--quantization {}: not a method ppdeploy sizes (online: fp8, experts_int8, bitsandbytes; from the checkpoint: "
      "awq, awq_marlin, gptq, gptq_marlin, compressed-tensors, modelopt, mxfp4, gguf, fbgemm_fp8, ...)",
      quantization);
}

}  // namespace

void ApplyServingPrecision(ModelConfig& m, WeightTable& w, const std::string& dtype, const std::string& quantization,
                           std::vector<std::string>* notes) {
  ApplyServingDtype(m, w, dtype, notes);
  if (!quantization.empty()) ApplyQuantization(m, w, quantization, notes);
}

}  // namespace ppdeploy
