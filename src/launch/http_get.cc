#include "launch/http_get.h"

#include <curl/curl.h>
#include <fmt/format.h>

#include <mutex>

namespace ppdeploy::launch {
namespace {

size_t Collect(char* data, size_t size, size_t n, void* user) {
  auto* body = static_cast<std::string*>(user);
  size_t bytes = size * n;
  if (body->size() < (1u << 20)) body->append(data, std::min(bytes, (1u << 20) - body->size()));
  return bytes;
}

}  // namespace

HttpGetResult HttpGet(const std::string& url, long timeout_ms) {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  HttpGetResult r;
  CURL* curl = curl_easy_init();
  if (!curl) {
    r.error = "curl_easy_init failed";
    return r;
  }
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, timeout_ms);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_NOPROXY, "*");
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, Collect);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &r.body);
  CURLcode rc = curl_easy_perform(curl);
  if (rc == CURLE_OK) {
    r.connected = true;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &r.status);
  } else {
    r.error = curl_easy_strerror(rc);
  }
  curl_easy_cleanup(curl);
  return r;
}

std::string LocalBaseUrl(const std::string& host, int port) {
  std::string h = host;
  if (h.empty() || h == "0.0.0.0" || h == "::" || h == "[::]") h = "127.0.0.1";
  if (h.find(':') != std::string::npos && h.front() != '[') h = "[" + h + "]";
  return fmt::format("http://{}:{}", h, port);
}

}  // namespace ppdeploy::launch
