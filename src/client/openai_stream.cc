#include "client/openai_stream.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "core/escape.h"

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
  std::size_t index =
      delta.contains("index") && delta["index"].is_number_unsigned() ? delta["index"].get<std::size_t>() : calls.size();
  if (index > 1024) return;
  if (!calls.is_array()) calls = nlohmann::json::array();
  while (calls.size() <= index)
    calls.push_back({{"id", ""}, {"type", "function"}, {"function", {{"name", ""}, {"arguments", ""}}}});
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

// One line for an error message, escaped by the one convention (core/escape.h), cut at 4,096 characters.
constexpr std::size_t kErrorTextLimit = 4096;

std::string FieldText(const nlohmann::json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return "";
  if (it->is_string()) return it->get<std::string>();
  return it->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string DescribeError(const nlohmann::json& e) {
  if (!e.is_object())
    return EscapeForMessage(e.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), kErrorTextLimit);
  std::string type = FieldText(e, "type"), code = FieldText(e, "code"), message = FieldText(e, "message");
  std::string head = type.empty() ? "error" : type;
  if (!code.empty()) head += " (code " + code + ")";
  return EscapeForMessage(
      head + ": " + (message.empty() ? e.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) : message),
      kErrorTextLimit);
}

}  // namespace

std::optional<std::string> ErrorInChunk(const nlohmann::json& chunk) {
  if (!chunk.is_object()) return std::nullopt;
  if (auto err = chunk.find("error"); err != chunk.end() && !err->is_null()) return DescribeError(*err);
  if (auto obj = chunk.find("object");
      obj != chunk.end() && obj->is_string() && obj->get_ref<const std::string&>() == "error")
    return DescribeError(chunk);
  return std::nullopt;
}

bool StreamAccumulator::OnEvent(const SseEvent& event, double t_ms) {
  if (event.data == "[DONE]") {
    done_ = true;
    return true;
  }
  // SSE is UTF-8 (WHATWG HTML "server-sent events": the stream is decoded as UTF-8); a bad byte is named.
  if (auto bad = FindInvalidUtf8(event.data)) {
    r_.error_kind = RequestErrorKind::kMalformedSse;
    r_.error_message = fmt::format("chunk is not valid UTF-8: invalid byte 0x{:02x} at byte {} of the data",
                                   static_cast<unsigned char>(event.data[*bad]), *bad);
    return false;
  }
  nlohmann::json chunk = nlohmann::json::parse(event.data, nullptr, /*allow_exceptions=*/false);
  if (chunk.is_discarded() || !chunk.is_object()) {
    r_.error_kind = RequestErrorKind::kMalformedSse;
    r_.error_message = "chunk is not a JSON object: " + EscapeForMessage(event.data, 200);
    return false;
  }
  if (auto err = ErrorInChunk(chunk)) {
    r_.error_kind = RequestErrorKind::kServerError;
    r_.error_message = "in-stream error: " + *err;
    return false;
  }
  bool has_choices = false;
  bool carried_content = false;
  if (auto choices = chunk.find("choices"); choices != chunk.end() && choices->is_array() && !choices->empty()) {
    has_choices = true;
    const auto& c = (*choices)[0];
    if (c.is_object()) {
      if (auto d = c.find("delta"); d != c.end() && d->is_object()) {  // chat
        if (auto content = d->find("content");
            content != d->end() && content->is_string() && !content->get_ref<const std::string&>().empty()) {
          r_.text += content->get_ref<const std::string&>();
          carried_content = true;
        }
        if (auto rc = d->find("reasoning_content");
            rc != d->end() && rc->is_string() && !rc->get_ref<const std::string&>().empty())
          carried_content = true;
        if (auto tc = d->find("tool_calls"); tc != d->end() && tc->is_array() && !tc->empty()) {
          for (const auto& t : *tc) MergeToolCall(r_.tool_calls, t);
          carried_content = true;
        }
      } else if (auto text = c.find("text");
                 text != c.end() && text->is_string() && !text->get_ref<const std::string&>().empty()) {  // completions
        r_.text += text->get_ref<const std::string&>();
        carried_content = true;
      }
      if (auto fr = c.find("finish_reason"); fr != c.end() && fr->is_string()) {
        r_.finish_reason = fr->get<std::string>();
        // vLLM's FinishReason.ERROR ("error"): the engine failed the request (serving.py _raise_if_error).
        if (r_.finish_reason == "error") {
          r_.error_kind = RequestErrorKind::kServerError;
          r_.error_message = "in-stream error: finish_reason \"error\"";
          return false;
        }
      }
    }
  }
  std::int64_t n = 0;
  bool known = false;
  if (auto usage = chunk.find("usage"); usage != chunk.end() && usage->is_object()) {
    std::int64_t completion = IntOr(*usage, "completion_tokens", -1);
    std::int64_t prompt = IntOr(*usage, "prompt_tokens", -1);
    if (has_choices) {  // continuous usage: per-chunk cumulative counts
      if (completion >= 0) {
        n = completion - std::max<std::int64_t>(continuous_completion_, 0);
        continuous_completion_ = completion;
        known = true;
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
    if (!known) all_counts_known_ = false;
    ++r_.chunks;
    counted_tokens_ += n;
    chunk_tokens_.push_back(n);
    r_.chunk_tokens_max = std::max(r_.chunk_tokens_max, n);
    if (!have_first_) {
      have_first_ = true;
      r_.ttft_ms = t_ms;  // the first chunk's extra tokens (n - 1) arrived with it: no ITL for them
    } else {
      r_.chunk_itl_ms.push_back(t_ms - last_token_ms_);
    }
    last_token_ms_ = t_ms;
    r_.last_token_ms = t_ms;
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
  // Per-token ITL. Exact when every chunk's token count is known: from continuous usage, or because the
  // server's total equals the chunk count (one token per chunk). Otherwise each chunk gap stands for the
  // average number of tokens per chunk after the first (an approximation, labelled by itl_exact = false).
  r_.itl_ms.clear();
  // Without any usage the split cannot be checked: one token per chunk is assumed, and not called exact.
  bool unverified = r_.output_tokens_source == TokenCountSource::kClientChunks;
  bool one_per_chunk = !all_counts_known_ && !unverified && r_.output_tokens == counted_tokens_;
  if (all_counts_known_ || one_per_chunk || unverified) {
    r_.itl_exact = (all_counts_known_ || one_per_chunk) && !unverified;
    for (std::size_t i = 1; i < chunk_tokens_.size(); ++i) {
      std::int64_t k = chunk_tokens_[i];
      double gap = r_.chunk_itl_ms[i - 1] / static_cast<double>(k);
      for (std::int64_t j = 0; j < k; ++j) r_.itl_ms.push_back(gap);
    }
  } else {
    r_.itl_exact = false;
    if (chunk_tokens_.size() >= 2 && r_.output_tokens > 1) {
      double per_chunk = static_cast<double>(r_.output_tokens - 1) / static_cast<double>(chunk_tokens_.size() - 1);
      for (double g : r_.chunk_itl_ms) r_.itl_ms.push_back(g / std::max(1.0, per_chunk));
    }
  }
  if (r_.output_tokens >= 2 && r_.ttft_ms >= 0 && r_.last_token_ms >= r_.ttft_ms)
    r_.tpot_ms = (r_.last_token_ms - r_.ttft_ms) / static_cast<double>(r_.output_tokens - 1);
  if (transport_ok && r_.ok() && !done_ && r_.finish_reason.empty()) {
    r_.error_kind = RequestErrorKind::kDisconnect;
    r_.error_message = "stream ended without [DONE] or a finish_reason";
  }
}

}  // namespace ppdeploy::client
