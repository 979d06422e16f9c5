// Pipeline-parallel layer split: an exact mirror of vLLM's `get_pp_indices`
// (vllm/distributed/utils.py, identical from 2025-02-25 #13839 to main 2026-08; vllm-rules.md §1.4).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ppdeploy {

/// Half-open range of absolute layer ids [start, end) held by one PP rank.
struct LayerRange {
  int start = 0;
  int end = 0;
  int size() const { return end - start; }
  bool contains(int layer) const { return layer >= start && layer < end; }
};

/// vLLM's default split of `num_hidden_layers` over `pp_size` ranks: `L // P` each, and the
/// remainder `L % P` one layer each to partitions[-2], partitions[-3], ... (the last rank never
/// gets an extra layer). Examples (vllm-rules.md §1.4): 61/4 -> 15,15,16,15; 78/8 ->
/// 9,10,10,10,10,10,10,9. Throws Error if pp_size < 1 or > num_hidden_layers.
std::vector<int> DefaultPartition(int num_hidden_layers, int pp_size);

/// Parses a `VLLM_PP_LAYER_PARTITION` string exactly as vLLM does and raises vLLM's messages:
///   "Invalid partition string: 15,x,16"         (an entry Python's int() rejects, incl. empty)
///   "len(partitions)=3 does not match pp_size=4."
///   "sum(partitions)=60 does not match num_hidden_layers=61."
/// Python int() semantics: surrounding whitespace, a leading '+' or '-', '_' between digits.
/// vLLM itself does not reject negative entries; this function does not either (see
/// ValidatePartitionForPlanning). Throws Error.
std::vector<int> ParsePartition(std::string_view text, int pp_size, int num_hidden_layers);

/// ppdeploy's stricter check on top of vLLM's: every entry >= 0. Throws Error
/// "layer partition 41,-1,38: entry 2 is -1 (a stage cannot hold a negative number of layers)".
void ValidatePartitionForPlanning(const std::vector<int>& partition);

/// The layer range of `pp_rank` under `partition` (start = sum of the earlier entries).
LayerRange RankRange(const std::vector<int>& partition, int pp_rank);

/// "41,37"
std::string FormatPartition(const std::vector<int>& partition);

}  // namespace ppdeploy
