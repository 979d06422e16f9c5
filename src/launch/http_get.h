// A minimal blocking HTTP GET for `ppdeploy wait|status` readiness checks (libcurl). The full
// OpenAI client lives in src/client; this one only answers "what status and body did GET give".
#pragma once

#include <string>

namespace ppdeploy::launch {

struct HttpGetResult {
  bool connected = false;  ///< a response arrived (any status)
  long status = 0;         ///< HTTP status code, 0 when no response
  std::string body;        ///< at most 1 MiB
  std::string error;       ///< curl's message when !connected
};

/// GET `url` with a total timeout (connect + transfer). Never throws for network errors.
HttpGetResult HttpGet(const std::string& url, long timeout_ms);

/// "http://HOST:PORT" for a server bound to `host` ("0.0.0.0" / "::" / "" -> 127.0.0.1).
std::string LocalBaseUrl(const std::string& host, int port);

}  // namespace ppdeploy::launch
