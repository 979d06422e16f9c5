#include "cli/backend_factory.h"

#include "core/error.h"

namespace ppdeploy::cli {

// TODO(client): construct the streaming HTTP client (src/client) behind probes::ChatBackend.
std::unique_ptr<probes::ChatBackend> MakeHttpBackend(const std::string& url, const std::string& /*model*/) {
  if (url.empty()) Fail("--url is required");
  throw Error("HTTP backend not wired yet");
}

}  // namespace ppdeploy::cli
