#include "cli/target.h"

#include "cli/launch_options.h"
#include "core/error.h"
#include "launch/http_get.h"

namespace ppdeploy::cli {
namespace {

// "http://HOST:PORT/..." -> (host, port); port 0 when it cannot be read.
std::pair<std::string, int> HostPort(const std::string& url) {
  std::string rest = url;
  if (auto p = rest.find("://"); p != std::string::npos) rest = rest.substr(p + 3);
  if (auto p = rest.find('/'); p != std::string::npos) rest.resize(p);
  std::string host = rest;
  int port = 0;
  if (!rest.empty() && rest.front() == '[') {
    auto close = rest.find(']');
    host = rest.substr(1, close == std::string::npos ? std::string::npos : close - 1);
    if (close != std::string::npos && close + 1 < rest.size() && rest[close + 1] == ':')
      port = std::atoi(rest.c_str() + close + 2);
  } else if (auto c = rest.rfind(':'); c != std::string::npos) {
    host = rest.substr(0, c);
    port = std::atoi(rest.c_str() + c + 1);
  } else {
    port = url.rfind("https", 0) == 0 ? 443 : 80;
  }
  return {host, port};
}

bool Loopback(const std::string& host) {
  return host == "127.0.0.1" || host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

}  // namespace

void AddTargetOptions(CLI::App* sub, std::string& url, std::string& run_dir) {
  sub->add_option("--url", url,
                  "Server base URL, e.g. http://127.0.0.1:8000 (default: the server `ppdeploy start` started, from "
                  "the run state)");
  AddRunDirOption(sub, run_dir);
}

ServerTarget ResolveTarget(const std::string& url_flag, const std::string& run_dir_flag) {
  ServerTarget t;
  t.run_dir = EffectiveRunDir(run_dir_flag);
  std::optional<launch::RunState> state;
  try {
    state = launch::ReadRunState(t.run_dir);
  } catch (const Error&) {
    if (url_flag.empty()) throw;  // a malformed state matters only when we need it
  }
  if (url_flag.empty()) {
    if (!state)
      Fail("--url not given and nothing was started in {} (no {}): pass --url, or `ppdeploy start` first", t.run_dir,
           launch::StatePath(t.run_dir));
    t.url = launch::LocalBaseUrl(state->host, state->port);
    t.state = state;
    t.local = true;
    return t;
  }
  t.url = url_flag;
  while (t.url.size() > 1 && t.url.back() == '/') t.url.pop_back();
  const auto [host, port] = HostPort(t.url);
  t.local = Loopback(host);
  if (state && port == state->port && (Loopback(host) || host == state->host)) t.state = state;
  return t;
}

}  // namespace ppdeploy::cli
