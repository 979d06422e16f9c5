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

constexpr std::int64_t kMaxSize = 100'000'000;

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

// Typed reads from the decoder's config object, falling back to transformers' class defaults for
// keys the file does not have (a null in the file is kept as "unset").
class Fields {
 public:
  Fields(const nlohmann::json& obj, JsonContext ctx, const nlohmann::json* defaults, std::string defaults_source,
         std::vector<std::string>* warnings)
      : obj_(obj),
        ctx_(std::move(ctx)),
        defaults_(defaults),
        defaults_source_(std::move(defaults_source)),
        warnings_(warnings) {}

  const JsonContext& ctx() const { return ctx_; }
  const nlohmann::json& obj() const { return obj_; }
  std::string Where(std::string_view key) const { return ctx_.Where(key); }

  // The value of `key`: the file's, else the default's; nullptr when unset or null.
  const nlohmann::json* Find(std::string_view key, bool* from_default = nullptr) const {
    if (from_default) *from_default = false;
    auto it = obj_.find(std::string(key));
    if (it != obj_.end()) return it->is_null() ? nullptr : &*it;
    if (defaults_) {
      auto d = defaults_->find(std::string(key));
      if (d != defaults_->end() && !d->is_null()) {
        if (from_default) *from_default = true;
        return &*d;
      }
    }
    return nullptr;
  }
  bool Has(std::string_view key) const { return Find(key) != nullptr; }

  // An integer count or size. Integral floats are refused: vLLM passes these fields to range() and
  // tensor shapes, which raise TypeError for a float. `cast_ok` fields (vLLM casts them) only warn.
  std::optional<std::int64_t> OptInt(std::string_view key, std::int64_t min = 0, bool cast_ok = false) const {
    const nlohmann::json* v = Find(key);
    if (!v) return std::nullopt;
    if (v->is_number_float() && !cast_ok) {
      const double d = v->get<double>();
      if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9e15)
        Fail(
            "{}: expected an integer, got the float {} (vLLM passes this field to range() / tensor shapes, which "
            "raise TypeError for a float; write {})",
            Where(key), ShortJson(*v), static_cast<std::int64_t>(d));
    }
    const std::int64_t value = JsonIntValue(*v, Where(key), min, std::numeric_limits<std::int64_t>::max(), cast_ok);
    if (v->is_number_float() && warnings_)
      warnings_->push_back(fmt::format("{}: the float {} is read as the integer {} (vLLM casts it with int())",
                                       Where(key), ShortJson(*v), value));
    if (value > kMaxSize) Fail("{}: value {} is implausibly large", Where(key), value);
    return value;
  }
  int Int(std::string_view key, std::int64_t min = 1) const {
    auto v = OptInt(key, min);
    if (!v) Fail("{}: required field is missing", Where(key));
    return static_cast<int>(*v);
  }
  int IntOr(std::string_view key, int fallback, std::int64_t min = 0) const {
    auto v = OptInt(key, min);
    return v ? static_cast<int>(*v) : fallback;
  }
  // The first of `keys` that is set (aliases used by different families).
  std::optional<std::int64_t> FirstInt(std::initializer_list<std::string_view> keys, std::int64_t min = 0,
                                       std::string* which = nullptr, bool cast_ok = false) const {
    for (auto k : keys)
      if (auto v = OptInt(k, min, cast_ok)) {
        if (which) *which = std::string(k);
        return v;
      }
    return std::nullopt;
  }
  int ReqFirstInt(std::initializer_list<std::string_view> keys, std::int64_t min = 1) const {
    if (auto v = FirstInt(keys, min)) return static_cast<int>(*v);
    Fail("{}: required field is missing{}", Where(*keys.begin()),
         keys.size() > 1 ? fmt::format(" (also looked for {})",
                                       fmt::join(std::vector<std::string_view>(keys.begin() + 1, keys.end()), ", "))
                         : std::string());
  }
  std::optional<bool> OptBool(std::string_view key) const {
    const nlohmann::json* v = Find(key);
    if (!v) return std::nullopt;
    if (!v->is_boolean()) Fail("{}: expected true or false, got {}", Where(key), ShortJson(*v));
    return v->get<bool>();
  }
  std::optional<std::string> OptString(std::string_view key) const {
    const nlohmann::json* v = Find(key);
    if (!v) return std::nullopt;
    if (!v->is_string()) Fail("{}: expected a string, got {}", Where(key), ShortJson(*v));
    return v->get<std::string>();
  }
  std::vector<int> IntList(std::string_view key) const {
    std::vector<int> out;
    const nlohmann::json* v = Find(key);
    if (!v) return out;
    if (!v->is_array()) Fail("{}: expected a list of integers, got {}", Where(key), ShortJson(*v));
    for (std::size_t i = 0; i < v->size(); ++i)
      out.push_back(static_cast<int>(JsonIntValue((*v)[i], fmt::format("{}[{}]", Where(key), i), -kMaxSize, kMaxSize,
                                                  /*float_ok=*/false)));
    return out;
  }

 private:
  const nlohmann::json& obj_;
  JsonContext ctx_;
  const nlohmann::json* defaults_;
  std::string defaults_source_;
  std::vector<std::string>* warnings_;
};

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
      out.fp8_block_n = static_cast<int>(JsonIntValue((*it)[0], ctx.Where("weight_block_size[0]"), 1, kMaxSize, false));
      out.fp8_block_k = static_cast<int>(JsonIntValue((*it)[1], ctx.Where("weight_block_size[1]"), 1, kMaxSize, false));
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

// The layer kinds from the standard fields (see config.h); window sizes are read here too.
void ClassifyLayers(ModelConfig& m, const Fields& f, const nlohmann::json* row) {
  const int n = m.num_hidden_layers;
  m.layers.assign(n, LayerInfo{});
  auto sliding_window = [&]() -> int {
    auto w = f.OptInt("sliding_window", 1);
    if (!w) Fail("{}: required for sliding-window layers", f.Where("sliding_window"));
    return static_cast<int>(*w);
  };
  auto set_linear = [&](int i) { m.layers[i].kind = LayerKind::kLinear; };

  // 1. An explicit list of layer kinds.
  const nlohmann::json* types = f.Find("layer_types");
  const nlohmann::json* blocks = types ? nullptr : f.Find("layers_block_type");
  if (types || blocks) {
    const char* key = types ? "layer_types" : "layers_block_type";
    const nlohmann::json& list = types ? *types : *blocks;
    if (!list.is_array()) Fail("{}: expected a list of strings, got {}", f.Where(key), ShortJson(list));
    if (static_cast<int>(list.size()) != n)
      Fail("{}: {} entries for num_hidden_layers={}", f.Where(key), list.size(), n);
    for (int i = 0; i < n; ++i) {
      if (!list[i].is_string()) Fail("{}: entry {} is not a string: {}", f.Where(key), i, ShortJson(list[i]));
      const std::string t = list[i].get<std::string>();
      if (t == "full_attention" || t == "attention" || t == "global" || t == "global_attention" || t == "full") {
        m.layers[i].kind = LayerKind::kFull;
      } else if (t == "sliding_attention" || t == "sliding_window" || t == "local" || t == "local_attention") {
        m.layers[i].kind = LayerKind::kSlidingWindow;
        m.layers[i].window = sliding_window();
      } else if (t == "chunked_attention") {
        m.layers[i].kind = LayerKind::kChunkedLocal;
        auto c = f.OptInt("attention_chunk_size", 1);
        if (!c) Fail("{}: required for chunked_attention layers", f.Where("attention_chunk_size"));
        m.layers[i].window = static_cast<int>(*c);
      } else if (t == "linear_attention" || t == "mamba" || t == "mamba2" || t == "linear" || t == "ssm") {
        set_linear(i);
      } else {
        Fail(
            "{}: entry {} {} is not a layer kind vLLM's KV-cache manager knows (full_attention, "
            "sliding_attention, chunked_attention, linear_attention, mamba)",
            f.Where(key), i, ShortJson(list[i]));
      }
    }
    m.layer_pattern = key;
  } else if (auto pattern = f.OptString("hybrid_override_pattern")) {
    // Nemotron-H: M = mamba2, * = attention, - = MLP, E = MoE (no cache).
    if (static_cast<int>(pattern->size()) != n)
      Fail("{}: {} characters for num_hidden_layers={}", f.Where("hybrid_override_pattern"), pattern->size(), n);
    for (int i = 0; i < n; ++i) {
      char c = (*pattern)[i];
      if (c == 'M')
        set_linear(i);
      else if (c == '*')
        m.layers[i].kind = LayerKind::kFull;
      else if (c == '-' || c == 'E')
        m.layers[i].kind = LayerKind::kNone;
      else
        Fail("{}: character {} {} is not M, *, - or E", f.Where("hybrid_override_pattern"), i,
             QuoteForMessage(std::string(1, c)));
    }
    m.layer_pattern = "hybrid_override_pattern";
  } else if (auto interval = f.OptInt("full_attention_interval", 1)) {
    // Qwen3-Next: full attention where (i + 1) % interval == 0, gated delta net elsewhere.
    for (int i = 0; i < n; ++i)
      if ((i + 1) % *interval != 0) set_linear(i);
    m.layer_pattern = fmt::format("full_attention_interval {}", *interval);
  } else if (const nlohmann::json* attn_types = f.Find("attn_type_list")) {
    // MiniMax-Text-01: 0 = lightning (linear) attention, 1 = softmax attention.
    std::vector<int> t = f.IntList("attn_type_list");
    if (static_cast<int>(t.size()) != n)
      Fail("{}: {} entries for num_hidden_layers={}", f.Where("attn_type_list"), t.size(), n);
    (void)attn_types;
    for (int i = 0; i < n; ++i)
      if (t[i] == 0) set_linear(i);
    m.layer_pattern = "attn_type_list";
  } else if (const nlohmann::json* la = f.Find("linear_attn_config")) {
    // Kimi-Linear: kda_layers are 1-based (vLLM KimiLinearConfig.is_kda_layer: layer_idx + 1 in kda_layers).
    if (!la->is_object()) Fail("{}: expected an object, got {}", f.Where("linear_attn_config"), ShortJson(*la));
    Fields lf(*la, f.ctx().Child("linear_attn_config"), nullptr, "", nullptr);
    std::vector<int> kda = lf.IntList("kda_layers");
    if (kda.empty()) Fail("{}: required (1-based KDA layer ids)", lf.Where("kda_layers"));
    for (int id : kda) {
      if (id < 1 || id > n) Fail("{}: layer id {} outside 1..{}", lf.Where("kda_layers"), id, n);
      set_linear(id - 1);
    }
    m.layer_pattern = "linear_attn_config.kda_layers";
  } else if (auto period = f.OptInt("attn_layer_period", 1)) {
    // Jamba: attention on i % period == offset, mamba elsewhere.
    int offset = f.IntOr("attn_layer_offset", 0);
    for (int i = 0; i < n; ++i)
      if (i % *period != offset) set_linear(i);
    m.layer_pattern = fmt::format("attn_layer_period {} offset {}", *period, offset);
  } else if (m.architecture == "MambaForCausalLM" || m.architecture == "Mamba2ForCausalLM" ||
             m.architecture == "FalconMambaForCausalLM") {
    for (int i = 0; i < n; ++i) set_linear(i);
    m.layer_pattern = "attention-free " + m.architecture;
  } else if (f.Has("attention_chunk_size")) {
    // Llama-4: RoPE layers use chunked local attention, NoPE layers full attention.
    int chunk = static_cast<int>(*f.OptInt("attention_chunk_size", 1));
    std::vector<int> rope = f.IntList("no_rope_layers");
    if (!rope.empty() && static_cast<int>(rope.size()) != n)
      Fail("{}: {} entries for num_hidden_layers={}", f.Where("no_rope_layers"), rope.size(), n);
    int interval = f.IntOr("no_rope_layer_interval", 4, 1);
    for (int i = 0; i < n; ++i) {
      bool uses_rope = rope.empty() ? (i + 1) % interval != 0 : rope[i] != 0;
      if (uses_rope) m.layers[i] = LayerInfo{LayerKind::kChunkedLocal, chunk, -1};
    }
    m.layer_pattern = rope.empty() ? fmt::format("attention_chunk_size {}, no_rope_layer_interval {}", chunk, interval)
                                   : fmt::format("attention_chunk_size {}, no_rope_layers", chunk);
  } else if (f.OptBool("use_sliding_window") == false) {
    m.layer_pattern = "use_sliding_window false";
  } else if (f.Has("sliding_window")) {
    int window = sliding_window();
    int every = 1;
    if (auto p = f.FirstInt({"sliding_window_pattern", "_sliding_window_pattern"}, 1)) {
      every = static_cast<int>(*p);
    } else if (row && row->contains("sliding_window_pattern")) {
      every = (*row)["sliding_window_pattern"].get<int>();
    }
    // vLLM (gemma2.py, gemma3.py, cohere2.py): sliding unless (i + 1) % pattern == 0; pattern 1 = every layer.
    for (int i = 0; i < n; ++i)
      if (every == 1 || (i + 1) % every != 0) m.layers[i] = LayerInfo{LayerKind::kSlidingWindow, window, -1};
    m.layer_pattern = every == 1 ? fmt::format("sliding_window {} on every layer", window)
                                 : fmt::format("sliding_window {}, sliding_window_pattern {}", window, every);
  }

  // Cross-layer KV sharing (Gemma-3n): the last N layers read the KV of the last earlier layer
  // of the same kind (vLLM kv_sharing_target_layer_name) and own no cache.
  if (auto shared = f.OptInt("num_kv_shared_layers", 0); shared && *shared > 0) {
    if (*shared >= n)
      Fail("{}: {} shared layers leave none of {} to own a cache", f.Where("num_kv_shared_layers"), *shared, n);
    const int first = n - static_cast<int>(*shared);
    for (int i = first; i < n; ++i) {
      int src = -1;
      for (int k = first - 1; k >= 0; --k)
        if (m.layers[k].kind == m.layers[i].kind && m.layers[k].window == m.layers[i].window) {
          src = k;
          break;
        }
      if (src < 0)
        Fail("{}: layer {} ({}) has no earlier layer of its kind to share KV with", f.Where("num_kv_shared_layers"), i,
             LayerKindName(m.layers[i].kind));
      m.layers[i].kv_source = src;
    }
  }
}

// The recurrent state of linear layers, from the fields each family uses.
void ReadLinearState(ModelConfig& m, const Fields& f) {
  LinearStateConfig& s = m.linear;
  if (f.Has("linear_num_value_heads") || f.Has("linear_key_head_dim")) {
    s.kind = StateKind::kGatedDeltaNet;
    s.num_heads = f.Int("linear_num_value_heads");
    s.head_dim = f.Int("linear_value_head_dim");
    s.num_k_heads = f.Int("linear_num_key_heads");
    s.head_k_dim = f.Int("linear_key_head_dim");
    s.conv_kernel = f.IntOr("linear_conv_kernel_dim", 4, 1);
    s.fields =
        "linear_num_value_heads, linear_value_head_dim, linear_num_key_heads, linear_key_head_dim, "
        "linear_conv_kernel_dim";
    return;
  }
  if (const nlohmann::json* la = f.Find("linear_attn_config")) {
    Fields lf(*la, f.ctx().Child("linear_attn_config"), nullptr, "", nullptr);
    s.kind = StateKind::kKda;
    s.num_heads = lf.Int("num_heads");
    s.head_dim = lf.Int("head_dim");
    s.num_k_heads = s.num_heads;
    s.head_k_dim = s.head_dim;
    s.conv_kernel = lf.IntOr("short_conv_kernel_size", 4, 1);
    s.float32_ssm = true;  // kda_state_dtype: (model dtype, float32)
    s.fields = "linear_attn_config.num_heads, head_dim, short_conv_kernel_size";
    return;
  }
  if (f.Has("attn_type_list")) {
    s.kind = StateKind::kLightning;
    s.num_heads = f.Int("num_attention_heads");
    s.head_dim = f.IntOr("head_dim", m.hidden_size / std::max(1, s.num_heads), 1);
    s.fields = "attn_type_list, num_attention_heads, head_dim";
    return;
  }
  // Mamba-1 / Mamba-2 (Jamba, Nemotron-H, Granite-4, Bamba, Zamba2, Mamba).
  std::string which;
  auto d_state = f.FirstInt({"mamba_d_state", "ssm_state_size", "state_size", "d_state"}, 1, &which);
  if (!d_state) {
    Fail(
        "{}: the model has linear / mamba layers ({}) but no state fields this planner knows (GatedDeltaNet "
        "linear_num_value_heads..., Kimi linear_attn_config, MiniMax attn_type_list, Mamba mamba_d_state / "
        "ssm_state_size)",
        f.ctx().source, m.layer_pattern);
  }
  s.state_size = static_cast<int>(*d_state);
  s.conv_kernel = static_cast<int>(f.FirstInt({"mamba_d_conv", "conv_kernel", "d_conv"}, 1).value_or(4));
  auto heads = f.FirstInt({"mamba_n_heads", "mamba_num_heads"}, 1);
  auto head_dim = f.FirstInt({"mamba_d_head", "mamba_head_dim"}, 1);
  auto expand = f.FirstInt({"mamba_expand", "expand"}, 1);
  if (heads && head_dim) {
    s.kind = StateKind::kMamba2;
    s.num_heads = static_cast<int>(*heads);
    s.head_dim = static_cast<int>(*head_dim);
    s.intermediate_size = s.num_heads * s.head_dim;
    s.n_groups = static_cast<int>(f.FirstInt({"mamba_n_groups", "n_groups"}, 1).value_or(1));
    s.fields = fmt::format("{}, mamba heads x head_dim, n_groups, d_conv", which);
  } else if (expand) {
    s.kind = StateKind::kMamba1;
    s.intermediate_size = static_cast<int>(*expand) * m.hidden_size;
    s.fields = fmt::format("{}, expand x hidden_size, d_conv", which);
  } else {
    Fail("{}: mamba layers need mamba_n_heads + mamba_d_head (Mamba-2) or mamba_expand (Mamba-1) besides {}",
         f.ctx().source, which);
  }
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

  auto archs = j.find("architectures");
  if (archs == j.end() || archs->is_null())
    Fail("{}: required field is missing (vLLM picks the model class from it)", ctx.Where("architectures"));
  if (!archs->is_array() || archs->empty() || !(*archs)[0].is_string())
    Fail("{}: expected a non-empty list of strings, got {}", ctx.Where("architectures"), ShortJson(*archs));
  m.architecture = (*archs)[0].get<std::string>();
  if (auto ed = j.find("is_encoder_decoder"); ed != j.end() && ed->is_boolean() && ed->get<bool>())
    Fail("{}: encoder-decoder models (cross-attention KV, vLLM CrossAttentionSpec) are not planned ({})",
         ctx.Where("is_encoder_decoder"), EscapeForMessage(m.architecture));

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

  m.num_hidden_layers = f.ReqFirstInt({"num_hidden_layers", "n_layer", "num_layers", "n_layers"});
  if (m.num_hidden_layers > 100'000)
    Fail("{}: value {} is implausibly large", f.Where("num_hidden_layers"), m.num_hidden_layers);
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
  auto dtype_of = [&](const nlohmann::json& o,
                      const JsonContext& c) -> std::optional<std::pair<std::string, std::string>> {
    for (const char* k : {"torch_dtype", "dtype"})
      if (auto it = o.find(k); it != o.end() && !it->is_null()) {
        if (!it->is_string()) Fail("{}: expected a string, got {}", c.Where(k), ShortJson(*it));
        return std::make_pair(it->get<std::string>(), c.Where(k));
      }
    return std::nullopt;
  };
  if (auto dt = dtype_of(*text.obj, tctx)) {
    m.torch_dtype = dt->first;
    m.dtype_bytes = DtypeBytes(m.torch_dtype, dt->second, &m.warnings);
  } else if (auto dt2 = dtype_of(j, ctx)) {
    m.torch_dtype = dt2->first;
    m.dtype_bytes = DtypeBytes(m.torch_dtype, dt2->second, &m.warnings);
  }
  m.intermediate_size =
      static_cast<int>(f.FirstInt({"intermediate_size", "ffn_hidden_size", "n_inner"}, 0).value_or(0));
  if (auto mlp = f.OptInt("intermediate_size_mlp", 0)) {  // Llama-4: the dense MLP width
    m.moe_intermediate_size = m.intermediate_size;
    m.intermediate_size = static_cast<int>(*mlp);
  }
  m.attention_sinks = m.model_type == "gpt_oss";

  // --- attention ---
  const bool linear_only = m.architecture == "MambaForCausalLM" || m.architecture == "Mamba2ForCausalLM" ||
                           m.architecture == "FalconMambaForCausalLM";
  if (f.Has("kv_lora_rank")) {
    // vLLM ModelConfig.is_deepseek_mla: the latent is cached, one KV "head" on every TP rank.
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

  // --- layer kinds and the recurrent state of linear layers ---
  ClassifyLayers(m, f, row);
  if (m.CountLayers(LayerKind::kLinear) > 0) ReadLinearState(m, f);
  if (m.CountLayers(LayerKind::kFull) + m.CountLayers(LayerKind::kSlidingWindow) +
              m.CountLayers(LayerKind::kChunkedLocal) ==
          0 &&
      m.CountLayers(LayerKind::kLinear) == 0)
    Fail("{}: no layer caches anything ({}): nothing to plan", tctx.Where("num_hidden_layers"), m.layer_pattern);

  // --- MLP / MoE ---
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
  return m;
}

ModelConfig ParseModelConfigText(std::string_view text, const std::string& source) {
  return ParseModelConfig(ParseJsonText(text, source), source);
}

}  // namespace ppdeploy
