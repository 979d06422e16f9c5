// Prompt datasets for `ppdeploy bench --dataset sharegpt|jsonl` (read from files; errors name the file, the
// line or byte, the field and the bad value).
//
// ShareGPT (vLLM vllm/benchmarks/datasets ShareGPTDataset): one JSON array of {"conversations": [{"from",
// "value"}, ...]}; an entry with >= 2 turns gives the prompt turns[0].value and a reference answer
// turns[1].value, whose token count is the request's max_tokens unless --output-len is given. The file is
// parsed as a stream (SAX) and a seeded reservoir sample of `limit` entries is kept, so a 600 MB file costs
// `limit` entries of memory. vLLM's pruning applies after tokenisation: prompt >= 4 and answer >= 4 tokens,
// prompt <= 1024, prompt + answer <= 2048 (is_valid_sequence's defaults).
//
// JSONL (vLLM's custom dataset, extended): one object per line, {"prompt": "..."} or {"messages": [...]}
// (chat), optional "output_tokens": N. Validated line by line when opened, then read again lazily in file
// order (cycling when the run needs more), so memory does not grow with the file.
#pragma once

#include <cstdint>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ppdeploy::client {

struct DatasetEntry {
  std::string prompt;               ///< the prompt text (when `messages` is null)
  nlohmann::json messages;          ///< chat messages (JSONL "messages"), else null
  std::string reference_answer;     ///< ShareGPT: turns[1].value ("" otherwise)
  std::int64_t output_tokens = -1;  ///< from the file (JSONL) or the answer's token count (ShareGPT)
  std::int64_t input_tokens = -1;   ///< the server's count when measured
};

/// Reads a ShareGPT JSON file: a seeded uniform sample (reservoir) of at most `limit` entries with >= 2
/// turns, in a seeded random order. `total_entries` receives how many usable entries the file holds.
/// Throws Error "<path>: ..." for unreadable or malformed files.
std::vector<DatasetEntry> ReadShareGpt(const std::string& path, std::size_t limit, std::uint64_t seed,
                                       std::int64_t* total_entries = nullptr);

/// vLLM's is_valid_sequence with its defaults (min 4, prompt <= 1024, prompt + output <= 2048).
bool IsValidShareGptSequence(std::int64_t prompt_tokens, std::int64_t output_tokens);

/// A JSONL prompt file read lazily.
class JsonlDataset {
 public:
  /// Opens and validates every line (throws Error "<path>:<line>: <field>: ..."). `chat` says whether
  /// "messages" entries are allowed (they need --endpoint chat).
  JsonlDataset(std::string path, bool chat);
  /// The next entry in file order, wrapping around at the end.
  DatasetEntry Next();
  std::int64_t size() const { return entries_; }
  const std::string& path() const { return path_; }

  /// Parses one line (exposed for tests). `line_number` is 1-based.
  static DatasetEntry ParseLine(const std::string& line, const std::string& path, std::int64_t line_number, bool chat);

 private:
  bool ReadEntry(DatasetEntry& out);
  std::string path_;
  bool chat_;
  std::ifstream in_;
  std::int64_t entries_ = 0;
  std::int64_t line_ = 0;
};

}  // namespace ppdeploy::client
