// Whether a TCP port is free before `ppdeploy start` spawns a server on it: with another server on the port,
// vLLM would fail to bind after a long boot while `status` and `wait` talked to the other server.
#pragma once

#include <string>

namespace ppdeploy::launch {

/// "" when `port` looks free on `host` (the address vLLM binds: "", "0.0.0.0", "::" = every address); else why
/// not, e.g. "127.0.0.1:8000 accepts connections (another server listens there)" or "cannot bind 0.0.0.0:8000:
/// Address already in use". Checks both: a connection to the local address, then a bind with SO_REUSEADDR (so a
/// port in TIME_WAIT after a stopped server counts as free). Never throws.
std::string PortHolder(const std::string& host, int port);

}  // namespace ppdeploy::launch
