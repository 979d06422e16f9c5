// Where the URL-based commands (degen, needle, probe) get their server connection.
#pragma once

#include <memory>
#include <string>

#include "probes/backend.h"

namespace ppdeploy::cli {

/// An OpenAI-compatible backend for `url` (e.g. "http://127.0.0.1:8000"); `model` = "" means the
/// first model of GET /v1/models (Error when the server lists none or cannot be reached).
std::unique_ptr<probes::ChatBackend> MakeHttpBackend(const std::string& url, const std::string& model);

/// Degeneration trial count from AGENT_PROBE_TRIALS (the seed's variable), 40 when unset; Error
/// when it is not a positive integer.
int TrialsFromEnv();

}  // namespace ppdeploy::cli
