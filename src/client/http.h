// Plain (non-streaming) HTTP with JSON bodies, over libcurl: the probes' and the bench's helper for
// GET /health, /version, /v1/models and POST /tokenize. `HttpClient` is the seam tests can fake.
#pragma once

#include <atomic>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

namespace ppdeploy::client {

struct HttpResponse {
  int status = 0;     ///< HTTP status; 0 when no response arrived (then `error` says why)
  std::string body;   ///< response body (cut at 64 MiB)
  std::string error;  ///< transport error ("" when a response arrived)
  double elapsed_ms = 0;
  bool cancelled = false;  ///< the client's cancel flag was raised before or during the transfer

  bool ok() const { return error.empty() && status >= 200 && status < 300; }
  /// The body as JSON; throws Error "<url>: ..." when the status is not 2xx or the body is not JSON.
  nlohmann::json Json(const std::string& url) const;
};

/// Seam for anything that talks plain HTTP. Implementations never throw for transport or HTTP errors:
/// they report them in HttpResponse.
class HttpClient {
 public:
  virtual ~HttpClient() = default;
  virtual HttpResponse Get(const std::string& url, double timeout_s = 10.0) = 0;
  virtual HttpResponse PostJson(const std::string& url, const nlohmann::json& body, double timeout_s = 30.0) = 0;
};

/// The libcurl implementation. `api_key` (when not empty) is sent as "Authorization: Bearer <key>". When
/// `cancel` is given and becomes true (Ctrl-C), a transfer in progress is aborted and later calls return at once;
/// both answer with `cancelled` set and error "cancelled: ...".
std::unique_ptr<HttpClient> MakeCurlHttpClient(std::string api_key = "", const std::atomic<bool>* cancel = nullptr);

/// Joins a base URL ("http://h:p" or "http://h:p/") and a path ("/v1/models").
std::string JoinUrl(const std::string& base, const std::string& path);

/// Initialises libcurl once per process (thread-safe; called by every client constructor).
void EnsureCurlInitialised();

}  // namespace ppdeploy::client
