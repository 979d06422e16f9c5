// Constructed GGUF files for tests (header-only, so no CMake edit). Writes the layout of
// ggml/docs/gguf.md (little-endian, version 3 by default): magic, version, counts, metadata,
// tensor infos, padding to the alignment, data section. Tensor data is zeros (or, on disk, a
// sparse hole: ftruncate, so a 1 GB model header costs no disk blocks).
//
// Usage:
//   ppdeploy::testing::GgufBuilder b;
//   b.Str("general.architecture", "llama").U32("llama.block_count", 2);
//   b.Tensor("blk.0.attn_q.weight", {4096, 4096}, /*Q4_K*/ 12, 9437184);
//   std::string bytes = b.Bytes();           // header + data section, in memory
//   b.WriteFile(dir / "m.gguf");             // header, then a sparse data section
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace ppdeploy::testing {

class GgufBuilder {
 public:
  explicit GgufBuilder(std::uint32_t version = 3, std::uint64_t alignment = 32)
      : version_(version), alignment_(alignment) {}

  // Raw little-endian encoders, for hand-made values.
  static void PutU32(std::string& s, std::uint32_t v) { s.append(reinterpret_cast<const char*>(&v), 4); }
  static void PutU64(std::string& s, std::uint64_t v) { s.append(reinterpret_cast<const char*>(&v), 8); }
  static void PutStr(std::string& s, std::string_view v) {
    PutU64(s, v.size());
    s.append(v);
  }

  /// A metadata entry whose type and value bytes are given as they are.
  GgufBuilder& Raw(std::string_view key, std::uint32_t type, std::string_view value_bytes) {
    PutStr(kv_, key);
    PutU32(kv_, type);
    kv_.append(value_bytes);
    ++kv_count_;
    return *this;
  }
  GgufBuilder& U32(std::string_view key, std::uint32_t v) {
    std::string b;
    PutU32(b, v);
    return Raw(key, 4, b);
  }
  GgufBuilder& U64(std::string_view key, std::uint64_t v) {
    std::string b;
    PutU64(b, v);
    return Raw(key, 10, b);
  }
  GgufBuilder& F32(std::string_view key, float v) {
    return Raw(key, 6, std::string_view(reinterpret_cast<const char*>(&v), 4));
  }
  GgufBuilder& Str(std::string_view key, std::string_view v) {
    std::string b;
    PutStr(b, v);
    return Raw(key, 8, b);
  }
  /// An array of strings.
  GgufBuilder& StrArray(std::string_view key, const std::vector<std::string>& v) {
    std::string b;
    PutU32(b, 8);
    PutU64(b, v.size());
    for (const auto& x : v) PutStr(b, x);
    return Raw(key, 9, b);
  }

  /// A tensor info; `offset` < 0 places it at the next aligned offset after the previous one, of
  /// `bytes` bytes (the caller states the expected size; the parser computes it from the type).
  GgufBuilder& Tensor(std::string_view name, const std::vector<std::uint64_t>& dims, std::uint32_t ggml_type,
                      std::int64_t bytes, std::int64_t offset = -1) {
    std::uint64_t off = offset >= 0 ? static_cast<std::uint64_t>(offset) : next_offset_;
    PutStr(ti_, name);
    PutU32(ti_, static_cast<std::uint32_t>(dims.size()));
    for (auto d : dims) PutU64(ti_, d);
    PutU32(ti_, ggml_type);
    PutU64(ti_, off);
    ++tensor_count_;
    std::uint64_t end = off + static_cast<std::uint64_t>(bytes);
    next_offset_ = (end + alignment_ - 1) / alignment_ * alignment_;
    if (end > data_bytes_) data_bytes_ = end;
    return *this;
  }

  /// Magic through the padding before the data section.
  std::string Header() const {
    std::string s = "GGUF";
    PutU32(s, version_);
    PutU64(s, tensor_count_);
    PutU64(s, kv_count_);
    s += kv_;
    s += ti_;
    if (tensor_count_ > 0) s.resize((s.size() + alignment_ - 1) / alignment_ * alignment_, '\0');
    return s;
  }
  /// Bytes of the data section: up to the end of the last tensor.
  std::uint64_t DataBytes() const { return data_bytes_; }
  /// The whole file in memory (small files only).
  std::string Bytes() const { return Header() + std::string(data_bytes_, '\0'); }

  /// Writes the header and a sparse data section to `path`.
  void WriteFile(const std::string& path) const {
    std::string h = Header();
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) throw std::runtime_error("cannot create " + path);
    bool ok = ::write(fd, h.data(), h.size()) == static_cast<ssize_t>(h.size()) &&
              ::ftruncate(fd, static_cast<off_t>(h.size() + data_bytes_)) == 0;
    ::close(fd);
    if (!ok) throw std::runtime_error("cannot write " + path);
  }

 private:
  std::uint32_t version_;
  std::uint64_t alignment_;
  std::string kv_, ti_;
  std::uint64_t kv_count_ = 0, tensor_count_ = 0;
  std::uint64_t next_offset_ = 0, data_bytes_ = 0;
};

}  // namespace ppdeploy::testing
