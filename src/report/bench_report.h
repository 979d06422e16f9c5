// The result of `ppdeploy bench` (computed once) and its renderings: table, JSON (schema "ppdeploy.bench/1"), CSV.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "stats/bench_stats.h"

namespace ppdeploy {

struct BenchResult {
  std::string url;
  std::string model;
  std::string endpoint;            ///< "chat" or "completions"
  std::string input_len_method;    ///< "tokenize" (exact, server's /tokenize) or "chars_per_token_fallback(4)"
  nlohmann::json settings = nlohmann::json::object();  ///< the run's options
  std::vector<LevelResult> levels;
  bool interrupted = false;        ///< SIGINT
  std::string aborted;             ///< why the run stopped early ("" when it did not)
  std::string jsonl_path;          ///< per-request records
  std::vector<std::string> notes;
};

/// Metric definitions printed with every report (name -> definition).
const std::vector<std::pair<std::string, std::string>>& BenchMetricDefinitions();

std::string RenderBenchTable(const BenchResult& result);
nlohmann::json RenderBenchJson(const BenchResult& result);
/// One row per level; the header names units.
std::string RenderBenchCsv(const BenchResult& result);

}  // namespace ppdeploy
