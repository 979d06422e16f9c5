// The result of `ppdeploy bench` (computed once by RunBench, src/client/bench_runner.h) and its renderings:
// table, JSON (schema "ppdeploy.bench/2", docs/client-sim-bench.md), Markdown, CSV and a self-contained HTML
// page (inline SVG and CSS, no script, nothing from the network).
//
// HTML structure (tested in tests/report/bench_html_test.cc):
//   <svg class="cdf-chart" data-metric="ttft|tpot|itl">, one <polyline class="cdf" data-level="i"
//        data-label> per level (101 quantile points, q = 0..100)
//   <svg class="throughput-chart">, one <g class="level" data-level data-rps data-goodput-rps> per level
//   <table class="levels">, one row per level; <dl class="definitions"> with every metric definition
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "stats/bench_stats.h"

namespace ppdeploy {

/// The search for the highest rate that meets the goodput SLOs (stats/load_search.h).
struct GoodputSearchResult {
  bool ran = false;
  double target_attainment = 0.9;
  double best_rate = -1;          ///< req/s; -1 when no rate met the SLOs
  double lo = 0, hi = 0;          ///< the final bracket
  std::string rule;               ///< the stop rule, in words
  std::string outcome;            ///< why it stopped
  std::vector<int> probe_levels;  ///< indices into BenchResult::levels
};

struct BenchResult {
  std::string url;
  std::string model;
  std::string endpoint;                 ///< "chat" or "completions"
  std::string input_len_method;         ///< how prompt lengths were made exact ("tokenize (8 of 8 ...)", fallbacks)
  std::string dataset = "random";       ///< random, sharegpt:<path>, jsonl:<path>
  std::string profile = "concurrency";  ///< concurrency, rate, ramp, sweep, search
  std::string continuous_usage;         ///< "off", "on", "auto: off (...)" / "auto: on (...)"
  nlohmann::json settings = nlohmann::json::object();  ///< the run's options
  std::vector<LevelResult> levels;
  GoodputSearchResult search;
  bool interrupted = false;  ///< SIGINT
  std::string aborted;       ///< why the run stopped early ("" when it did not)
  std::string jsonl_path;    ///< per-request records
  std::vector<std::string> notes;
};

/// Metric definitions printed with every report (name -> definition).
const std::vector<std::pair<std::string, std::string>>& BenchMetricDefinitions();

std::string RenderBenchTable(const BenchResult& result);
nlohmann::json RenderBenchJson(const BenchResult& result);
std::string RenderBenchMarkdown(const BenchResult& result);
/// One row per level; the header names units.
std::string RenderBenchCsv(const BenchResult& result);
/// The whole page (UTF-8, `<!DOCTYPE html>`, well-formed XML after the doctype).
void RenderBenchHtml(const BenchResult& result, std::ostream& out);

}  // namespace ppdeploy
