// Boost.Beast lives only in this translation unit (it compiles slowly).
#include "sim/sim_server.h"

#include <fmt/format.h>

#include <boost/asio.hpp>
#include <boost/asio/experimental/as_tuple.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_set>

#include "core/error.h"

namespace ppdeploy::sim {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
constexpr auto kUse = asio::experimental::as_tuple(asio::use_awaitable);

// vLLM metrics.py TTFT buckets (seconds), vLLM 0.6-0.11.
const char* const kTextPlain = "text/plain";
const char* const kPromText = "text/plain; version=0.0.4";
const char* const kJson = "application/json";

const std::vector<double> kTtftBuckets = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,  0.25,  0.5,   0.75,
                                          1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
// vLLM loggers.py vllm:time_per_output_token_seconds / vllm:inter_token_latency_seconds buckets (seconds).
const std::vector<double> kItlBuckets = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,  0.3,  0.4, 0.5,
                                         0.75, 1.0,   2.5,  5.0,   7.5, 10.0, 20.0, 40.0, 80.0};
// vLLM metrics.py request latency buckets (seconds).
const std::vector<double> kLatencyBuckets = {0.3,  0.5,  0.8,  1.0,  1.5,   2.0,   2.5,   5.0,   10.0,   15.0,  20.0,
                                             30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};

struct Histogram {
  std::vector<double> bounds;
  std::vector<std::int64_t> counts;  // per bucket (non-cumulative), last = +Inf
  double sum = 0;
  std::int64_t count = 0;
  explicit Histogram(std::vector<double> b) : bounds(std::move(b)), counts(bounds.size() + 1, 0) {}
  void Observe(double v) {
    std::size_t i = 0;
    while (i < bounds.size() && v > bounds[i]) ++i;
    ++counts[i];
    sum += v;
    ++count;
  }
};

std::int64_t UnixNow() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

struct SimServer::Impl {
  // Declaration order matters: everything a coroutine frame touches when it is destroyed (Releaser -> Release())
  // is declared before `ioc`, so it is still alive while ~io_context destroys the pending frames.
  SimEngine engine;
  std::string host;
  Clock::time_point started = Clock::now();
  std::atomic<std::uint64_t> request_number{0};
  std::atomic<bool> stopped{false};
  int port = 0;
  std::atomic<std::int64_t> max_lateness_us{0};
  std::atomic<std::int64_t> max_stall_us{0};

  mutable std::mutex mu;  // guards everything below up to `ioc`
  int running = 0;
  std::deque<std::shared_ptr<asio::steady_timer>> waiting;
  SimCounters counters;
  Histogram ttft{kTtftBuckets};
  Histogram e2e{kLatencyBuckets};
  Histogram itl{kItlBuckets};    // per-token gaps of the finished streams (the engine's decode step time)
  std::int64_t used_blocks = 0;  // KV blocks held by the admitted requests (prompt + output)
  std::map<std::string, std::int64_t> finished_by_reason;
  // Prefix cache: block hashes, evicted first-in first-out beyond --prefix-cache-blocks.
  std::unordered_set<std::uint64_t> cached_blocks;
  std::deque<std::uint64_t> cached_order;

  asio::io_context ioc;
  tcp::acceptor acceptor{ioc};
  std::vector<std::thread> threads;

  static void RaiseMax(std::atomic<std::int64_t>& m, std::int64_t v) {
    std::int64_t prev = m.load();
    while (v > prev && !m.compare_exchange_weak(prev, v)) {
    }
  }

  explicit Impl(SimOptions o) : engine(std::move(o)) {}
  ~Impl() {
    std::lock_guard lock(mu);
    waiting.clear();  // the timers now belong only to their (pending) coroutine frames
  }

  bool Starting() const {
    return std::chrono::duration<double>(Clock::now() - started).count() < engine.options().startup_delay_s;
  }

  asio::awaitable<void> Admit() {
    std::shared_ptr<asio::steady_timer> timer;
    {
      std::lock_guard lock(mu);
      if (running < engine.options().max_num_seqs) {
        ++running;
        counters.max_running = std::max<std::int64_t>(counters.max_running, running);
        co_return;
      }
      timer = std::make_shared<asio::steady_timer>(co_await asio::this_coro::executor, Clock::time_point::max());
      waiting.push_back(timer);
    }
    co_await timer->async_wait(kUse);  // cancelled by Release(): the slot is handed over
  }

  void Release() {
    std::lock_guard lock(mu);
    if (!waiting.empty()) {
      auto t = waiting.front();
      waiting.pop_front();
      asio::post(t->get_executor(), [t] { t->cancel(); });
    } else {
      --running;
    }
  }

  // Looks the prompt's leading blocks up (hits = the tokens of the cached leading blocks, as vLLM reuses the
  // longest cached prefix) and caches all of them. Caller holds `mu`.
  void PrefixCacheLookup(const Plan& plan) {
    std::int64_t cap = engine.options().prefix_cache_blocks;
    if (cap <= 0) return;
    counters.prefix_cache_queries += plan.prompt_tokens;
    bool leading = true;
    for (std::uint64_t h : plan.prompt_block_hashes) {
      bool hit = cached_blocks.count(h) > 0;
      leading = leading && hit;
      if (leading) counters.prefix_cache_hits += static_cast<std::int64_t>(kPrefixBlockTokens);
      if (!hit) {
        cached_blocks.insert(h);
        cached_order.push_back(h);
        if (static_cast<std::int64_t>(cached_order.size()) > cap) {
          cached_blocks.erase(cached_order.front());
          cached_order.pop_front();
        }
      }
    }
  }

  std::string Metrics() const {
    std::lock_guard lock(mu);
    std::string labels = fmt::format("engine=\"0\",model_name=\"{}\"", engine.options().model);
    std::string out;
    auto gauge = [&](const char* name, const char* help, double v) {
      out += fmt::format("# HELP {0} {1}\n# TYPE {0} gauge\n{0}{{{2}}} {3:.1f}\n", name, help, labels, v);
    };
    auto counter = [&](const char* name, const char* help, double v) {
      out += fmt::format("# HELP {0}_total {1}\n# TYPE {0}_total counter\n{0}_total{{{2}}} {3:.1f}\n", name, help,
                         labels, v);
    };
    auto histogram = [&](const char* name, const char* help, const Histogram& h) {
      out += fmt::format("# HELP {0} {1}\n# TYPE {0} histogram\n", name, help);
      std::int64_t cum = 0;
      for (std::size_t i = 0; i < h.bounds.size(); ++i) {
        cum += h.counts[i];
        out += fmt::format("{}_bucket{{{},le=\"{}\"}} {:.1f}\n", name, labels, h.bounds[i], static_cast<double>(cum));
      }
      cum += h.counts.back();
      out += fmt::format("{}_bucket{{{},le=\"+Inf\"}} {:.1f}\n", name, labels, static_cast<double>(cum));
      out += fmt::format("{}_sum{{{}}} {}\n{}_count{{{}}} {:.1f}\n", name, labels, h.sum, name, labels,
                         static_cast<double>(h.count));
    };
    gauge("vllm:num_requests_running", "Number of requests in model execution batches.", running);
    gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.",
          static_cast<double>(waiting.size()));
    const std::int64_t blocks = engine.NumGpuBlocks();
    gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.",
          blocks > 0 ? std::min(1.0, static_cast<double>(used_blocks) / static_cast<double>(blocks)) : 0.0);
    // vLLM's info gauge: CacheConfig.metrics_info() as labels (loggers.py log_metrics_info), no model_name label.
    const auto& o = engine.options();
    out += fmt::format(
        "# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig\n# TYPE vllm:cache_config_info gauge\n"
        "vllm:cache_config_info{{block_size=\"{}\",cache_dtype=\"{}\",enable_prefix_caching=\"{}\","
        "gpu_memory_utilization=\"{}\",num_cpu_blocks=\"0\",num_gpu_blocks=\"{}\",num_gpu_blocks_override=\"None\","
        "engine=\"0\"}} 1.0\n",
        o.block_size, o.kv_cache_dtype, o.prefix_cache_blocks > 0 ? "True" : "False", o.gpu_memory_utilization, blocks);
    counter("vllm:prompt_tokens", "Number of prefill tokens processed.", static_cast<double>(counters.prompt_tokens));
    counter("vllm:generation_tokens", "Number of generation tokens processed.",
            static_cast<double>(counters.generation_tokens));
    counter("vllm:prefix_cache_queries", "Prefix cache queries, in terms of number of queried tokens.",
            static_cast<double>(counters.prefix_cache_queries));
    counter("vllm:prefix_cache_hits", "Prefix cache hits, in terms of number of cached tokens.",
            static_cast<double>(counters.prefix_cache_hits));
    out +=
        "# HELP vllm:request_success_total Count of successfully processed requests.\n# TYPE "
        "vllm:request_success_total counter\n";
    for (const auto& [reason, n] : finished_by_reason)
      out += fmt::format("vllm:request_success_total{{{},finished_reason=\"{}\"}} {:.1f}\n", labels, reason,
                         static_cast<double>(n));
    histogram("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", ttft);
    histogram("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", e2e);
    // vLLM 0.11 writes both names with the same observations (time_per_output_token deprecated for the other).
    histogram("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", itl);
    histogram("vllm:time_per_output_token_seconds", "Histogram of time per output token in seconds.", itl);
    out +=
        "# HELP ppdeploy_sim:faults_injected_total Faults injected by ppdeploy sim.\n# TYPE "
        "ppdeploy_sim:faults_injected_total counter\n";
    for (const auto& [kind, n] : counters.faults)
      out += fmt::format("ppdeploy_sim:faults_injected_total{{{},kind=\"{}\"}} {:.1f}\n", labels, kind,
                         static_cast<double>(n));
    return out;
  }

  using Request = http::request<http::string_body>;

  static nlohmann::json BadJson() {
    return SimEngine::ErrorBody("request body is not valid JSON", "BadRequestError", 400);
  }

  static asio::awaitable<bool> WriteSimple(tcp::socket& socket, const Request& req, http::status status,
                                           std::string body, const char* content_type) {
    http::response<http::string_body> res{status, req.version()};
    res.set(http::field::server, "ppdeploy-sim");
    res.set(http::field::content_type, content_type);
    res.keep_alive(req.keep_alive());
    res.body() = std::move(body);
    res.prepare_payload();
    auto [ec, n] = co_await http::async_write(socket, res, kUse);
    (void)n;
    co_return !ec;
  }

  static asio::awaitable<bool> WriteJson(tcp::socket& socket, const Request& req, int status, const nlohmann::json& j) {
    co_return co_await WriteSimple(socket, req, static_cast<http::status>(status),
                                   j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), kJson);
  }

  // Answers one completion-style request. Returns false when the connection must be closed.
  asio::awaitable<bool> Complete(tcp::socket& socket, const Request& req, Api api) {
    nlohmann::json body = nlohmann::json::parse(req.body(), nullptr, false);
    if (body.is_discarded()) {
      {
        std::lock_guard lock(mu);
        ++counters.rejected;
      }
      nlohmann::json bad = BadJson();
      co_return co_await WriteJson(socket, req, 400, bad);
    }
    std::uint64_t number = request_number.fetch_add(1);
    Plan plan = engine.MakePlan(api, body, number, UnixNow());
    {
      std::lock_guard lock(mu);
      ++counters.requests;
      if (plan.fault != FaultKind::kNone) ++counters.faults[FaultKindName(plan.fault)];
      if (!plan.error) PrefixCacheLookup(plan);
      if (plan.error && plan.status < 500 && plan.status != 429) ++counters.rejected;
    }
    if (plan.error) co_return co_await WriteJson(socket, req, plan.status, plan.error_body);

    auto arrival = Clock::now();
    co_await Admit();
    struct Releaser {
      Impl* impl;
      ~Releaser() { impl->Release(); }
    } releaser{this};
    // The KV blocks the request holds while it runs (its prompt and its answer), for vllm:kv_cache_usage_perc.
    struct BlockHold {
      Impl* impl;
      std::int64_t n;
      ~BlockHold() {
        std::lock_guard lock(impl->mu);
        impl->used_blocks -= n;
      }
    } hold{this, 0};
    {
      const std::int64_t bs = std::max(1, engine.options().block_size);
      hold.n = (plan.prompt_tokens + static_cast<std::int64_t>(plan.tokens.size()) + bs - 1) / bs;
      std::lock_guard lock(mu);
      used_blocks += hold.n;
    }
    auto admitted = Clock::now();
    asio::steady_timer timer(co_await asio::this_coro::executor);
    auto at = [&](double ms) {
      return admitted + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::milli>(ms));
    };
    double total_ms = plan.ttft_ms;
    for (std::size_t i = 1; i < plan.itl_ms.size(); ++i) total_ms += plan.itl_ms[i];
    bool faulty = plan.fault == FaultKind::kDisconnect || plan.fault == FaultKind::kStall;

    auto close_fault = [&]() -> asio::awaitable<bool> {
      if (plan.fault == FaultKind::kStall) {
        timer.expires_at(Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                            std::chrono::duration<double, std::milli>(engine.options().stall_ms)));
        co_await timer.async_wait(kUse);
      }
      beast::error_code ec;
      socket.shutdown(tcp::socket::shutdown_both, ec);
      socket.close(ec);
      co_return false;
    };

    if (!plan.stream) {
      double wait_ms = faulty ? total_ms / 2 : total_ms;
      timer.expires_at(at(wait_ms));
      co_await timer.async_wait(kUse);
      if (faulty) co_return co_await close_fault();
      Record(plan, arrival, admitted);
      co_return co_await WriteJson(socket, req, 200, engine.ResponseBody(plan));
    }

    std::vector<StreamPart> parts = engine.StreamParts(plan);
    std::string out =
        "HTTP/1.1 200 OK\r\nServer: ppdeploy-sim\r\nContent-Type: text/event-stream; charset=utf-8\r\n"
        "Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n";
    out += req.keep_alive() ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n";
    std::size_t i = 0;
    bool first_write = true;
    int token_writes = 0;
    Clock::time_point last_write, last_due;
    while (i < parts.size() || first_write) {
      if (i < parts.size()) {
        auto due = at(parts[i].at_ms);
        if (due > Clock::now() && !first_write) {
          timer.expires_at(due);
          co_await timer.async_wait(kUse);
        } else if (due > Clock::now() && first_write) {
          // send the headers now (as Starlette's StreamingResponse does), the first part when due
        }
      }
      auto now = Clock::now();
      if (i < parts.size() && !first_write) {
        auto due_now = at(parts[i].at_ms);
        RaiseMax(max_lateness_us, std::chrono::duration_cast<std::chrono::microseconds>(now - due_now).count());
        if (token_writes > 0) {
          auto excess = (now - last_write) - (due_now - last_due);
          RaiseMax(max_stall_us, std::chrono::duration_cast<std::chrono::microseconds>(excess).count());
        }
        ++token_writes;
        last_write = now;
        last_due = due_now;
      }
      std::string payload;
      while (i < parts.size() && at(parts[i].at_ms) <= now) payload += parts[i++].bytes;
      if (!payload.empty()) out += fmt::format("{:x}\r\n{}\r\n", payload.size(), payload);
      if (i == parts.size() && !faulty) out += "0\r\n\r\n";
      if (!out.empty()) {
        auto [ec, n] = co_await asio::async_write(socket, asio::buffer(out), kUse);
        (void)n;
        if (ec) co_return false;
        out.clear();
      }
      first_write = false;
    }
    if (faulty) co_return co_await close_fault();
    Record(plan, arrival, admitted);
    co_return req.keep_alive();
  }

  void Record(const Plan& plan, Clock::time_point arrival, Clock::time_point admitted) {
    double queue_s = std::chrono::duration<double>(admitted - arrival).count();
    std::lock_guard lock(mu);
    ++counters.finished;
    counters.generation_tokens += static_cast<std::int64_t>(plan.tokens.size());
    counters.prompt_tokens += plan.prompt_tokens;
    if (plan.degenerate) ++counters.degenerate;
    ++finished_by_reason[plan.finish_reason];
    ttft.Observe(queue_s + plan.ttft_ms / 1000.0);
    for (std::size_t i = 1; i < plan.itl_ms.size(); ++i) itl.Observe(plan.itl_ms[i] / 1000.0);
    e2e.Observe(std::chrono::duration<double>(Clock::now() - arrival).count());
  }

  // Returns false when the connection must be closed.
  asio::awaitable<bool> Handle(tcp::socket& socket, const Request& req) {
    std::string target(req.target());
    if (auto q = target.find('?'); q != std::string::npos) target.resize(q);
    bool post = req.method() == http::verb::post;
    nlohmann::json error;
    try {
      if (target == "/health" || target == "/health/ready") {
        http::status st = Starting() ? http::status::service_unavailable : http::status::ok;
        co_return co_await WriteSimple(socket, req, st, std::string(), kTextPlain);
      }
      if (target == "/version") {
        nlohmann::json v = {{"version", engine.options().vllm_version}};
        co_return co_await WriteJson(socket, req, 200, v);
      }
      if (target == "/v1/models") co_return co_await WriteJson(socket, req, 200, engine.ModelsBody(UnixNow()));
      if (target == "/metrics") co_return co_await WriteSimple(socket, req, http::status::ok, Metrics(), kPromText);
      if (target == "/tokenize" && post) {
        nlohmann::json body = nlohmann::json::parse(req.body(), nullptr, false);
        nlohmann::json answer = body.is_discarded() ? BadJson() : engine.TokenizeBody(body);
        co_return co_await WriteJson(socket, req, body.is_discarded() ? 400 : 200, answer);
      }
      if (post && target == "/v1/chat/completions") co_return co_await Complete(socket, req, Api::kChat);
      if (post && target == "/v1/completions") co_return co_await Complete(socket, req, Api::kCompletions);
      if (post && target == "/v1/responses") co_return co_await Complete(socket, req, Api::kResponses);
    } catch (const std::exception& e) {
      error = SimEngine::ErrorBody(e.what(), std::string("BadRequestError"), 400);
    }
    if (!error.is_null()) co_return co_await WriteJson(socket, req, 400, error);
    nlohmann::json missing = SimEngine::ErrorBody("Not Found: " + target, std::string("NotFoundError"), 404);
    co_return co_await WriteJson(socket, req, 404, missing);
  }

  asio::awaitable<void> Session(tcp::socket socket) {
    beast::error_code ec;
    socket.set_option(tcp::no_delay(true), ec);
    beast::flat_buffer buffer;
    while (!stopped.load()) {
      http::request_parser<http::string_body> parser;
      parser.body_limit(512u << 20);
      parser.header_limit(64u << 10);
      auto [rec, n] = co_await http::async_read(socket, buffer, parser, kUse);
      (void)n;
      if (rec) break;
      Request req = parser.release();
      bool keep = co_await Handle(socket, req);
      if (!keep || !req.keep_alive()) break;
    }
    socket.shutdown(tcp::socket::shutdown_send, ec);
    socket.close(ec);
  }

  asio::awaitable<void> Accept() {
    while (!stopped.load()) {
      auto [ec, socket] = co_await acceptor.async_accept(asio::make_strand(ioc), kUse);
      if (ec) {
        if (ec == asio::error::operation_aborted || stopped.load()) break;
        continue;  // e.g. EMFILE: keep serving the open connections
      }
      {
        std::lock_guard lock(mu);
        ++counters.connections;
      }
      auto exec = socket.get_executor();
      asio::co_spawn(exec, Session(std::move(socket)), [](std::exception_ptr) {});
    }
  }
};

SimServer::SimServer(SimOptions options, const std::string& host, int port, int threads)
    : impl_(std::make_unique<Impl>(std::move(options))) {
  impl_->host = host;
  beast::error_code ec;
  auto address = asio::ip::make_address(host, ec);
  if (ec) Fail("--host: not an IP address: \"{}\" ({})", host, ec.message());
  if (port < 0 || port > 65535) Fail("--port: expected 0-65535, got {}", port);
  tcp::endpoint endpoint(address, static_cast<unsigned short>(port));
  auto& acc = impl_->acceptor;
  acc.open(endpoint.protocol(), ec);
  if (!ec) acc.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acc.bind(endpoint, ec);
  if (!ec) acc.listen(1024, ec);  // backlog >= 1024 (cpp-httplib's fixed 5 dropped bursts: docs/sources.md §6)
  if (ec) Fail("cannot listen on {}:{}: {}", host, port, ec.message());
  impl_->port = acc.local_endpoint().port();
  asio::co_spawn(impl_->ioc, impl_->Accept(), [](std::exception_ptr) {});
  impl_->started = Clock::now();
  for (int i = 0; i < std::max(1, threads); ++i) impl_->threads.emplace_back([this] { impl_->ioc.run(); });
}

SimServer::~SimServer() { Stop(); }

void SimServer::Stop() {
  if (impl_->stopped.exchange(true)) return;
  asio::post(impl_->ioc, [this] {
    beast::error_code ec;
    impl_->acceptor.close(ec);
  });
  impl_->ioc.stop();
  for (auto& t : impl_->threads) t.join();
  impl_->threads.clear();
}

int SimServer::port() const { return impl_->port; }

std::string SimServer::url() const {
  std::string h = impl_->host.find(':') != std::string::npos ? "[" + impl_->host + "]" : impl_->host;
  return fmt::format("http://{}:{}", h, port());
}

SimCounters SimServer::counters() const {
  std::lock_guard lock(impl_->mu);
  SimCounters c = impl_->counters;
  c.max_write_lateness_ms = static_cast<double>(impl_->max_lateness_us.load()) / 1000.0;
  c.max_stall_excess_ms = static_cast<double>(impl_->max_stall_us.load()) / 1000.0;
  return c;
}

const SimEngine& SimServer::engine() const { return impl_->engine; }

}  // namespace ppdeploy::sim
