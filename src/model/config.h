// A model's architecture as the planner needs it, read from any Hugging Face causal-LM
// config.json (also the nested `text_config` / `language_config` / `llm_config` of
// vision-language models). The model class (`architectures[0]`) must be one of
// data/architectures.json (model/architectures.h), which names the KV/weight rule it is sized by;
// a class it does not list, a config key no rule reads (`compress_ratios`, Gemma-4's global-attention
// keys) and an MLA class without its MLA fields are refused by name. Within a rule every layer is
// classified from standard fields, and what cannot be classified is refused, naming the missing field
// or the unsupported feature and the file.
//
// Classification (as vLLM builds each layer's KV cache spec, vllm/v1/kv_cache_interface.py):
// - attention: MLA for the MLA classes of the table (vLLM ModelConfig.is_deepseek_mla: the latent
//   `kv_lora_rank + qk_rope_head_dim`), DSA indexer when `index_topk` is present; otherwise
//   GQA/MHA/MQA from `num_attention_heads`, `num_key_value_heads` (default: the heads) and
//   `head_dim` (default hidden_size / heads).
// - per-layer kind: `layer_types` (full / sliding / chunked / linear / mamba), or
//   `sliding_window_pattern` (Gemma-3: every N-th layer full), Gemma-2's alternation, a plain
//   `sliding_window` (every layer, unless `use_sliding_window` is false), Llama-4's
//   `no_rope_layers` / `no_rope_layer_interval` with `attention_chunk_size`,
//   `full_attention_interval` (Qwen3-Next), `hybrid_override_pattern` (Nemotron-H),
//   `attn_type_list` (MiniMax), `linear_attn_config` (Kimi-Linear), `attn_layer_period/offset`
//   (Jamba), `layers_block_type`; `num_kv_shared_layers` (cross-layer KV sharing: those layers
//   own no cache).
// - recurrent state of linear / mamba layers (vllm mamba_utils.py MambaStateShapeCalculator).
// - MoE: `n_routed_experts` / `num_experts` / `num_local_experts`, `num_experts_per_tok` /
//   `experts_per_token`, shared experts, dense prefix `first_k_dense_replace`,
//   `decoder_sparse_step` / `mlp_only_layers`, `interleave_moe_layer_step`.
// Fields a config omits take transformers' class defaults (data/config-defaults.json). Integer
// fields given as floats are refused (vLLM would hand a float to range() or a tensor shape),
// except `max_position_embeddings`, which vLLM casts (a warning).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ppdeploy {

enum class AttentionKind { kMla, kGqa };

/// Weight quantization as declared by `quantization_config` (vLLM reads the same block).
struct QuantizationConfig {
  enum class Method { kNone, kFp8, kGptq, kAwq, kCompressedTensors, kMxfp4 };
  Method method = Method::kNone;
  int weight_bits = 16;          ///< 4 or 8 for integer methods, 8 for fp8, 4 for mxfp4, 16 when unquantized
  int group_size = 0;            ///< elements per scale group along the input dim; 0 = per channel / n.a.
  int fp8_block_n = 0;           ///< fp8 block-wise scales: block rows (0 = per-tensor)
  int fp8_block_k = 0;           ///< fp8 block-wise scales: block columns
  bool has_zero_points = false;  ///< GPTQ/AWQ store packed zero points
  bool has_g_idx = false;        ///< GPTQ stores an int32 act-order index per input column
  /// Module names or patterns that stay unquantized: compressed-tensors `ignore` ("re:" = regex
  /// matched from the start of the name), GPTQ/AWQ `modules_to_not_convert` (substring).
  std::vector<std::string> ignore;
  bool ignore_is_substring = false;  ///< AWQ/GPTQ semantics: entry matches when it is a substring
  std::string summary;               ///< e.g. "compressed-tensors W4A16 group 128"
};

/// What a decoder layer caches (vLLM's spec class for it).
enum class LayerKind {
  kFull,           ///< full causal attention: FullAttentionSpec / MLAAttentionSpec
  kSlidingWindow,  ///< SlidingWindowSpec (`window` tokens)
  kChunkedLocal,   ///< ChunkedLocalAttentionSpec (Llama-4, `window` = attention_chunk_size)
  kLinear,         ///< linear attention / SSM: MambaSpec, a fixed state per sequence
  kNone,           ///< no attention and no state (Nemotron-H MLP / MoE blocks)
};

/// "full", "sliding_window", "chunked_local", "linear", "none".
std::string_view LayerKindName(LayerKind kind);

/// One decoder layer.
struct LayerInfo {
  LayerKind kind = LayerKind::kFull;
  int window = 0;      ///< sliding window or attention chunk, tokens
  int kv_source = -1;  ///< >= 0: reads the KV cache of that layer (cross-layer KV sharing), owns none
};

/// Recurrent-state family of linear / mamba layers (vllm/model_executor/layers/mamba/mamba_utils.py).
enum class StateKind {
  kNone,
  kMamba1,         ///< mamba1_state_shape: conv (d_conv-1, d_inner/TP), ssm (d_inner/TP, d_state)
  kMamba2,         ///< mamba2_state_shape: conv (d_conv-1, (d_inner + 2 G d_state)/TP), ssm (H/TP, P, d_state)
  kGatedDeltaNet,  ///< gated_delta_net_state_shape (Qwen3-Next / Qwen3.5)
  kKda,            ///< kda_state_shape (Kimi-Linear), recurrent state in float32
  kLightning,      ///< linear_attention_state_shape (MiniMax lightning attention): (H/TP, D, D)
};

/// "mamba1", "mamba2", "gated_delta_net", "kda", "lightning".
std::string_view StateKindName(StateKind kind);

/// The state of the model's linear layers (one shape for all of them, as vLLM assumes).
struct LinearStateConfig {
  StateKind kind = StateKind::kNone;
  std::string fields;         ///< the config fields it was read from, for notes
  int num_heads = 0;          ///< mamba2 heads / GDN value heads / KDA heads / lightning heads
  int head_dim = 0;           ///< mamba2 head dim / GDN value head dim / KDA and lightning head dim
  int num_k_heads = 0;        ///< GDN / KDA key heads
  int head_k_dim = 0;         ///< GDN / KDA key head dim
  int intermediate_size = 0;  ///< mamba1 / mamba2 d_inner
  int n_groups = 1;           ///< mamba2 groups
  int state_size = 0;         ///< mamba1 / mamba2 d_state
  int conv_kernel = 4;        ///< d_conv / linear_conv_kernel_dim / short_conv_kernel_size
  bool float32_ssm = false;   ///< the recurrent state is float32 whatever the model dtype
};

/// How MoE layers are placed (one rule per model family).
enum class MoeRule {
  kDense,       ///< no experts
  kDeepseek,    ///< dense for the first `first_k_dense_replace` layers, then every `moe_layer_freq`
  kSparseStep,  ///< Qwen-MoE: MoE on (i + 1) % decoder_sparse_step == 0, except mlp_only_layers
  kInterleave,  ///< Llama-4: MoE on (i + 1) % interleave_moe_layer_step == 0
};

/// The fields of config.json that decide KV-cache and weight sizes. Sizes are element counts.
struct ModelConfig {
  std::string source;           ///< where it came from (file path or "preset NAME"), for messages
  std::string architecture;     ///< e.g. "GlmMoeDsaForCausalLM"
  std::string model_type;       ///< of the text model, e.g. "glm_moe_dsa", "gemma3_text"
  std::string text_config_key;  ///< "text_config" etc. when the decoder is nested ("" = top level)
  AttentionKind attention = AttentionKind::kGqa;
  bool dsa = false;  ///< DeepSeek Sparse Attention: `index_topk` present (vLLM deepseek_v2.py)

  int num_hidden_layers = 0;
  int hidden_size = 0;
  int num_attention_heads = 0;
  int num_key_value_heads = 0;  ///< GQA; for MLA equal to num_attention_heads (KV is one latent)
  int head_dim = 0;             ///< GQA head size (for MLA: qk_nope + qk_rope, the pre-MLA MHA head)

  // MLA (DeepSeek-V2 style) dimensions.
  int kv_lora_rank = 0;
  int qk_rope_head_dim = 0;
  int qk_nope_head_dim = 0;
  int v_head_dim = 0;
  int q_lora_rank = 0;  ///< 0 = no q LoRA (q_proj is a plain column-parallel projection)

  // MLP / MoE.
  int intermediate_size = 0;                ///< dense MLP width
  int moe_intermediate_size = 0;            ///< one routed expert's width
  int n_routed_experts = 0;                 ///< 0 = dense model
  int n_shared_experts = 0;                 ///< DeepSeek shared experts (each moe_intermediate_size wide)
  int shared_expert_intermediate_size = 0;  ///< Qwen2-MoE style single shared expert width
  int num_experts_per_tok = 0;
  int first_k_dense_replace = 0;      ///< DeepSeek: the first k layers are dense
  int moe_layer_freq = 1;             ///< DeepSeek: MoE on layers with i % freq == 0 (after the dense ones)
  int decoder_sparse_step = 1;        ///< Qwen-MoE: MoE on layers with (i + 1) % step == 0
  int interleave_moe_layer_step = 1;  ///< Llama-4: MoE on layers with (i + 1) % step == 0
  std::vector<int> mlp_only_layers;   ///< Qwen-MoE: dense layers
  MoeRule moe_rule = MoeRule::kDense;

  int vocab_size = 0;
  bool tie_word_embeddings = false;
  int num_nextn_predict_layers = 0;  ///< MTP layers, ids num_hidden_layers + k
  bool attention_bias = false;       ///< Qwen2: q/k/v biases

  // DSA lightning indexer.
  int index_head_dim = 0;
  int index_n_heads = 0;
  int index_topk = 0;
  int index_topk_freq = 1;                        ///< vLLM default 1 (every layer full)
  int index_skip_topk_offset = 2;                 ///< vLLM default 2
  std::optional<std::string> index_topk_pattern;  ///< one 'F'/'S' per layer; overrides freq/offset

  // Per-layer attention (num_hidden_layers entries; MTP layers are full attention).
  std::vector<LayerInfo> layers;
  std::string layer_pattern;     ///< how the kinds were read, e.g. "layer_types", "sliding_window_pattern 6"
  LinearStateConfig linear;      ///< the state of kLinear layers
  bool attention_sinks = false;  ///< learned per-head sink logits (gpt-oss): no KV-cache effect
  bool multimodal = false;       ///< a vision / audio tower is present (encoder cache not planned)
  bool attention_free = false;   ///< mamba layers only (data/architectures.json rule attention_free)

  std::int64_t max_position_embeddings = 0;
  std::string torch_dtype = "bfloat16";
  int dtype_bytes = 2;  ///< bytes of torch_dtype (bf16/fp16 2, fp32 4)

  QuantizationConfig quantization;
  std::vector<std::string> warnings;  ///< accepted values vLLM would read differently

  /// True when layer `i` (0-based, backbone or MTP) has a routed-expert MLP.
  bool IsMoeLayer(int i) const;
  /// Number of MTP layers (num_nextn_predict_layers) - only DeepSeek-family MTP heads count.
  int MtpLayers() const { return num_nextn_predict_layers; }
  /// Layers of kind `k` among the backbone layers.
  int CountLayers(LayerKind k) const;
  /// Whether layer kinds differ (vLLM's hybrid KV-cache manager applies).
  bool Hybrid() const;
  /// Bytes of one sequence's recurrent state of one linear layer on one TP rank, conv + ssm, as
  /// vLLM's MambaSpec.page_size_bytes (before padding). 0 when the model has no linear layers.
  std::int64_t LinearStateBytes(int tensor_parallel_size, int model_dtype_bytes) const;
  /// One line, e.g. "62 layers: 52 sliding_window(1024) + 10 full; GQA 16 KV heads x 128".
  std::string Describe() const;
};

/// Parses a config.json document. `source` names the file for error messages.
/// Throws Error naming the file and field for: wrong types, missing required fields,
/// non-positive sizes, attention that cannot be classified (naming the missing field or the
/// unsupported feature), an invalid index_topk_pattern, or a quantization_config it cannot size.
ModelConfig ParseModelConfig(const nlohmann::json& config, const std::string& source);

/// Parses config.json text (malformed JSON -> Error naming `source`).
ModelConfig ParseModelConfigText(std::string_view text, const std::string& source);

}  // namespace ppdeploy
