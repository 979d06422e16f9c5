#include "launch/defaultcheck.h"

#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_fields.h"

namespace ppdeploy::launch {
namespace {

std::string Q(const std::string& s) { return nlohmann::json(s).dump(); }

}  // namespace

ExpectedDefault ParseExpectedDefault(std::string_view json_text, const std::string& source) {
  auto doc = ParseJsonText(json_text, source);
  JsonContext ctx{source, ""};
  RequireObject(doc, ctx);
  if (ReqString(doc, "schema", ctx) != "ppdeploy.expected-default/1")
    Fail("{}: schema: expected \"ppdeploy.expected-default/1\"", source);
  ExpectedDefault e;
  if (!doc.contains("argv") || !doc["argv"].is_array()) Fail("{}: expected an array of strings", ctx.Where("argv"));
  for (const auto& a : doc["argv"]) {
    if (!a.is_string()) Fail("{}: expected an array of strings", ctx.Where("argv"));
    e.argv.push_back(a.get<std::string>());
  }
  if (!doc.contains("env") || !doc["env"].is_object()) Fail("{}: expected an object of strings", ctx.Where("env"));
  for (auto it = doc["env"].begin(); it != doc["env"].end(); ++it) {
    if (!it->is_string()) Fail("{}: expected a string", ctx.Child("env").Where(it.key()));
    e.env.push_back({it.key(), it->get<std::string>()});
  }
  return e;
}

std::string ExpectedDefaultJson(const RenderedLaunch& rendered) {
  nlohmann::ordered_json doc;
  doc["schema"] = "ppdeploy.expected-default/1";
  doc["comment"] = "Expected argv (order included) and injected environment of the default deployment; "
                   "checked by `ppdeploy defaultcheck`. Regenerate with `ppdeploy defaultcheck --write-expected FILE`.";
  doc["argv"] = rendered.steps.empty() ? std::vector<std::string>{} : rendered.steps.front().argv;
  doc["env"] = nlohmann::ordered_json::object();
  for (const auto& e : rendered.injected_env) doc["env"][e.name] = e.value;
  return doc.dump(2) + "\n";
}

DriftReport CompareToExpected(const RenderedLaunch& rendered, const ExpectedDefault& expected) {
  DriftReport r;
  if (rendered.multi_node || rendered.steps.size() != 1) {
    r.drift = true;
    r.lines.push_back(fmt::format("the deployment is multi-node ({} steps); the expected default is one node",
                                  rendered.steps.size()));
    return r;
  }
  const auto& a = expected.argv;
  const auto& b = rendered.steps.front().argv;
  // LCS table over argv elements.
  const size_t n = a.size(), m = b.size();
  std::vector<std::vector<int>> lcs(n + 1, std::vector<int>(m + 1, 0));
  for (size_t i = n; i-- > 0;)
    for (size_t j = m; j-- > 0;)
      lcs[i][j] = a[i] == b[j] ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
  size_t i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[i] == b[j]) {
      ++i;
      ++j;
    } else if (i < n && (j == m || lcs[i + 1][j] >= lcs[i][j + 1])) {
      r.lines.push_back(fmt::format("- argv[{}] {}", i, Q(a[i])));
      ++i;
    } else {
      r.lines.push_back(fmt::format("+ argv[{}] {}", j, Q(b[j])));
      ++j;
    }
  }
  std::map<std::string, std::string> want, got;
  for (const auto& e : expected.env) want[e.name] = e.value;
  for (const auto& e : rendered.injected_env) got[e.name] = e.value;
  for (const auto& [k, v] : want) {
    auto it = got.find(k);
    if (it == got.end()) r.lines.push_back(fmt::format("- env {}={}", k, Q(v)));
    else if (it->second != v) {
      r.lines.push_back(fmt::format("- env {}={}", k, Q(v)));
      r.lines.push_back(fmt::format("+ env {}={}", k, Q(it->second)));
    }
  }
  for (const auto& [k, v] : got)
    if (!want.count(k)) r.lines.push_back(fmt::format("+ env {}={}", k, Q(v)));
  r.drift = !r.lines.empty();
  return r;
}

}  // namespace ppdeploy::launch
