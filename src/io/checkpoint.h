// Checkpoint directory adapter: reads the safetensors headers (never the tensor data) of a Hugging
// Face checkpoint directory, so weight sizes can be taken from the checkpoint itself.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/gguf.h"
#include "model/safetensors.h"

namespace ppdeploy {

/// Name of the shard index written by transformers' `save_pretrained` (and read by vLLM's
/// `filter_duplicate_safetensors_files`).
inline constexpr const char* kSafetensorsIndexFile = "model.safetensors.index.json";

/// All tensors of a checkpoint directory, as declared by its shard headers.
struct CheckpointHeaders {
  /// Every tensor of every shard, names unique across shards; ordered by shard (as in `files`), then
  /// by offset. `TensorInfo::file` is the shard's path.
  std::vector<TensorInfo> tensors;
  std::vector<std::string> files;       ///< shard paths read, sorted by name
  std::int64_t total_tensor_bytes = 0;  ///< sum of TensorInfo::bytes
  std::string config_path;              ///< "<dir>/config.json" when that file exists, else ""
  std::string index_path;               ///< "<dir>/model.safetensors.index.json" when used, else ""
};

/// Reads only the header of one safetensors file (open, read 8 bytes, read N bytes).
/// Throws Error "<path>: ..." when the file cannot be opened or read, or its header is invalid
/// (see ParseSafetensorsHeader / SafetensorsHeaderLength).
SafetensorsHeader ReadSafetensorsFileHeader(const std::string& path);

/// Reads the headers of a checkpoint directory.
/// With `model.safetensors.index.json`: its `weight_map` (tensor name -> shard file name) selects the
/// shards, as in vLLM (`filter_duplicate_safetensors_files`: *.safetensors files not named in the
/// index are ignored); every shard it names must exist and hold each tensor mapped to it. Tensors a
/// shard holds but the index does not name are kept (vLLM loads every tensor of a selected shard).
/// Without an index: every `*.safetensors` file in the directory.
/// Throws Error naming the file for: `dir` not a directory; no shards; a malformed index (not an
/// object, `weight_map` missing or not an object of strings, a shard name that is not a plain file
/// name); a missing shard; a tensor of the index absent from its shard; a tensor in two shards; any
/// invalid shard header.
CheckpointHeaders ReadCheckpointDirectory(const std::string& dir);

/// The largest GGUF header (metadata + tensor infos) read: 1 GiB, ggml's GGUF_MAX_STRING_LENGTH.
inline constexpr std::int64_t kGgufMaxHeaderBytes = std::int64_t{1} << 30;

/// Reads only the header of a GGUF file (never its tensor data): the first MiB, then more while the
/// header continues (doubling, up to kGgufMaxHeaderBytes). Throws Error "<path>: ..." when the file
/// cannot be opened or read, is not a regular file, or its header is invalid (see ParseGgufFile).
GgufHeader ReadGgufFileHeader(const std::string& path);

/// The one `*.gguf` file of a directory, "" when there is none. Throws Error naming the directory
/// when there are several (a split GGUF, *-00001-of-0000N.gguf, is not read: vLLM loads one file).
std::string FindGgufFile(const std::string& dir);

}  // namespace ppdeploy
