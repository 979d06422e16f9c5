#include "probes/backend.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>

#include "core/error.h"

namespace ppdeploy::probes {

std::vector<ChatResult> RunMany(ChatBackend& backend, const std::vector<ChatRequest>& requests, int concurrency,
                                const OnChatDone& on_done) {
  if (concurrency < 1) Fail("concurrency must be >= 1, got {}", concurrency);
  std::vector<ChatResult> results(requests.size());
  std::atomic<std::size_t> next{0};
  std::atomic<bool> stop{false};
  std::mutex done_mutex;
  std::exception_ptr callback_error;
  auto worker = [&] {
    while (!stop.load()) {
      const std::size_t i = next.fetch_add(1);
      if (i >= requests.size()) return;
      ChatResult r;
      try {
        r = backend.Chat(requests[i]);
      } catch (const std::exception& e) {
        r = ChatResult{};
        r.ok = false;
        r.error = e.what();
      }
      std::lock_guard<std::mutex> lock(done_mutex);
      results[i] = std::move(r);
      if (on_done && !callback_error) {
        try {
          on_done(i, results[i]);
        } catch (...) {
          callback_error = std::current_exception();
          stop.store(true);
        }
      }
    }
  };
  const std::size_t n_threads = std::min<std::size_t>(static_cast<std::size_t>(concurrency), requests.size());
  std::vector<std::thread> threads;
  threads.reserve(n_threads);
  for (std::size_t t = 0; t < n_threads; ++t) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  if (callback_error) std::rethrow_exception(callback_error);
  return results;
}

std::string AnswerText(const std::string& text) {
  std::string s = text;
  if (auto end = s.find("</think>"); end != std::string::npos) s = s.substr(end + 8);
  const auto first = s.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return "";
  const auto last = s.find_last_not_of(" \t\r\n");
  return s.substr(first, last - first + 1);
}

}  // namespace ppdeploy::probes
