// The streaming client against the in-process simulator on 127.0.0.1 (ephemeral port). These tests check
// structure (token counts from the server's usage, one ITL value per token, error kinds) and hold on a loaded
// machine: no test asserts an upper wall-clock bound (issue 24: a stall bound of 10x failed beside a build).
// Timings are checked only where the sim makes them causal (a TTFT cannot come before the scheduled TTFT) and
// by order. Timing precision (how close the measured TTFT/ITL/TPOT come to the sim's configured values) and
// the 1000-stream stall are benchmarks, bench/client_timing_bench.cc and bench/sim_streams_bench.cc.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <thread>

#include "client/http.h"
#include "client/openai_client.h"
#include "core/error.h"
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
  q.timeout_s = 60;
  return q;
}

std::vector<RequestResult> RunAll(OpenAiClient& c, std::vector<ChatRequest> reqs, int conc) {
  std::vector<RequestResult> out;
  c.RunConcurrent(reqs, conc, [&](RequestResult&& r) { out.push_back(std::move(r)); });
  return out;
}

sim::SimOptions Timed(int tokens_per_chunk) {
  sim::SimOptions o;
  o.ttft_ms = 100;
  o.itl_ms = 10;
  o.tokens_per_chunk = tokens_per_chunk;
  return o;
}

// Streams from the sim at TTFT 100 ms, ITL 10 ms: exact token counts, one per-token ITL value per token after
// the first, and timings within 10x of the configured values (TTFT cannot come before 100 ms: the sim
// schedules the first token 100 ms after it admits the request, which is after the client sent it).
void CheckStreams(int concurrency, int tokens_per_chunk, int max_tokens, bool continuous_usage) {
  sim::SimServer server(Timed(tokens_per_chunk), "127.0.0.1", 0, 1);
  OpenAiClient c(server.url());
  int n = std::max(concurrency, 4);
  std::vector<ChatRequest> reqs;
  for (int i = 0; i < n; ++i) {
    reqs.push_back(Req("ppdeploy-sim", max_tokens, 100 + i));
    reqs.back().continuous_usage_stats = continuous_usage;
  }
  auto results = RunAll(c, reqs, concurrency);
  ASSERT_EQ(static_cast<int>(results.size()), n);
  int chunks = 1 + (max_tokens - 1 + tokens_per_chunk - 1) / tokens_per_chunk;
  for (const auto& r : results) {
    ASSERT_TRUE(r.ok()) << r.ErrorKey() << ": " << r.error_message;
    EXPECT_EQ(r.output_tokens, max_tokens);  // exact, from the server's usage
    EXPECT_EQ(r.output_tokens_source, TokenCountSource::kUsage);
    EXPECT_EQ(r.chunks, chunks);
    EXPECT_EQ(static_cast<int>(r.chunk_itl_ms.size()), chunks - 1);
    if (continuous_usage || tokens_per_chunk == 1) {
      EXPECT_TRUE(r.itl_exact);
      EXPECT_EQ(static_cast<int>(r.itl_ms.size()), max_tokens - 1);
    } else {
      EXPECT_FALSE(r.itl_exact);  // bundled chunks and no per-chunk usage: labelled approximate
    }
    EXPECT_GE(r.ttft_ms, 100.0);  // the sim writes the first token no earlier than its TTFT
    EXPECT_GE(r.e2el_ms, r.ttft_ms);
  }
  LevelResult L = SummarizeLevel(concurrency, results, 1000);
  EXPECT_EQ(L.ok, n);
}

TEST(SimClient, StreamsAtConcurrency1) { CheckStreams(1, 1, 16, false); }
TEST(SimClient, StreamsAtConcurrency16) { CheckStreams(16, 1, 16, false); }
// 4 tokens per chunk: with per-chunk usage the 40 ms gaps split into four ITLs each; 21 = 1 + 5 x 4 tokens.
TEST(SimClient, BundledChunksGivePerTokenItlWithContinuousUsage) { CheckStreams(4, 4, 21, true); }
TEST(SimClient, BundledChunksWithoutContinuousUsageAreLabelled) { CheckStreams(4, 4, 21, false); }

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
    reqs.back().timeout_s = 2.0;  // a stalled stream ends as a client timeout (others finish in ~ms: > 10x margin)
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
  EXPECT_GT(injected, 2);  // ~10 of 100 (binomial; fixed by --seed 3)
  EXPECT_LT(injected, 25);
  auto get = [&](const std::map<std::string, std::int64_t>& m, const std::string& k) {
    auto it = m.find(k);
    return it == m.end() ? 0 : it->second;
  };
  EXPECT_EQ(get(L.errors, "http_500"), get(faults, "500"));
  EXPECT_EQ(get(L.errors, "http_429"), get(faults, "429"));
  EXPECT_EQ(get(L.errors, "disconnect"), get(faults, "disconnect"));
  EXPECT_EQ(get(L.errors, "timeout"), get(faults, "stall"));
  // A failed request records when it failed and how long nothing had arrived: a stall holds the connection
  // after half the tokens, so it stalls until the 2 s timeout (at least, by construction of the timeout).
  for (const auto& r : results) {
    if (r.ok()) continue;
    EXPECT_GE(r.failed_at_ms, 0) << r.ErrorKey();
    EXPECT_GE(r.stalled_ms, 0) << r.ErrorKey();
    EXPECT_LE(r.stalled_ms, r.failed_at_ms + 1e-9);
    if (r.error_kind == RequestErrorKind::kTimeout) {
      EXPECT_GE(r.failed_at_ms, 2000.0);
      EXPECT_GT(r.stalled_ms, 0.0);
    }
  }
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
  EXPECT_NE(metrics.find("vllm:generation_tokens_total{engine=\"0\",model_name=\"ppdeploy-sim\"} 5.0"),
            std::string::npos);
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
  // Two run at once (TTFT >= 50 ms); two wait for a slot, freed no earlier than 50 ms, so their TTFT is
  // >= 100 ms by construction.
  EXPECT_GE(ttft[0], 50);
  EXPECT_GE(ttft[2], 100);
  EXPECT_EQ(server.counters().max_running, 2);
}

TEST(SimClient, ThousandConcurrentStreams) {
  rlimit rl{};
  getrlimit(RLIMIT_NOFILE, &rl);
  if (rl.rlim_cur < 2200) GTEST_SKIP() << "ulimit -n is " << rl.rlim_cur << "; this test needs >= 2200 descriptors";
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "1000 overlapping streams need an optimised build (this is an AddressSanitizer build)";
#endif
  sim::SimOptions o;
  // ITL 50 ms, 8 tokens, TTFT 10 s: each stream lives ~10.35 s, 30x the ~0.3 s the 1000 connects take on an idle
  // machine and 3x the worst seen (3.1 s, a Debug build beside 4 busy loops on 2 shared cores), so all 1000 overlap.
  o.ttft_ms = 10000;
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
  // The sim holds 1000 streams at once and every one completes. How late its writes come (the stall excess) is a
  // wall-clock figure that a loaded machine inflates (637 ms beside a build, issue 24): printed here, measured in
  // bench/sim_streams_bench.cc.
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
  {
    // Issue 15: the legacy flat error object in a 200 stream is an error, not 2 tokens of success.
    RawServer s(head +
                "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n"
                "data: {\"choices\":[{\"delta\":{\"content\":\" b\"}}]}\n\n"
                "data: {\"object\":\"error\",\"message\":\"engine died\",\"type\":\"InternalServerError\","
                "\"param\":null,\"code\":500}\n\ndata: [DONE]\n\n");
    RequestResult r = OpenAiClient(s.url()).Send(Req("m", 5));
    EXPECT_EQ(r.error_kind, RequestErrorKind::kServerError) << r.ErrorKey() << " " << r.error_message;
    EXPECT_EQ(r.error_message, "in-stream error: InternalServerError (code 500): engine died");
  }
  {
    // Non-streaming: an error object with status 200.
    std::string body = R"({"object":"error","message":"bad","type":"BadRequestError","param":null,"code":400})";
    RawServer s("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
                "\r\nConnection: close\r\n\r\n" + body);
    ChatRequest q = Req("m", 5);
    q.stream = false;
    RequestResult r = OpenAiClient(s.url()).Send(q);
    EXPECT_EQ(r.error_kind, RequestErrorKind::kServerError) << r.error_message;
    EXPECT_EQ(r.error_message, "error in the response body: BadRequestError (code 400): bad");
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
