// get_pp_indices mirror: vllm/distributed/utils.py (docs/vllm-rules.md §1.4).
#include "layout/partition.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace ppdeploy {
namespace {
using testing::ErrorOf;
using V = std::vector<int>;

TEST(PartitionTest, DefaultSplitMatchesVllmExamples) {
  // docs/vllm-rules.md §1.4 table.
  EXPECT_EQ(DefaultPartition(61, 2), (V{31, 30}));
  EXPECT_EQ(DefaultPartition(61, 3), (V{20, 21, 20}));
  EXPECT_EQ(DefaultPartition(61, 4), (V{15, 15, 16, 15}));
  EXPECT_EQ(DefaultPartition(61, 8), (V{7, 7, 8, 8, 8, 8, 8, 7}));
  EXPECT_EQ(DefaultPartition(78, 4), (V{19, 20, 20, 19}));
  EXPECT_EQ(DefaultPartition(78, 8), (V{9, 10, 10, 10, 10, 10, 10, 9}));
  EXPECT_EQ(DefaultPartition(78, 2), (V{39, 39}));
  EXPECT_EQ(DefaultPartition(27, 2), (V{14, 13}));  // DeepSeek-V2-Lite PP2 (DEV-MLA-01)
}

TEST(PartitionTest, LastRankNeverGetsTheRemainder) {
  for (int layers = 1; layers <= 128; ++layers)
    for (int pp = 1; pp <= std::min(layers, 16); ++pp) {
      V p = DefaultPartition(layers, pp);
      int sum = 0;
      for (int v : p) sum += v;
      EXPECT_EQ(sum, layers);
      EXPECT_EQ(p.back(), layers / pp) << layers << "/" << pp;
    }
}

TEST(PartitionTest, VllmErrorTextsWithTheFailingField) {
  // vllm/distributed/utils.py get_pp_indices: "Invalid partition string: {}", then the length and
  // sum checks with f"{len(partitions)=}" / f"{sum(partitions)=}"; ppdeploy adds the first field
  // int() refuses (1-based index, its text escaped, why).
  EXPECT_EQ(ErrorOf([] { ParsePartition("15,x,16", 3, 61); }),
            "Invalid partition string: 15,x,16 (field 2 of 3, \"x\": character 1, \"x\", is not a decimal digit)");
  EXPECT_EQ(ErrorOf([] { ParsePartition("20,20,21", 4, 61); }), "len(partitions)=3 does not match pp_size=4.");
  EXPECT_EQ(ErrorOf([] { ParsePartition("15,15,15,15", 4, 61); }),
            "sum(partitions)=60 does not match num_hidden_layers=61.");
  EXPECT_EQ(ErrorOf([] { ParsePartition("41,,37", 3, 78); }),
            "Invalid partition string: 41,,37 (field 2 of 3, \"\": the field is empty)");
  // VLLM_PP_LAYER_PARTITION="" is not None in vLLM, so int('') raises: an empty --partition is refused.
  EXPECT_EQ(ErrorOf([] { ParsePartition("", 1, 78); }),
            "Invalid partition string:  (field 1 of 1, \"\": the field is empty)");
  EXPECT_EQ(ErrorOf([] { ParsePartition("41, ", 2, 78); }),
            "Invalid partition string: 41,  (field 2 of 2, \" \": the field holds only whitespace)");
}

TEST(PartitionTest, InvisibleCharactersAreShownAndRefusedAsCPythonDoes) {
  // "41\u200b,37": U+200B ZERO WIDTH SPACE is not whitespace for str.strip()/int() (python3:
  // int('41\u200b') -> ValueError: invalid literal for int() with base 10: '41\u200b'), so vLLM
  // refuses the split; the message must not read as "41,37".
  EXPECT_EQ(ErrorOf([] { ParsePartition("41\u200b,37", 2, 78); }),
            "Invalid partition string: 41<U+200B>,37 (field 1 of 2, \"41<U+200B>\": character 3, \"<U+200B>\", is "
            "neither a decimal digit nor whitespace)");
  // U+FEFF (a BOM pasted from a file) likewise: int('\ufeff41') -> ValueError.
  EXPECT_EQ(ErrorOf([] { ParsePartition("\ufeff41,37", 2, 78); }),
            "Invalid partition string: <U+FEFF>41,37 (field 1 of 2, \"<U+FEFF>41\": character 1, \"<U+FEFF>\", is "
            "neither a decimal digit nor whitespace)");
  // A control byte and a byte that is not UTF-8 are spelled \xNN (int('\x1c5') -> ValueError:
  // PyLong_FromString skips only " \t\n\v\f\r"; an undecodable byte becomes a lone surrogate).
  EXPECT_EQ(ErrorOf([] {
              ParsePartition(
                  "\x1c"
                  "41,37",
                  2, 78);
            }),
            "Invalid partition string: \\x1c41,37 (field 1 of 2, \"\\x1c41\": character 1, \"\\x1c\", is not a "
            "decimal digit)");
  EXPECT_EQ(ErrorOf([] { ParsePartition("41,3\xff", 2, 78); }),
            "Invalid partition string: 41,3\\xff (field 2 of 2, \"3\\xff\": byte 2, \"\\xff\", is not UTF-8 (vLLM's "
            "Python reads it as a lone surrogate, which int() refuses))");
  // A newline stays on the message's one line.
  EXPECT_EQ(ErrorOf([] { ParsePartition("41\n\n37", 1, 78); }).find('\n'), std::string::npos);
}

TEST(PartitionTest, PythonIntSemantics) {
  // int() accepts surrogate whitespace, a sign and '_' between digits (python3 results).
  EXPECT_EQ(ParsePartition(" 41 ,+37", 2, 78), (V{41, 37}));
  EXPECT_EQ(ParsePartition("4_1,37", 2, 78), (V{41, 37}));
  EXPECT_EQ(ParsePartition("041,037", 2, 78), (V{41, 37}));
  EXPECT_EQ(ParsePartition("\v41\f,\t37\r\n", 2, 78), (V{41, 37}));
  EXPECT_EQ(ErrorOf([] { ParsePartition("4__1,37", 2, 78); }),
            "Invalid partition string: 4__1,37 (field 1 of 2, \"4__1\": '_' at character 3 is not between two digits)");
  EXPECT_EQ(ErrorOf([] { ParsePartition("_41,37", 2, 78); }),
            "Invalid partition string: _41,37 (field 1 of 2, \"_41\": '_' at character 1 is not between two digits)");
  EXPECT_EQ(ErrorOf([] { ParsePartition("41_,37", 2, 78); }),
            "Invalid partition string: 41_,37 (field 1 of 2, \"41_\": '_' at character 3 is not between two digits)");
  EXPECT_EQ(ErrorOf([] { ParsePartition("41.0,37", 2, 78); }),
            "Invalid partition string: 41.0,37 (field 1 of 2, \"41.0\": character 3, \".\", is not a decimal digit)");
  EXPECT_EQ(ErrorOf([] { ParsePartition("4 1,37", 2, 78); }),
            "Invalid partition string: 4 1,37 (field 1 of 2, \"4 1\": whitespace inside the number at character 2)");
  EXPECT_EQ(ErrorOf([] { ParsePartition("+ 41,37", 2, 78); }),
            "Invalid partition string: + 41,37 (field 1 of 2, \"+ 41\": character 2, \" \", is not a decimal digit)");
  EXPECT_EQ(ErrorOf([] { ParsePartition("-,37", 2, 78); }),
            "Invalid partition string: -,37 (field 1 of 2, \"-\": no digits after the sign)");
  // vLLM does not reject negative entries; ppdeploy's planning check does.
  V neg = ParsePartition("80,-2", 2, 78);
  EXPECT_EQ(neg, (V{80, -2}));
  EXPECT_EQ(ErrorOf([&] { ValidatePartitionForPlanning(neg); }),
            "layer partition 80,-2: entry 2 is -2 (a stage cannot hold a negative number of layers)");
  EXPECT_EQ(ParsePartition("-0,78", 2, 78), (V{0, 78}));  // int('-0') == 0
}

TEST(PartitionTest, UnicodeDigitsAndSpacesAreAcceptedAsCPythonDoes) {
  // CPython's int() maps every Unicode decimal digit (Nd) to 0-9 and Unicode whitespace to a space
  // before parsing (_PyUnicode_TransformDecimalAndSpaceToASCII). python3 results:
  EXPECT_EQ(ParsePartition("\u0664\u0661,\u0663\u0667", 2, 78), (V{41, 37}));       // Arabic-Indic: int('٤١') == 41
  EXPECT_EQ(ParsePartition("\uff14\uff11,\uff13\uff17", 2, 78), (V{41, 37}));       // fullwidth: int('４１') == 41
  EXPECT_EQ(ParsePartition("\u0966\u096a\u0967,37", 2, 78), (V{41, 37}));           // Devanagari ०४१
  EXPECT_EQ(ParsePartition("\U0001D7D2\U0001D7CF,37", 2, 78), (V{41, 37}));         // mathematical bold 𝟒𝟏
  EXPECT_EQ(ParsePartition("4\u0661,37", 2, 78), (V{41, 37}));                      // mixed scripts: int('4١') == 41
  EXPECT_EQ(ParsePartition("\u0664_\u0661,37", 2, 78), (V{41, 37}));                // int('٤_١') == 41
  EXPECT_EQ(ParsePartition("\u3000 41\u2003,\u00a037\u00a0", 2, 78), (V{41, 37}));  // ideographic, em, no-break
  EXPECT_EQ(ParsePartition("\u008541,\u202837\u2029", 2, 78), (V{41, 37}));         // NEL, line/paragraph separators
  // Unicode 15.0 (CPython 3.12, vLLM's images) added Kawi digits U+11F50-U+11F59.
  EXPECT_EQ(ParsePartition("\U00011F54\U00011F51,37", 2, 78), (V{41, 37}));
  // Not decimal digits (categories No, Nl): int('²'), int('①') and int('፩') raise ValueError.
  EXPECT_EQ(
      ErrorOf([] { ParsePartition("\u00b2,76", 2, 78); }),
      "Invalid partition string: \u00b2,76 (field 1 of 2, \"\u00b2\": character 1, \"\u00b2\" (U+00B2), is neither "
      "a decimal digit nor whitespace)");
  EXPECT_NE(ErrorOf([] { ParsePartition("\u2460,77", 2, 78); }).find("U+2460"), std::string::npos);
  EXPECT_NE(ErrorOf([] { ParsePartition("\u1369,77", 2, 78); }).find("U+1369"), std::string::npos);
  // Whitespace inside the number after the transform: int('4\xa01') raises.
  EXPECT_NE(ErrorOf([] { ParsePartition("4\u00a01,37", 2, 78); }).find("whitespace inside the number at character 2"),
            std::string::npos);
  // U+180E MONGOLIAN VOWEL SEPARATOR stopped being whitespace in Unicode 6.3: int('\u180e1') raises.
  EXPECT_NE(ErrorOf([] {
              ParsePartition(
                  "\u180e"
                  "1,77",
                  2, 78);
            }).find("\"<U+180E>\", is neither"),
            std::string::npos);
}

TEST(PartitionTest, CPythonDigitLimit) {
  // sys.int_info.default_max_str_digits = 4300: int('0' * 4300) == 0, int('0' * 4301) raises
  // "Exceeds the limit (4300 digits) for integer string conversion: value has 4301 digits; ...";
  // '_' does not count, leading zeros do (python3).
  EXPECT_EQ(PythonInt(std::string(4300, '0')).value, "0");
  EXPECT_EQ(ParsePartition(std::string(4298, '0') + "41,37", 2, 78), (V{41, 37}));
  std::string over = std::string(4299, '0') + "41";
  std::string msg = ErrorOf([&] { ParsePartition(over + ",37", 2, 78); });
  EXPECT_NE(msg.find("(field 1 of 2, \""), std::string::npos) << msg;
  EXPECT_NE(msg.find("it has 4301 digits, more than CPython's limit (ValueError: Exceeds the limit (4300 digits) for "
                     "integer string conversion: value has 4301 digits)"),
            std::string::npos)
      << msg;
  EXPECT_LT(msg.size(), 800u) << "the 4,301-digit field is cut in the message";
  std::string underscored = "1";
  for (int i = 0; i < 4300; ++i) underscored += "_0";  // 4301 digits
  EXPECT_NE(ErrorOf([&] { ParsePartition(underscored, 1, 78); }).find("it has 4301 digits"), std::string::npos);
}

TEST(PartitionTest, SumsAreExactPythonIntegers) {
  EXPECT_EQ(ErrorOf([] { ParsePartition("99999999999999999999999,1", 2, 78); }),
            "sum(partitions)=100000000000000000000000 does not match num_hidden_layers=78.");
  // 10^30 + (78 - 10^30) == 78: vLLM's checks pass (Python ints), so the message is ppdeploy's own.
  EXPECT_EQ(ErrorOf([] { ParsePartition("1000000000000000000000000000000,-999999999999999999999999999922", 2, 78); }),
            "layer partition 1000000000000000000000000000000,-999999999999999999999999999922: entry 1 is "
            "1000000000000000000000000000000: vLLM's length and sum checks pass, but no stage can hold that many "
            "layers");
  EXPECT_EQ(ErrorOf([] { ParsePartition("-1000000000000000000,1000000000000000078", 2, 78); }),
            "layer partition -1000000000000000000,1000000000000000078: entry 1 is -1000000000000000000: vLLM's length "
            "and sum checks pass, but no stage can hold that many layers");
  // Two 4,300-digit fields: each passes int(), but their sum has 4,301 digits, and vLLM's own
  // f"{sum(partitions)=}" raises while formatting it.
  std::string nines(4300, '9');
  EXPECT_EQ(ErrorOf([&] { ParsePartition(nines + "," + nines, 2, 78); }),
            "sum(partitions) has 4301 digits: vLLM's message fails with ValueError: Exceeds the limit (4300 digits) "
            "for integer string conversion; use sys.set_int_max_str_digits() to increase the limit");
  // A zero-layer entry passes vLLM's checks (get_pp_indices gives an empty range).
  EXPECT_EQ(ParsePartition("78,0", 2, 78), (V{78, 0}));
  EXPECT_NO_THROW(ValidatePartitionForPlanning(V{78, 0}));
  EXPECT_EQ(RankRange(V{78, 0}, 1).size(), 0);
}

TEST(PartitionTest, PythonIntDirectly) {
  EXPECT_EQ(PythonInt("  -0041 ").value, "-41");
  EXPECT_EQ(PythonInt("0_0").value, "0");
  EXPECT_EQ(PythonInt("1_000").value, "1000");
  EXPECT_FALSE(PythonInt("0x10").value);
  EXPECT_EQ(PythonInt("0x10").why, "character 2, \"x\", is not a decimal digit");
  EXPECT_FALSE(PythonInt("41\x7f").value);  // DEL (U+007F) is neither a digit nor whitespace
}

TEST(PartitionTest, RankRanges) {
  V p{41, 37};
  EXPECT_EQ(RankRange(p, 0).start, 0);
  EXPECT_EQ(RankRange(p, 0).end, 41);
  EXPECT_EQ(RankRange(p, 1).start, 41);
  EXPECT_EQ(RankRange(p, 1).end, 78);
}

}  // namespace
}  // namespace ppdeploy
