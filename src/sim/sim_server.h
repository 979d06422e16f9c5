// The network side of `ppdeploy sim`: an HTTP/1.1 server (Boost.Asio + Beast, C++20 coroutines, listen backlog
// 1024, TCP_NODELAY, keep-alive) that serves what SimEngine plans. Beast is confined to sim_server.cc (pimpl).
//
// Endpoints: POST /v1/chat/completions, /v1/completions, /v1/responses, /tokenize; GET /v1/models, /health
// (503 during --startup-delay-s), /version, /metrics (vLLM-named Prometheus series). Streams are written on
// an absolute schedule (token i at admission + TTFT + sum of ITLs), so timer slack does not accumulate.
// Requests beyond --max-num-seqs wait in a FIFO queue; their waiting time adds to TTFT (as in vLLM).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "sim/sim_engine.h"

namespace ppdeploy::sim {

/// What the server has done so far (for tests and /metrics).
struct SimCounters {
  std::int64_t requests = 0;  ///< completion/response requests received
  std::int64_t finished = 0;  ///< answered completely
  std::int64_t rejected = 0;  ///< HTTP 4xx answers (bad request, context overflow, unknown model)
  std::int64_t degenerate = 0;
  std::int64_t generation_tokens = 0;
  std::int64_t prompt_tokens = 0;
  std::int64_t max_running = 0;           ///< peak of running requests
  std::int64_t connections = 0;           ///< accepted TCP connections
  std::int64_t prefix_cache_queries = 0;  ///< prompt tokens looked up in the prefix cache (vLLM counts tokens)
  std::int64_t prefix_cache_hits = 0;     ///< of them, tokens of cached leading blocks
  double max_write_lateness_ms = 0;       ///< worst delay of a stream write behind its absolute schedule
  double max_stall_excess_ms = 0;         ///< worst (actual - scheduled) gap between two token writes of one stream
  std::map<std::string, std::int64_t> faults;  ///< injected faults by kind ("500", "429", "disconnect", "stall")
};

class SimServer {
 public:
  /// Binds host:port (port 0 = an ephemeral port) and starts `threads` event-loop threads.
  /// Throws Error when the address cannot be bound.
  SimServer(SimOptions options, const std::string& host, int port, int threads = 2);
  ~SimServer();  ///< Stops the server.
  SimServer(const SimServer&) = delete;
  SimServer& operator=(const SimServer&) = delete;

  int port() const;
  /// "http://host:port".
  std::string url() const;
  SimCounters counters() const;
  const SimEngine& engine() const;
  /// Stops accepting, drops open connections, joins the threads. Idempotent.
  void Stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ppdeploy::sim
