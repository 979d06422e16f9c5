#include "layout/partition.h"

#include <cctype>
#include <limits>

#include "core/error.h"

namespace ppdeploy {
namespace {

bool IsPySpace(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

using Int128 = __int128;

std::string Int128ToString(Int128 v) {
  if (v == 0) return "0";
  bool neg = v < 0;
  std::string s;
  while (v != 0) {
    int digit = static_cast<int>(v % 10);
    s.insert(s.begin(), static_cast<char>('0' + (digit < 0 ? -digit : digit)));
    v /= 10;
  }
  return neg ? "-" + s : s;
}

// Python's int(str) in base 10 for ASCII input. Returns false when Python raises ValueError.
// Values of up to 36 digits are exact (Python has big integers); longer ones saturate, which
// still fails vLLM's sum check as Python would.
bool PythonInt(std::string_view s, Int128* out) {
  size_t b = 0, e = s.size();
  while (b < e && IsPySpace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && IsPySpace(static_cast<unsigned char>(s[e - 1]))) --e;
  if (b == e) return false;
  bool negative = false;
  if (s[b] == '+' || s[b] == '-') {
    negative = s[b] == '-';
    ++b;
  }
  if (b == e || !std::isdigit(static_cast<unsigned char>(s[b])) ||
      !std::isdigit(static_cast<unsigned char>(s[e - 1])))
    return false;
  const Int128 kCap = static_cast<Int128>(1) << 120;
  Int128 v = 0;
  for (size_t i = b; i < e; ++i) {
    char c = s[i];
    if (c == '_') {
      if (s[i + 1] == '_') return false;  // no double underscore; the last char is a digit
      continue;
    }
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    if (v < kCap) v = v * 10 + (c - '0');
    if (v > kCap) v = kCap;
  }
  *out = negative ? -v : v;
  return true;
}

}  // namespace

std::vector<int> DefaultPartition(int num_hidden_layers, int pp_size) {
  if (pp_size < 1) Fail("pipeline_parallel_size must be >= 1, got {}", pp_size);
  if (pp_size > num_hidden_layers)
    Fail("pipeline_parallel_size={} is larger than num_hidden_layers={}", pp_size, num_hidden_layers);
  std::vector<int> partitions(pp_size, num_hidden_layers / pp_size);
  int remaining = num_hidden_layers % pp_size;
  // vLLM: for i in range(2, remaining_layers + 2): partitions[-i] += 1
  for (int i = 2; i < remaining + 2; ++i) partitions[pp_size - i] += 1;
  return partitions;
}

std::vector<int> ParsePartition(std::string_view text, int pp_size, int num_hidden_layers) {
  std::vector<Int128> values;
  size_t pos = 0;
  while (true) {
    size_t comma = text.find(',', pos);
    std::string_view field = text.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    Int128 v = 0;
    if (!PythonInt(field, &v)) Fail("Invalid partition string: {}", text);
    values.push_back(v);
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  if (static_cast<long long>(values.size()) != pp_size)
    Fail("len(partitions)={} does not match pp_size={}.", values.size(), pp_size);
  Int128 sum = 0;
  const Int128 kSumCap = static_cast<Int128>(1) << 124;
  for (Int128 v : values) {  // |v| <= 2^120: saturate the sum so many huge entries cannot overflow
    sum += v;
    if (sum > kSumCap) sum = kSumCap;
    if (sum < -kSumCap) sum = -kSumCap;
  }
  if (sum != num_hidden_layers)
    Fail("sum(partitions)={} does not match num_hidden_layers={}.", Int128ToString(sum), num_hidden_layers);
  std::vector<int> out;
  for (Int128 v : values) {
    if (v > std::numeric_limits<int>::max() || v < std::numeric_limits<int>::min())
      Fail("layer partition {}: entry {} is out of range", text, Int128ToString(v));
    out.push_back(static_cast<int>(v));
  }
  return out;
}

void ValidatePartitionForPlanning(const std::vector<int>& partition) {
  for (size_t i = 0; i < partition.size(); ++i)
    if (partition[i] < 0)
      Fail("layer partition {}: entry {} is {} (a stage cannot hold a negative number of layers)",
           FormatPartition(partition), i + 1, partition[i]);
}

LayerRange RankRange(const std::vector<int>& partition, int pp_rank) {
  int start = 0;
  for (int r = 0; r < pp_rank; ++r) start += partition[r];
  return LayerRange{start, start + partition[pp_rank]};
}

std::string FormatPartition(const std::vector<int>& partition) {
  std::string s;
  for (size_t i = 0; i < partition.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(partition[i]);
  }
  return s;
}

}  // namespace ppdeploy
