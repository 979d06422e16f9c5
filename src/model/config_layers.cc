// The layer classification of a config (config_fields.h): which layers are full, sliding-window,
// chunked-local or linear (recurrent) attention, which share another layer's KV, and the recurrent state.
#include <fmt/format.h>

#include <string>

#include "core/error.h"
#include "core/escape.h"
#include "core/json_fields.h"
#include "model/config_fields.h"

namespace ppdeploy::config_fields {
namespace {

int SlidingWindow(const Fields& f) {
  auto w = f.OptInt("sliding_window", 1);
  if (!w) Fail("{}: required for sliding-window layers", f.Where("sliding_window"));
  return static_cast<int>(*w);
}

void SetLinear(ModelConfig& m, int i) { m.layers[i].kind = LayerKind::kLinear; }

// 1. An explicit list of layer kinds (`layer_types` or `layers_block_type`).
void ExplicitLayerKinds(ModelConfig& m, const Fields& f, const nlohmann::json* types, const nlohmann::json* blocks) {
  const int n = m.num_hidden_layers;
  auto sliding_window = [&] { return SlidingWindow(f); };
  auto set_linear = [&](int i) { SetLinear(m, i); };
  const char* key = types ? "layer_types" : "layers_block_type";
  const nlohmann::json& list = types ? *types : *blocks;
  if (!list.is_array()) Fail("{}: expected a list of strings, got {}", f.Where(key), ShortJson(list));
  if (static_cast<int>(list.size()) != n) Fail("{}: {} entries for num_hidden_layers={}", f.Where(key), list.size(), n);
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
}

// 2. The recurrent families' patterns (Nemotron-H, Qwen3-Next, MiniMax, Kimi-Linear, Jamba). Returns false
// when none of their fields is present.
bool RecurrentLayerKinds(ModelConfig& m, const Fields& f) {
  const int n = m.num_hidden_layers;
  auto set_linear = [&](int i) { SetLinear(m, i); };
  if (auto pattern = f.OptString("hybrid_override_pattern")) {
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
  } else {
    return false;
  }
  return true;
}

// 3. Attention-free models, chunked local attention (Llama-4) and sliding windows (Gemma, Cohere).
void WindowLayerKinds(ModelConfig& m, const Fields& f, const nlohmann::json* row) {
  const int n = m.num_hidden_layers;
  auto sliding_window = [&] { return SlidingWindow(f); };
  auto set_linear = [&](int i) { SetLinear(m, i); };
  if (m.attention_free) {
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
}

// Cross-layer KV sharing (Gemma-3n): the last N layers read the KV of the last earlier layer
// of the same kind (vLLM kv_sharing_target_layer_name) and own no cache.
void ShareKv(ModelConfig& m, const Fields& f) {
  const int n = m.num_hidden_layers;
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

}  // namespace

void ClassifyLayers(ModelConfig& m, const Fields& f, const nlohmann::json* row) {
  m.layers.assign(m.num_hidden_layers, LayerInfo{});
  const nlohmann::json* types = f.Find("layer_types");
  const nlohmann::json* blocks = types ? nullptr : f.Find("layers_block_type");
  if (types || blocks)
    ExplicitLayerKinds(m, f, types, blocks);
  else if (!RecurrentLayerKinds(m, f))
    WindowLayerKinds(m, f, row);
  ShareKv(m, f);
}

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

}  // namespace ppdeploy::config_fields
