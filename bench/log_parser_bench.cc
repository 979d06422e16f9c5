// Benchmark of ParseBootLog on a ~100 MB synthetic vLLM log that mixes every known line kind
// (vllm-rules.md §2) with the filler lines that dominate real logs (access logs, engine stats, warnings),
// ANSI-coloured prefixes and several interleaved processes. Bar (issues 3 and 15): 100 MB in under 2 s.
// Also the record splitter alone (log_records.h) and a 100 MB log in which every line is hard for it
// (progress bars with CRs, records interleaved mid-line, NewLineFormatter continuations, NUL runs).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>

#include "vllm/log_parser.h"
#include "vllm/log_records.h"

namespace {

std::string MakeLog(std::size_t target_bytes) {
  const char* known[] = {
      "Model loading took 47.85 GiB memory and 120.502592 seconds",
      "Available KV cache memory: 21.95 GiB",
      "Estimated CUDA graph memory: 1.31 GiB total",
      "CUDA graph pool memory: 0.76 GiB (actual), 1.31 GiB (estimated), difference: -0.55 GiB (-42.0%).",
      "Graph capturing finished in 46 secs, took 0.76 GiB",
      "GPU KV cache size: 1,626,048 tokens, Maximum concurrency for 524,288 tokens per request: 3.10x",
      "GPU KV cache size: 807,792 tokens",
      "Maximum concurrency for 1,024 tokens per request: 788.86x",
      "Setting kv cache block size to 64 for FLASHMLA_SPARSE backend.",
      "Hidden layers were unevenly partitioned: [39,39]. This can be manually overridden using the "
      "VLLM_PP_LAYER_PARTITION environment variable",
      "init engine (profile, create kv cache, warmup model) took 84.91 s (compilation: 30.98 s)",
      "Memory profiling takes 17.96 seconds. Total non KV cache memory: 17.12GiB; torch peak memory increase: "
      "1.89GiB; non-torch forward increase memory: 0.25GiB; weights memory: 14.99GiB.",
      "Free memory on device (94.05/95.01 GiB) on startup. Desired GPU memory utilization is (0.9, 85.51 GiB). "
      "Actual usage is 56.89 GiB for consumed memory (weights + non-torch), 0.76 GiB for peak activation, and 0.32 "
      "GiB for CUDAGraph memory. Current kv cache memory in use is 27.85 GiB.",
      "non-default args: {'model': '/m/GLM-5', 'max_model_len': 524288, 'tensor_parallel_size': 4, "
      "'pipeline_parallel_size': 2, 'gpu_memory_utilization': 0.95, 'speculative_config': {'method': 'mtp'}}",
      "Initial free memory 78.52 GiB, reserved 20.00 GiB memory for KV Cache as specified by kv_cache_memory_bytes "
      "config and skipped memory profiling.",
      "Available KV cache memory: 12.3.4 GiB",  // malformed: exercises the warning path (capped)
  };
  const char* filler[] = {
      "127.0.0.1:51234 - \"POST /v1/chat/completions HTTP/1.1\" 200 OK",
      "Engine 000: Avg prompt throughput: 1234.5 tokens/s, Avg generation throughput: 456.7 tokens/s, Running: 32 "
      "reqs, Waiting: 0 reqs, GPU KV cache usage: 45.6%, Prefix cache hit rate: 12.3%",
      "Using default MoE config. Performance might be sub-optimal! Config file not found at "
      "/vllm/model_executor/layers/fused_moe/configs/E=256,N=256,device_name=NVIDIA_A100.json",
      "Loading safetensors checkpoint shards:  45% Completed | 72/160 [01:02<01:16,  1.15it/s]",
      "Received request chatcmpl-8f3a2b1c: prompt: 'Hello', params: SamplingParams(n=1, temperature=0.7)",
  };
  const char* procs[] = {"(Worker_DP0_PP0_TP0_EP0 pid=101) ", "\x1b[36m(Worker_DP0_PP1_TP2_EP6 pid=102)\x1b[0m ",
                         "(EngineCore_DP0 pid=100) ",         "(APIServer pid=99) ",
                         "(VllmWorker rank=3 pid=103) ",      ""};
  const char* levels[] = {"INFO", "WARNING", "DEBUG", "\x1b[32mINFO\x1b[0m"};
  std::string s;
  s.reserve(target_bytes + 4096);
  std::size_t i = 0;
  while (s.size() < target_bytes) {
    s += procs[i % std::size(procs)];
    s += levels[(i / 7) % std::size(levels)];
    s += " 08-21 18:22:06 [gpu_worker.py:789] ";
    // one known line in four, the rest filler (real logs are mostly request/stat lines)
    s += (i % 4 == 0) ? known[(i / 4) % std::size(known)] : filler[i % std::size(filler)];
    s += '\n';
    ++i;
  }
  return s;
}

const std::string& Log100MB() {
  static const std::string log = MakeLog(100u << 20);
  return log;
}

void BM_ParseBootLog100MB(benchmark::State& state) {
  const std::string& log = Log100MB();
  std::size_t tokens = 0;
  for (auto _ : state) {
    ppdeploy::BootLog b = ppdeploy::ParseBootLog(log);
    tokens += b.kv_tokens.size();
    benchmark::DoNotOptimize(b);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * log.size()));
  state.counters["MB"] = static_cast<double>(log.size()) / 1e6;
  benchmark::DoNotOptimize(tokens);
}
BENCHMARK(BM_ParseBootLog100MB)->Unit(benchmark::kMillisecond)->Iterations(3);

void BM_SplitLogRecords100MB(benchmark::State& state) {
  const std::string& log = Log100MB();
  for (auto _ : state) {
    std::size_t lines = 0;
    ppdeploy::SplitLogRecords(log, [&](const ppdeploy::LogRecord& r) { lines += r.lines.size(); });
    benchmark::DoNotOptimize(lines);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * log.size()));
}
BENCHMARK(BM_SplitLogRecords100MB)->Unit(benchmark::kMillisecond)->Iterations(3);

// 100 MB where every line needs the splitter's slow paths: a tqdm bar with CRs that another worker's record
// interrupts mid-line (the bar's tail starts the next line), a NewLineFormatter continuation (CR LF + the same
// header) and, every 1,000 lines, a NUL run.
void BM_ParseBootLogHostile100MB(benchmark::State& state) {
  static const std::string log = [] {
    std::string s;
    s.reserve((100u << 20) + 4096);
    for (std::size_t i = 0; s.size() < (100u << 20); ++i) {
      s += "\x1b[36m(Worker_PP0_TP0 pid=10)\x1b[0m \rLoading safetensors checkpoint shards:  45% Completed | 72/160"
           "(Worker_PP1_TP0 pid=14) INFO 08-21 18:02:00 [gpu_model_runner.py:5405] Model loading took 50.2 GiB memory "
           "and 121.0 seconds\n\rLoading safetensors checkpoint shards:  46% Completed | 73/160\n";
      s += "(RayWorkerWrapper pid=4242, ip=10.0.0.2) INFO 12-01 00:00:00 worker.py:1] Memory profiling takes 4.25 "
           "seconds\r\n(RayWorkerWrapper pid=4242, ip=10.0.0.2) INFO 12-01 00:00:00 worker.py:1] model weights take "
           "37.50GiB; non_torch_memory takes 1.20GiB; PyTorch activation peak memory takes 4.10GiB; the rest of the "
           "memory reserved for KV Cache is 28.40GiB.\n";
      if (i % 1000 == 999) s += std::string(64, '\0');
    }
    return s;
  }();
  for (auto _ : state) {
    ppdeploy::BootLog b = ppdeploy::ParseBootLog(log);
    benchmark::DoNotOptimize(b);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * log.size()));
}
BENCHMARK(BM_ParseBootLogHostile100MB)->Unit(benchmark::kMillisecond)->Iterations(3);

// Pathological inputs of the same size: must stay linear (no hang, no quadratic path).
void BM_ParseBootLogPathological(benchmark::State& state) {
  static const std::string inputs[] = {
      std::string(100u << 20, '\n'),  // 100 M empty lines
      [] {                            // 100 MB of pseudo-random bytes (xorshift), ~1 newline per 256 B
        std::string s(100u << 20, '\0');
        std::uint64_t x = 88172645463325252ull;
        for (auto& c : s) {
          x ^= x << 13;
          x ^= x >> 7;
          x ^= x << 17;
          c = static_cast<char>(x);
        }
        return s;
      }(),
      [] {  // 100 MB of 20-byte lines that are just long enough to be scanned
        std::string s;
        while (s.size() < (100u << 20)) s += "INFO 08-21 hello wo\n";
        return s;
      }(),
      [] {  // one 100 MB line of repeated known markers with bad numbers (warnings path, huge line)
        std::string s;
        while (s.size() < (100u << 20))
          s += "(Worker_TP0 pid=1) Available KV cache memory: x GiB non-default args: {'a': [";
        return s;
      }(),
  };
  const std::string& log = inputs[state.range(0)];
  for (auto _ : state) {
    ppdeploy::BootLog b = ppdeploy::ParseBootLog(log);
    benchmark::DoNotOptimize(b);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * log.size()));
}
BENCHMARK(BM_ParseBootLogPathological)->Arg(0)->Arg(1)->Arg(2)->Arg(3)->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
