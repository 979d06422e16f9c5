#include "client/openai_stream.h"

#include <nlohmann/json.hpp>

namespace ppdeploy::client {
namespace {

std::int64_t IntOr(const nlohmann::json& obj, const char* key, std::int64_t fallback) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_number_integer()) return fallback;
  return it->get<std::int64_t>();
}

// Merges a streamed tool-call delta into the assembled array (OpenAI streams id/name once, arguments in pieces).
void MergeToolCall(nlohmann::json& calls, const nlohmann::json& delta) {
  if (!delta.is_object()) return;
  std::size_t index = delta.contains("index") && delta["index"].is_number_unsigned() ? delta["index"].get<std::size_t>()
                                                                                     : calls.size();
  if (index > 1024) return;
  if (!calls.is_array()) calls = nlohmann::json::array();
  while (calls.size() <= index) calls.push_back({{"id", ""}, {"type", "function"}, {"function", {{"name", ""}, {"arguments", ""}}}});
  auto& call = calls[index];
  if (delta.contains("id") && delta["id"].is_string()) call["id"] = delta["id"];
  if (auto f = delta.find("function"); f != delta.end() && f->is_object()) {
    if (f->contains("name") && (*f)["name"].is_string())
      call["function"]["name"] = call["function"]["name"].get<std::string>() + (*f)["name"].get<std::string>();
    if (f->contains("arguments") && (*f)["arguments"].is_string())
      call["function"]["arguments"] =
          call["function"]["arguments"].get<std::string>() + (*f)["arguments"].get<std::string>();
  }
}

}  // namespace

bool StreamAccumulator::OnEvent(const SseEvent& event, double t_ms) {
  if (event.data == "[DONE]") {
    done_ = true;
    return true;
  }
  nlohmann::json chunk = nlohmann::json::parse(event.data, nullptr, /*allow_exceptions=*/false);
  if (chunk.is_discarded() || !chunk.is_object()) {
    r_.error_kind = RequestErrorKind::kMalformedSse;
    r_.error_message = "chunk is not a JSON object: " + event.data.substr(0, 200);
    return false;
  }
  if (auto err = chunk.find("error"); err != chunk.end() && !err->is_null()) {
    r_.error_kind = RequestErrorKind::kServerError;
    r_.error_message = err->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).substr(0, 4096);
    return false;
  }
  bool has_choices = false;
  bool carried_content = false;
  if (auto choices = chunk.find("choices"); choices != chunk.end() && choices->is_array() && !choices->empty()) {
    has_choices = true;
    const auto& c = (*choices)[0];
    if (c.is_object()) {
      if (auto d = c.find("delta"); d != c.end() && d->is_object()) {  // chat
        if (auto content = d->find("content"); content != d->end() && content->is_string() &&
                                               !content->get_ref<const std::string&>().empty()) {
          r_.text += content->get_ref<const std::string&>();
          carried_content = true;
        }
        if (auto rc = d->find("reasoning_content"); rc != d->end() && rc->is_string() &&
                                                    !rc->get_ref<const std::string&>().empty())
          carried_content = true;
        if (auto tc = d->find("tool_calls"); tc != d->end() && tc->is_array() && !tc->empty()) {
          for (const auto& t : *tc) MergeToolCall(r_.tool_calls, t);
          carried_content = true;
        }
      } else if (auto text = c.find("text"); text != c.end() && text->is_string() &&
                                             !text->get_ref<const std::string&>().empty()) {  // completions
        r_.text += text->get_ref<const std::string&>();
        carried_content = true;
      }
      if (auto fr = c.find("finish_reason"); fr != c.end() && fr->is_string()) r_.finish_reason = fr->get<std::string>();
    }
  }
  std::int64_t n = 0;
  if (auto usage = chunk.find("usage"); usage != chunk.end() && usage->is_object()) {
    std::int64_t completion = IntOr(*usage, "completion_tokens", -1);
    std::int64_t prompt = IntOr(*usage, "prompt_tokens", -1);
    if (has_choices) {  // continuous usage: per-chunk cumulative counts
      if (completion >= 0) {
        n = completion - std::max<std::int64_t>(continuous_completion_, 0);
        continuous_completion_ = completion;
      }
      if (prompt >= 0) continuous_prompt_ = prompt;
    } else {  // the final usage-only chunk (choices: [])
      final_completion_ = completion;
      final_prompt_ = prompt;
    }
    if (has_choices && completion < 0 && carried_content) n = 1;
  } else if (carried_content) {
    n = 1;
  }
  if (n > 0) {
    ++r_.chunks;
    counted_tokens_ += n;
    if (!have_first_) {
      have_first_ = true;
      r_.ttft_ms = t_ms;  // the first chunk's extra tokens (n - 1) arrived with it: no ITL for them
    } else {
      double gap = (t_ms - last_token_ms_) / static_cast<double>(n);
      for (std::int64_t i = 0; i < n; ++i) r_.itl_ms.push_back(gap);
    }
    last_token_ms_ = t_ms;
  }
  return true;
}

void StreamAccumulator::Finish(double t_ms, bool transport_ok) {
  r_.e2el_ms = t_ms;
  if (final_completion_ >= 0) {
    r_.output_tokens = final_completion_;
    r_.output_tokens_source = TokenCountSource::kUsage;
  } else if (continuous_completion_ >= 0) {
    r_.output_tokens = continuous_completion_;
    r_.output_tokens_source = TokenCountSource::kContinuousUsage;
  } else {
    r_.output_tokens = counted_tokens_;
    r_.output_tokens_source = TokenCountSource::kClientChunks;
  }
  if (final_prompt_ >= 0) {
    r_.input_tokens = final_prompt_;
    r_.input_tokens_source = TokenCountSource::kUsage;
  } else if (continuous_prompt_ >= 0) {
    r_.input_tokens = continuous_prompt_;
    r_.input_tokens_source = TokenCountSource::kContinuousUsage;
  }
  if (r_.output_tokens >= 2 && r_.ttft_ms >= 0) r_.tpot_ms = (r_.e2el_ms - r_.ttft_ms) / static_cast<double>(r_.output_tokens - 1);
  if (transport_ok && r_.ok() && !done_ && r_.finish_reason.empty()) {
    r_.error_kind = RequestErrorKind::kDisconnect;
    r_.error_message = "stream ended without [DONE] or a finish_reason";
  }
}

}  // namespace ppdeploy::client
