// The degeneration run: N sampled answers to a prompt set, each classified by CheckDegeneration,
// summarised as a rate with a 95% Clopper-Pearson interval, and compared to a baseline run with
// Fisher's exact test (docs/seed.md §7: p5_identity, temperature 0.8, top_p 0.9, cap 3,000 tokens;
// PP2 21/100 vs PP1 0/120, one-sided p = 1.80e-08 exact; normal answers' median length 84 vs 37
// tokens = x2.3). `ppdeploy degen` and, later, `verify` call these functions.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "probes/backend.h"
#include "probes/degeneration.h"
#include "stats/binomial.h"
#include "stats/samples.h"

namespace ppdeploy::probes {

struct DegenPrompt {
  std::string id;    ///< e.g. "p5_identity"
  std::string text;  ///< the user message
};
/// "identity": only p5_identity ("Who are you? Introduce yourself briefly.", the seed's probe);
/// "rotation": five prompts p1..p5 used round-robin (docs/seed.md §7 "5-prompt rotation"), p5 = identity.
/// Throws Error on another name.
std::vector<DegenPrompt> DegenPromptSet(std::string_view name);

struct DegenConfig {
  int trials = 40;                 ///< seed default (AGENT_PROBE_TRIALS); 200 narrows the bound
  int concurrency = 8;             ///< requests in flight
  double temperature = 0.8;        ///< docs/seed.md §7
  double top_p = 0.9;              ///< docs/seed.md §7
  std::int64_t max_tokens = 3000;  ///< the cap (docs/seed.md §7)
  std::string prompt_set = "identity";
  std::optional<std::int64_t> seed;  ///< trial i uses seed + i; unset = server-random sampling
  bool request_token_ids = true;     ///< sends "return_token_ids": true (vLLM >= 0.10.2) for token-level detection
  DegenerationParams params;
};

/// The chat requests of a run: trial i asks prompt i mod |set|.
std::vector<ChatRequest> BuildDegenRequests(const DegenConfig& config);

/// One trial's record (one JSONL line of --out-jsonl).
struct DegenTrial {
  int index = 0;
  std::string prompt_id;
  bool ok = false;
  std::string error;
  std::string finish_reason;
  std::int64_t output_tokens = -1;  ///< usage.completion_tokens, else token_ids size, else -1
  bool degenerate = false;
  std::string unit;  ///< detector unit: "tokens" or "chars"
  int period = 0;
  std::int64_t repeats = 0;
  double e2e_ms = -1;
  std::string head;        ///< first 160 bytes of the answer
  std::string tail;        ///< last 160 bytes of the answer
  bool cancelled = false;  ///< cut by an interruption: not a trial (RunDegen leaves it out)
};
DegenTrial ClassifyTrial(int index, const ChatRequest& request, const ChatResult& result,
                         const DegenerationParams& params);

struct DegenSummary {
  int trials = 0;     ///< records
  int completed = 0;  ///< ok answers (the denominator of the rate)
  int errors = 0;     ///< failed requests (not in the rate)
  int degenerate = 0;
  int hit_cap = 0;                           ///< finish_reason "length", degenerate or not
  double rate = 0;                           ///< degenerate / completed
  stats::Interval ci95;                      ///< Clopper-Pearson 95%
  std::vector<double> normal_output_tokens;  ///< lengths of completed, non-degenerate answers
  std::optional<double> median_normal_tokens;
  std::vector<DegenTrial> records;  ///< may be empty when loaded from a summary-only file
  int cancelled = 0;                ///< trials cut or not started because the run was interrupted (not in `trials`)
};
/// Summarises records (sorted by index).
DegenSummary Summarize(std::vector<DegenTrial> trials);

/// Runs the trials (bounded concurrency) and summarises; `on_trial` sees each record as it
/// completes (serialised), e.g. to append and flush a JSONL line.
DegenSummary RunDegen(ChatBackend& backend, const DegenConfig& config,
                      const std::function<void(const DegenTrial&)>& on_trial = {});

/// This run vs a baseline run.
struct BaselineComparison {
  int degenerate = 0, completed = 0;                    ///< this run
  int baseline_degenerate = 0, baseline_completed = 0;  ///< the baseline
  stats::FisherResult fisher;          ///< arm A = this run; `greater` tests "this run degenerates more"
  std::optional<double> median_ratio;  ///< median normal length, this / baseline (seed: 84 / 37 = 2.27)
  std::optional<stats::MannWhitneyResult> lengths_test;  ///< normal lengths, when both have samples
};
BaselineComparison CompareWithBaseline(const DegenSummary& current, const DegenSummary& baseline);

/// Exit code of `degen`: 2 when any trial degenerated, else 1 when no trial completed, else 0.
ExitCode DegenExitCode(const DegenSummary& summary);

nlohmann::json ToJson(const DegenTrial& trial);
DegenTrial DegenTrialFromJson(const nlohmann::json& j, const std::string& source);
/// {"schema": "ppdeploy.degen/1", trials, completed, errors, degenerate, hit_cap, rate,
///  ci95: [lo, hi], median_normal_tokens, normal_output_tokens: [...], records: [...]}
nlohmann::json ToJson(const DegenSummary& summary, bool with_records = true);
nlohmann::json ToJson(const BaselineComparison& comparison);

/// Reads a baseline from text: a ppdeploy.degen/1 summary, a ppdeploy.verify/1 result (its
/// "degeneration" section), or JSONL trial records as written by --out-jsonl. Throws Error
/// naming `source` on anything else.
DegenSummary ParseDegenBaseline(std::string_view text, const std::string& source);

}  // namespace ppdeploy::probes
