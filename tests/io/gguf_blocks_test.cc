// Issue 24: a GGUF tensor of a block the model does not have (blk.5.* in a file of 2 blocks) is said
// by name, not counted in silence. llama.cpp writes blk.0 .. blk.{block_count - 1} (gguf-py
// constants.py MODEL_TENSOR names "blk.{bid}.*"); transformers reads block_count as num_hidden_layers.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "io/files.h"
#include "io/model_input.h"
#include "model/gguf.h"
#include "support/fake_checkpoint.h"
#include "support/gguf_writer.h"

namespace ppdeploy {
namespace {

using testing::GgufBuilder;
using ::testing::HasSubstr;
using testing::TempDir;

GgufHeader WithTensors(std::initializer_list<const char*> names) {
  GgufHeader h;
  for (const char* n : names) h.tensors.push_back(GgufTensorInfo{n, {4096}, 0, "F32", 0, 16'384});
  return h;
}

TEST(GgufBlocksTest, ABlockPastTheModelIsNamedOncePerBlock) {
  GgufHeader h = WithTensors({"blk.0.attn_q.weight", "blk.1.attn_q.weight", "blk.5.attn_q.weight",
                              "blk.5.attn_k.weight", "blk.7.ffn_up.weight", "output.weight", "blk.x.weird"});
  const auto w = GgufBlockWarnings(h, 2, "m.gguf");
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0],
            "m.gguf: tensor blk.5.attn_q.weight (and 1 more of block 5): block 5 is past the model's 2 blocks "
            "(num_hidden_layers + MTP layers); its bytes are counted in the weights");
  EXPECT_EQ(w[1],
            "m.gguf: tensor blk.7.ffn_up.weight: block 7 is past the model's 2 blocks (num_hidden_layers + MTP "
            "layers); its bytes are counted in the weights");
  EXPECT_TRUE(GgufBlockWarnings(h, 8, "m.gguf").empty());
}

TEST(GgufBlocksTest, ResolveModelCarriesTheWarning) {
  TempDir dir;
  GgufBuilder b;
  b.Str("general.architecture", "llama")
      .U32("llama.block_count", 2)
      .U32("llama.embedding_length", 4096)
      .U32("llama.attention.head_count", 32)
      .U32("llama.attention.head_count_kv", 8)
      .U32("llama.feed_forward_length", 14336)
      .U32("llama.vocab_size", 128256)
      .U32("llama.context_length", 8192);
  for (const char* n : {"blk.0.attn_norm.weight", "blk.1.attn_norm.weight", "blk.5.attn_norm.weight"})
    b.Tensor(n, {4096}, /*F32*/ 0, 16'384);
  b.WriteFile(dir / "m.gguf");
  ResolvedModel m = ResolveModel(dir / "m.gguf");
  ASSERT_EQ(m.config.num_hidden_layers, 2);
  ASSERT_FALSE(m.config.warnings.empty());
  EXPECT_THAT(m.config.warnings.back(), HasSubstr("tensor blk.5.attn_norm.weight: block 5 is past the model's 2"));
}

}  // namespace
}  // namespace ppdeploy
