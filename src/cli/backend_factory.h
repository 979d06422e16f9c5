// Where the URL-based commands (degen, needle, probe) get their server connection.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "probes/backend.h"

namespace ppdeploy::cli {

/// An OpenAI-compatible backend for `url` (e.g. "http://127.0.0.1:8000"); `model` = "" means the
/// first model of GET /v1/models (Error when the server lists none or cannot be reached). When `cancel`
/// becomes true (Ctrl-C, cli/interrupt.h) the requests in flight are aborted and later ones return at once,
/// all with ChatResult::cancelled / PostResult::cancelled set.
std::unique_ptr<probes::ChatBackend> MakeHttpBackend(const std::string& url, const std::string& model,
                                                     const std::atomic<bool>* cancel = nullptr);

/// Degeneration trial count from AGENT_PROBE_TRIALS (the seed's variable), 40 when unset; Error
/// when it is not a positive integer.
int TrialsFromEnv();

}  // namespace ppdeploy::cli
