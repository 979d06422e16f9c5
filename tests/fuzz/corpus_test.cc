// The fuzz seed corpora stay meaningful: the config seeds parse, the safetensors seeds named bad_*
// are refused and the others accepted. Seeds named regress_* reproduce crashes the fuzzers found;
// grown-* are inputs kept from long fuzzing runs (scripts/fuzz.sh), accepted or refused, never a crash.
#include <gtest/gtest.h>

#include <filesystem>

#include "core/error.h"
#include "io/files.h"
#include "model/config.h"
#include "model/gguf.h"
#include "model/safetensors.h"

namespace ppdeploy {
namespace {

namespace fs = std::filesystem;

TEST(FuzzCorpusTest, ModelConfigSeedsParse) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(fs::path(PPDEPLOY_SOURCE_DIR) / "fuzz/corpus/model_config")) {
    std::string path = e.path().string();
    if (e.path().extension() != ".json") continue;  // regress_* seeds are crash reproducers
    EXPECT_NO_THROW(ParseModelConfigText(ReadFileText(path), path)) << path;
    ++n;
  }
  EXPECT_GE(n, 3);
}

TEST(FuzzCorpusTest, SafetensorsSeeds) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(fs::path(PPDEPLOY_SOURCE_DIR) / "fuzz/corpus/safetensors")) {
    std::string path = e.path().string();
    std::string bytes = ReadFileText(path);
    const std::string name = e.path().filename().string();
    const bool bad = name.starts_with("bad_"), grown = name.starts_with("grown-");
    try {
      ParseSafetensorsFile(bytes, static_cast<std::int64_t>(bytes.size()), path);
      EXPECT_TRUE(!bad || grown) << path << " was accepted";
    } catch (const Error& err) {
      EXPECT_TRUE(bad || grown) << err.what();
    }
    ++n;
  }
  EXPECT_GE(n, 5);
}

// GGUF seeds (constructed by hand, tests/model/gguf_test.cc explains the layout): bad_* are refused
// (truncated, bad magic, version 1, huge counts, overlap, misalignment, unknown type, ...), the others
// accepted.
TEST(FuzzCorpusTest, GgufSeeds) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(fs::path(PPDEPLOY_SOURCE_DIR) / "fuzz/corpus/gguf")) {
    std::string path = e.path().string();
    std::string bytes = ReadFileText(path);
    const std::string name = e.path().filename().string();
    const bool bad = name.starts_with("bad_"), grown = name.starts_with("grown-");
    try {
      ParseGgufFile(bytes, static_cast<std::int64_t>(bytes.size()), path);
      EXPECT_TRUE(!bad || grown) << path << " was accepted";
    } catch (const Error& err) {
      EXPECT_TRUE(bad || grown) << err.what();
    }
    ++n;
  }
  EXPECT_GE(n, 10);
}

}  // namespace
}  // namespace ppdeploy
