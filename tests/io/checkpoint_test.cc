#include "io/checkpoint.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <functional>

#include "core/error.h"
#include "model/config.h"
#include "support/fake_checkpoint.h"

namespace ppdeploy {
namespace {

using testing::FakeTensor;
using testing::TempDir;

std::string ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// A small DeepSeek-V3-shaped checkpoint: real V3 widths, 2 backbone layers (1 dense, 1 MoE) + 1 MTP
// layer, 4 routed experts.
testing::FakeMlaMoeSpec SmallDeepseek() {
  auto s = testing::DeepseekV3Spec();
  s.num_hidden_layers = 2;
  s.first_k_dense_replace = 1;
  s.n_routed_experts = 4;
  s.num_experts_per_tok = 2;
  return s;
}

TEST(CheckpointTest, IndexedDeepseekCheckpoint) {
  TempDir dir;
  auto spec = SmallDeepseek();
  auto tensors = testing::FakeMlaMoeTensors(spec);
  std::int64_t expected_bytes = 0;
  for (const auto& t : tensors) expected_bytes += testing::FakeTensorBytes(t);
  testing::WriteFakeCheckpoint(dir.path(), tensors,
                               {.num_shards = 3, .config_json = testing::FakeMlaMoeConfigJson(spec)});

  CheckpointHeaders ck = ReadCheckpointDirectory(dir.path());
  EXPECT_EQ(ck.tensors.size(), tensors.size());
  ASSERT_EQ(ck.files.size(), 3u);
  EXPECT_EQ(ck.files[0], dir / "model-00001-of-00003.safetensors");
  EXPECT_EQ(ck.total_tensor_bytes, expected_bytes);
  EXPECT_EQ(ck.config_path, dir / "config.json");
  EXPECT_EQ(ck.index_path, dir / "model.safetensors.index.json");
  // The config the helper writes is one the planner accepts.
  EXPECT_EQ(ParseModelConfigText(testing::FakeMlaMoeConfigJson(spec), "config.json").n_routed_experts, 4);

  // DeepSeek-V3 embed_tokens: BF16 [129280, 7168] = 1,853,358,080 bytes, in the first shard.
  const TensorInfo& embed = ck.tensors.front();
  EXPECT_EQ(embed.name, "model.embed_tokens.weight");
  EXPECT_EQ(embed.bytes, 1'853'358'080);
  EXPECT_EQ(embed.file, dir / "model-00001-of-00003.safetensors");
  // Routed expert down_proj: F8_E4M3 [7168, 2048] = 14,680,064 bytes.
  auto it = std::find_if(ck.tensors.begin(), ck.tensors.end(),
                         [](const TensorInfo& t) { return t.name == "model.layers.1.mlp.experts.3.down_proj.weight"; });
  ASSERT_NE(it, ck.tensors.end());
  EXPECT_EQ(it->dtype, "F8_E4M3");
  EXPECT_EQ(it->bytes, 14'680'064);
}

// GLM-5 (GlmMoeDsaForCausalLM) with the DSA indexer tensors of layer 41 removed: the reader does not
// judge which tensors a model needs; it reports what is there (7 fewer tensors with FP8 scales:
// wq_b + scale, wk + scale, k_norm.weight, k_norm.bias, weights_proj.weight).
TEST(CheckpointTest, GlmCheckpointWithOneLayersIndexerRemoved) {
  TempDir dir;
  auto spec = testing::Glm5Spec();
  spec.num_hidden_layers = 43;
  spec.n_routed_experts = 2;
  auto tensors = testing::FakeMlaMoeTensors(spec);
  std::size_t full = tensors.size();
  EXPECT_EQ(testing::RemoveTensorsWithPrefix(tensors, "model.layers.41.self_attn.indexer."), 7u);
  testing::WriteFakeCheckpoint(dir.path(), tensors,
                               {.num_shards = 5, .config_json = testing::FakeMlaMoeConfigJson(spec)});
  CheckpointHeaders ck = ReadCheckpointDirectory(dir.path());
  EXPECT_EQ(ck.tensors.size(), full - 7);
  int indexer_layers = 0;
  for (const auto& t : ck.tensors)
    if (t.name.ends_with(".self_attn.indexer.wk.weight")) ++indexer_layers;
  EXPECT_EQ(indexer_layers, 43);  // 44 layers (43 + 1 MTP) minus layer 41
  EXPECT_TRUE(ParseModelConfigText(testing::FakeMlaMoeConfigJson(spec), "config.json").dsa);
}

TEST(CheckpointTest, WithoutIndexReadsEverySafetensorsFile) {
  TempDir dir;
  testing::WriteFakeCheckpoint(dir.path(), {{"a", "BF16", {4, 4}}, {"b", "F32", {3}}, {"c", "U8", {5}}},
                               {.num_shards = 2, .write_index = false});
  testing::WriteRawFile(dir / "notes.txt", "not a shard");
  CheckpointHeaders ck = ReadCheckpointDirectory(dir.path());
  ASSERT_EQ(ck.tensors.size(), 3u);
  EXPECT_EQ(ck.files.size(), 2u);
  EXPECT_EQ(ck.total_tensor_bytes, 32 + 12 + 5);
  EXPECT_EQ(ck.config_path, "");
  EXPECT_EQ(ck.index_path, "");
}

TEST(CheckpointTest, IndexSelectsShardsLikeVllm) {
  // vLLM filter_duplicate_safetensors_files: *.safetensors files the index does not name are skipped
  // (e.g. a consolidated copy next to the shards).
  TempDir dir;
  testing::WriteFakeCheckpoint(dir.path(), {{"a", "BF16", {4}}, {"b", "BF16", {4}}}, {.num_shards = 2});
  testing::WriteFakeSafetensors(dir / "consolidated.safetensors", {{"a", "BF16", {4}}, {"b", "BF16", {4}}});
  CheckpointHeaders ck = ReadCheckpointDirectory(dir.path());
  EXPECT_EQ(ck.tensors.size(), 2u);
  EXPECT_EQ(ck.files.size(), 2u);
}

// Two shards: "a.weight" in model-00001-of-00002, "b.weight" in model-00002-of-00002.
void WriteTwoShards(const TempDir& dir) {
  testing::WriteFakeCheckpoint(dir.path(), {{"a.weight", "BF16", {8}}, {"b.weight", "BF16", {8}}}, {.num_shards = 2});
}

TEST(CheckpointTest, MissingShard) {
  TempDir dir;
  WriteTwoShards(dir);
  std::filesystem::remove(dir / "model-00002-of-00002.safetensors");
  EXPECT_EQ(ErrorOf([&] { ReadCheckpointDirectory(dir.path()); }),
            dir / "model.safetensors.index.json" +
                ": shard \"model-00002-of-00002.safetensors\" (for tensor \"b.weight\") does not exist: " +
                (dir / "model-00002-of-00002.safetensors"));
}

TEST(CheckpointTest, TensorInIndexButNotInShard) {
  TempDir dir;
  WriteTwoShards(dir);
  testing::WriteRawFile(dir / "model.safetensors.index.json",
                        R"({"weight_map": {"a.weight": "model-00001-of-00002.safetensors",
                                           "b.weight": "model-00002-of-00002.safetensors",
                                           "c.weight": "model-00002-of-00002.safetensors"}})");
  EXPECT_EQ(ErrorOf([&] { ReadCheckpointDirectory(dir.path()); }),
            dir / "model.safetensors.index.json" + ": tensor \"c.weight\" is mapped to " +
                (dir / "model-00002-of-00002.safetensors") + ", but that shard has no such tensor");
}

TEST(CheckpointTest, TensorInIndexMappedToWrongShard) {
  TempDir dir;
  WriteTwoShards(dir);
  testing::WriteRawFile(dir / "model.safetensors.index.json",
                        R"({"weight_map": {"a.weight": "model-00002-of-00002.safetensors",
                                           "b.weight": "model-00002-of-00002.safetensors"}})");
  // Only shard 2 is selected, so "a.weight" is found nowhere.
  EXPECT_EQ(ErrorOf([&] { ReadCheckpointDirectory(dir.path()); }),
            dir / "model.safetensors.index.json" + ": tensor \"a.weight\" is mapped to " +
                (dir / "model-00002-of-00002.safetensors") + ", but that shard has no such tensor");
  testing::WriteRawFile(dir / "model.safetensors.index.json",
                        R"({"weight_map": {"a.weight": "model-00002-of-00002.safetensors",
                                           "b.weight": "model-00001-of-00002.safetensors"}})");
  EXPECT_EQ(ErrorOf([&] { ReadCheckpointDirectory(dir.path()); }),
            dir / "model.safetensors.index.json" + ": tensor \"a.weight\" is mapped to " +
                (dir / "model-00002-of-00002.safetensors") + ", but it is in " +
                (dir / "model-00001-of-00002.safetensors"));
}

TEST(CheckpointTest, TensorInTwoShards) {
  TempDir dir;
  testing::WriteFakeSafetensors(dir / "x-1.safetensors", {{"w", "BF16", {2}}});
  testing::WriteFakeSafetensors(dir / "x-2.safetensors", {{"v", "BF16", {2}}, {"w", "BF16", {2}}});
  EXPECT_EQ(ErrorOf([&] { ReadCheckpointDirectory(dir.path()); }),
            dir / "x-2.safetensors" + ": tensor \"w\" is also in " + (dir / "x-1.safetensors"));
}

TEST(CheckpointTest, BadIndex) {
  TempDir dir;
  WriteTwoShards(dir);
  std::string index = dir / "model.safetensors.index.json";
  testing::WriteRawFile(index, R"({"metadata": {}})");
  EXPECT_EQ(ErrorOf([&] { ReadCheckpointDirectory(dir.path()); }), index + ": weight_map: required field is missing");
  testing::WriteRawFile(index, R"({"weight_map": []})");
  EXPECT_EQ(ErrorOf([&] { ReadCheckpointDirectory(dir.path()); }), index + ": weight_map: expected an object, got []");
  testing::WriteRawFile(index, R"({"weight_map": {"a.weight": 3}})");
  EXPECT_EQ(ErrorOf([&] { ReadCheckpointDirectory(dir.path()); }),
            index + ": weight_map.\"a.weight\": expected a shard file name, got 3");
  testing::WriteRawFile(index, R"({"weight_map": {"a.weight": "../etc/passwd"}})");
  EXPECT_EQ(ErrorOf([&] { ReadCheckpointDirectory(dir.path()); }),
            index +
                ": weight_map.\"a.weight\": shard \"../etc/passwd\" is not a plain file name in the checkpoint "
                "directory");
  testing::WriteRawFile(index, R"({"weight_map": )");
  EXPECT_EQ(ErrorOf([&] { ReadCheckpointDirectory(dir.path()); }).rfind(index + ": malformed JSON: ", 0), 0u);
}

TEST(CheckpointTest, HostileShardNamesTheFile) {
  TempDir dir;
  std::string bad = dir / "model.safetensors";
  testing::WriteRawFile(bad, std::string("\xff\xff\xff\x00\x00\x00\x00\x00{}", 10));
  EXPECT_EQ(ErrorOf([&] { ReadCheckpointDirectory(dir.path()); }),
            bad + ": header length 16777215 runs past the end of the file (10 bytes)");
  testing::WriteRawFile(bad, "abc");
  EXPECT_EQ(ErrorOf([&] { ReadCheckpointDirectory(dir.path()); }),
            bad + ": file is 3 bytes, too short for a safetensors file (8-byte header length first)");
  testing::WriteFakeSafetensorsFile(bad, R"({"w":{"dtype":"BF16","shape":[4],"data_offsets":[0,8]}})", 4);
  EXPECT_EQ(
      ErrorOf([&] { ReadCheckpointDirectory(dir.path()); }),
      bad + ": tensor \"w\" ends at byte 8, past the end of the data section (4 bytes) (MetadataIncompleteBuffer)");
}

TEST(CheckpointTest, NotADirectoryOrNoShards) {
  TempDir dir;
  EXPECT_EQ(ErrorOf([&] { ReadCheckpointDirectory(dir / "nope"); }), dir / "nope" + ": not a directory");
  EXPECT_EQ(ErrorOf([&] { ReadCheckpointDirectory(dir.path()); }),
            dir.path() + ": no *.safetensors files and no model.safetensors.index.json");
}

TEST(CheckpointTest, ReadsOnlyTheHeader) {
  // A 1 TiB sparse data section: reading it would take minutes; only the header is read.
  TempDir dir;
  std::string header = R"({"__metadata__":{"format":"pt"},"w":{"dtype":"U8","shape":[1099511627776],)"
                       R"("data_offsets":[0,1099511627776]}})";
  testing::WriteFakeSafetensorsFile(dir / "big.safetensors", header, std::int64_t{1} << 40);
  SafetensorsHeader h = ReadSafetensorsFileHeader(dir / "big.safetensors");
  ASSERT_EQ(h.tensors.size(), 1u);
  EXPECT_EQ(h.tensors[0].bytes, std::int64_t{1} << 40);
  EXPECT_EQ(h.metadata.at("format"), "pt");
}

TEST(CheckpointTest, HuggingFaceCacheSymlinks) {
  // huggingface_hub cache layout: snapshots/<rev>/<file> are symlinks to ../../blobs/<sha256>.
  TempDir root;
  std::filesystem::create_directories(root / "blobs");
  std::filesystem::create_directories(root / "snapshots/abc");
  TempDir staging;
  auto names =
      testing::WriteFakeCheckpoint(staging.path(), {{"a", "BF16", {4}}, {"b", "BF16", {4}}}, {.num_shards = 2});
  names.push_back("model.safetensors.index.json");
  for (std::size_t i = 0; i < names.size(); ++i) {
    std::string blob = root / ("blobs/" + std::to_string(i));
    std::filesystem::copy_file(staging / names[i], blob);
    std::filesystem::create_symlink("../../blobs/" + std::to_string(i), root / ("snapshots/abc/" + names[i]));
  }
  CheckpointHeaders ck = ReadCheckpointDirectory(root / "snapshots/abc");
  EXPECT_EQ(ck.tensors.size(), 2u);
  EXPECT_EQ(ck.total_tensor_bytes, 16);
}

TEST(CheckpointTest, FifoIsRefusedWithoutBlocking) {
  TempDir dir;
  std::string fifo = dir / "x.safetensors";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(ErrorOf([&] { ReadSafetensorsFileHeader(fifo); }), fifo + ": not a regular file");
}

}  // namespace
}  // namespace ppdeploy
