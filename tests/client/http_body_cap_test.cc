// Issue 24: an 80 MB /metrics body is reported as a body over the client's cap, naming the cap, instead of
// curl's "Failed writing received data to disk/application" (CURLE_WRITE_ERROR, which is what a write
// callback returning less than it was given produces; libcurl CURLOPT_WRITEFUNCTION).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "client/http.h"

namespace ppdeploy::client {
namespace {

// One loopback connection answered with `body_bytes` of 'a' (written until the client hangs up).
class BigBodyServer {
 public:
  explicit BigBodyServer(std::size_t body_bytes) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    listen(fd_, 1);
    socklen_t len = sizeof a;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this, body_bytes] { Serve(body_bytes); });
  }
  ~BigBodyServer() {
    thread_.join();
    close(fd_);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/metrics"; }

 private:
  void Serve(std::size_t body_bytes) {
    const int c = accept(fd_, nullptr, nullptr);
    if (c < 0) return;
    char req[4096];
    (void)!read(c, req, sizeof req);
    const std::string head =
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: " + std::to_string(body_bytes) +
        "\r\nConnection: close\r\n\r\n";
    send(c, head.data(), head.size(), MSG_NOSIGNAL);
    const std::string chunk(1 << 20, 'a');
    for (std::size_t sent = 0; sent < body_bytes;) {
      const ssize_t n = send(c, chunk.data(), std::min(chunk.size(), body_bytes - sent), MSG_NOSIGNAL);
      if (n <= 0) break;  // the client stopped reading at its cap
      sent += static_cast<std::size_t>(n);
    }
    close(c);
  }
  int fd_ = -1;
  int port_ = 0;
  std::thread thread_;
};

TEST(HttpBodyCapTest, ABodyOverTheCapNamesTheCap) {
  BigBodyServer server(80'000'000);
  const HttpResponse r = MakeCurlHttpClient()->Get(server.url(), 60.0);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.error, "the response body exceeds the cap of 67108864 bytes (64 MiB): not read further");
  EXPECT_LE(r.body.size(), std::size_t{64} << 20);
}

TEST(HttpBodyCapTest, ABodyUnderTheCapIsRead) {
  BigBodyServer server(3 << 20);
  const HttpResponse r = MakeCurlHttpClient()->Get(server.url(), 60.0);
  EXPECT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.body.size(), std::size_t{3} << 20);
}

}  // namespace
}  // namespace ppdeploy::client
