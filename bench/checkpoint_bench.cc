// Times ReadCheckpointDirectory on a synthetic DeepSeek-V3 checkpoint: 163 shards (as the official
// deepseek-ai/DeepSeek-V3 release), ~93k tensors (61 layers + 1 MTP layer, 256 experts, FP8 weights
// with block scales), sparse data sections (no disk blocks for tensor data). Target: < 1 s.
//
// Run: build/checkpoint_bench [--benchmark_repetitions=5]
#include <benchmark/benchmark.h>

#include <memory>

#include "../tests/support/fake_checkpoint.h"
#include "io/checkpoint.h"

namespace {

using ppdeploy::testing::TempDir;

struct Fixture {
  TempDir dir;
  std::size_t tensors = 0;
  std::int64_t header_bytes = 0;
};

const Fixture& DeepseekV3Directory() {
  static const std::unique_ptr<Fixture> f = [] {
    auto out = std::make_unique<Fixture>();
    auto spec = ppdeploy::testing::DeepseekV3Spec();
    auto tensors = ppdeploy::testing::FakeMlaMoeTensors(spec);
    out->tensors = tensors.size();
    auto names = ppdeploy::testing::WriteFakeCheckpoint(
        out->dir.path(), tensors, {.num_shards = 163, .config_json = ppdeploy::testing::FakeMlaMoeConfigJson(spec)});
    for (const auto& n : names) out->header_bytes += ppdeploy::ReadSafetensorsFileHeader(out->dir / n).header_bytes;
    return out;
  }();
  return *f;
}

void BM_ReadCheckpointDirectory_DeepseekV3_163Shards(benchmark::State& state) {
  const Fixture& f = DeepseekV3Directory();
  std::size_t n = 0;
  for (auto _ : state) {
    auto ck = ppdeploy::ReadCheckpointDirectory(f.dir.path());
    n = ck.tensors.size();
    benchmark::DoNotOptimize(ck);
  }
  if (n != f.tensors) state.SkipWithError("tensor count mismatch");
  state.counters["tensors"] = static_cast<double>(n);
  state.counters["header_MB"] = static_cast<double>(f.header_bytes) / 1e6;
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * f.header_bytes);
}
BENCHMARK(BM_ReadCheckpointDirectory_DeepseekV3_163Shards)->Unit(benchmark::kMillisecond)->MinTime(2.0);

// One shard header (~570 tensors, as one DeepSeek-V3 shard), parse only (no I/O).
void BM_ParseSafetensorsHeader_OneShard(benchmark::State& state) {
  auto spec = ppdeploy::testing::DeepseekV3Spec();
  auto tensors = ppdeploy::testing::FakeMlaMoeTensors(spec);
  tensors.resize(tensors.size() / 163);
  std::int64_t data = 0;
  std::string header = ppdeploy::testing::FakeSafetensorsHeaderJson(tensors, {{"format", "pt"}}, &data);
  for (auto _ : state) {
    auto h = ppdeploy::ParseSafetensorsHeader(header, data, "shard.safetensors");
    benchmark::DoNotOptimize(h);
  }
  state.counters["tensors"] = static_cast<double>(tensors.size());
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * header.size()));
}
BENCHMARK(BM_ParseSafetensorsHeader_OneShard)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
