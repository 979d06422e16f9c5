#include "client/datasets.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <functional>
#include <random>

#include "core/error.h"
#include "core/json_fields.h"

namespace ppdeploy::client {
namespace {

constexpr std::int64_t kMaxShareGptBytes = 4LL << 30;  // the public ShareGPT_V3 file is 0.67 GB
constexpr std::size_t kMaxLineBytes = 16u << 20;

void RequireRegularFile(const std::string& path, const char* flag) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) Fail("{} {}: cannot read: no such file", flag, path);
  if (!S_ISREG(st.st_mode)) Fail("{} {}: not a regular file", flag, path);
}

// Extracts turns[0].value and turns[1].value of each top-level entry's "conversations" array.
class ShareGptSax : public nlohmann::json_sax<nlohmann::json> {
 public:
  using Sink = std::function<void(std::string&&, std::string&&)>;
  ShareGptSax(std::string path, Sink sink) : path_(std::move(path)), sink_(std::move(sink)) {}

  bool null() override { return Scalar(); }
  bool boolean(bool) override { return Scalar(); }
  bool number_integer(number_integer_t) override { return Scalar(); }
  bool number_unsigned(number_unsigned_t) override { return Scalar(); }
  bool number_float(number_float_t, const string_t&) override { return Scalar(); }
  bool binary(binary_t&) override { return Scalar(); }
  bool string(string_t& s) override {
    if (depth_ == 0) return Top();
    if (in_conv_ && depth_ == 4 && key4_ == "value") {
      if (turns_ == 0) first_ = std::move(s);
      if (turns_ == 1) second_ = std::move(s);
      ++turns_;
    }
    return true;
  }
  bool start_object(std::size_t) override {
    if (depth_ == 0) return Top();
    if (depth_ == 1) {
      turns_ = 0;
      first_.clear();
      second_.clear();
      key2_.clear();
    }
    if (depth_ == 3 && in_conv_) key4_.clear();
    ++depth_;
    return true;
  }
  bool key(string_t& k) override {
    if (depth_ == 2) key2_ = k;
    if (depth_ == 4) key4_ = k;
    return true;
  }
  bool end_object() override {
    --depth_;
    if (depth_ == 1 && turns_ >= 2) sink_(std::move(first_), std::move(second_));
    return true;
  }
  bool start_array(std::size_t) override {
    if (depth_ == 2 && key2_ == "conversations") in_conv_ = true;
    ++depth_;
    return true;
  }
  bool end_array() override {
    --depth_;
    if (depth_ == 2) in_conv_ = false;
    return true;
  }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) override {
    error_ = fmt::format("--dataset-path {}: malformed JSON at byte {}: {}", path_, position, e.what());
    return false;
  }
  const std::string& error() const { return error_; }

 private:
  bool Scalar() { return depth_ == 0 ? Top() : true; }
  bool Top() {
    error_ =
        fmt::format("--dataset-path {}: expected a ShareGPT JSON array of {{\"conversations\": [...]}} entries", path_);
    return false;
  }
  std::string path_;
  Sink sink_;
  int depth_ = 0;
  bool in_conv_ = false;
  std::string key2_, key4_, first_, second_;
  int turns_ = 0;
  std::string error_;
};

}  // namespace

bool IsValidShareGptSequence(std::int64_t prompt, std::int64_t output) {
  return prompt >= 4 && output >= 4 && prompt <= 1024 && prompt + output <= 2048;
}

std::vector<DatasetEntry> ReadShareGpt(const std::string& path, std::size_t limit, std::uint64_t seed,
                                       std::int64_t* total_entries) {
  RequireRegularFile(path, "--dataset-path");
  struct stat st {};
  stat(path.c_str(), &st);
  if (st.st_size > kMaxShareGptBytes)
    Fail("--dataset-path {}: {} bytes is over the {} byte limit of a ShareGPT file", path, st.st_size,
         kMaxShareGptBytes);
  std::ifstream in(path, std::ios::binary);
  if (!in) Fail("--dataset-path {}: cannot read", path);
  std::mt19937_64 rng(seed);
  std::vector<DatasetEntry> sample;
  std::int64_t seen = 0;
  ShareGptSax sax(path, [&](std::string&& prompt, std::string&& answer) {
    ++seen;
    std::size_t slot = sample.size();
    if (sample.size() >= limit) {  // reservoir sampling (Algorithm R)
      std::uniform_int_distribution<std::int64_t> u(0, seen - 1);
      auto j = static_cast<std::size_t>(u(rng));
      if (j >= limit) return;
      slot = j;
    } else {
      sample.emplace_back();
    }
    sample[slot].prompt = std::move(prompt);
    sample[slot].reference_answer = std::move(answer);
  });
  bool ok = nlohmann::json::sax_parse(in, &sax, nlohmann::json::input_format_t::json, /*strict=*/true);
  if (!ok) Fail("{}", sax.error().empty() ? fmt::format("--dataset-path {}: malformed JSON", path) : sax.error());
  if (total_entries != nullptr) *total_entries = seen;
  if (sample.empty()) Fail("--dataset-path {}: no entry with at least 2 conversation turns", path);
  std::shuffle(sample.begin(), sample.end(), rng);
  return sample;
}

DatasetEntry JsonlDataset::ParseLine(const std::string& line, const std::string& path, std::int64_t n, bool chat) {
  std::string where = fmt::format("{}:{}", path, n);
  nlohmann::json j = ParseJsonText(line, where);
  JsonContext ctx{where, ""};
  RequireObject(j, ctx);
  DatasetEntry e;
  bool has_prompt = j.contains("prompt"), has_messages = j.contains("messages");
  if (has_prompt == has_messages)
    Fail("{}: expected exactly one of \"prompt\" (a string) or \"messages\" (an array), got {}", where,
         has_prompt ? "both" : "neither");
  if (has_prompt) {
    e.prompt = ReqString(j, "prompt", ctx);
    if (e.prompt.empty()) Fail("{}: prompt: empty", where);
  } else {
    if (!chat) Fail("{}: messages: chat messages need --endpoint chat", where);
    const auto& m = j["messages"];
    if (!m.is_array() || m.empty()) Fail("{}: messages: expected a non-empty array, got {}", where, ShortJson(m));
    for (std::size_t i = 0; i < m.size(); ++i) {
      JsonContext mc{where, fmt::format("messages[{}]", i)};
      RequireObject(m[i], mc);
      ReqString(m[i], "role", mc);
      if (!m[i].contains("content")) Fail("{}: messages[{}].content: missing", where, i);
    }
    e.messages = m;
  }
  if (auto o = OptInt(j, "output_tokens", ctx, 1)) e.output_tokens = *o;
  return e;
}

JsonlDataset::JsonlDataset(std::string path, bool chat) : path_(std::move(path)), chat_(chat) {
  RequireRegularFile(path_, "--dataset-path");
  in_.open(path_, std::ios::binary);
  if (!in_) Fail("--dataset-path {}: cannot read", path_);
  DatasetEntry e;
  while (ReadEntry(e)) ++entries_;  // validates every line
  if (entries_ == 0) Fail("--dataset-path {}: no prompt in the file", path_);
  in_.clear();
  in_.seekg(0);
  line_ = 0;
}

bool JsonlDataset::ReadEntry(DatasetEntry& out) {
  std::streambuf* buf = in_.rdbuf();
  for (;;) {
    std::string line;
    bool any = false;
    for (int c = buf->sbumpc(); c != std::char_traits<char>::eof(); c = buf->sbumpc()) {
      any = true;
      if (c == '\n') break;
      if (line.size() >= kMaxLineBytes)
        Fail("--dataset-path {}:{}: line longer than {} bytes", path_, line_ + 1, kMaxLineBytes);
      line.push_back(static_cast<char>(c));
    }
    if (!any) return false;
    ++line_;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;  // blank line
    out = ParseLine(line, path_, line_, chat_);
    return true;
  }
}

DatasetEntry JsonlDataset::Next() {
  DatasetEntry e;
  if (ReadEntry(e)) return e;
  in_.clear();
  in_.seekg(0);
  line_ = 0;
  if (!ReadEntry(e)) Fail("--dataset-path {}: the file became empty during the run", path_);
  return e;
}

}  // namespace ppdeploy::client
