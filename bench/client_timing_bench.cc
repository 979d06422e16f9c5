// Timing precision of the client (issue 15: moved out of the tests, which no longer assert wall-clock
// figures tighter than 10x). Against the in-process `ppdeploy sim` with TTFT 100 ms and ITL 10 ms (std 0),
// each benchmark runs one level after a warm-up that opens the keep-alive connections, and reports how far
// the measured medians and 99th percentiles are from the configured truth, in ms:
//   ttft_err_p50 = median TTFT - 100, ttft_err_p99 = p99 TTFT - 100, itl_err_p50 = median per-token ITL - 10,
//   itl_err_p99, tpot_err_p50 = median TPOT - 10.
// Args: concurrency, tokens per SSE chunk (4: bundled chunks, split per token by continuous usage).
// Run: build-rel/client_timing_bench --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <algorithm>
#include <vector>

#include "client/openai_client.h"
#include "sim/sim_server.h"
#include "stats/bench_stats.h"

namespace {

using ppdeploy::RequestResult;
using ppdeploy::client::ChatRequest;

ChatRequest Req(int max_tokens, std::int64_t tag, bool continuous) {
  ChatRequest q;
  q.model = "ppdeploy-sim";
  q.messages = nlohmann::json::array({{{"role", "user"}, {"content", "request " + std::to_string(tag)}}});
  q.max_tokens = max_tokens;
  q.min_tokens = max_tokens;
  q.ignore_eos = true;
  q.tag = tag;
  q.continuous_usage_stats = continuous;
  return q;
}

void BM_ClientTiming(benchmark::State& state) {
  const int concurrency = static_cast<int>(state.range(0));
  const int per_chunk = static_cast<int>(state.range(1));
  const int max_tokens = per_chunk == 1 ? 16 : 21;
  ppdeploy::sim::SimOptions o;
  o.ttft_ms = 100;
  o.itl_ms = 10;
  o.tokens_per_chunk = per_chunk;
  o.max_num_seqs = std::max(256, concurrency);
  ppdeploy::sim::SimServer server(o, "127.0.0.1", 0, 1);
  ppdeploy::client::OpenAiClient client(server.url());
  std::vector<ChatRequest> warm;
  for (int i = 0; i < concurrency; ++i) warm.push_back(Req(2, i, false));
  client.RunConcurrent(warm, concurrency, [](RequestResult&&) {});
  std::vector<RequestResult> results;
  for (auto _ : state) {
    std::vector<ChatRequest> reqs;
    for (int i = 0; i < std::max(4 * concurrency, 16); ++i) reqs.push_back(Req(max_tokens, 1000 + i, per_chunk > 1));
    results.clear();
    client.RunConcurrent(reqs, concurrency, [&](RequestResult&& r) { results.push_back(std::move(r)); });
  }
  ppdeploy::LevelResult L = ppdeploy::SummarizeLevel(concurrency, results, 1000);
  state.counters["ok"] = static_cast<double>(L.ok);
  state.counters["ttft_err_p50"] = L.ttft_ms.median - 100;
  state.counters["ttft_err_p99"] = L.ttft_ms.p99 - 100;
  state.counters["itl_err_p50"] = L.itl_ms.median - 10;
  state.counters["itl_err_p99"] = L.itl_ms.p99 - 10;
  state.counters["tpot_err_p50"] = L.tpot_ms.median - 10;
}
BENCHMARK(BM_ClientTiming)
    ->Args({1, 1})
    ->Args({16, 1})
    ->Args({64, 1})
    ->Args({256, 1})
    ->Args({4, 4})
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
