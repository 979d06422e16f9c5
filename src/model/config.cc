#include "model/config.h"

#include <algorithm>

#include "core/error.h"
#include "core/json_fields.h"

namespace ppdeploy {
namespace {

enum class Family { kDeepseekMla, kLlamaLike, kQwenMoe, kMixtral };

struct ArchRow {
  const char* name;
  Family family;
};

// vLLM registry names we can size. DeepSeek-family rows are MLA; DSA is decided by the config
// (`index_topk` present), exactly as DeepseekV2MLAAttention does.
constexpr ArchRow kArchitectures[] = {
    {"DeepseekV2ForCausalLM", Family::kDeepseekMla},  {"DeepseekV3ForCausalLM", Family::kDeepseekMla},
    {"DeepseekV32ForCausalLM", Family::kDeepseekMla}, {"GlmMoeDsaForCausalLM", Family::kDeepseekMla},
    {"LlamaForCausalLM", Family::kLlamaLike},         {"MistralForCausalLM", Family::kLlamaLike},
    {"Qwen2ForCausalLM", Family::kLlamaLike},         {"Qwen3ForCausalLM", Family::kLlamaLike},
    {"Qwen3MoeForCausalLM", Family::kQwenMoe},        {"Qwen2MoeForCausalLM", Family::kQwenMoe},
    {"MixtralForCausalLM", Family::kMixtral},
};

int DtypeBytes(const std::string& dtype, const JsonContext& ctx, std::string_view key) {
  if (dtype == "bfloat16" || dtype == "float16" || dtype == "half" || dtype == "bf16" || dtype == "fp16") return 2;
  if (dtype == "float32" || dtype == "float" || dtype == "fp32") return 4;
  Fail("{}: unsupported dtype \"{}\" (expected bfloat16, float16 or float32)", ctx.Where(key), dtype);
}

int Int(const nlohmann::json& j, std::string_view key, const JsonContext& ctx, std::int64_t min = 1) {
  std::int64_t v = ReqInt(j, key, ctx, min);
  if (v > 100'000'000) Fail("{}: value {} is implausibly large", ctx.Where(key), v);
  return static_cast<int>(v);
}
int OptIntOr(const nlohmann::json& j, std::string_view key, const JsonContext& ctx, int fallback,
             std::int64_t min = 0) {
  auto v = OptInt(j, key, ctx, min);
  if (!v) return fallback;
  if (*v > 100'000'000) Fail("{}: value {} is implausibly large", ctx.Where(key), *v);
  return static_cast<int>(*v);
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

QuantizationConfig ParseQuantization(const nlohmann::json& q, const JsonContext& ctx) {
  RequireObject(q, ctx);
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
      out.fp8_block_n = (*it)[0].get<int>();
      out.fp8_block_k = (*it)[1].get<int>();
    }
    out.ignore = StringList(q, "ignored_layers", ctx);
    out.ignore_is_substring = true;
    out.summary = out.fp8_block_n ? fmt::format("fp8 block [{},{}]", out.fp8_block_n, out.fp8_block_k) : "fp8";
  } else if (method == "gptq" || method == "awq" || method == "gptq_marlin" || method == "awq_marlin") {
    bool gptq = method.rfind("gptq", 0) == 0;
    out.method = gptq ? QuantizationConfig::Method::kGptq : QuantizationConfig::Method::kAwq;
    auto bits = OptInt(q, "bits", ctx, 1);
    if (!bits) bits = OptInt(q, "w_bit", ctx, 1);
    if (!bits) Fail("{}: required field is missing", ctx.Where("bits"));
    if (*bits != 4 && *bits != 8) Fail("{}: expected 4 or 8, got {}", ctx.Where("bits"), *bits);
    out.weight_bits = static_cast<int>(*bits);
    auto group = OptInt(q, "group_size", ctx, -1);
    if (!group) group = OptInt(q, "q_group_size", ctx, -1);
    out.group_size = (!group || *group <= 0) ? 0 : static_cast<int>(*group);
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
    out.weight_bits = Int(*w, "num_bits", wctx);
    if (out.weight_bits != 4 && out.weight_bits != 8)
      Fail("{}: expected 4 or 8, got {}", wctx.Where("num_bits"), out.weight_bits);
    out.group_size = OptIntOr(*w, "group_size", wctx, 0, 0);
    auto sym = OptBool(*w, "symmetric", wctx);
    out.has_zero_points = sym.has_value() && !*sym;
    out.ignore = StringList(q, "ignore", ctx);
    auto type = OptString(*w, "type", wctx).value_or("int");
    out.summary = fmt::format("compressed-tensors W{}A16 {}{}", out.weight_bits, type,
                              out.group_size ? fmt::format(" group {}", out.group_size) : std::string(" per-channel"));
  } else {
    Fail("{}: unsupported quant_method \"{}\" (supported: fp8, gptq, awq, compressed-tensors)",
         ctx.Where("quant_method"), method);
  }
  return out;
}

}  // namespace

bool ModelConfig::IsMoeLayer(int i) const {
  if (n_routed_experts <= 0) return false;
  if (attention == AttentionKind::kMla) {
    // DeepSeek: dense for the first k layers, then MoE every moe_layer_freq layers.
    if (i >= num_hidden_layers) return true;  // MTP layers are MoE blocks
    return i >= first_k_dense_replace && (moe_layer_freq <= 1 || i % moe_layer_freq == 0);
  }
  if (std::find(mlp_only_layers.begin(), mlp_only_layers.end(), i) != mlp_only_layers.end()) return false;
  return decoder_sparse_step <= 1 || (i + 1) % decoder_sparse_step == 0;
}

const std::vector<std::string>& SupportedArchitectures() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& row : kArchitectures) v.emplace_back(row.name);
    return v;
  }();
  return names;
}

ModelConfig ParseModelConfig(const nlohmann::json& j, const std::string& source) {
  JsonContext ctx{source, ""};
  RequireObject(j, ctx);
  ModelConfig m;
  m.source = source;

  auto archs = j.find("architectures");
  if (archs == j.end() || archs->is_null())
    Fail("{}: required field is missing (supported: {})", ctx.Where("architectures"),
         fmt::join(SupportedArchitectures(), ", "));
  if (!archs->is_array() || archs->empty() || !(*archs)[0].is_string())
    Fail("{}: expected a non-empty list of strings, got {}", ctx.Where("architectures"), ShortJson(*archs));
  m.architecture = (*archs)[0].get<std::string>();
  const ArchRow* row = nullptr;
  for (const auto& r : kArchitectures)
    if (m.architecture == r.name) row = &r;
  if (!row)
    Fail("{}: unsupported architecture \"{}\" (supported: {})", ctx.Where("architectures"), m.architecture,
         fmt::join(SupportedArchitectures(), ", "));
  m.model_type = OptString(j, "model_type", ctx).value_or("");

  m.num_hidden_layers = Int(j, "num_hidden_layers", ctx);
  if (m.num_hidden_layers > 100'000) Fail("{}: value {} is implausibly large", ctx.Where("num_hidden_layers"), m.num_hidden_layers);
  m.hidden_size = Int(j, "hidden_size", ctx);
  m.num_attention_heads = Int(j, "num_attention_heads", ctx);
  m.num_key_value_heads = OptIntOr(j, "num_key_value_heads", ctx, m.num_attention_heads, 1);
  m.vocab_size = Int(j, "vocab_size", ctx);
  m.tie_word_embeddings = OptBool(j, "tie_word_embeddings", ctx).value_or(false);
  m.max_position_embeddings = ReqInt(j, "max_position_embeddings", ctx, 1);
  if (auto dt = OptString(j, "torch_dtype", ctx)) {
    m.torch_dtype = *dt;
  } else if (auto dt2 = OptString(j, "dtype", ctx)) {
    m.torch_dtype = *dt2;
  }
  m.dtype_bytes = DtypeBytes(m.torch_dtype, ctx, "torch_dtype");
  m.intermediate_size = OptIntOr(j, "intermediate_size", ctx, 0);

  switch (row->family) {
    case Family::kDeepseekMla: {
      m.attention = AttentionKind::kMla;
      m.kv_lora_rank = Int(j, "kv_lora_rank", ctx);
      m.qk_rope_head_dim = Int(j, "qk_rope_head_dim", ctx);
      m.qk_nope_head_dim = Int(j, "qk_nope_head_dim", ctx);
      m.v_head_dim = Int(j, "v_head_dim", ctx);
      m.q_lora_rank = OptIntOr(j, "q_lora_rank", ctx, 0);
      m.n_routed_experts = OptIntOr(j, "n_routed_experts", ctx, 0);
      m.n_shared_experts = OptIntOr(j, "n_shared_experts", ctx, 0);
      m.num_experts_per_tok = OptIntOr(j, "num_experts_per_tok", ctx, 0);
      m.moe_intermediate_size = OptIntOr(j, "moe_intermediate_size", ctx, 0);
      m.first_k_dense_replace = OptIntOr(j, "first_k_dense_replace", ctx, 0);
      m.moe_layer_freq = OptIntOr(j, "moe_layer_freq", ctx, 1, 1);
      m.num_nextn_predict_layers = OptIntOr(j, "num_nextn_predict_layers", ctx, 0);
      if (m.n_routed_experts > 0 && m.moe_intermediate_size <= 0)
        Fail("{}: required when n_routed_experts > 0", ctx.Where("moe_intermediate_size"));
      if (m.first_k_dense_replace > 0 && m.intermediate_size <= 0)
        Fail("{}: required when first_k_dense_replace > 0", ctx.Where("intermediate_size"));
      // vLLM: `hasattr(config, "index_topk")` switches DSA on.
      if (j.contains("index_topk") && !j["index_topk"].is_null()) {
        m.dsa = true;
        m.index_topk = Int(j, "index_topk", ctx);
        m.index_head_dim = Int(j, "index_head_dim", ctx);
        m.index_n_heads = Int(j, "index_n_heads", ctx);
        m.index_topk_freq = OptIntOr(j, "index_topk_freq", ctx, 1, 1);
        m.index_skip_topk_offset = OptIntOr(j, "index_skip_topk_offset", ctx, 2, 0);
        m.index_topk_pattern = OptString(j, "index_topk_pattern", ctx);
        if (m.index_topk_pattern) {
          for (char c : *m.index_topk_pattern)
            if (c != 'F' && c != 'S')
              Fail("{}: expected only 'F' and 'S', got \"{}\"", ctx.Where("index_topk_pattern"),
                   m.index_topk_pattern->substr(0, 40));
        }
      }
      break;
    }
    case Family::kLlamaLike:
    case Family::kQwenMoe:
    case Family::kMixtral: {
      m.attention = AttentionKind::kGqa;
      if (m.num_attention_heads % m.num_key_value_heads != 0)
        Fail("{}: {} does not divide num_attention_heads={}", ctx.Where("num_key_value_heads"),
             m.num_key_value_heads, m.num_attention_heads);
      m.head_dim = OptIntOr(j, "head_dim", ctx, 0);
      if (m.head_dim == 0) {
        if (m.hidden_size % m.num_attention_heads != 0)
          Fail("{}: head_dim is absent and hidden_size={} is not a multiple of num_attention_heads={}",
               ctx.source, m.hidden_size, m.num_attention_heads);
        m.head_dim = m.hidden_size / m.num_attention_heads;
      }
      m.attention_bias = OptBool(j, "attention_bias", ctx).value_or(m.architecture == "Qwen2ForCausalLM" ||
                                                                     m.architecture == "Qwen2MoeForCausalLM");
      if (row->family == Family::kQwenMoe) {
        m.n_routed_experts = Int(j, "num_experts", ctx);
        m.num_experts_per_tok = Int(j, "num_experts_per_tok", ctx);
        m.moe_intermediate_size = Int(j, "moe_intermediate_size", ctx);
        m.decoder_sparse_step = OptIntOr(j, "decoder_sparse_step", ctx, 1, 1);
        m.shared_expert_intermediate_size = OptIntOr(j, "shared_expert_intermediate_size", ctx, 0);
        if (auto it = j.find("mlp_only_layers"); it != j.end() && !it->is_null()) {
          if (!it->is_array()) Fail("{}: expected a list of integers", ctx.Where("mlp_only_layers"));
          for (const auto& e : *it) {
            if (!e.is_number_integer()) Fail("{}: expected a list of integers", ctx.Where("mlp_only_layers"));
            m.mlp_only_layers.push_back(e.get<int>());
          }
        }
      } else if (row->family == Family::kMixtral) {
        m.n_routed_experts = Int(j, "num_local_experts", ctx);
        m.num_experts_per_tok = Int(j, "num_experts_per_tok", ctx);
        m.moe_intermediate_size = Int(j, "intermediate_size", ctx);
      } else if (m.intermediate_size <= 0) {
        Fail("{}: required field is missing", ctx.Where("intermediate_size"));
      }
      break;
    }
  }

  if (auto q = j.find("quantization_config"); q != j.end() && !q->is_null())
    m.quantization = ParseQuantization(*q, ctx.Child("quantization_config"));
  else
    m.quantization.summary = m.torch_dtype;
  return m;
}

ModelConfig ParseModelConfigText(std::string_view text, const std::string& source) {
  return ParseModelConfig(ParseJsonText(text, source), source);
}

}  // namespace ppdeploy
