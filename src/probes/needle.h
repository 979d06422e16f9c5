// Needle-in-a-haystack recall probe with deterministic grading (RULER-style exact match, no LLM
// judge; docs/sources.md §6), over a length x depth grid (docs/seed.md §7: "needle 300K 3/3 -> 500K 3/3").
//
// Lengths: "K" = 1,000 tokens and "M" = 1,000,000 tokens (decimal, as the seed writes 300K/500K
// loosely; 128K therefore means 128,000 tokens, not 131,072). A length is the token count of the
// whole user message (haystack with the needle, plus the question), measured with the server's
// /tokenize when it has one; otherwise estimated as bytes / chars_per_token and labelled
// "estimate" in the result. Lengths with length + answer_room > max_model_len are skipped with a
// note (the server would answer HTTP 400).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "probes/backend.h"

namespace ppdeploy::probes {

/// Parses "128K,300K,500K" (also "131072", "1M", "0.5M"; case-insensitive; K = 1e3, M = 1e6).
/// Throws Error naming the bad item on an empty list, a non-number or a value < 1.
std::vector<std::int64_t> ParseLengths(std::string_view text);
/// Parses depths in percent "10,50,90"; each in [0, 100].
std::vector<double> ParseDepths(std::string_view text);
/// 128000 -> "128K", 1000000 -> "1M", 1500 -> "1.5K".
std::string FormatLength(std::int64_t tokens);

/// The hidden fact and the question that asks for it.
struct Needle {
  std::string key;       ///< e.g. "amber-falcon-417"; sentence "The value of key K is V."
  std::string value;     ///< e.g. "7391-KESTREL-2045": graded by substring match
  std::string sentence;  ///< the sentence inserted into the haystack
  std::string question;  ///< appended after the haystack
};
/// A unique needle from std::mt19937_64(seed).
Needle MakeNeedle(std::uint64_t seed);

/// The prompt of one cell.
struct Haystack {
  std::string prompt;           ///< haystack with the needle at the depth, then the question
  std::int64_t tokens = 0;      ///< measured (or estimated) tokens of `prompt`
  bool estimated = false;       ///< true: bytes / chars_per_token, no /tokenize
  double needle_depth_pct = 0;  ///< actual position of the needle, % of the haystack bytes
  int tokenize_calls = 0;
};
/// Builds a prompt of `target_tokens` tokens: filler sentences (seeded order) with the needle
/// sentence inserted before the sentence at `depth_pct`% and the question at the end. With a
/// tokenizer it bisects over the number of sentences, then over the words of a last partial
/// sentence, to the largest prompt with tokens <= target (exact when single words are one token).
/// Throws Error when the target is smaller than the needle plus the question.
Haystack BuildHaystack(ChatBackend& backend, std::int64_t target_tokens, double depth_pct, const Needle& needle,
                       std::uint64_t seed, double chars_per_token = 4.0);

struct NeedleConfig {
  std::vector<std::int64_t> lengths;           ///< tokens (see ParseLengths)
  std::vector<double> depths_pct{10, 50, 90};  ///< needle positions, % of the haystack
  std::int64_t answer_room_tokens = 256;       ///< kept free for the answer (also max_tokens)
  double chars_per_token = 4.0;                ///< estimate when the server has no /tokenize
  std::uint64_t seed = 20261129;
};

/// One (length, depth) cell.
struct NeedleCell {
  std::int64_t length_tokens = 0;
  double depth_pct = 0;
  std::string status;              ///< "pass", "fail", "skipped", "error"
  std::int64_t prompt_tokens = 0;  ///< measured / estimated length of the prompt sent
  bool estimated = false;
  std::string expected;  ///< the needle value
  std::string answer;    ///< the answer (first 200 bytes)
  std::string note;      ///< why skipped / error text
  double e2e_ms = -1;
};

struct NeedleResult {
  std::optional<std::int64_t> max_model_len;
  std::vector<NeedleCell> cells;  ///< the cells that ran to an outcome, in grid order
  int passed = 0, failed = 0, skipped = 0, errors = 0;
  bool interrupted = false;  ///< a request was cancelled (Ctrl-C): the grid stops, later cells are not in `cells`
};

/// Runs the grid sequentially (long prefills serialise on the server anyway; docs/seed.md §11).
/// A cell passes when the needle value is a substring of the answer (reasoning removed).
/// `on_cell` (optional) is called after each cell, e.g. to append a JSONL line.
NeedleResult RunNeedle(ChatBackend& backend, const NeedleConfig& config,
                       const std::function<void(const NeedleCell&)>& on_cell = {});

/// Exit code of the needle command: 2 when a cell failed, else 1 when a cell errored or every
/// cell was skipped, else 0.
ExitCode NeedleExitCode(const NeedleResult& result);

nlohmann::json ToJson(const NeedleCell& cell);
NeedleCell NeedleCellFromJson(const nlohmann::json& j);
/// {"schema": "ppdeploy.needle/1", "max_model_len", "passed", "failed", "skipped", "errors", "cells": [...]}
nlohmann::json ToJson(const NeedleResult& result);

}  // namespace ppdeploy::probes
