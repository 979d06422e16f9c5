#include "layout/partition.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <limits>

#include "core/error.h"
#include "core/escape.h"

namespace ppdeploy {
namespace {

// The code point of digit zero of every run of ten decimal digits (category Nd) above U+007F in
// Unicode 15.0, the Unicode version of CPython 3.12 (vLLM's images): generated with
// `unicodedata.decimal(c, -1) == 0` (python3.11, Unicode 14.0) plus the two runs Unicode 15.0
// added (Kawi U+11F50, Nag Mundari U+1E4F0). Every Nd run is ten consecutive code points 0-9.
constexpr char32_t kDecimalZeros[] = {
    0x660,   0x6F0,   0x7C0,   0x966,   0x9E6,   0xA66,   0xAE6,   0xB66,   0xBE6,   0xC66,   0xCE6,   0xD66,
    0xDE6,   0xE50,   0xED0,   0xF20,   0x1040,  0x1090,  0x17E0,  0x1810,  0x1946,  0x19D0,  0x1A80,  0x1A90,
    0x1B50,  0x1BB0,  0x1C40,  0x1C50,  0xA620,  0xA8D0,  0xA900,  0xA9D0,  0xA9F0,  0xAA50,  0xABF0,  0xFF10,
    0x104A0, 0x10D30, 0x11066, 0x110F0, 0x11136, 0x111D0, 0x112F0, 0x11450, 0x114D0, 0x11650, 0x116C0, 0x11730,
    0x118E0, 0x11950, 0x11C50, 0x11D50, 0x11DA0, 0x11F50, 0x16A60, 0x16AC0, 0x16B50, 0x1D7CE, 0x1D7D8, 0x1D7E2,
    0x1D7EC, 0x1D7F6, 0x1E140, 0x1E2F0, 0x1E4F0, 0x1E950, 0x1FBF0,
};

// CPython's `int_max_str_digits` default (sys.int_info.default_max_str_digits).
constexpr std::size_t kMaxStrDigits = 4300;

// Py_UNICODE_TODECIMAL for code points above U+007F: 0-9, or -1.
int UnicodeDecimal(char32_t cp) {
  auto it = std::upper_bound(std::begin(kDecimalZeros), std::end(kDecimalZeros), cp);
  if (it == std::begin(kDecimalZeros)) return -1;
  char32_t zero = *std::prev(it);
  return cp - zero < 10 ? static_cast<int>(cp - zero) : -1;
}

// Py_UNICODE_ISSPACE for code points above U+007F (str.isspace(): bidi class WS, B or S, or Zs).
bool UnicodeSpace(char32_t cp) {
  return cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 ||
         cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

// Py_ISSPACE: the ASCII whitespace PyLong_FromString skips (0x1C-0x1F are not in it).
bool AsciiSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; }
bool AsciiDigit(char c) { return c >= '0' && c <= '9'; }

// `character 2, "x"` / `character 3, "<U+200B>"` / `character 1, "²" (U+00B2)` for reasons: the character
// quoted by the one convention (core/escape.h), a visible non-ASCII one also by its code point.
std::string CharacterAt(std::size_t index, std::string_view original, char32_t cp) {
  if (cp < 0x80 || IsInvisibleCodePoint(cp))
    return fmt::format("character {}, {}", index + 1, QuoteForMessage(original, 0));
  return fmt::format("character {}, {} (U+{:04X})", index + 1, QuoteForMessage(original, 0),
                     static_cast<std::uint32_t>(cp));
}

// A signed integer of any size (Python int), enough to add the fields and compare and print the sum.
class BigInt {
 public:
  explicit BigInt(std::string_view decimal = "0") {
    if (!decimal.empty() && decimal[0] == '-') {
      negative_ = true;
      decimal.remove_prefix(1);
    }
    for (std::size_t end = decimal.size(); end > 0;) {
      std::size_t begin = end >= 9 ? end - 9 : 0;
      std::uint32_t limb = 0;
      for (std::size_t i = begin; i < end; ++i) limb = limb * 10 + static_cast<std::uint32_t>(decimal[i] - '0');
      limbs_.push_back(limb);
      end = begin;
    }
    Trim();
  }

  void Add(const BigInt& other) {
    if (negative_ == other.negative_) {
      AddMagnitude(other.limbs_);
    } else if (CompareMagnitude(limbs_, other.limbs_) >= 0) {
      SubtractMagnitude(other.limbs_);
    } else {
      std::vector<std::uint32_t> mine = std::move(limbs_);
      limbs_ = other.limbs_;
      negative_ = other.negative_;
      SubtractMagnitude(mine);
    }
    Trim();
  }

  bool operator==(const BigInt& o) const { return negative_ == o.negative_ && limbs_ == o.limbs_; }

  std::optional<int> ToInt() const {
    if (limbs_.size() > 2) return std::nullopt;
    std::int64_t v = 0;
    for (auto it = limbs_.rbegin(); it != limbs_.rend(); ++it) v = v * kBase + *it;
    if (negative_) v = -v;
    if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max()) return std::nullopt;
    return static_cast<int>(v);
  }

  std::string ToString() const {
    std::string s = negative_ ? "-" : "";
    s += std::to_string(limbs_.back());
    for (auto it = std::next(limbs_.rbegin()); it != limbs_.rend(); ++it) s += fmt::format("{:09}", *it);
    return s;
  }

 private:
  static constexpr std::uint32_t kBase = 1'000'000'000;

  static int CompareMagnitude(const std::vector<std::uint32_t>& a, const std::vector<std::uint32_t>& b) {
    if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
    for (std::size_t i = a.size(); i-- > 0;)
      if (a[i] != b[i]) return a[i] < b[i] ? -1 : 1;
    return 0;
  }
  void AddMagnitude(const std::vector<std::uint32_t>& b) {
    if (limbs_.size() < b.size()) limbs_.resize(b.size(), 0);
    std::uint32_t carry = 0;
    for (std::size_t i = 0; i < limbs_.size(); ++i) {
      std::uint64_t v = std::uint64_t{limbs_[i]} + carry + (i < b.size() ? b[i] : 0);
      limbs_[i] = static_cast<std::uint32_t>(v % kBase);
      carry = static_cast<std::uint32_t>(v / kBase);
    }
    if (carry) limbs_.push_back(carry);
  }
  void SubtractMagnitude(const std::vector<std::uint32_t>& b) {  // |this| >= |b|
    std::int64_t borrow = 0;
    for (std::size_t i = 0; i < limbs_.size(); ++i) {
      std::int64_t v = std::int64_t{limbs_[i]} - borrow - (i < b.size() ? std::int64_t{b[i]} : 0);
      borrow = v < 0 ? 1 : 0;
      limbs_[i] = static_cast<std::uint32_t>(v < 0 ? v + kBase : v);
    }
  }
  void Trim() {
    while (limbs_.size() > 1 && limbs_.back() == 0) limbs_.pop_back();
    if (limbs_.empty()) limbs_.push_back(0);
    if (limbs_.size() == 1 && limbs_[0] == 0) negative_ = false;
  }

  bool negative_ = false;
  std::vector<std::uint32_t> limbs_;  // little-endian, base 10^9
};

// A long decimal for messages: whole up to 200 digits, else its ends and its length.
std::string ShortDecimal(const std::string& s) {
  if (s.size() <= kMessageTextLimit) return s;
  return fmt::format("{}...{} ({} digits)", s.substr(0, 20), s.substr(s.size() - 20), s.size() - (s[0] == '-'));
}

}  // namespace

PythonIntResult PythonInt(std::string_view text) {
  // 1. _PyUnicode_TransformDecimalAndSpaceToASCII, one ASCII character per code point.
  std::string ascii;
  ascii.reserve(text.size());
  for (std::size_t pos = 0; pos < text.size();) {
    auto cp = DecodeUtf8At(text, pos);
    if (!cp)
      return {std::nullopt, fmt::format("byte {}, \"{}\", is not UTF-8 (vLLM's Python reads it as a lone surrogate, "
                                        "which int() refuses)",
                                        pos + 1, EscapeForMessage(text.substr(pos, 1), 0))};
    const char32_t c = cp->code_point;
    if (c < 0x7F) {
      ascii.push_back(static_cast<char>(c));
    } else if (UnicodeSpace(c)) {
      ascii.push_back(' ');
    } else if (int d = UnicodeDecimal(c); d >= 0) {
      ascii.push_back(static_cast<char>('0' + d));
    } else {
      return {std::nullopt, fmt::format("{}, is neither a decimal digit nor whitespace",
                                        CharacterAt(ascii.size(), text.substr(pos, cp->length), c))};
    }
    pos += cp->length;
  }
  // What PyLong_FromString refuses below is an ASCII character of `text` (the transform only
  // produced spaces and digits from the others).
  auto at = [&](std::size_t i) {
    return CharacterAt(i, std::string_view(&ascii[i], 1), static_cast<unsigned char>(ascii[i]));
  };

  // 2. PyLong_FromString(..., base 10) on the ASCII form.
  const std::size_t n = ascii.size();
  std::size_t i = 0;
  while (i < n && AsciiSpace(ascii[i])) ++i;
  if (i == n) return {std::nullopt, text.empty() ? "the field is empty" : "the field holds only whitespace"};
  bool negative = false;
  if (ascii[i] == '+' || ascii[i] == '-') {
    negative = ascii[i] == '-';
    ++i;
  }
  if (i == n) return {std::nullopt, "no digits after the sign"};
  if (ascii[i] == '_') return {std::nullopt, fmt::format("'_' at character {} is not between two digits", i + 1)};
  if (!AsciiDigit(ascii[i])) return {std::nullopt, fmt::format("{}, is not a decimal digit", at(i))};
  std::string digits;
  char prev = 0;
  for (; i < n && (AsciiDigit(ascii[i]) || ascii[i] == '_'); ++i) {
    if (ascii[i] == '_') {
      if (prev == '_') return {std::nullopt, fmt::format("'_' at character {} is not between two digits", i + 1)};
    } else {
      digits.push_back(ascii[i]);
    }
    prev = ascii[i];
  }
  if (prev == '_') return {std::nullopt, fmt::format("'_' at character {} is not between two digits", i)};
  if (digits.size() > kMaxStrDigits)
    return {std::nullopt, fmt::format("it has {} digits, more than CPython's limit (ValueError: Exceeds the limit "
                                      "({} digits) for integer string conversion: value has {} digits)",
                                      digits.size(), kMaxStrDigits, digits.size())};
  const std::size_t end_of_number = i;
  while (i < n && AsciiSpace(ascii[i])) ++i;
  if (i < n) {
    if (i > end_of_number)
      return {std::nullopt, fmt::format("whitespace inside the number at character {}", end_of_number + 1)};
    return {std::nullopt, fmt::format("{}, is not a decimal digit", at(i))};
  }
  std::size_t first = digits.find_first_not_of('0');
  if (first == std::string::npos) return {"0", ""};
  return {fmt::format("{}{}", negative ? "-" : "", std::string_view(digits).substr(first)), ""};
}

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
  // vLLM: partitions = [int(layer) for layer in partition_list_str.split(",")]
  std::vector<std::string_view> fields;
  for (std::size_t pos = 0;;) {
    std::size_t comma = text.find(',', pos);
    fields.push_back(text.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos));
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  std::vector<BigInt> values;
  values.reserve(fields.size());
  for (std::size_t k = 0; k < fields.size(); ++k) {
    PythonIntResult r = PythonInt(fields[k]);
    if (!r.value)
      Fail("Invalid partition string: {} (field {} of {}, \"{}\": {})", EscapeForMessage(text), k + 1, fields.size(),
           EscapeForMessage(fields[k]), r.why);
    values.emplace_back(*r.value);
  }
  if (static_cast<long long>(values.size()) != pp_size)
    Fail("len(partitions)={} does not match pp_size={}.", values.size(), pp_size);
  BigInt sum;
  for (const BigInt& v : values) sum.Add(v);
  if (!(sum == BigInt(std::to_string(num_hidden_layers)))) {
    std::string s = sum.ToString();
    if (s.size() - (s[0] == '-') > kMaxStrDigits)  // str(sum) itself raises in vLLM's f-string
      Fail(
          "sum(partitions) has {} digits: vLLM's message fails with ValueError: Exceeds the limit ({} digits) for "
          "integer string conversion; use sys.set_int_max_str_digits() to increase the limit",
          s.size() - (s[0] == '-'), kMaxStrDigits);
    Fail("sum(partitions)={} does not match num_hidden_layers={}.", ShortDecimal(s), num_hidden_layers);
  }
  std::vector<int> out;
  out.reserve(values.size());
  for (std::size_t k = 0; k < values.size(); ++k) {
    auto v = values[k].ToInt();
    if (!v)
      Fail(
          "layer partition {}: entry {} is {}: vLLM's length and sum checks pass, but no stage can hold that many "
          "layers",
          EscapeForMessage(text), k + 1, ShortDecimal(values[k].ToString()));
    out.push_back(*v);
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
