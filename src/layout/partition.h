// Pipeline-parallel layer split: an exact mirror of vLLM's `get_pp_indices`
// (vllm/distributed/utils.py, identical from 2025-02-25 #13839 to main 2026-08; docs/vllm-rules.md §1.4).
#pragma once

#include <optional>
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
/// gets an extra layer). Examples (docs/vllm-rules.md §1.4): 61/4 -> 15,15,16,15; 78/8 ->
/// 9,10,10,10,10,10,10,9. Throws Error if pp_size < 1 or > num_hidden_layers.
std::vector<int> DefaultPartition(int num_hidden_layers, int pp_size);

/// What CPython's `int(text)` (base 10, str argument) gives for one field: the value as a canonical
/// decimal string ("-12", "0"), or why it raises ValueError. The rules (CPython 3.12,
/// Objects/longobject.c `PyLong_FromUnicodeObject` -> `_PyUnicode_TransformDecimalAndSpaceToASCII`
/// -> `PyLong_FromString`), checked against python3 in tests/layout/partition_test.cc:
///  - characters below U+007F are kept as they are; above, Unicode whitespace (str.isspace():
///    U+0085, U+00A0, U+1680, U+2000-U+200A, U+2028, U+2029, U+202F, U+205F, U+3000) becomes a
///    space and a decimal digit (category Nd, Unicode 15.0: Arabic-Indic, Devanagari, fullwidth,
///    mathematical ...) becomes its ASCII digit; anything else is refused (U+200B, U+FEFF, "²");
///  - then ASCII whitespace " \t\n\v\f\r" (not 0x1C-0x1F) around the number, one optional '+' or
///    '-', digits with single '_' between two digits, nothing else (no '.', no "0x");
///  - at most 4,300 digits (sys.int_info.default_max_str_digits; '_' not counted, leading zeros
///    counted): "Exceeds the limit (4300 digits) for integer string conversion";
///  - `text` that is not UTF-8 reaches Python as lone surrogates (os.environ's surrogateescape),
///    which int() refuses.
/// `why` escapes what it quotes (core/escape.h).
struct PythonIntResult {
  std::optional<std::string> value;
  std::string why;
};
PythonIntResult PythonInt(std::string_view text);

/// Parses a `VLLM_PP_LAYER_PARTITION` string exactly as vLLM's get_pp_indices does
/// (`[int(layer) for layer in partition_list_str.split(",")]`, then the length and sum checks) and
/// raises vLLM's messages, with the failing field added for the first one:
///   "Invalid partition string: 15,x,16 (field 2 of 3, \"x\": ...why...)"
///   "len(partitions)=3 does not match pp_size=4."
///   "sum(partitions)=60 does not match num_hidden_layers=61."
/// The text and the field are escaped (core/escape.h), so "41<U+200B>,37" shows an invisible
/// character; an empty string is refused like vLLM refuses VLLM_PP_LAYER_PARTITION="" (int('')).
/// Sums are exact (Python integers), so 10^30 and -10^30+78 pass vLLM's checks as in Python; such
/// entries then fail here as out of range, since no stage holds that many layers. vLLM itself does
/// not reject negative or zero entries; this function does not either (see
/// ValidatePartitionForPlanning). Throws Error.
std::vector<int> ParsePartition(std::string_view text, int pp_size, int num_hidden_layers);

/// ppdeploy's stricter check on top of vLLM's: every entry >= 0. Throws Error
/// "layer partition 41,-1,38: entry 2 is -1 (a stage cannot hold a negative number of layers)".
/// A 0-layer entry is allowed here: whether vLLM can start such a stage depends on the layers it
/// still holds (MTP on the last stage) and on the version, which the pool arithmetic decides
/// (memory/pool.h ComputePool).
void ValidatePartitionForPlanning(const std::vector<int>& partition);

/// The layer range of `pp_rank` under `partition` (start = sum of the earlier entries).
LayerRange RankRange(const std::vector<int>& partition, int pp_rank);

/// "41,37"
std::string FormatPartition(const std::vector<int>& partition);

}  // namespace ppdeploy
