// Client hot path: SSE framing + chunk interpretation of a vLLM-style stream (continuous usage), per token.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "client/openai_stream.h"
#include "client/sse.h"

namespace {

std::string MakeStream(int tokens) {
  std::string s;
  for (int i = 1; i <= tokens; ++i) {
    s += R"(data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":" word"},"logprobs":null,"finish_reason":null}],"usage":{"prompt_tokens":16,"completion_tokens":)" +
         std::to_string(i) + R"(,"total_tokens":)" + std::to_string(16 + i) + "}}\n\n";
  }
  s += "data: [DONE]\n\n";
  return s;
}

void BM_SseParseAndAccumulate(benchmark::State& state) {
  const int tokens = static_cast<int>(state.range(0));
  const std::string stream = MakeStream(tokens);
  for (auto _ : state) {
    ppdeploy::client::SseParser parser;
    ppdeploy::RequestResult r;
    ppdeploy::client::StreamAccumulator acc(r);
    std::vector<ppdeploy::client::SseEvent> events;
    double t = 0;
    for (std::size_t i = 0; i < stream.size(); i += 1500) {  // TCP-sized pieces
      events.clear();
      parser.Feed(std::string_view(stream).substr(i, 1500), events);
      for (const auto& e : events) acc.OnEvent(e, t += 1);
    }
    acc.Finish(t, true);
    benchmark::DoNotOptimize(r.output_tokens);
  }
  state.SetItemsProcessed(state.iterations() * tokens);  // items = tokens
}
BENCHMARK(BM_SseParseAndAccumulate)->Arg(32)->Arg(1024);

}  // namespace

BENCHMARK_MAIN();
