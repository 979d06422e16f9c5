// libcurl implementation of client/http.h and client/openai_client.h.
#include <curl/curl.h>
#include <fmt/format.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <list>
#include <memory>
#include <mutex>

#include "client/http.h"
#include "client/openai_client.h"
#include "client/openai_stream.h"
#include "client/sse.h"
#include "core/error.h"

namespace ppdeploy::client {
namespace {

using Clock = std::chrono::steady_clock;
constexpr std::size_t kMaxErrorBody = 4096;
constexpr std::size_t kMaxBody = 64u << 20;

double MsSince(Clock::time_point t0, Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(t - t0).count();
}

std::string NormaliseBase(std::string base) {
  while (!base.empty() && base.back() == '/') base.pop_back();
  if (base.size() >= 3 && base.compare(base.size() - 3, 3, "/v1") == 0) base.resize(base.size() - 3);
  return base;
}

// The body of one response, cut at kMaxBody: a longer one aborts the transfer (CURLE_WRITE_ERROR) and
// `over_cap` says why, so the error names the cap instead of curl's "Failed writing received data".
struct BodySink {
  std::string* body = nullptr;
  bool over_cap = false;
};

size_t AppendBody(char* data, size_t size, size_t n, void* user) {
  auto* sink = static_cast<BodySink*>(user);
  size_t len = size * n;
  if (sink->body->size() + len > kMaxBody) {
    sink->over_cap = true;
    return 0;
  }
  sink->body->append(data, len);
  return len;
}

RequestErrorKind KindOfCurlCode(CURLcode code) {
  switch (code) {
    case CURLE_OPERATION_TIMEDOUT:
      return RequestErrorKind::kTimeout;
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
      return RequestErrorKind::kConnect;
    case CURLE_URL_MALFORMAT:
    case CURLE_UNSUPPORTED_PROTOCOL:
      return RequestErrorKind::kBadUrl;
    case CURLE_PARTIAL_FILE:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
      return RequestErrorKind::kDisconnect;
    default:
      return RequestErrorKind::kOther;
  }
}

// CURLOPT_XFERINFOFUNCTION: a non-zero return aborts the transfer (CURLE_ABORTED_BY_CALLBACK).
int CancelCheck(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  const auto* cancel = static_cast<const std::atomic<bool>*>(user);
  return cancel->load(std::memory_order_relaxed) ? 1 : 0;
}

class CurlHttpClient : public HttpClient {
 public:
  CurlHttpClient(std::string api_key, const std::atomic<bool>* cancel) : api_key_(std::move(api_key)), cancel_(cancel) {
    EnsureCurlInitialised();
  }
  HttpResponse Get(const std::string& url, double timeout_s) override { return Do(url, nullptr, timeout_s); }
  HttpResponse PostJson(const std::string& url, const nlohmann::json& body, double timeout_s) override {
    std::string text = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    return Do(url, &text, timeout_s);
  }

 private:
  HttpResponse Do(const std::string& url, const std::string* body, double timeout_s) {
    HttpResponse resp;
    auto t0 = Clock::now();
    if (cancel_ != nullptr && cancel_->load()) {
      resp.cancelled = true;
      resp.error = "cancelled: interrupted before the request was sent";
      return resp;
    }
    CURL* easy = curl_easy_init();
    if (easy == nullptr) {
      resp.error = "curl_easy_init failed";
      return resp;
    }
    curl_slist* headers = nullptr;
    headers = curl_slist_append(headers, "Content-Type: application/json");
    headers = curl_slist_append(headers, "Expect:");
    std::string auth;
    if (!api_key_.empty()) {
      auth = "Authorization: Bearer " + api_key_;
      headers = curl_slist_append(headers, auth.c_str());
    }
    curl_easy_setopt(easy, CURLOPT_URL, url.c_str());
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout_s * 1000));
    curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(std::min(timeout_s, 10.0) * 1000));
    BodySink sink{&resp.body};
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, AppendBody);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, &sink);
    if (cancel_ != nullptr) {
      curl_easy_setopt(easy, CURLOPT_XFERINFOFUNCTION, CancelCheck);
      curl_easy_setopt(easy, CURLOPT_XFERINFODATA, const_cast<std::atomic<bool>*>(cancel_));
      curl_easy_setopt(easy, CURLOPT_NOPROGRESS, 0L);
    }
    if (body != nullptr) {
      curl_easy_setopt(easy, CURLOPT_POSTFIELDS, body->c_str());
      curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body->size()));
    }
    CURLcode code = curl_easy_perform(easy);
    long status = 0;
    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
    resp.status = static_cast<int>(status);
    if (code == CURLE_ABORTED_BY_CALLBACK) {
      resp.cancelled = true;
      resp.error = "cancelled: interrupted while the request was in flight";
    } else if (code == CURLE_WRITE_ERROR && sink.over_cap) {
      resp.error = fmt::format("the response body exceeds the cap of {} bytes ({} MiB): not read further", kMaxBody,
                               kMaxBody >> 20);
    } else if (code != CURLE_OK) {
      resp.error = std::string(ErrorKindName(KindOfCurlCode(code))) + ": " + curl_easy_strerror(code);
    }
    curl_slist_free_all(headers);
    curl_easy_cleanup(easy);
    resp.elapsed_ms = MsSince(t0, Clock::now());
    return resp;
  }
  std::string api_key_;
  const std::atomic<bool>* cancel_ = nullptr;
};

// One in-flight streaming request.
struct Transfer {
  CURL* easy = nullptr;
  curl_slist* headers = nullptr;
  std::string body;
  std::string auth;
  std::string url;
  bool stream = true;
  RequestResult result;
  SseParser parser;
  std::unique_ptr<StreamAccumulator> acc;
  std::vector<SseEvent> events;
  std::string raw;  // non-streaming body, or the body of an HTTP error
  Clock::time_point t0;
  double last_byte_ms = -1;
  long status = -1;
  bool aborted_by_parser = false;
  std::list<std::unique_ptr<Transfer>>::iterator self;  // its place in the in-flight list

  ~Transfer() {
    if (headers != nullptr) curl_slist_free_all(headers);
  }
};

size_t OnStreamData(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  size_t len = size * n;
  auto now = Clock::now();
  double t_ms = MsSince(t->t0, now);
  t->last_byte_ms = t_ms;
  if (t->status < 0) {
    long status = 0;
    curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &status);
    t->status = status;
  }
  if (t->status < 200 || t->status >= 300) {
    if (t->raw.size() < kMaxErrorBody) t->raw.append(data, std::min(len, kMaxErrorBody - t->raw.size()));
    return len;
  }
  if (!t->stream) {
    if (t->raw.size() + len > kMaxBody) return 0;
    t->raw.append(data, len);
    return len;
  }
  t->events.clear();
  bool ok = t->parser.Feed(std::string_view(data, len), t->events);
  for (const auto& ev : t->events) {
    if (!t->acc->OnEvent(ev, t_ms)) {
      t->aborted_by_parser = true;
      return 0;
    }
  }
  if (!ok) {
    t->result.error_kind = RequestErrorKind::kMalformedSse;
    t->result.error_message = "malformed event stream: " + t->parser.error();
    t->aborted_by_parser = true;
    return 0;
  }
  return len;
}

void FinishNonStreaming(Transfer& t) {
  RequestResult& r = t.result;
  r.e2el_ms = t.last_byte_ms;
  nlohmann::json body = nlohmann::json::parse(t.raw, nullptr, false);
  if (body.is_discarded() || !body.is_object()) {
    r.error_kind = RequestErrorKind::kMalformedSse;
    r.error_message = "response body is not a JSON object: " + t.raw.substr(0, 200);
    return;
  }
  r.response = body;
  if (auto err = ErrorInChunk(body)) {  // vLLM's error shapes on a 200 answer
    r.error_kind = RequestErrorKind::kServerError;
    r.error_message = "error in the response body: " + *err;
    return;
  }
  if (auto c = body.find("choices"); c != body.end() && c->is_array() && !c->empty() && (*c)[0].is_object()) {
    const auto& ch = (*c)[0];
    if (auto m = ch.find("message"); m != ch.end() && m->is_object()) {
      if (auto content = m->find("content"); content != m->end() && content->is_string())
        r.text = content->get<std::string>();
      if (auto tc = m->find("tool_calls"); tc != m->end() && tc->is_array()) r.tool_calls = *tc;
    } else if (auto text = ch.find("text"); text != ch.end() && text->is_string()) {
      r.text = text->get<std::string>();
    }
    if (auto fr = ch.find("finish_reason"); fr != ch.end() && fr->is_string()) r.finish_reason = fr->get<std::string>();
  }
  if (auto u = body.find("usage"); u != body.end() && u->is_object()) {
    if (u->contains("completion_tokens") && (*u)["completion_tokens"].is_number_integer()) {
      r.output_tokens = (*u)["completion_tokens"].get<std::int64_t>();
      r.output_tokens_source = TokenCountSource::kUsage;
    }
    if (u->contains("prompt_tokens") && (*u)["prompt_tokens"].is_number_integer()) {
      r.input_tokens = (*u)["prompt_tokens"].get<std::int64_t>();
      r.input_tokens_source = TokenCountSource::kUsage;
    }
  }
  r.ttft_ms = r.e2el_ms;  // no stream: the first token is seen with the whole answer
  r.last_token_ms = r.e2el_ms;
  if (r.output_tokens >= 2) r.tpot_ms = 0;  // (last token - TTFT) / (n - 1): no decode phase is visible
}

// A failed request: when it failed and how long nothing had arrived (since its last byte, or since the
// transfer started when no byte came).
void MarkFailure(Transfer& t, double last_byte_ms, Clock::time_point now) {
  RequestResult& r = t.result;
  if (r.ok()) return;
  r.failed_at_ms = MsSince(t.t0, now);
  r.stalled_ms = std::max(0.0, r.failed_at_ms - (last_byte_ms >= 0 ? last_byte_ms : r.send_lateness_ms));
}

void CompleteResult(Transfer& t, CURLcode code, Clock::time_point now) {
  RequestResult& r = t.result;
  long status = 0;
  curl_easy_getinfo(t.easy, CURLINFO_RESPONSE_CODE, &status);
  r.http_status = static_cast<int>(status);
  curl_off_t connect_us = 0;
  if (curl_easy_getinfo(t.easy, CURLINFO_CONNECT_TIME_T, &connect_us) == CURLE_OK) r.connect_ms = connect_us / 1000.0;
  if (t.last_byte_ms < 0) t.last_byte_ms = MsSince(t.t0, now);
  bool transport_ok = code == CURLE_OK;
  if (!transport_ok && !t.aborted_by_parser && r.ok()) {
    r.error_kind = KindOfCurlCode(code);
    r.error_message = std::string(curl_easy_strerror(code)) + " (curl " + std::to_string(static_cast<int>(code)) + ")";
    if (code == CURLE_OPERATION_TIMEDOUT)
      r.error_message = "timed out after " + std::to_string(static_cast<long>(MsSince(t.t0, now))) + " ms";
  }
  if (status != 0 && (status < 200 || status >= 300)) {
    r.error_kind = RequestErrorKind::kHttp;
    r.error_message = t.raw;
    r.e2el_ms = t.last_byte_ms;
    return;
  }
  if (t.stream) {
    t.acc->Finish(t.last_byte_ms, transport_ok && !t.aborted_by_parser);
    if (t.parser.HasPartial() && r.ok() && !t.acc->done()) {
      r.error_kind = RequestErrorKind::kDisconnect;
      r.error_message = "stream ended inside an event";
    }
  } else if (transport_ok) {
    FinishNonStreaming(t);
  } else {
    r.e2el_ms = t.last_byte_ms;
  }
}

// Completes a transfer's result after curl reported `code`.
void Complete(Transfer& t, CURLcode code, Clock::time_point now) {
  double last_byte_ms = t.last_byte_ms;
  CompleteResult(t, code, now);
  MarkFailure(t, last_byte_ms, now);
}

// curl multi handle driven by epoll through curl_multi_socket_action: each wake-up costs O(active sockets),
// not O(transfers) as curl_multi_perform + curl_multi_poll do (which stalled 1000 concurrent streams).
struct MultiState {
  CURLM* multi = nullptr;
  int epfd = -1;
  bool timer_set = false;
  Clock::time_point timer_due;

  MultiState() {
    multi = curl_multi_init();
    epfd = epoll_create1(EPOLL_CLOEXEC);
    if (multi == nullptr || epfd < 0) Fail("cannot create the curl multi handle / epoll instance");
    curl_multi_setopt(multi, CURLMOPT_SOCKETFUNCTION, OnSocket);
    curl_multi_setopt(multi, CURLMOPT_SOCKETDATA, this);
    curl_multi_setopt(multi, CURLMOPT_TIMERFUNCTION, OnTimer);
    curl_multi_setopt(multi, CURLMOPT_TIMERDATA, this);
  }
  ~MultiState() {
    curl_multi_cleanup(multi);
    close(epfd);
  }
  MultiState(const MultiState&) = delete;
  MultiState& operator=(const MultiState&) = delete;

  static int OnSocket(CURL*, curl_socket_t s, int what, void* userp, void* socketp) {
    auto* st = static_cast<MultiState*>(userp);
    if (what == CURL_POLL_REMOVE) {
      epoll_ctl(st->epfd, EPOLL_CTL_DEL, s, nullptr);
      curl_multi_assign(st->multi, s, nullptr);
      return 0;
    }
    epoll_event ev{};
    ev.events = ((what & CURL_POLL_IN) != 0 ? EPOLLIN : 0u) | ((what & CURL_POLL_OUT) != 0 ? EPOLLOUT : 0u);
    ev.data.fd = s;
    if (socketp == nullptr) {
      if (epoll_ctl(st->epfd, EPOLL_CTL_ADD, s, &ev) != 0 && errno == EEXIST)
        epoll_ctl(st->epfd, EPOLL_CTL_MOD, s, &ev);
      curl_multi_assign(st->multi, s, st);
    } else if (epoll_ctl(st->epfd, EPOLL_CTL_MOD, s, &ev) != 0 && errno == ENOENT) {
      epoll_ctl(st->epfd, EPOLL_CTL_ADD, s, &ev);
    }
    return 0;
  }
  static int OnTimer(CURLM*, long timeout_ms, void* userp) {
    auto* st = static_cast<MultiState*>(userp);
    st->timer_set = timeout_ms >= 0;
    if (st->timer_set) st->timer_due = Clock::now() + std::chrono::milliseconds(timeout_ms);
    return 0;
  }

  /// Waits up to `max_wait_ms` for socket activity or curl's timer and lets curl act on it.
  void Step(int max_wait_ms) {
    int wait = max_wait_ms;
    if (timer_set) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(timer_due - Clock::now()).count();
      wait = static_cast<int>(std::clamp<std::int64_t>(left, 0, max_wait_ms));
    }
    epoll_event events[256];
    int n = epoll_wait(epfd, events, 256, wait);
    int running = 0;
    for (int i = 0; i < n; ++i) {
      int mask = ((events[i].events & EPOLLIN) != 0 ? CURL_CSELECT_IN : 0) |
                 ((events[i].events & EPOLLOUT) != 0 ? CURL_CSELECT_OUT : 0) |
                 ((events[i].events & (EPOLLERR | EPOLLHUP)) != 0 ? CURL_CSELECT_ERR : 0);
      curl_multi_socket_action(multi, events[i].data.fd, mask, &running);
    }
    if (timer_set && Clock::now() >= timer_due) {
      timer_set = false;
      curl_multi_socket_action(multi, CURL_SOCKET_TIMEOUT, 0, &running);
    }
  }
};

}  // namespace

void EnsureCurlInitialised() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

nlohmann::json HttpResponse::Json(const std::string& url) const {
  if (!error.empty()) Fail("{}: {}", url, error);
  if (status < 200 || status >= 300) Fail("{}: HTTP {}: {}", url, status, body.substr(0, 300));
  nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded()) Fail("{}: response is not JSON: {}", url, body.substr(0, 200));
  return j;
}

std::unique_ptr<HttpClient> MakeCurlHttpClient(std::string api_key, const std::atomic<bool>* cancel) {
  return std::make_unique<CurlHttpClient>(std::move(api_key), cancel);
}

std::string JoinUrl(const std::string& base, const std::string& path) {
  std::string b = base;
  while (!b.empty() && b.back() == '/') b.pop_back();
  if (!path.empty() && path.front() != '/') b.push_back('/');
  return b + path;
}

const char* EndpointName(Endpoint e) { return e == Endpoint::kChat ? "chat" : "completions"; }
const char* EndpointPath(Endpoint e) { return e == Endpoint::kChat ? "/v1/chat/completions" : "/v1/completions"; }

nlohmann::json BuildRequestBody(const ChatRequest& q) {
  nlohmann::json body = {{"model", q.model}};
  if (q.endpoint == Endpoint::kChat) {
    body["messages"] = q.messages;
  } else {
    body["prompt"] = q.prompt;
  }
  if (q.max_tokens) body["max_tokens"] = *q.max_tokens;
  if (q.min_tokens) body["min_tokens"] = *q.min_tokens;
  if (q.ignore_eos) body["ignore_eos"] = true;
  if (q.temperature) body["temperature"] = *q.temperature;
  if (q.top_p) body["top_p"] = *q.top_p;
  if (q.seed) body["seed"] = *q.seed;
  body["stream"] = q.stream;
  if (q.stream && (q.include_usage || q.continuous_usage_stats)) {
    nlohmann::json so = nlohmann::json::object();
    if (q.include_usage) so["include_usage"] = true;
    if (q.continuous_usage_stats) so["continuous_usage_stats"] = true;
    body["stream_options"] = so;
  }
  if (q.extra_body.is_object()) {
    for (auto it = q.extra_body.begin(); it != q.extra_body.end(); ++it) body[it.key()] = it.value();
  }
  return body;
}

OpenAiClient::OpenAiClient(ClientOptions options) : options_(std::move(options)) {
  options_.base_url = NormaliseBase(options_.base_url);
  EnsureCurlInitialised();
  multi_ = std::make_shared<MultiState>();
}

RequestResult OpenAiClient::Send(const ChatRequest& request) {
  RequestResult out;
  bool got = false;
  RunConcurrent(std::vector<ChatRequest>{request}, 1, [&](RequestResult&& r) {
    out = std::move(r);
    got = true;
  });
  if (!got) {
    out.error_kind = RequestErrorKind::kOther;
    out.error_message = "no result";
  }
  return out;
}

RunSummary OpenAiClient::RunConcurrent(const std::vector<ChatRequest>& requests, int concurrency,
                                       const OnResult& on_result, const std::atomic<bool>* stop) {
  std::size_t i = 0;
  return RunConcurrent(
      [&]() -> std::optional<ChatRequest> {
        if (i >= requests.size()) return std::nullopt;
        return requests[i++];
      },
      concurrency, on_result, stop);
}

RunSummary OpenAiClient::RunConcurrent(const NextRequest& next, int concurrency, const OnResult& on_result,
                                       const std::atomic<bool>* stop, double deadline_ms) {
  RunLimits limits;
  limits.max_in_flight = std::max(1, concurrency);
  limits.deadline_ms = deadline_ms;
  return Run(next, limits, on_result, stop);
}

RunSummary OpenAiClient::Run(const NextRequest& next, const RunLimits& limits, const OnResult& on_result,
                             const std::atomic<bool>* stop) {
  RunSummary summary;
  const int cap = std::max(0, limits.max_in_flight);
  auto* state = static_cast<MultiState*>(multi_.get());
  CURLM* multi = state->multi;
  int want_connections = cap > 0 ? cap : 1024;
  if (want_connections > max_connections_) {
    max_connections_ = want_connections;
    curl_multi_setopt(multi, CURLMOPT_MAXCONNECTS, static_cast<long>(want_connections) * 2 + 8);
  }
  std::list<std::unique_ptr<Transfer>> inflight;
  auto run_start = Clock::now();
  bool exhausted = false;
  std::optional<ChatRequest> pending;  // fetched from `next`, not yet due

  auto stopping = [&] {
    return (stop != nullptr && stop->load(std::memory_order_relaxed)) ||
           (limits.abort != nullptr && limits.abort->load(std::memory_order_relaxed));
  };
  auto now_ms = [&] { return MsSince(run_start, Clock::now()); };
  auto slot_free = [&] { return cap == 0 || static_cast<int>(inflight.size()) < cap; };

  auto start_one = [&](ChatRequest&& q) {
    auto t = std::make_unique<Transfer>();
    t->easy = curl_easy_init();
    if (t->easy == nullptr) Fail("curl_easy_init failed");
    t->url = options_.base_url + EndpointPath(q.endpoint);
    t->body = BuildRequestBody(q).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    t->stream = q.stream;
    t->result.index = q.tag;
    t->result.warmup = q.warmup;
    t->result.requested_input_tokens = q.requested_input_tokens;
    t->result.requested_output_tokens = q.max_tokens.value_or(-1);
    t->acc = std::make_unique<StreamAccumulator>(t->result);
    t->headers = curl_slist_append(t->headers, "Content-Type: application/json");
    t->headers = curl_slist_append(t->headers, "Expect:");
    if (q.stream) t->headers = curl_slist_append(t->headers, "Accept: text/event-stream");
    if (!options_.api_key.empty()) {
      t->auth = "Authorization: Bearer " + options_.api_key;
      t->headers = curl_slist_append(t->headers, t->auth.c_str());
    }
    CURL* e = t->easy;
    curl_easy_setopt(e, CURLOPT_URL, t->url.c_str());
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, t->headers);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, t->body.c_str());
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(t->body.size()));
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, OnStreamData);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, t.get());
    curl_easy_setopt(e, CURLOPT_PRIVATE, t.get());
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, static_cast<long>(q.timeout_s * 1000));
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(options_.connect_timeout_s * 1000));
    curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
    Clock::time_point now = Clock::now();
    // Times are measured from the intended send time: the scheduled arrival (open loop) or now (closed loop).
    t->t0 = q.scheduled_ms >= 0 ? run_start + std::chrono::duration_cast<Clock::duration>(
                                                  std::chrono::duration<double, std::milli>(q.scheduled_ms))
                                : now;
    if (t->t0 > now) t->t0 = now;
    t->result.send_offset_ms = MsSince(run_start, t->t0);
    t->result.send_lateness_ms = MsSince(t->t0, now);
    if (summary.first_send_ms < 0) summary.first_send_ms = MsSince(run_start, now);
    curl_multi_add_handle(multi, e);
    // Start the transfer now (on a kept-alive connection curl writes the request in this call), so that the
    // intended send time is when the request leaves, not after the next requests of a burst have been built.
    int running = 0;
    curl_multi_socket_action(multi, CURL_SOCKET_TIMEOUT, 0, &running);
    ++summary.started;
    inflight.push_back(std::move(t));
    inflight.back()->self = std::prev(inflight.end());
    summary.peak_in_flight = std::max<std::int64_t>(summary.peak_in_flight, static_cast<std::int64_t>(inflight.size()));
  };

  auto deliver = [&](Transfer& t) {
    curl_multi_remove_handle(multi, t.easy);
    curl_easy_cleanup(t.easy);
    t.easy = nullptr;
    ++summary.finished;
    summary.wall_ms = now_ms();
    on_result(std::move(t.result));
  };

  auto cancel_all = [&](const char* why) {
    Clock::time_point now = Clock::now();
    for (auto& t : inflight) {
      t->result.error_kind = RequestErrorKind::kCancelled;
      t->result.error_message = why;
      double last_byte_ms = t->last_byte_ms;
      t->result.e2el_ms = MsSince(t->t0, now);
      MarkFailure(*t, last_byte_ms, now);
      ++summary.abandoned;
      deliver(*t);
    }
    inflight.clear();
  };

  // Starts what is due; returns the ms until the pending request is due (-1: nothing to wait for).
  auto refill = [&]() -> double {
    while (!exhausted && !stopping() && slot_free()) {
      if (!pending) {
        if (limits.deadline_ms > 0 && now_ms() >= limits.deadline_ms) {
          exhausted = true;
          break;
        }
        pending = next();
        if (!pending) {
          exhausted = true;
          break;
        }
      }
      double due = pending->scheduled_ms;
      if (due >= 0) {
        if (limits.deadline_ms > 0 && due >= limits.deadline_ms) {
          pending.reset();
          exhausted = true;
          break;
        }
        double wait = due - now_ms();
        if (wait > 0) return wait;
      }
      start_one(std::move(*pending));
      pending.reset();
    }
    return -1;
  };

  try {
    double wait = refill();
    for (;;) {
      int left = 0;
      while (CURLMsg* msg = curl_multi_info_read(multi, &left)) {
        if (msg->msg != CURLMSG_DONE) continue;
        Transfer* tp = nullptr;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &tp);
        Complete(*tp, msg->data.result, Clock::now());
        std::unique_ptr<Transfer> owned = std::move(*tp->self);
        inflight.erase(owned->self);
        deliver(*owned);
      }
      if (stopping()) {
        cancel_all("run interrupted while the request was in flight");
        break;
      }
      if (limits.hard_deadline_ms > 0 && now_ms() >= limits.hard_deadline_ms) {
        exhausted = true;
        pending.reset();
        cancel_all("still in flight at the phase's hard deadline");
        break;
      }
      wait = refill();
      if (inflight.empty() && (exhausted || !pending)) break;
      int step_ms = 20;
      if (wait >= 0) step_ms = static_cast<int>(std::clamp(std::ceil(wait), 0.0, 20.0));
      if (limits.hard_deadline_ms > 0)
        step_ms = static_cast<int>(
            std::clamp(std::ceil(limits.hard_deadline_ms - now_ms()), 0.0, static_cast<double>(step_ms)));
      state->Step(step_ms);
    }
  } catch (...) {
    for (auto& t : inflight) {
      curl_multi_remove_handle(multi, t->easy);
      curl_easy_cleanup(t->easy);
    }
    throw;
  }
  return summary;
}

}  // namespace ppdeploy::client
