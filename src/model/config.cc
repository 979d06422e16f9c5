#include "model/config.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "core/embedded_data.h"
#include "core/error.h"
#include "core/escape.h"
#include "core/json_fields.h"
#include "model/config_fields.h"

namespace ppdeploy {

std::string_view LayerKindName(LayerKind kind) {
  switch (kind) {
    case LayerKind::kFull:
      return "full";
    case LayerKind::kSlidingWindow:
      return "sliding_window";
    case LayerKind::kChunkedLocal:
      return "chunked_local";
    case LayerKind::kLinear:
      return "linear";
    case LayerKind::kNone:
      return "none";
  }
  return "?";
}

std::string_view StateKindName(StateKind kind) {
  switch (kind) {
    case StateKind::kNone:
      return "none";
    case StateKind::kMamba1:
      return "mamba1";
    case StateKind::kMamba2:
      return "mamba2";
    case StateKind::kGatedDeltaNet:
      return "gated_delta_net";
    case StateKind::kKda:
      return "kda";
    case StateKind::kLightning:
      return "lightning";
  }
  return "?";
}

namespace {

using config_fields::Fields;

// data/config-defaults.json: transformers' class defaults by model_type.
struct Defaults {
  nlohmann::json by_type = nlohmann::json::object();
  nlohmann::json text_type = nlohmann::json::object();
};

const Defaults& TransformersDefaults() {
  static const Defaults d = [] {
    Defaults out;
    const std::string source = "data/config-defaults.json";
    auto text = FindEmbedded("config-defaults.json");
    if (!text) Fail("{}: not embedded in this binary", source);
    auto j = ParseJsonText(*text, source);
    JsonContext ctx{source, ""};
    RequireObject(j, ctx);
    if (!j.contains("model_types") || !j["model_types"].is_object())
      Fail("{}: model_types: expected an object", source);
    out.by_type = j["model_types"];
    if (j.contains("text_model_type")) out.text_type = j["text_model_type"];
    for (auto& [name, row] : out.by_type.items()) {
      JsonContext rc = ctx.Child("model_types").Child(name);
      RequireObject(row, rc);
      ReqString(row, "source", rc);
      if (!row.contains("defaults") || !row["defaults"].is_object())
        Fail("{}: expected an object", rc.Where("defaults"));
    }
    return out;
  }();
  return d;
}

// The bytes of a config's torch_dtype. transformers turns the string into a torch dtype with
// getattr(torch, name) (PretrainedConfig.__init__), so "bf16", "fp16" and "fp32", which torch has no
// attribute for, fail there: accepted for planning, with a warning.
int DtypeBytes(const std::string& dtype, const std::string& where, std::vector<std::string>* warnings) {
  if (dtype == "bf16" || dtype == "fp16" || dtype == "fp32") {
    if (warnings)
      warnings->push_back(fmt::format(
          "{}: {} is not a torch dtype name: transformers reads it with getattr(torch, {}), which fails, so vLLM "
          "cannot load this config; planned as {}",
          where, QuoteForMessage(dtype), QuoteForMessage(dtype),
          dtype == "bf16"   ? "bfloat16"
          : dtype == "fp16" ? "float16"
                            : "float32"));
  }
  if (dtype == "bfloat16" || dtype == "float16" || dtype == "half" || dtype == "bf16" || dtype == "fp16") return 2;
  if (dtype == "float32" || dtype == "float" || dtype == "fp32") return 4;
  Fail("{}: unsupported dtype {} (expected bfloat16, float16 or float32)", where, QuoteForMessage(dtype));
}

std::vector<std::string> StringList(const nlohmann::json& obj, std::string_view key, const JsonContext& ctx) {
  std::vector<std::string> out;
  auto it = obj.find(std::string(key));
  if (it == obj.end() || it->is_null()) return out;
  if (!it->is_array()) Fail("{}: expected a list of strings, got {}", ctx.Where(key), ShortJson(*it));
  for (const auto& e : *it) {
    if (!e.is_string()) Fail("{}: expected a list of strings, got element {}", ctx.Where(key), ShortJson(e));
    out.push_back(e.get<std::string>());
  }
  return out;
}

// group_size as vLLM reads it: -1 = per channel; 0 is not a group size (gptq_marlin / awq_marlin:
// MARLIN_SUPPORTED_GROUP_SIZES = [-1, 32, 64, 128]; the gptq / awq linear methods divide the input
// size by it: ZeroDivisionError).
int GroupSize(std::optional<std::int64_t> g, const std::string& where) {
  if (!g || *g == -1) return 0;
  if (*g == 0)
    Fail(
        "{}: 0 is not a group size: vLLM refuses it (Marlin kernels support -1 = per channel, 32, 64, 128; "
        "the gptq/awq linear methods divide the input size by it); write -1 for per-channel scales",
        where);
  if (*g < -1) Fail("{}: expected -1 (per channel) or a positive group size, got {}", where, *g);
  return static_cast<int>(*g);
}

QuantizationConfig ParseQuantization(const nlohmann::json& q, const JsonContext& ctx) {
  RequireObject(q, ctx);
  Fields f(q, ctx, nullptr, "", nullptr);
  QuantizationConfig out;
  std::string method = ReqString(q, "quant_method", ctx);
  if (method == "fp8") {
    out.method = QuantizationConfig::Method::kFp8;
    out.weight_bits = 8;
    auto it = q.find("weight_block_size");
    if (it != q.end() && !it->is_null()) {
      if (!it->is_array() || it->size() != 2 || !(*it)[0].is_number_integer() || !(*it)[1].is_number_integer() ||
          (*it)[0].get<std::int64_t>() <= 0 || (*it)[1].get<std::int64_t>() <= 0)
        Fail("{}: expected two positive integers, got {}", ctx.Where("weight_block_size"), ShortJson(*it));
      out.fp8_block_n = static_cast<int>(
          JsonIntValue((*it)[0], ctx.Where("weight_block_size[0]"), 1, config_fields::kMaxSize, false));
      out.fp8_block_k = static_cast<int>(
          JsonIntValue((*it)[1], ctx.Where("weight_block_size[1]"), 1, config_fields::kMaxSize, false));
    }
    out.ignore = StringList(q, "ignored_layers", ctx);
    out.ignore_is_substring = true;
    out.summary = out.fp8_block_n ? fmt::format("fp8 block [{},{}]", out.fp8_block_n, out.fp8_block_k) : "fp8";
  } else if (method == "gptq" || method == "awq" || method == "gptq_marlin" || method == "awq_marlin") {
    bool gptq = method.rfind("gptq", 0) == 0;
    out.method = gptq ? QuantizationConfig::Method::kGptq : QuantizationConfig::Method::kAwq;
    auto bits = f.OptInt("bits", 1);
    if (!bits) bits = f.OptInt("w_bit", 1);
    if (!bits) Fail("{}: required field is missing", ctx.Where("bits"));
    if (*bits != 4 && *bits != 8) Fail("{}: expected 4 or 8, got {}", ctx.Where("bits"), *bits);
    out.weight_bits = static_cast<int>(*bits);
    std::string gkey = "group_size";
    auto group = f.OptInt("group_size", INT64_MIN);
    if (!group) {
      group = f.OptInt("q_group_size", INT64_MIN);
      gkey = "q_group_size";
    }
    out.group_size = GroupSize(group, ctx.Where(gkey));
    out.has_zero_points = true;
    out.has_g_idx = gptq;
    out.ignore = StringList(q, "modules_to_not_convert", ctx);
    out.ignore_is_substring = true;
    out.summary = fmt::format("{} W{}A16{}", gptq ? "GPTQ" : "AWQ", out.weight_bits,
                              out.group_size ? fmt::format(" group {}", out.group_size) : std::string(" per-channel"));
  } else if (method == "compressed-tensors") {
    out.method = QuantizationConfig::Method::kCompressedTensors;
    auto groups = q.find("config_groups");
    if (groups == q.end() || !groups->is_object() || groups->empty())
      Fail("{}: expected an object with at least one group", ctx.Where("config_groups"));
    const auto& first = groups->begin().value();
    JsonContext gctx = ctx.Child("config_groups").Child(groups->begin().key());
    RequireObject(first, gctx);
    auto w = first.find("weights");
    if (w == first.end() || !w->is_object()) Fail("{}: required object is missing", gctx.Where("weights"));
    JsonContext wctx = gctx.Child("weights");
    Fields wf(*w, wctx, nullptr, "", nullptr);
    out.weight_bits = wf.Int("num_bits");
    if (out.weight_bits != 4 && out.weight_bits != 8)
      Fail("{}: expected 4 or 8, got {}", wctx.Where("num_bits"), out.weight_bits);
    out.group_size = GroupSize(wf.OptInt("group_size", INT64_MIN), wctx.Where("group_size"));
    auto sym = wf.OptBool("symmetric");
    out.has_zero_points = sym.has_value() && !*sym;
    out.ignore = StringList(q, "ignore", ctx);
    auto type = wf.OptString("type").value_or("int");
    out.summary = fmt::format("compressed-tensors W{}A16 {}{}", out.weight_bits, type,
                              out.group_size ? fmt::format(" group {}", out.group_size) : std::string(" per-channel"));
  } else if (method == "mxfp4") {
    // vLLM Mxfp4Config (gpt-oss): 4-bit e2m1 values with one e8m0 scale per 32 elements.
    out.method = QuantizationConfig::Method::kMxfp4;
    out.weight_bits = 4;
    out.group_size = 32;
    out.ignore = StringList(q, "modules_to_not_convert", ctx);
    out.ignore_is_substring = true;
    out.summary = "mxfp4 (group 32)";
  } else {
    Fail("{}: unsupported quant_method {} (supported: fp8, gptq, awq, compressed-tensors, mxfp4)",
         ctx.Where("quant_method"), QuoteForMessage(method));
  }
  return out;
}

// Where the decoder's fields live: the top level, or a nested text model of a vision-language
// (or omni) config.
struct TextObject {
  const nlohmann::json* obj;
  std::string key;
};
TextObject FindTextConfig(const nlohmann::json& j) {
  for (const char* k : {"text_config", "language_config", "llm_config"}) {
    auto it = j.find(k);
    if (it != j.end() && it->is_object()) return {&*it, k};
  }
  return {&j, ""};
}

// The model class (architectures[0]); encoder-decoder models are refused.
void ReadArchitecture(ModelConfig& m, const nlohmann::json& j, const JsonContext& ctx) {
  auto archs = j.find("architectures");
  if (archs == j.end() || archs->is_null())
    Fail("{}: required field is missing (vLLM picks the model class from it)", ctx.Where("architectures"));
  if (!archs->is_array() || archs->empty() || !(*archs)[0].is_string())
    Fail("{}: expected a non-empty list of strings, got {}", ctx.Where("architectures"), ShortJson(*archs));
  m.architecture = (*archs)[0].get<std::string>();
  if (auto ed = j.find("is_encoder_decoder"); ed != j.end() && ed->is_boolean() && ed->get<bool>())
    Fail("{}: encoder-decoder models (cross-attention KV, vLLM CrossAttentionSpec) are not planned ({})",
         ctx.Where("is_encoder_decoder"), EscapeForMessage(m.architecture));
}

bool LinearOnly(const ModelConfig& m) { return m.attention_free; }

// torch_dtype (or dtype) of the decoder object, else of the top level.
void ReadDtype(ModelConfig& m, const nlohmann::json& text, const JsonContext& tctx, const nlohmann::json& j,
               const JsonContext& ctx) {
  auto dtype_of = [&](const nlohmann::json& o,
                      const JsonContext& c) -> std::optional<std::pair<std::string, std::string>> {
    for (const char* k : {"torch_dtype", "dtype"})
      if (auto it = o.find(k); it != o.end() && !it->is_null()) {
        if (!it->is_string()) Fail("{}: expected a string, got {}", c.Where(k), ShortJson(*it));
        return std::make_pair(it->get<std::string>(), c.Where(k));
      }
    return std::nullopt;
  };
  if (auto dt = dtype_of(text, tctx)) {
    m.torch_dtype = dt->first;
    m.dtype_bytes = DtypeBytes(m.torch_dtype, dt->second, &m.warnings);
  } else if (auto dt2 = dtype_of(j, ctx)) {
    m.torch_dtype = dt2->first;
    m.dtype_bytes = DtypeBytes(m.torch_dtype, dt2->second, &m.warnings);
  }
}

// Layer count, widths, vocabulary, context length, dtype and MLP width.
constexpr int kMaxPlannedLayers = 4096;

void ReadSizes(ModelConfig& m, const Fields& f, const Fields& top, const nlohmann::json& text, const JsonContext& tctx,
               const nlohmann::json& j, const JsonContext& ctx) {
  m.num_hidden_layers = f.ReqFirstInt({"num_hidden_layers", "n_layer", "num_layers", "n_layers"});
  // The split search is quadratic in the layer count; the deepest public decoders have under 200 layers.
  if (m.num_hidden_layers > kMaxPlannedLayers)
    Fail("{}: value {} is more layers than ppdeploy plans (at most {})", f.Where("num_hidden_layers"),
         m.num_hidden_layers, kMaxPlannedLayers);
  m.hidden_size = f.ReqFirstInt({"hidden_size", "d_model", "n_embd"});
  m.vocab_size = f.Has("vocab_size") ? f.Int("vocab_size") : top.Int("vocab_size");
  m.tie_word_embeddings = f.OptBool("tie_word_embeddings").value_or(top.OptBool("tie_word_embeddings").value_or(false));
  {
    std::string which;
    auto mpe = f.OptInt("max_position_embeddings", 1, true);
    // vLLM's _get_and_verify_max_len takes the min over these keys and casts the result with int().
    if (!mpe) mpe = f.FirstInt({"n_positions", "max_sequence_length", "seq_length"}, 1, &which, true);
    if (!mpe) mpe = top.OptInt("max_position_embeddings", 1, true);
    if (!mpe)
      Fail("{}: required field is missing (vLLM derives max_model_len from it)", f.Where("max_position_embeddings"));
    m.max_position_embeddings = *mpe;
  }
  ReadDtype(m, text, tctx, j, ctx);
  m.intermediate_size =
      static_cast<int>(f.FirstInt({"intermediate_size", "ffn_hidden_size", "n_inner"}, 0).value_or(0));
  if (auto mlp = f.OptInt("intermediate_size_mlp", 0)) {  // Llama-4: the dense MLP width
    m.moe_intermediate_size = m.intermediate_size;
    m.intermediate_size = static_cast<int>(*mlp);
  }
  m.attention_sinks = m.model_type == "gpt_oss";
}

// Attention: MLA (and DSA's indexer fields), GQA / MQA / MHA, or none (attention-free models).
void ReadAttention(ModelConfig& m, const Fields& f, const JsonContext& tctx, const ArchitectureEntry& arch) {
  const bool linear_only = LinearOnly(m);
  if (arch.mla()) {
    // vLLM ModelConfig.is_deepseek_mla (the DeepSeek-family model types with kv_lora_rank set): the latent is
    // cached, one KV "head" on every TP rank. The class's rule requires the MLA fields (RequireModelled).
    m.attention = AttentionKind::kMla;
    m.num_attention_heads = f.Int("num_attention_heads");
    m.num_key_value_heads = m.num_attention_heads;
    m.kv_lora_rank = f.Int("kv_lora_rank");
    m.qk_rope_head_dim = f.Int("qk_rope_head_dim");
    m.qk_nope_head_dim = f.IntOr("qk_nope_head_dim", 0);
    m.v_head_dim = f.IntOr("v_head_dim", m.qk_nope_head_dim);
    m.head_dim = m.qk_nope_head_dim + m.qk_rope_head_dim;
    m.q_lora_rank = f.IntOr("q_lora_rank", 0);
    // vLLM: `hasattr(config, "index_topk")` switches DSA on.
    if (f.Has("index_topk")) {
      m.dsa = true;
      m.index_topk = f.Int("index_topk");
      m.index_head_dim = f.Int("index_head_dim");
      m.index_n_heads = f.Int("index_n_heads");
      m.index_topk_freq = f.IntOr("index_topk_freq", 1, 1);
      m.index_skip_topk_offset = f.IntOr("index_skip_topk_offset", 2, 0);
      m.index_topk_pattern = f.OptString("index_topk_pattern");
      if (m.index_topk_pattern) {
        for (char c : *m.index_topk_pattern)
          if (c != 'F' && c != 'S')
            Fail("{}: expected only 'F' and 'S', got {}", f.Where("index_topk_pattern"),
                 ShortJson(nlohmann::json(m.index_topk_pattern->substr(0, 40))));
        // vLLM DeepseekV2MLAAttention.__init__: a layer past the pattern's end has skip_topk = False.
        const int n = static_cast<int>(m.index_topk_pattern->size());
        if (n != m.num_hidden_layers)
          m.warnings.push_back(fmt::format(
              "{}: {} characters for num_hidden_layers={}: {}", f.Where("index_topk_pattern"), n, m.num_hidden_layers,
              n < m.num_hidden_layers
                  ? fmt::format("layers {}-{} have no letter and are read as 'F' (vLLM builds an indexer past the "
                                "pattern's end)",
                                n, m.num_hidden_layers - 1)
                  : std::string("the letters past the last layer are not read")));
      }
    }
  } else if (!linear_only) {
    m.attention = AttentionKind::kGqa;
    // is_deepseek_mla is false for the other model types: vLLM caches full K and V whatever kv_lora_rank says.
    if (f.Has("kv_lora_rank"))
      m.warnings.push_back(fmt::format("{}: not read: {} is not an MLA class ({} rule {}); planned as {}",
                                       f.Where("kv_lora_rank"), m.architecture, "data/architectures.json",
                                       arch.rules_name, "GQA / MHA attention"));
    m.num_attention_heads = f.ReqFirstInt({"num_attention_heads", "n_head", "num_heads"});
    std::string kv_key = "num_key_value_heads";
    auto kv = f.FirstInt({"num_key_value_heads", "num_kv_heads", "n_head_kv"}, 1, &kv_key);
    if (!kv && f.OptBool("multi_query") == true) kv = 1;  // Falcon / GPT-BigCode MQA
    m.num_key_value_heads = kv ? static_cast<int>(*kv) : m.num_attention_heads;
    if (m.num_key_value_heads > m.num_attention_heads || m.num_attention_heads % m.num_key_value_heads != 0)
      Fail("{}: {} does not divide num_attention_heads={}", f.Where(kv_key), m.num_key_value_heads,
           m.num_attention_heads);
    m.head_dim = f.IntOr("head_dim", 0, 1);
    if (m.head_dim == 0) {
      if (m.hidden_size % m.num_attention_heads != 0)
        Fail("{}: head_dim is absent and hidden_size={} is not a multiple of num_attention_heads={}",
             tctx.Where("head_dim"), m.hidden_size, m.num_attention_heads);
      m.head_dim = m.hidden_size / m.num_attention_heads;
    }
    m.attention_bias = f.OptBool("attention_bias").value_or(m.model_type == "qwen2" || m.model_type == "qwen2_moe");
  } else {
    m.num_attention_heads = f.IntOr("num_attention_heads", 1, 1);
    m.num_key_value_heads = m.num_attention_heads;
  }
}

// MLP / MoE: experts, their width and which layers are MoE; the MTP layer count.
void ReadMoe(ModelConfig& m, const Fields& f) {
  const bool linear_only = LinearOnly(m);
  std::string experts_key;
  auto experts = f.FirstInt({"n_routed_experts", "num_experts", "num_local_experts", "moe_num_experts", "n_experts"}, 0,
                            &experts_key);
  m.n_routed_experts = experts ? static_cast<int>(*experts) : 0;
  if (m.n_routed_experts > 0) {
    auto topk = f.FirstInt({"num_experts_per_tok", "experts_per_token", "moe_topk", "num_experts_per_token"}, 1);
    if (!topk) Fail("{}: required when {} > 0", f.Where("num_experts_per_tok"), experts_key);
    m.num_experts_per_tok = static_cast<int>(*topk);
    if (m.moe_intermediate_size == 0) {
      auto w = f.FirstInt({"moe_intermediate_size", "expert_intermediate_size"}, 1);
      m.moe_intermediate_size = w ? static_cast<int>(*w) : m.intermediate_size;  // Mixtral / gpt-oss: intermediate_size
    }
    if (m.moe_intermediate_size <= 0) Fail("{}: required when {} > 0", f.Where("moe_intermediate_size"), experts_key);
    m.n_shared_experts = f.IntOr("n_shared_experts", 0);
    m.shared_expert_intermediate_size = f.IntOr("shared_expert_intermediate_size", 0);
    if (f.Has("first_k_dense_replace") || f.Has("moe_layer_freq") || experts_key == "n_routed_experts") {
      m.moe_rule = MoeRule::kDeepseek;
      m.first_k_dense_replace = f.IntOr("first_k_dense_replace", 0);
      m.moe_layer_freq = f.IntOr("moe_layer_freq", 1, 1);
      if (m.first_k_dense_replace > 0 && m.intermediate_size <= 0)
        Fail("{}: required when first_k_dense_replace > 0", f.Where("intermediate_size"));
    } else if (f.Has("interleave_moe_layer_step")) {
      m.moe_rule = MoeRule::kInterleave;
      m.interleave_moe_layer_step = f.IntOr("interleave_moe_layer_step", 1, 1);
    } else {
      m.moe_rule = MoeRule::kSparseStep;
      m.decoder_sparse_step = f.IntOr("decoder_sparse_step", 1, 1);
      m.mlp_only_layers = f.IntList("mlp_only_layers");
    }
  } else if (m.intermediate_size <= 0 && !linear_only) {
    Fail("{}: required field is missing", f.Where("intermediate_size"));
  }
  m.num_nextn_predict_layers = f.IntOr("num_nextn_predict_layers", 0);
}

// quantization_config at the top level or in the decoder object.
void ReadQuantizationConfig(ModelConfig& m, const nlohmann::json& j, const JsonContext& ctx, const TextObject& text,
                            const JsonContext& tctx) {
  const nlohmann::json* q = nullptr;
  JsonContext qctx = ctx.Child("quantization_config");
  if (auto it = j.find("quantization_config"); it != j.end() && !it->is_null()) {
    q = &*it;
  } else if (auto it2 = text.obj->find("quantization_config");
             !text.key.empty() && it2 != text.obj->end() && !it2->is_null()) {
    q = &*it2;
    qctx = tctx.Child("quantization_config");
  }
  if (q)
    m.quantization = ParseQuantization(*q, qctx);
  else
    m.quantization.summary = m.torch_dtype;
}

}  // namespace

bool ModelConfig::IsMoeLayer(int i) const {
  if (n_routed_experts <= 0) return false;
  switch (moe_rule) {
    case MoeRule::kDense:
      return false;
    case MoeRule::kDeepseek:
      // DeepSeek: dense for the first k layers, then MoE every moe_layer_freq layers.
      if (i >= num_hidden_layers) return true;  // MTP layers are MoE blocks
      return i >= first_k_dense_replace && (moe_layer_freq <= 1 || i % moe_layer_freq == 0);
    case MoeRule::kSparseStep:
      if (std::find(mlp_only_layers.begin(), mlp_only_layers.end(), i) != mlp_only_layers.end()) return false;
      return decoder_sparse_step <= 1 || (i + 1) % decoder_sparse_step == 0;
    case MoeRule::kInterleave:
      return interleave_moe_layer_step <= 1 || (i + 1) % interleave_moe_layer_step == 0;
  }
  return false;
}

int ModelConfig::CountLayers(LayerKind k) const {
  return static_cast<int>(std::count_if(layers.begin(), layers.end(), [&](const LayerInfo& l) { return l.kind == k; }));
}

bool ModelConfig::Hybrid() const {
  for (const auto& l : layers)
    if (l.kind != layers.front().kind || l.window != layers.front().window) return true;
  return false;
}

std::int64_t ModelConfig::LinearStateBytes(int tp, int model_dtype_bytes) const {
  const LinearStateConfig& s = linear;
  auto div = [&](std::int64_t a, const char* what) {
    if (tp <= 0 || a % tp != 0)
      Fail("{}: {} = {} is not divisible by tensor_parallel_size {} (vLLM divide() asserts)", source, what, a, tp);
    return a / tp;
  };
  const std::int64_t conv_b = model_dtype_bytes;
  const std::int64_t ssm_b = s.float32_ssm ? 4 : model_dtype_bytes;
  switch (s.kind) {
    case StateKind::kNone:
      return 0;
    case StateKind::kMamba1: {
      std::int64_t d = div(s.intermediate_size, "mamba d_inner");
      return d * (s.conv_kernel - 1) * conv_b + d * s.state_size * ssm_b;
    }
    case StateKind::kMamba2: {
      // extra_groups_for_head_shards: groups are replicated up to the TP size when they do not divide it.
      std::int64_t groups = s.n_groups % tp == 0 ? s.n_groups : tp;
      std::int64_t conv_dim = div(s.intermediate_size + 2 * groups * s.state_size, "mamba conv dim");
      std::int64_t heads = div(s.num_heads, "mamba heads");
      return conv_dim * (s.conv_kernel - 1) * conv_b + heads * s.head_dim * s.state_size * ssm_b;
    }
    case StateKind::kGatedDeltaNet: {
      std::int64_t conv_dim = div(static_cast<std::int64_t>(s.head_k_dim) * s.num_k_heads * 2 +
                                      static_cast<std::int64_t>(s.head_dim) * s.num_heads,
                                  "gated delta net conv dim");
      std::int64_t heads = div(s.num_heads, "linear_num_value_heads");
      return conv_dim * (s.conv_kernel - 1) * conv_b + heads * s.head_dim * s.head_k_dim * ssm_b;
    }
    case StateKind::kKda: {
      std::int64_t conv_dim = div(static_cast<std::int64_t>(s.num_heads) * s.head_dim +
                                      2 * static_cast<std::int64_t>(s.num_k_heads) * s.head_k_dim,
                                  "kda conv dim");
      std::int64_t heads = div(s.num_heads, "kda heads");
      return conv_dim * (s.conv_kernel - 1) * conv_b + heads * s.head_dim * s.head_dim * ssm_b;
    }
    case StateKind::kLightning: {
      std::int64_t heads = s.num_heads / tp;
      return heads * s.head_dim * s.head_dim * ssm_b;
    }
  }
  return 0;
}

std::string ModelConfig::Describe() const {
  std::map<std::string, int> counts;
  std::vector<std::string> order;
  int shared = 0;
  for (const auto& l : layers) {
    if (l.kv_source >= 0) ++shared;
    std::string k(LayerKindName(l.kind));
    if (l.window > 0) k += fmt::format("({})", l.window);
    if (!counts.count(k)) order.push_back(k);
    ++counts[k];
  }
  std::vector<std::string> parts;
  for (const auto& k : order) parts.push_back(fmt::format("{} {}", counts[k], k));
  std::string attn =
      attention == AttentionKind::kMla
          ? fmt::format("MLA latent {} + {}{}", kv_lora_rank, qk_rope_head_dim, dsa ? " + DSA indexer" : "")
          : fmt::format("{} {} KV heads x {}",
                        num_key_value_heads == 1                     ? "MQA"
                        : num_key_value_heads == num_attention_heads ? "MHA"
                                                                     : "GQA",
                        num_key_value_heads, head_dim);
  std::string out = fmt::format("{} layers: {}; {}", num_hidden_layers, fmt::join(parts, " + "), attn);
  if (linear.kind != StateKind::kNone) out += fmt::format("; linear state {}", StateKindName(linear.kind));
  if (shared) out += fmt::format("; {} layers share another layer's KV", shared);
  if (attention_sinks) out += "; attention sinks (no KV effect)";
  return out;
}

ModelConfig ParseModelConfig(const nlohmann::json& j, const std::string& source) {
  JsonContext ctx{source, ""};
  RequireObject(j, ctx);
  ModelConfig m;
  m.source = source;

  ReadArchitecture(m, j, ctx);

  // The decoder: top level, or the nested text model of a vision-language config.
  TextObject text = FindTextConfig(j);
  m.text_config_key = text.key;
  JsonContext tctx = text.key.empty() ? ctx : ctx.Child(text.key);
  RequireObject(*text.obj, tctx);
  for (const char* k : {"vision_config", "audio_config", "vision_tower", "mm_vision_tower"})
    if (j.contains(k)) m.multimodal = true;
  std::string top_type = OptString(j, "model_type", ctx).value_or("");
  m.model_type = OptString(*text.obj, "model_type", tctx).value_or("");
  const Defaults& defaults = TransformersDefaults();
  if (m.model_type.empty()) {
    if (!text.key.empty() && defaults.text_type.contains(top_type))
      m.model_type = defaults.text_type[top_type].get<std::string>();
    else if (text.key.empty())
      m.model_type = top_type;
  }
  const nlohmann::json* row = defaults.by_type.contains(m.model_type) ? &defaults.by_type[m.model_type] : nullptr;
  const nlohmann::json* row_defaults = row ? &(*row)["defaults"] : nullptr;
  Fields f(*text.obj, tctx, row_defaults, row ? (*row)["source"].get<std::string>() : "", &m.warnings);
  Fields top(j, ctx, nullptr, "", &m.warnings);

  if (f.Has("block_configs"))
    Fail("{}: per-layer block_configs (DeciLM / Nemotron-NAS: heads and MLP differ per layer) are not planned",
         f.Where("block_configs"));

  // The class must be one the table models, with its rule's fields and no key that no rule reads.
  const ArchitectureEntry& arch = config_fields::RequireModelled(m, f, j, ctx);
  m.attention_free = arch.rules == ArchitectureRules::kAttentionFree;

  ReadSizes(m, f, top, *text.obj, tctx, j, ctx);

  // --- attention ---
  ReadAttention(m, f, tctx, arch);

  // --- layer kinds and the recurrent state of linear layers ---
  config_fields::ClassifyLayers(m, f, row);
  if (m.CountLayers(LayerKind::kLinear) > 0) config_fields::ReadLinearState(m, f);
  if (m.CountLayers(LayerKind::kFull) + m.CountLayers(LayerKind::kSlidingWindow) +
              m.CountLayers(LayerKind::kChunkedLocal) ==
          0 &&
      m.CountLayers(LayerKind::kLinear) == 0)
    Fail("{}: no layer caches anything ({}): nothing to plan", tctx.Where("num_hidden_layers"), m.layer_pattern);

  ReadMoe(m, f);
  ReadQuantizationConfig(m, j, ctx, text, tctx);
  return m;
}

ModelConfig ParseModelConfigText(std::string_view text, const std::string& source) {
  return ParseModelConfig(ParseJsonText(text, source), source);
}

}  // namespace ppdeploy
