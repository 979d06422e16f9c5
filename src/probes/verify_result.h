// The measured facts of one deployment ("arm"), as `ppdeploy verify` will write them and
// `ppdeploy verdict A.json B.json` reads them. Schema "ppdeploy.verify/1"; every section is
// optional (a partial verify still gives a partial verdict) and unknown top-level keys are kept.
//
// {
//   "schema": "ppdeploy.verify/1", "label": "TP4/PP2 41,37",
//   "kv_pool": {"predicted_tokens": 729400, "predicted_source": "planner ...",
//               "logged_tokens": 729280, "logged_source": "boot log ..."},  // docs/seed.md §6
//   "max_model_len": 524288, "max_model_len_source": "/v1/models",
//   "memory": {"source": "nvidia-smi", "ranks": [{"rank": 0, "used_bytes": ..., "total_bytes": ...,
//              "headroom_bytes": ...}]},                                  // nvidia-smi view, rank = GPU index
//   "step_ms": [33.7, ...],                                               // per-step samples
//   "step_time_histogram": {"upper_bounds_ms": [10, 25, ...], "counts": [...], "mean_ms": 33.7,
//                           "count": 4096, "source": "/metrics vllm:inter_token_latency_seconds ..."},
//   "throughput": {"single_stream_tok_s": [71.3, ...],                   // per-request samples
//                  "concurrent_tok_s": {"16": [18.9, ...]}},             // per-request, by concurrency
//   "degeneration": {"completed": 100, "degenerate": 21,                  // a ppdeploy.degen/1 summary fits
//                    "normal_output_tokens": [...], "median_normal_tokens": 84},
//   "needle": {"cells": [{"length_tokens": 300000, "depth_pct": 50, "status": "pass"}]},  // ppdeploy.needle/1 fits
//   "probes": {"quality": {"passed": 12, "total": 12}, "responses": {...}, "tools": {...}},  // ppdeploy.probes/1 fits
//   "requests": {"bench": {"failed": 8, "total": 16}, "degeneration": {...}},  // per step: requests sent, failed
//   "ready_s": 540, "ready_source": "ppdeploy wait (run state ...)",
//   "facts": {...}                                                        // probes/server_facts.h
// }
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "probes/degen_run.h"
#include "probes/needle.h"
#include "probes/quality.h"

namespace ppdeploy::probes {

struct RankMemory {
  int rank = 0;                                ///< the GPU index when read from nvidia-smi
  std::optional<std::int64_t> used_bytes;      ///< memory used on the rank's GPU (nvidia-smi)
  std::optional<std::int64_t> headroom_bytes;  ///< GPU total minus used
  std::optional<std::int64_t> total_bytes;     ///< the GPU's total memory
};

/// A step-time histogram (vLLM's inter-token latency) over a window of the verify run, in ms.
struct StepTimeHistogram {
  std::vector<double> upper_bounds_ms;  ///< bucket bounds; the last one is +inf (written as null)
  std::vector<double> counts;           ///< observations per bucket (not cumulative)
  double mean_ms = 0;                   ///< sum / count of the histogram (exact, not bucketed)
  double count = 0;
  std::string source;
};

struct PassCount {
  std::int64_t passed = 0;
  std::int64_t total = 0;
};

/// Requests a verify step sent, and how many of them failed (an HTTP error, a disconnect, a timeout).
struct RequestCount {
  std::int64_t failed = 0;
  std::int64_t total = 0;
};

struct DegenerationSection {
  std::int64_t completed = 0;
  std::int64_t degenerate = 0;
  std::vector<double> normal_output_tokens;  ///< lengths of normal answers (may be empty)
  std::optional<double> median_normal_tokens;
};

struct VerifyResult {
  std::string label;
  std::optional<std::int64_t> kv_pool_predicted_tokens;
  std::string kv_pool_predicted_source;               ///< "planner: ..." / "--plan-json FILE"
  std::optional<std::int64_t> kv_pool_logged_tokens;  ///< "GPU KV cache size: N tokens", else /metrics
  std::string kv_pool_logged_source;                  ///< which of them
  std::optional<std::int64_t> max_model_len;          ///< of the served model (concurrency at max_model_len)
  std::string max_model_len_source;
  std::vector<RankMemory> ranks;
  std::string memory_source;  ///< where `ranks` came from (nvidia-smi ...)
  std::vector<double> step_ms;
  std::optional<StepTimeHistogram> step_time;  ///< from /metrics, when no per-step samples exist
  std::vector<double> single_stream_tok_s;
  std::map<int, std::vector<double>> concurrent_tok_s;  ///< concurrency -> per-request tok/s
  std::optional<DegenerationSection> degeneration;
  std::optional<std::vector<NeedleCell>> needle;
  std::optional<PassCount> quality, responses, tools;
  std::map<std::string, RequestCount> requests;  ///< by verify step (smoke, needle, degeneration, bench, probes)
  std::optional<double> ready_s;                 ///< launch to first successful request
  std::string ready_source;
  nlohmann::json facts;  ///< the server facts (probes/server_facts.h ToJson), null when none
  nlohmann::json unknown = nlohmann::json::object();  ///< top-level keys this version does not know
};

/// Serialises with "schema": "ppdeploy.verify/1"; absent sections are omitted.
nlohmann::json ToJson(const VerifyResult& result);
/// Parses; `source` names the file in errors. Throws Error on another schema or wrong-typed
/// fields; missing sections stay empty.
VerifyResult VerifyResultFromJson(const nlohmann::json& j, const std::string& source);

/// The request errors of every step together (failed, total); nullopt when no step counted its requests.
std::optional<std::pair<std::int64_t, std::int64_t>> RequestErrors(const VerifyResult& result);

/// Fills the degeneration section from a degen run (counts and normal lengths).
void SetDegeneration(VerifyResult& result, const DegenSummary& summary);
/// Fills the needle section from a needle run (all cells, skipped ones included).
void SetNeedle(VerifyResult& result, const NeedleResult& needle);
/// Fills quality / responses / tools from a probe run (only the kinds that ran).
void SetProbes(VerifyResult& result, const ProbeSummary& probes);

}  // namespace ppdeploy::probes
