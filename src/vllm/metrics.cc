#include "vllm/metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "core/escape.h"
#include "core/json_fields.h"

namespace ppdeploy {
namespace {

bool NameStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':'; }
bool NameChar(char c) { return NameStart(c) || std::isdigit(static_cast<unsigned char>(c)); }

std::optional<double> ParseValue(std::string_view t) {
  if (t == "NaN") return std::numeric_limits<double>::quiet_NaN();
  if (t == "+Inf" || t == "Inf") return std::numeric_limits<double>::infinity();
  if (t == "-Inf") return -std::numeric_limits<double>::infinity();
  double v = 0;
  auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc() || ptr != t.data() + t.size()) return std::nullopt;
  return v;
}

[[noreturn]] void Bad(const std::string& source, std::int64_t line, std::string_view what, std::string_view text) {
  Fail("{}: line {}: {}: {}", source, line, what, ShortJson(nlohmann::json(std::string(text.substr(0, 200)))));
}

}  // namespace

std::optional<std::string> PromSample::Label(std::string_view key) const {
  for (const auto& [k, v] : labels)
    if (k == key) return v;
  return std::nullopt;
}

std::vector<PromSample> ParsePrometheusText(std::string_view text, const std::string& source) {
  std::vector<PromSample> out;
  std::int64_t line_no = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    std::size_t i = 0;
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    if (i == line.size() || line[i] == '#') continue;
    PromSample s;
    if (!NameStart(line[i])) Bad(source, line_no, "expected a metric name", line);
    const std::size_t name_start = i;
    while (i < line.size() && NameChar(line[i])) ++i;
    s.name = std::string(line.substr(name_start, i - name_start));
    if (i < line.size() && line[i] == '{') {
      ++i;
      while (true) {
        while (i < line.size() && line[i] == ' ') ++i;
        if (i < line.size() && line[i] == '}') {
          ++i;
          break;
        }
        const std::size_t ks = i;
        while (i < line.size() && NameChar(line[i]) && line[i] != ':') ++i;
        if (i == ks) Bad(source, line_no, "expected a label name", line);
        std::string key(line.substr(ks, i - ks));
        if (i + 1 >= line.size() || line[i] != '=' || line[i + 1] != '"')
          Bad(source, line_no, fmt::format("expected =\" after label {}", key), line);
        i += 2;
        std::string value;
        bool closed = false;
        while (i < line.size()) {
          const char c = line[i++];
          if (c == '"') {
            closed = true;
            break;
          }
          if (c == '\\' && i < line.size()) {
            const char e = line[i++];
            value.push_back(e == 'n' ? '\n' : e);
          } else {
            value.push_back(c);
          }
        }
        if (!closed) Bad(source, line_no, fmt::format("unterminated value of label {}", key), line);
        s.labels.emplace_back(std::move(key), std::move(value));
        while (i < line.size() && line[i] == ' ') ++i;
        if (i < line.size() && line[i] == ',') {
          ++i;
          continue;
        }
        if (i < line.size() && line[i] == '}') {
          ++i;
          break;
        }
        Bad(source, line_no, "expected , or } in the labels", line);
      }
    }
    if (i >= line.size() || (line[i] != ' ' && line[i] != '\t')) Bad(source, line_no, "expected a value", line);
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    const std::size_t vs = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    auto v = ParseValue(line.substr(vs, i - vs));
    if (!v) Bad(source, line_no, "not a number", line);
    s.value = *v;
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    if (i < line.size()) {  // an optional integer timestamp
      const std::string_view ts = line.substr(i);
      std::int64_t t = 0;
      auto [ptr, ec] = std::from_chars(ts.data(), ts.data() + ts.size(), t);
      if (ec != std::errc() || ptr != ts.data() + ts.size())
        Bad(source, line_no, "unexpected text after the value", line);
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::optional<double> SumOf(const std::vector<PromSample>& samples, std::string_view name) {
  std::optional<double> sum;
  for (const auto& s : samples)
    if (s.name == name) sum = sum.value_or(0.0) + s.value;
  return sum;
}

std::vector<double> PromHistogram::Counts() const {
  std::vector<double> c(cumulative.size());
  for (std::size_t i = 0; i < cumulative.size(); ++i) c[i] = cumulative[i] - (i > 0 ? cumulative[i - 1] : 0.0);
  return c;
}

std::optional<double> PromHistogram::Mean() const {
  if (!(count > 0)) return std::nullopt;
  return sum / count;
}

std::optional<double> PromHistogram::Quantile(double q) const {
  if (!(count > 0) || upper_bounds.empty()) return std::nullopt;
  const double rank = std::clamp(q, 0.0, 1.0) * cumulative.back();
  std::size_t b = 0;
  while (b < cumulative.size() && cumulative[b] < rank) ++b;
  if (b >= upper_bounds.size() - 1) return upper_bounds.size() >= 2 ? upper_bounds[upper_bounds.size() - 2] : 0.0;
  const double lo = b == 0 ? 0.0 : upper_bounds[b - 1];
  const double below = b == 0 ? 0.0 : cumulative[b - 1];
  const double in_bucket = cumulative[b] - below;
  if (!(in_bucket > 0)) return upper_bounds[b];
  return lo + (upper_bounds[b] - lo) * (rank - below) / in_bucket;
}

std::optional<PromHistogram> FindHistogram(const std::vector<PromSample>& samples, std::string_view name,
                                           const std::string& source) {
  const std::string bucket = std::string(name) + "_bucket";
  std::map<double, double> by_le;
  bool any = false;
  for (const auto& s : samples) {
    if (s.name != bucket) continue;
    auto le = s.Label("le");
    if (!le) Fail("{}: {} sample without an le label", source, bucket);
    auto bound = ParseValue(*le);
    if (!bound || std::isnan(*bound)) Fail("{}: {}: le={} is not a number", source, bucket, QuoteForMessage(*le));
    by_le[*bound] += s.value;
    any = true;
  }
  if (!any) return std::nullopt;
  PromHistogram h;
  h.name = std::string(name);
  for (const auto& [le, c] : by_le) {
    if (!h.cumulative.empty() && c < h.cumulative.back())
      Fail("{}: {}: bucket le=\"{}\" holds {} < {} of the bucket below (not cumulative)", source, bucket, le, c,
           h.cumulative.back());
    h.upper_bounds.push_back(le);
    h.cumulative.push_back(c);
  }
  if (!std::isinf(h.upper_bounds.back())) Fail("{}: {} has no le=\"+Inf\" bucket", source, bucket);
  h.sum = SumOf(samples, std::string(name) + "_sum").value_or(0.0);
  h.count = SumOf(samples, std::string(name) + "_count").value_or(h.cumulative.back());
  return h;
}

PromHistogram HistogramDelta(const PromHistogram& after, const PromHistogram& before) {
  if (after.upper_bounds != before.upper_bounds)
    Fail("{}: the buckets changed between two scrapes ({} vs {} bounds)", after.name, before.upper_bounds.size(),
         after.upper_bounds.size());
  PromHistogram d = after;
  for (std::size_t i = 0; i < d.cumulative.size(); ++i) {
    d.cumulative[i] -= before.cumulative[i];
    if (d.cumulative[i] < 0)
      Fail("{}: the count of bucket le=\"{}\" went down between two scrapes (the server restarted?)", after.name,
           after.upper_bounds[i]);
  }
  d.sum -= before.sum;
  d.count -= before.count;
  return d;
}

std::optional<std::map<std::string, std::string>> CacheConfigInfo(const std::vector<PromSample>& samples) {
  for (const auto& s : samples) {
    if (s.name != "vllm:cache_config_info") continue;
    std::map<std::string, std::string> labels(s.labels.begin(), s.labels.end());
    return labels;
  }
  return std::nullopt;
}

}  // namespace ppdeploy
