// Issue 24: calibration integers are read in range of their type. Before, layer_partition
// [4294967335, 4294967335] read as 39,39 (2^32 + 39 cast to int) and tensor_parallel_size / pp_rank
// wrapped the same way; now each is refused naming the file, the field and the value.
#include <gtest/gtest.h>

#include "calibration/schema.h"
#include "core/error.h"
#include "core/json_fields.h"

namespace ppdeploy {
namespace {

std::string Doc(const std::string& tp, const std::string& partition, const std::string& pp_rank,
                const std::string& kv = "25.5") {
  return R"({"schema": "ppdeploy.calibration/1", "tensor_parallel_size": )" + tp +
         R"(, "pipeline_parallel_size": 2, "layer_partition": )" + partition +
         R"(, "gpu_memory_utilization": 0.9, "max_model_len": 524288, "total_gib": 79.25, "ranks": [{"pp_rank": )" +
         pp_rank + R"(, "available_kv_gib": )" + kv + R"(}, {"pp_rank": 1, "available_kv_gib": 27.1}]})";
}

std::string ErrorOf(const std::string& text) {
  try {
    ParseCalibration(ParseJsonText(text, "cal.json"), "cal.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(CalibrationSchemaRangeTest, TheSeedShapeReads) {
  Calibration c = ParseCalibration(ParseJsonText(Doc("4", "[39, 39]", "0"), "cal.json"), "cal.json");
  EXPECT_EQ(c.tensor_parallel_size, 4);
  EXPECT_EQ(c.layer_partition, (std::vector<int>{39, 39}));
  ASSERT_EQ(c.ranks.size(), 2u);
  EXPECT_EQ(c.ranks[0].available_kv_gib, 25.5);
}

TEST(CalibrationSchemaRangeTest, TwoToTheThirtyTwoPlusKIsRefused) {
  EXPECT_EQ(ErrorOf(Doc("4", "[4294967335, 4294967335]", "0")),
            "cal.json: layer_partition[0]: value 4294967335 is out of range (expected an integer from 0 to "
            "2147483647)");
  EXPECT_EQ(ErrorOf(Doc("4294967300", "[39, 39]", "0")),
            "cal.json: tensor_parallel_size: value 4294967300 is out of range (expected an integer from 1 to "
            "2147483647)");
  EXPECT_EQ(ErrorOf(Doc("4", "[39, 39]", "4294967296")),
            "cal.json: ranks[0].pp_rank: value 4294967296 is out of range (expected an integer from 0 to "
            "2147483647)");
  EXPECT_EQ(ErrorOf(Doc("4", "[39, -1]", "0")),
            "cal.json: layer_partition[1]: value -1 is out of range (expected an integer from 0 to 2147483647)");
}

TEST(CalibrationSchemaRangeTest, AnOverflowingNumberNamesLineColumnAndField) {
  EXPECT_EQ(ErrorOf(Doc("4", "[39, 39]", "0", "1e400")),
            "cal.json: malformed JSON: line 1, column 244 (field ranks[0].available_kv_gib): number overflow "
            "parsing '1e400'");
}

}  // namespace
}  // namespace ppdeploy
