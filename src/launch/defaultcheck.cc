#include "launch/defaultcheck.h"

#include <fmt/format.h>

#include <map>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json_fields.h"

namespace ppdeploy::launch {
namespace {

std::string Q(const std::string& s) { return nlohmann::json(s).dump(); }

}  // namespace

namespace {

std::vector<std::string> Strings(const nlohmann::json& doc, const char* key, const JsonContext& ctx) {
  std::vector<std::string> out;
  if (!doc.contains(key) || !doc[key].is_array()) Fail("{}: expected an array of strings", ctx.Where(key));
  for (const auto& a : doc[key]) {
    if (!a.is_string()) Fail("{}: expected an array of strings", ctx.Where(key));
    out.push_back(a.get<std::string>());
  }
  return out;
}

std::vector<EnvVar> Env(const nlohmann::json& doc, const JsonContext& ctx) {
  std::vector<EnvVar> out;
  if (!doc.contains("env") || !doc["env"].is_object()) Fail("{}: expected an object of strings", ctx.Where("env"));
  for (auto it = doc["env"].begin(); it != doc["env"].end(); ++it) {
    if (!it->is_string()) Fail("{}: expected a string", ctx.Child("env").Where(it.key()));
    out.push_back({it.key(), it->get<std::string>()});
  }
  return out;
}

/// An LCS diff of two argv lists, each line prefixed by `where`.
void DiffArgv(const std::vector<std::string>& a, const std::vector<std::string>& b, const std::string& where,
              std::vector<std::string>& lines) {
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
      lines.push_back(fmt::format("- {}argv[{}] {}", where, i, Q(a[i])));
      ++i;
    } else {
      lines.push_back(fmt::format("+ {}argv[{}] {}", where, j, Q(b[j])));
      ++j;
    }
  }
}

/// Missing, extra and changed variables (compared as a set), each line prefixed by `where`.
void DiffEnv(const std::vector<EnvVar>& expected, const std::vector<EnvVar>& actual, const std::string& where,
             std::vector<std::string>& lines) {
  std::map<std::string, std::string> want, got;
  for (const auto& e : expected) want[e.name] = e.value;
  for (const auto& e : actual) got[e.name] = e.value;
  for (const auto& [k, v] : want) {
    auto it = got.find(k);
    if (it == got.end()) {
      lines.push_back(fmt::format("- {}env {}={}", where, k, Q(v)));
    } else if (it->second != v) {
      lines.push_back(fmt::format("- {}env {}={}", where, k, Q(v)));
      lines.push_back(fmt::format("+ {}env {}={}", where, k, Q(it->second)));
    }
  }
  for (const auto& [k, v] : got)
    if (!want.count(k)) lines.push_back(fmt::format("+ {}env {}={}", where, k, Q(v)));
}

}  // namespace

ExpectedDefault ParseExpectedDefault(std::string_view json_text, const std::string& source) {
  auto doc = ParseJsonText(json_text, source);
  JsonContext ctx{source, ""};
  RequireObject(doc, ctx);
  const std::string schema = ReqString(doc, "schema", ctx);
  ExpectedDefault e;
  if (schema == "ppdeploy.expected-default/2") {
    if (!doc.contains("steps") || !doc["steps"].is_array() || doc["steps"].empty())
      Fail("{}: expected a non-empty array of steps", ctx.Where("steps"));
    int i = 0;
    for (const auto& step : doc["steps"]) {
      JsonContext c = ctx.Child(fmt::format("steps[{}]", i++));
      RequireObject(step, c);
      e.steps.push_back(
          {ReqString(step, "node", c), ReqString(step, "role", c), Strings(step, "argv", c), Env(step, c)});
    }
    return e;
  }
  if (schema != "ppdeploy.expected-default/1")
    Fail("{}: schema: expected \"ppdeploy.expected-default/1\" or \"/2\", got {}", source, Q(schema));
  e.argv = Strings(doc, "argv", ctx);
  e.env = Env(doc, ctx);
  return e;
}

std::string ExpectedDefaultJson(const RenderedLaunch& rendered) {
  nlohmann::ordered_json doc;
  if (rendered.multi_node) {
    doc["schema"] = "ppdeploy.expected-default/2";
    doc["comment"] =
        "Expected node, role, argv (order included) and environment of every step of a multi-node "
        "deployment, in start order; checked by `ppdeploy defaultcheck --expected FILE`.";
    doc["steps"] = nlohmann::ordered_json::array();
    for (const auto& s : rendered.steps) {
      nlohmann::ordered_json env = nlohmann::ordered_json::object();
      for (const auto& e : s.env) env[e.name] = e.value;
      doc["steps"].push_back({{"node", s.node}, {"role", s.role}, {"argv", s.argv}, {"env", env}});
    }
    return doc.dump(2) + "\n";
  }
  doc["schema"] = "ppdeploy.expected-default/1";
  doc["comment"] =
      "Expected argv (order included) and injected environment of the default deployment; "
      "checked by `ppdeploy defaultcheck`. Regenerate with `ppdeploy defaultcheck --write-expected FILE`.";
  doc["argv"] = rendered.steps.empty() ? std::vector<std::string>{} : rendered.steps.front().argv;
  doc["env"] = nlohmann::ordered_json::object();
  for (const auto& e : rendered.injected_env) doc["env"][e.name] = e.value;
  return doc.dump(2) + "\n";
}

DriftReport CompareToExpected(const RenderedLaunch& rendered, const ExpectedDefault& expected) {
  DriftReport r;
  if (!expected.steps.empty()) {
    if (!rendered.multi_node) {
      r.drift = true;
      r.lines.push_back(
          fmt::format("the expectation has {} multi-node steps; the deployment is one node", expected.steps.size()));
      return r;
    }
    const size_t n = std::max(expected.steps.size(), rendered.steps.size());
    for (size_t i = 0; i < n; ++i) {
      if (i >= rendered.steps.size()) {
        r.lines.push_back(
            fmt::format("- step {} ({} on {}): missing", i, expected.steps[i].role, expected.steps[i].node));
        continue;
      }
      const auto& got = rendered.steps[i];
      if (i >= expected.steps.size()) {
        r.lines.push_back(fmt::format("+ step {} ({} on {}): not expected", i, got.role, got.node));
        continue;
      }
      const auto& want = expected.steps[i];
      const std::string where = fmt::format("step {} ({} on {}) ", i, got.role, got.node);
      if (want.node != got.node || want.role != got.role) {
        r.lines.push_back(fmt::format("- step {} node {} role {}", i, Q(want.node), Q(want.role)));
        r.lines.push_back(fmt::format("+ step {} node {} role {}", i, Q(got.node), Q(got.role)));
      }
      DiffArgv(want.argv, got.argv, where, r.lines);
      DiffEnv(want.env, got.env, where, r.lines);
    }
    r.drift = !r.lines.empty();
    return r;
  }
  if (rendered.multi_node || rendered.steps.size() != 1) {
    r.drift = true;
    r.lines.push_back(fmt::format(
        "the deployment is multi-node ({} steps); the expected default is one node (compare with an expectation "
        "written by `defaultcheck --write-expected FILE` for this deployment)",
        rendered.steps.size()));
    return r;
  }
  DiffArgv(expected.argv, rendered.steps.front().argv, "", r.lines);
  DiffEnv(expected.env, rendered.injected_env, "", r.lines);
  r.drift = !r.lines.empty();
  return r;
}

}  // namespace ppdeploy::launch
