#include "launch/ports.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ppdeploy::launch {
namespace {

bool AnyAddress(const std::string& host) { return host.empty() || host == "0.0.0.0" || host == "::" || host == "[::]"; }

std::string Unbracket(const std::string& host) {
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') return host.substr(1, host.size() - 2);
  return host;
}

// True when something accepts a TCP connection on addr within ~1 s.
bool Accepts(const sockaddr* addr, socklen_t len) {
  int fd = socket(addr->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return false;
  bool ok = false;
  if (connect(fd, addr, len) == 0) {
    ok = true;
  } else if (errno == EINPROGRESS) {
    pollfd p{fd, POLLOUT, 0};
    if (poll(&p, 1, 1000) == 1) {
      int err = 0;
      socklen_t el = sizeof err;
      ok = getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) == 0 && err == 0;
    }
  }
  close(fd);
  return ok;
}

}  // namespace

std::string PortHolder(const std::string& host_in, int port) {
  const std::string host = Unbracket(host_in);
  // 1. Does a server answer on the address clients use?
  const std::string connect_host = AnyAddress(host) ? "127.0.0.1" : host;
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const std::string service = std::to_string(port);
  if (getaddrinfo(connect_host.c_str(), service.c_str(), &hints, &res) == 0) {
    for (addrinfo* a = res; a != nullptr; a = a->ai_next) {
      if (Accepts(a->ai_addr, a->ai_addrlen)) {
        freeaddrinfo(res);
        return fmt::format("{}:{} accepts connections (another server listens there)", connect_host, port);
      }
    }
    freeaddrinfo(res);
  }
  // 2. Can the server's own address be bound?
  hints = addrinfo{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  res = nullptr;
  const std::string bind_host = AnyAddress(host) ? (host == "::" ? "::" : "0.0.0.0") : host;
  if (getaddrinfo(bind_host.c_str(), service.c_str(), &hints, &res) != 0) return "";  // vLLM will say what is wrong
  std::string why;
  for (addrinfo* a = res; a != nullptr && why.empty(); a = a->ai_next) {
    int fd = socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 && errno == EADDRINUSE)
      why = fmt::format("cannot bind {}:{}: {}", bind_host, port, std::strerror(EADDRINUSE));
    close(fd);
  }
  freeaddrinfo(res);
  return why;
}

}  // namespace ppdeploy::launch
