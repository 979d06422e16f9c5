// Acceptance probes with deterministic checks (docs/seed.md §6: "quality 12/12, Responses API 10/10,
// tool round trips 20/20"): 12 short quality prompts, 10 Responses-API round trips
// (POST /v1/responses) and 20 tool-call round trips (call a declared function, send the tool's
// result back, the final answer must contain it). No LLM judge: every check is a string/number test
// on the answer with reasoning removed (AnswerText).
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "probes/backend.h"

namespace ppdeploy::probes {

/// The outcome of one check.
struct CheckOutcome {
  bool pass = false;
  std::string detail;  ///< what was expected / found, one line
};

/// A prompt with a deterministic check of its answer.
struct QualityProbe {
  std::string name;                                              ///< e.g. "arithmetic"
  std::string prompt;                                            ///< the user message
  std::function<CheckOutcome(const std::string& answer)> check;  ///< answer = AnswerText(reply)
};

/// The 12 quality prompts: arithmetic, word count, JSON object, capital city, unit conversion,
/// sorting, string reversal, maximum, weekday arithmetic, upper-casing, primality, chemical symbol.
const std::vector<QualityProbe>& QualityProbes();

/// A tool-call round trip: the tools offered, the prompt, and the tool's scripted result.
struct ToolProbe {
  std::string name;              ///< e.g. "weather-paris"
  std::string prompt;            ///< user message that needs the tool
  std::string function;          ///< expected function name
  nlohmann::json expected_args;  ///< arguments that must be present (strings case-insensitive, numbers exact)
  std::string tool_result;       ///< content of the role=tool message sent back
  std::string must_contain;      ///< the final answer must contain this (from tool_result)
};
/// The `tools` array offered on every tool probe: get_weather(city) and add(a, b), with
/// `first_function` first (the ppdeploy simulator always calls tools[0]; a real model must pick).
nlohmann::json ToolDeclarations(std::string_view first_function = "get_weather");
/// The 20 tool probes (10 get_weather, 10 add).
const std::vector<ToolProbe>& ToolProbes();

/// Builds the body of POST /v1/responses for `probe` ({"input", "max_output_tokens", "temperature"}).
nlohmann::json ResponsesRequest(const QualityProbe& probe, std::int64_t max_output_tokens);
/// The text of a Responses-API body: `output_text` when present, else the concatenated
/// output[].content[] items of type "output_text". Throws Error when the body has neither.
std::string ResponsesText(const nlohmann::json& body);

/// One probe's record.
struct ProbeRecord {
  std::string kind;  ///< "quality", "responses", "tools"
  std::string name;
  bool pass = false;
  bool error = false;  ///< request failed (counts as not passed)
  std::string detail;
  std::string answer;  ///< first 200 bytes
  double e2e_ms = -1;
  bool cancelled = false;  ///< cut by an interruption: left out of the summary
};

struct ProbeSummary {
  std::vector<ProbeRecord> records;  ///< the probes that ran to an outcome (cancelled ones are left out)
  int quality_passed = 0, quality_total = 0;
  int responses_passed = 0, responses_total = 0;
  int tools_passed = 0, tools_total = 0;
  int cancelled = 0;  ///< probes cut or not started because the run was interrupted
};

struct ProbeConfig {
  bool quality = true, responses = true, tools = true;
  std::int64_t max_tokens = 1024;  ///< per request (room for reasoning models' <think>)
  int concurrency = 4;
  /// Require the expected tool arguments (city, a, b). Off for `ppdeploy sim`, which sends
  /// placeholder arguments ("sim-city", 1); a mismatch is then only noted in the detail.
  bool check_tool_arguments = true;
};

/// Runs the selected probe kinds; `on_record` is called after each probe (serialised).
ProbeSummary RunProbes(ChatBackend& backend, const ProbeConfig& config,
                       const std::function<void(const ProbeRecord&)>& on_record = {});

/// Runs one tool round trip (two chat requests) and checks it: a call of probe.function (with
/// probe.expected_args when `check_arguments`), then a final answer containing probe.must_contain
/// (digit-group commas ignored: "6,912" counts as "6912").
ProbeRecord RunToolProbe(ChatBackend& backend, const ToolProbe& probe, std::int64_t max_tokens,
                         bool check_arguments = true);

/// 2 when any probe failed or errored, else 0 (1 when nothing ran).
ExitCode ProbeExitCode(const ProbeSummary& summary);

nlohmann::json ToJson(const ProbeRecord& record);
/// {"schema": "ppdeploy.probes/1", "quality": {"passed", "total"}, "responses": {...}, "tools": {...}, "records":
/// [...]}
nlohmann::json ToJson(const ProbeSummary& summary);

}  // namespace ppdeploy::probes
