// `ppdeploy bench` as a library: RunBench(options) drives the load profile against an OpenAI-compatible
// server and returns a BenchResult (report/bench_report.h) that the caller renders. Per-request records go
// to a JSONL file as they finish (one complete line each, flushed), and into constant-memory level
// accumulators (stats/bench_stats.h): nothing per request is kept, so memory stays flat however long the run.
//
// Load profiles (one per run):
//   concurrency  closed loop at each --concurrency level
//   rate         open loop at each --request-rate (poisson/gamma/constant arrivals, stats/arrivals.h),
//                optionally capped by --max-concurrency; rate inf = everything at once up to the cap
//   ramp         one open-loop level whose rate ramps from --ramp-up-start-rps to --ramp-up-end-rps
//   sweep        GuideLLM's sweep (stats/load_search.h): synchronous, throughput peak, N rates between
//   search       the highest rate meeting the --goodput SLOs (bisection, stop rule in stats/load_search.h)
// Warm-up requests run before each level and stay outside all of its figures: their failures are counted
// apart, and stragglers are cancelled at --warmup-timeout-s so that a stalled warm-up cannot delay the level.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "client/openai_client.h"
#include "client/prompts.h"
#include "report/bench_report.h"
#include "stats/arrivals.h"
#include "stats/bench_stats.h"

namespace ppdeploy::client {

/// The concurrency of the throughput (peak) level of --sweep / --search-max-goodput, and the cap of
/// --request-rate inf, when --max-concurrency is not given.
constexpr int kDefaultPeakConcurrency = 256;

struct BenchOptions {
  std::string url;
  std::string model;  ///< "" = the first of GET /v1/models
  std::string api_key;
  Endpoint endpoint = Endpoint::kChat;

  // Load profile.
  std::vector<int> concurrency;       ///< closed-loop levels
  std::vector<double> request_rates;  ///< open-loop levels (req/s; inf allowed)
  stats::ArrivalKind arrival = stats::ArrivalKind::kPoisson;
  double burstiness = 1;
  stats::RampKind ramp = stats::RampKind::kNone;
  double ramp_start_rps = 0, ramp_end_rps = 0;
  int max_concurrency = 0;  ///< open loop: cap on requests in flight (0 = none)
  int sweep = 0;            ///< --sweep N (0 = off)
  bool search_max_goodput = false;
  double slo_attainment = 0.9;
  double search_tolerance = 0.05;
  int search_max_probes = 8;
  Slo slo;  ///< --goodput

  // Per level.
  std::int64_t requests = 32;  ///< measured requests per level (0 = unlimited: needs duration_s)
  double duration_s = 0;       ///< > 0: start nothing intended after this
  std::int64_t warmup = -1;    ///< -1: the level's concurrency (open loop: the cap, else 4)
  double warmup_timeout_s = 30;
  double timeout_s = 600;

  // Prompts.
  std::string dataset = "random";  ///< random, sharegpt, jsonl
  std::string dataset_path;
  std::size_t dataset_limit = 1000;  ///< ShareGPT entries sampled
  std::int64_t input_len = 128;
  std::int64_t output_len = 128;
  bool output_len_given = false;  ///< ShareGPT: override the reference answers' lengths
  LengthDist input_dist, output_dist;
  std::int64_t shared_prefix_tokens = 0;
  bool unique_prompts = true;  ///< datasets: prepend a per-request prefix
  std::uint64_t seed = 0;      ///< prompts, lengths, arrivals, dataset sample
  std::optional<double> temperature, top_p;
  nlohmann::json extra_body = nlohmann::json::object();
  std::string continuous_usage = "auto";  ///< auto, on, off
  int prompt_verify_samples = 8;

  std::string out_jsonl;  ///< "" = no per-request file
  int max_consecutive_connect_errors = 20;
};

/// Throws Error naming the flag for contradictory or out-of-range options.
void ValidateBenchOptions(const BenchOptions& options);

struct BenchHooks {
  const std::atomic<bool>* stop = nullptr;           ///< raised by SIGINT: stop, cancel in-flight, return
  std::function<void(const std::string&)> progress;  ///< a one-line status now and then (may be empty)
};

/// Runs the benchmark. Throws Error for bad options or an unusable server/dataset before any load starts;
/// once load runs, problems are recorded in the result (errors per level, `aborted`).
BenchResult RunBench(const BenchOptions& options, const BenchHooks& hooks = {});

}  // namespace ppdeploy::client
