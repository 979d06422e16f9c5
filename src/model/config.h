// A model's architecture as the planner needs it, parsed from a Hugging Face config.json.
//
// Supported architectures (vLLM's registry names): DeepseekV2ForCausalLM, DeepseekV3ForCausalLM
// (also Kimi-K2), DeepseekV32ForCausalLM, GlmMoeDsaForCausalLM (MLA, DSA when `index_topk` is
// present), and plain decoders with GQA/MHA: LlamaForCausalLM, MistralForCausalLM,
// Qwen2ForCausalLM, Qwen3ForCausalLM, Qwen3MoeForCausalLM, Qwen2MoeForCausalLM,
// MixtralForCausalLM. Anything else is an Error that lists these.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace ppdeploy {

enum class AttentionKind { kMla, kGqa };

/// Weight quantization as declared by `quantization_config` (vLLM reads the same block).
struct QuantizationConfig {
  enum class Method { kNone, kFp8, kGptq, kAwq, kCompressedTensors };
  Method method = Method::kNone;
  int weight_bits = 16;       ///< 4 or 8 for integer methods, 8 for fp8, 16 when unquantized
  int group_size = 0;         ///< elements per scale group along the input dim; 0 = per channel / n.a.
  int fp8_block_n = 0;        ///< fp8 block-wise scales: block rows (0 = per-tensor)
  int fp8_block_k = 0;        ///< fp8 block-wise scales: block columns
  bool has_zero_points = false;  ///< GPTQ/AWQ store packed zero points
  bool has_g_idx = false;        ///< GPTQ stores an int32 act-order index per input column
  /// Module names or patterns that stay unquantized: compressed-tensors `ignore` ("re:" = regex
  /// matched from the start of the name), GPTQ/AWQ `modules_to_not_convert` (substring).
  std::vector<std::string> ignore;
  bool ignore_is_substring = false;  ///< AWQ/GPTQ semantics: entry matches when it is a substring
  std::string summary;               ///< e.g. "compressed-tensors W4A16 group 128"
};

/// The fields of config.json that decide KV-cache and weight sizes. Sizes are element counts.
struct ModelConfig {
  std::string source;        ///< where it came from (file path or "preset NAME"), for messages
  std::string architecture;  ///< e.g. "GlmMoeDsaForCausalLM"
  std::string model_type;    ///< e.g. "glm_moe_dsa"
  AttentionKind attention = AttentionKind::kGqa;
  bool dsa = false;  ///< DeepSeek Sparse Attention: `index_topk` present (vLLM deepseek_v2.py)

  int num_hidden_layers = 0;
  int hidden_size = 0;
  int num_attention_heads = 0;
  int num_key_value_heads = 0;  ///< GQA; for MLA equal to num_attention_heads (KV is one latent)
  int head_dim = 0;             ///< GQA head size

  // MLA (DeepSeek-V2 style) dimensions.
  int kv_lora_rank = 0;
  int qk_rope_head_dim = 0;
  int qk_nope_head_dim = 0;
  int v_head_dim = 0;
  int q_lora_rank = 0;  ///< 0 = no q LoRA (q_proj is a plain column-parallel projection)

  // MLP / MoE.
  int intermediate_size = 0;      ///< dense MLP width
  int moe_intermediate_size = 0;  ///< one routed expert's width
  int n_routed_experts = 0;       ///< 0 = dense model
  int n_shared_experts = 0;       ///< DeepSeek shared experts (each moe_intermediate_size wide)
  int shared_expert_intermediate_size = 0;  ///< Qwen2-MoE style single shared expert width
  int num_experts_per_tok = 0;
  int first_k_dense_replace = 0;  ///< DeepSeek: the first k layers are dense
  int moe_layer_freq = 1;         ///< DeepSeek: MoE on layers with i % freq == 0 (after the dense ones)
  int decoder_sparse_step = 1;    ///< Qwen-MoE: MoE on layers with (i + 1) % step == 0
  std::vector<int> mlp_only_layers;  ///< Qwen-MoE: dense layers

  int vocab_size = 0;
  bool tie_word_embeddings = false;
  int num_nextn_predict_layers = 0;  ///< MTP layers, ids num_hidden_layers + k
  bool attention_bias = false;       ///< Qwen2: q/k/v biases

  // DSA lightning indexer.
  int index_head_dim = 0;
  int index_n_heads = 0;
  int index_topk = 0;
  int index_topk_freq = 1;          ///< vLLM default 1 (every layer full)
  int index_skip_topk_offset = 2;   ///< vLLM default 2
  std::optional<std::string> index_topk_pattern;  ///< one 'F'/'S' per layer; overrides freq/offset

  std::int64_t max_position_embeddings = 0;
  std::string torch_dtype = "bfloat16";
  int dtype_bytes = 2;  ///< bytes of torch_dtype (bf16/fp16 2, fp32 4)

  QuantizationConfig quantization;

  /// True when layer `i` (0-based, backbone or MTP) has a routed-expert MLP.
  bool IsMoeLayer(int i) const;
  /// Number of MTP layers (num_nextn_predict_layers) - only DeepSeek-family MTP heads count.
  int MtpLayers() const { return num_nextn_predict_layers; }
};

/// Architecture names accepted by ParseModelConfig, in a stable order.
const std::vector<std::string>& SupportedArchitectures();

/// Parses a config.json document. `source` names the file for error messages.
/// Throws Error naming the file and field for: wrong types, missing required fields,
/// non-positive sizes, an unsupported architecture (listing the supported ones), an invalid
/// index_topk_pattern, or a quantization_config it cannot size.
ModelConfig ParseModelConfig(const nlohmann::json& config, const std::string& source);

/// Parses config.json text (malformed JSON -> Error naming `source`).
ModelConfig ParseModelConfigText(std::string_view text, const std::string& source);

}  // namespace ppdeploy
