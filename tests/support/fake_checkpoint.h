// Synthetic checkpoint directories for tests and benchmarks (header-only, so no CMake edit).
//
// Writes real safetensors headers with sparse data sections (ftruncate: no disk blocks are used
// for tensor data), optional config.json and model.safetensors.index.json. Tensor lists for
// DeepSeek-family MLA + MoE checkpoints (DeepSeek-V3, GLM-5 with the DSA indexer) follow the tensor
// names of the official Hugging Face checkpoints (vLLM deepseek_v2.py `load_weights` names).
//
// Usage:
//   ppdeploy::testing::TempDir dir;
//   auto spec = ppdeploy::testing::Glm5Spec();
//   auto tensors = ppdeploy::testing::FakeMlaMoeTensors(spec);
//   ppdeploy::testing::RemoveTensorsWithPrefix(tensors, "model.layers.41.self_attn.indexer.");
//   ppdeploy::testing::WriteFakeCheckpoint(dir.path(), tensors, {.num_shards = 4,
//                                          .config_json = ppdeploy::testing::FakeMlaMoeConfigJson(spec)});
#pragma once

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "model/safetensors.h"

namespace ppdeploy::testing {

/// One tensor to write: safetensors dtype name and shape.
struct FakeTensor {
  std::string name;
  std::string dtype;
  std::vector<std::int64_t> shape;
};

/// A fresh directory under $TMPDIR (or /tmp), removed with its contents on destruction.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/ppdeploy-test-XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (!::mkdtemp(buf.data())) throw std::runtime_error("mkdtemp failed: " + std::string(std::strerror(errno)));
    path_ = buf.data();
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(std::string_view name) const { return path_ + "/" + std::string(name); }

 private:
  std::string path_;
};

/// Bytes of a tensor: numel x dtype bits / 8 (throws on an unknown dtype).
inline std::int64_t FakeTensorBytes(const FakeTensor& t) {
  int bits = SafetensorsDtypeBits(t.dtype);
  if (bits == 0) throw std::runtime_error("FakeTensorBytes: unknown dtype " + t.dtype);
  std::int64_t n = 1;
  for (auto d : t.shape) n *= d;
  return n * bits / 8;
}

/// Header JSON for `tensors` laid out back to back in list order; sets `*data_bytes` to the data size.
inline std::string FakeSafetensorsHeaderJson(const std::vector<FakeTensor>& tensors,
                                             const std::map<std::string, std::string>& metadata,
                                             std::int64_t* data_bytes) {
  nlohmann::ordered_json h = nlohmann::ordered_json::object();
  if (!metadata.empty()) h["__metadata__"] = metadata;
  std::int64_t offset = 0;
  for (const auto& t : tensors) {
    std::int64_t b = FakeTensorBytes(t);
    h[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + b}}};
    offset += b;
  }
  if (data_bytes) *data_bytes = offset;
  return h.dump();
}

/// Writes raw bytes to `path`, then extends the file with a hole to `total_size` bytes when that
/// is larger (a sparse data section). For hostile files: any bytes, any size.
inline void WriteRawFile(const std::string& path, std::string_view bytes, std::int64_t total_size = -1) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error(path + ": open: " + std::strerror(errno));
  std::size_t done = 0;
  while (done < bytes.size()) {
    ssize_t w = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      ::close(fd);
      throw std::runtime_error(path + ": write: " + std::strerror(errno));
    }
    done += static_cast<std::size_t>(w);
  }
  if (total_size > static_cast<std::int64_t>(bytes.size()) && ::ftruncate(fd, static_cast<off_t>(total_size)) != 0) {
    ::close(fd);
    throw std::runtime_error(path + ": ftruncate: " + std::strerror(errno));
  }
  ::close(fd);
}

/// The 8-byte little-endian length prefix followed by `header_json`.
inline std::string SafetensorsPrefix(std::string_view header_json) {
  std::string out(8, '\0');
  std::uint64_t n = header_json.size();
  for (int i = 0; i < 8; ++i) out[static_cast<std::size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xff);
  out.append(header_json);
  return out;
}

/// Writes a safetensors file: length prefix, `header_json` (padded with spaces to a multiple of 8
/// bytes, as the reference writer does) and a sparse data section of `data_bytes`.
inline void WriteFakeSafetensorsFile(const std::string& path, std::string header_json, std::int64_t data_bytes) {
  header_json.append((8 - header_json.size() % 8) % 8, ' ');
  std::string prefix = SafetensorsPrefix(header_json);
  WriteRawFile(path, prefix, static_cast<std::int64_t>(prefix.size()) + data_bytes);
}

/// Writes one well-formed safetensors file holding `tensors`.
inline void WriteFakeSafetensors(const std::string& path, const std::vector<FakeTensor>& tensors,
                                 const std::map<std::string, std::string>& metadata = {{"format", "pt"}}) {
  std::int64_t data = 0;
  std::string header = FakeSafetensorsHeaderJson(tensors, metadata, &data);
  WriteFakeSafetensorsFile(path, header, data);
}

struct FakeCheckpointOptions {
  int num_shards = 1;            ///< tensors are split in list order into this many shards of near-equal count
  bool write_index = true;       ///< write model.safetensors.index.json
  std::string config_json = {};  ///< written as config.json when not empty
  std::map<std::string, std::string> metadata = {{"format", "pt"}};  ///< each shard's __metadata__
};

/// Shard file name as transformers writes it: model-00001-of-00163.safetensors.
inline std::string FakeShardName(int i, int n) { return fmt::format("model-{:05d}-of-{:05d}.safetensors", i + 1, n); }

/// Writes a checkpoint directory (which must exist). Returns the shard file names.
inline std::vector<std::string> WriteFakeCheckpoint(const std::string& dir, const std::vector<FakeTensor>& tensors,
                                                    const FakeCheckpointOptions& options = {}) {
  int n = std::max(1, options.num_shards);
  std::vector<std::string> names;
  nlohmann::json weight_map = nlohmann::json::object();
  std::int64_t total = 0;
  std::size_t per = (tensors.size() + static_cast<std::size_t>(n) - 1) / static_cast<std::size_t>(n);
  for (int s = 0; s < n; ++s) {
    std::size_t lo = std::min(tensors.size(), per * static_cast<std::size_t>(s));
    std::size_t hi = std::min(tensors.size(), lo + per);
    std::vector<FakeTensor> part(tensors.begin() + static_cast<std::ptrdiff_t>(lo),
                                 tensors.begin() + static_cast<std::ptrdiff_t>(hi));
    names.push_back(FakeShardName(s, n));
    WriteFakeSafetensors(dir + "/" + names.back(), part, options.metadata);
    for (const auto& t : part) {
      weight_map[t.name] = names.back();
      total += FakeTensorBytes(t);
    }
  }
  if (options.write_index) {
    nlohmann::json index = {{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}};
    WriteRawFile(dir + "/model.safetensors.index.json", index.dump(2));
  }
  if (!options.config_json.empty()) WriteRawFile(dir + "/config.json", options.config_json);
  return names;
}

/// Removes every tensor whose name starts with `prefix`; returns how many were removed.
inline std::size_t RemoveTensorsWithPrefix(std::vector<FakeTensor>& tensors, std::string_view prefix) {
  return std::erase_if(tensors, [&](const FakeTensor& t) { return std::string_view(t.name).starts_with(prefix); });
}

/// Dimensions of a DeepSeek-family (MLA attention, DeepSeekMoE) checkpoint. Defaults: DeepSeek-V3
/// (deepseek-ai/DeepSeek-V3 config.json; FP8 e4m3 weights with [128,128] block scales).
struct FakeMlaMoeSpec {
  std::string architecture = "DeepseekV3ForCausalLM";
  std::string model_type = "deepseek_v3";
  int num_hidden_layers = 61;
  int hidden_size = 7168;
  int num_attention_heads = 128;
  int q_lora_rank = 1536;
  int kv_lora_rank = 512;
  int qk_nope_head_dim = 128;
  int qk_rope_head_dim = 64;
  int v_head_dim = 128;
  int intermediate_size = 18432;
  int moe_intermediate_size = 2048;
  int n_routed_experts = 256;
  int n_shared_experts = 1;
  int num_experts_per_tok = 8;
  int first_k_dense_replace = 3;
  int vocab_size = 129280;
  int num_nextn_predict_layers = 1;
  bool fp8 = true;  ///< projection weights F8_E4M3 + F32 weight_scale_inv per 128x128 block; else BF16
  // DSA lightning indexer (DeepSeek-V3.2, GLM-5); 0 = none.
  int index_n_heads = 0;
  int index_head_dim = 0;
  int index_topk = 0;
};

/// DeepSeek-V3 (61 layers, 256 experts, FP8): about 93k tensors, 163 shards in the official release.
inline FakeMlaMoeSpec DeepseekV3Spec() { return FakeMlaMoeSpec{}; }

/// GLM-5 (zai-org/GLM-5-FP8 config.json): 78 layers, MLA + DSA indexer (32 heads x 128), 256 experts.
inline FakeMlaMoeSpec Glm5Spec() {
  FakeMlaMoeSpec s;
  s.architecture = "GlmMoeDsaForCausalLM";
  s.model_type = "glm_moe_dsa";
  s.num_hidden_layers = 78;
  s.hidden_size = 6144;
  s.num_attention_heads = 64;
  s.q_lora_rank = 2048;
  s.kv_lora_rank = 512;
  s.qk_nope_head_dim = 192;
  s.qk_rope_head_dim = 64;
  s.v_head_dim = 256;
  s.intermediate_size = 12288;
  s.vocab_size = 154880;
  s.index_n_heads = 32;
  s.index_head_dim = 128;
  s.index_topk = 2048;
  return s;
}

/// The tensors of a DeepSeek-family checkpoint, in layer order (MTP layers after the backbone).
inline std::vector<FakeTensor> FakeMlaMoeTensors(const FakeMlaMoeSpec& s) {
  std::vector<FakeTensor> out;
  const std::int64_t h = s.hidden_size;
  auto cdiv = [](std::int64_t a, std::int64_t b) { return (a + b - 1) / b; };
  auto norm = [&](const std::string& name, std::int64_t n) { out.push_back({name, "BF16", {n}}); };
  auto linear = [&](const std::string& prefix, std::int64_t rows, std::int64_t cols) {
    if (s.fp8) {
      out.push_back({prefix + ".weight", "F8_E4M3", {rows, cols}});
      out.push_back({prefix + ".weight_scale_inv", "F32", {cdiv(rows, 128), cdiv(cols, 128)}});
    } else {
      out.push_back({prefix + ".weight", "BF16", {rows, cols}});
    }
  };
  out.push_back({"model.embed_tokens.weight", "BF16", {s.vocab_size, h}});
  int layers = s.num_hidden_layers + s.num_nextn_predict_layers;
  for (int i = 0; i < layers; ++i) {
    std::string p = fmt::format("model.layers.{}.", i);
    norm(p + "input_layernorm.weight", h);
    norm(p + "post_attention_layernorm.weight", h);
    std::string a = p + "self_attn.";
    std::int64_t qk_head = s.qk_nope_head_dim + s.qk_rope_head_dim;
    if (s.q_lora_rank > 0) {
      linear(a + "q_a_proj", s.q_lora_rank, h);
      norm(a + "q_a_layernorm.weight", s.q_lora_rank);
      linear(a + "q_b_proj", std::int64_t{s.num_attention_heads} * qk_head, s.q_lora_rank);
    } else {
      linear(a + "q_proj", std::int64_t{s.num_attention_heads} * qk_head, h);
    }
    linear(a + "kv_a_proj_with_mqa", s.kv_lora_rank + s.qk_rope_head_dim, h);
    norm(a + "kv_a_layernorm.weight", s.kv_lora_rank);
    linear(a + "kv_b_proj", std::int64_t{s.num_attention_heads} * (s.qk_nope_head_dim + s.v_head_dim), s.kv_lora_rank);
    linear(a + "o_proj", h, std::int64_t{s.num_attention_heads} * s.v_head_dim);
    if (s.index_n_heads > 0) {
      std::string x = a + "indexer.";
      linear(x + "wq_b", std::int64_t{s.index_n_heads} * s.index_head_dim, s.q_lora_rank);
      linear(x + "wk", s.index_head_dim, h);
      norm(x + "k_norm.weight", s.index_head_dim);
      out.push_back({x + "k_norm.bias", "BF16", {s.index_head_dim}});
      out.push_back({x + "weights_proj.weight", "BF16", {s.index_n_heads, h}});
    }
    std::string m = p + "mlp.";
    if (i < s.first_k_dense_replace || s.n_routed_experts == 0) {
      linear(m + "gate_proj", s.intermediate_size, h);
      linear(m + "up_proj", s.intermediate_size, h);
      linear(m + "down_proj", h, s.intermediate_size);
    } else {
      out.push_back({m + "gate.weight", "BF16", {s.n_routed_experts, h}});
      out.push_back({m + "gate.e_score_correction_bias", "F32", {s.n_routed_experts}});
      for (int e = 0; e < s.n_routed_experts; ++e) {
        std::string x = fmt::format("{}experts.{}.", m, e);
        linear(x + "gate_proj", s.moe_intermediate_size, h);
        linear(x + "up_proj", s.moe_intermediate_size, h);
        linear(x + "down_proj", h, s.moe_intermediate_size);
      }
      if (s.n_shared_experts > 0) {
        std::int64_t w = std::int64_t{s.n_shared_experts} * s.moe_intermediate_size;
        linear(m + "shared_experts.gate_proj", w, h);
        linear(m + "shared_experts.up_proj", w, h);
        linear(m + "shared_experts.down_proj", h, w);
      }
    }
    if (i >= s.num_hidden_layers) {  // MTP block extras (DeepSeek-V3 layer 61)
      out.push_back({p + "embed_tokens.weight", "BF16", {s.vocab_size, h}});
      norm(p + "enorm.weight", h);
      norm(p + "hnorm.weight", h);
      out.push_back({p + "eh_proj.weight", "BF16", {h, 2 * h}});
      norm(p + "shared_head.norm.weight", h);
      out.push_back({p + "shared_head.head.weight", "BF16", {s.vocab_size, h}});
    }
  }
  norm("model.norm.weight", h);
  out.push_back({"lm_head.weight", "BF16", {s.vocab_size, h}});
  return out;
}

/// A config.json for `s` that ParseModelConfigText accepts.
inline std::string FakeMlaMoeConfigJson(const FakeMlaMoeSpec& s) {
  nlohmann::json c = {
      {"architectures", {s.architecture}},
      {"model_type", s.model_type},
      {"num_hidden_layers", s.num_hidden_layers},
      {"hidden_size", s.hidden_size},
      {"num_attention_heads", s.num_attention_heads},
      {"num_key_value_heads", s.num_attention_heads},
      {"q_lora_rank", s.q_lora_rank},
      {"kv_lora_rank", s.kv_lora_rank},
      {"qk_nope_head_dim", s.qk_nope_head_dim},
      {"qk_rope_head_dim", s.qk_rope_head_dim},
      {"v_head_dim", s.v_head_dim},
      {"intermediate_size", s.intermediate_size},
      {"moe_intermediate_size", s.moe_intermediate_size},
      {"n_routed_experts", s.n_routed_experts},
      {"n_shared_experts", s.n_shared_experts},
      {"num_experts_per_tok", s.num_experts_per_tok},
      {"first_k_dense_replace", s.first_k_dense_replace},
      {"moe_layer_freq", 1},
      {"vocab_size", s.vocab_size},
      {"num_nextn_predict_layers", s.num_nextn_predict_layers},
      {"max_position_embeddings", 163840},
      {"torch_dtype", "bfloat16"},
      {"tie_word_embeddings", false},
  };
  if (s.index_n_heads > 0) {
    c["index_n_heads"] = s.index_n_heads;
    c["index_head_dim"] = s.index_head_dim;
    c["index_topk"] = s.index_topk;
  }
  if (s.fp8)
    c["quantization_config"] = {
        {"quant_method", "fp8"}, {"fmt", "e4m3"}, {"activation_scheme", "dynamic"}, {"weight_block_size", {128, 128}}};
  return c.dump(2);
}

}  // namespace ppdeploy::testing
