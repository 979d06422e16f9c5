// How well the in-process `ppdeploy sim` holds 1000 concurrent streams (moved out of
// tests/sim/sim_client_test.cc SimClient.ThousandConcurrentStreams, issue 24: its 500 ms bound failed at
// 637 ms beside a build). TTFT 10 s, ITL 50 ms, 8 tokens, so all 1000 streams overlap. Counters, in ms:
//   stall_excess_max = the longest gap between two token writes of one stream beyond the scheduled 50 ms
//                      (server side, at the write);
//   write_lateness_max = the latest a write came after its scheduled time;
//   client_itl_max = the worst gap the client saw;
// and running_max (1000 when every stream overlapped) and ok (completed streams).
// Run: build-rel/sim_streams_bench --benchmark_counters_tabular=true (needs ulimit -n >= 2200).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <vector>

#include "client/openai_client.h"
#include "sim/sim_server.h"

namespace {

using ppdeploy::RequestResult;
using ppdeploy::client::ChatRequest;

ChatRequest Req(std::int64_t tag) {
  ChatRequest q;
  q.model = "ppdeploy-sim";
  q.messages = nlohmann::json::array({{{"role", "user"}, {"content", "request " + std::to_string(tag)}}});
  q.max_tokens = 8;
  q.min_tokens = 8;
  q.ignore_eos = true;
  q.tag = tag;
  q.timeout_s = 60;
  return q;
}

void BM_ThousandStreams(benchmark::State& state) {
  ppdeploy::sim::SimOptions o;
  o.ttft_ms = 10000;
  o.itl_ms = 50;
  o.max_num_seqs = 1024;
  double stall = 0, lateness = 0, itl = 0, running = 0, ok = 0;
  for (auto _ : state) {
    ppdeploy::sim::SimServer server(o, "127.0.0.1", 0, 2);
    ppdeploy::client::OpenAiClient client(server.url());
    std::vector<ChatRequest> reqs;
    for (int i = 0; i < 1000; ++i) reqs.push_back(Req(i));
    ok = 0;
    client.RunConcurrent(reqs, 1000, [&](RequestResult&& r) {
      ok += r.ok() ? 1 : 0;
      for (double v : r.itl_ms) itl = std::max(itl, v);
    });
    stall = std::max(stall, server.counters().max_stall_excess_ms);
    lateness = std::max(lateness, server.counters().max_write_lateness_ms);
    running = static_cast<double>(server.counters().max_running);
  }
  state.counters["stall_excess_max"] = stall;
  state.counters["write_lateness_max"] = lateness;
  state.counters["client_itl_max"] = itl;
  state.counters["running_max"] = running;
  state.counters["ok"] = ok;
}
BENCHMARK(BM_ThousandStreams)->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
