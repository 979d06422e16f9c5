// libFuzzer target: SSE framing + OpenAI chunk interpretation must never crash, hang or grow without bound,
// whatever bytes arrive and however they are split. Build: scripts/fuzz.sh (clang-14).
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "client/openai_stream.h"
#include "client/sse.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  // The first byte picks the piece size, so the same stream is also fed in small fragments.
  std::size_t piece = 1 + data[0] % 64;
  std::string_view bytes(reinterpret_cast<const char*>(data + 1), size - 1);
  ppdeploy::client::SseParser parser(4096);
  ppdeploy::RequestResult result;
  ppdeploy::client::StreamAccumulator acc(result);
  std::vector<ppdeploy::client::SseEvent> events;
  double t = 0;
  bool alive = true;
  for (std::size_t i = 0; i < bytes.size() && alive; i += piece) {
    events.clear();
    alive = parser.Feed(bytes.substr(i, piece), events);
    for (const auto& ev : events) {
      t += 1;
      if (!acc.OnEvent(ev, t)) {
        alive = false;
        break;
      }
    }
  }
  acc.Finish(t + 1, alive);
  return 0;
}
