#include "deploy/settings.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <toml++/toml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <sstream>

#include "core/error.h"
#include "core/escape.h"
#include "deploy/layers.h"

namespace ppdeploy {
namespace {

using T = SettingType;

std::string KnownKeys() {
  std::vector<std::string_view> keys;
  for (const auto& s : SettingSpecs()) keys.push_back(s.key);
  return fmt::format("{}", fmt::join(keys, ", "));
}

std::string Shortest(double v) { return fmt::format("{}", v); }

void ReplaceAll(std::string& text, std::string_view what, std::string_view with) {
  for (size_t pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + with.size()))
    text.replace(pos, what.size(), with);
}

/// MAJOR.MINOR as a pair ("0.26" -> {0, 26}); nullopt for anything else.
std::optional<std::pair<int, int>> ReleaseLine(std::string_view line) {
  int major = 0, minor = 0;
  const char* end = line.data() + line.size();
  auto [p, ec] = std::from_chars(line.data(), end, major);
  if (ec != std::errc() || p == end || *p != '.') return std::nullopt;
  auto [q, ec2] = std::from_chars(p + 1, end, minor);
  if (ec2 != std::errc() || q != end) return std::nullopt;
  return std::make_pair(major, minor);
}

/// The text of one TOML value of the setting `spec` (checked against its type).
std::string TomlValueText(const SettingSpec& spec, const toml::node& node, const std::string& where) {
  std::string value;
  switch (spec.type) {
    case T::kInt:
      if (auto i = node.as_integer()) return fmt::format("{}", i->get());
      if (auto s = node.as_string()) return s->get();
      Fail("{}: expected an integer", where);
    case T::kFloat:
      if (auto f = node.as_floating_point()) return Shortest(f->get());
      if (auto i = node.as_integer()) return fmt::format("{}", i->get());
      if (auto s = node.as_string()) return s->get();
      Fail("{}: expected a number", where);
    case T::kBool:
      // assign(1, char): GCC 12 -O3 reports a false -Wrestrict for `value = cond ? "1" : "0"`.
      if (auto b = node.as_boolean())
        value.assign(1, b->get() ? '1' : '0');
      else if (auto i = node.as_integer(); i && (i->get() == 0 || i->get() == 1))
        value.assign(1, i->get() ? '1' : '0');
      else if (auto s = node.as_string())
        value = s->get();
      else
        Fail("{}: expected true or false", where);
      return value;
    case T::kJson:
      if (auto s = node.as_string()) return s->get();
      Fail("{}: expected a string holding JSON", where);
    case T::kString:
    case T::kEnum:
    case T::kBytes:
      if (auto s = node.as_string()) return s->get();
      Fail("{}: expected a string", where);
  }
  Fail("{}: internal: unknown setting type", where);
}

}  // namespace

std::string_view SourceName(SettingSource source) {
  switch (source) {
    case SettingSource::kVllmDefault:
      return "vllm-default";
    case SettingSource::kDefault:
      return "default";
    case SettingSource::kFile:
      return "file";
    case SettingSource::kEnv:
      return "env";
    case SettingSource::kFlag:
      return "flag";
    case SettingSource::kState:
      return "state";
  }
  return "?";
}

const SettingSpec* FindSettingSpec(std::string_view key) {
  for (const auto& s : SettingSpecs())
    if (s.key == key) return &s;
  return nullptr;
}

const SettingSpec* FindSettingByServeFlag(std::string_view flag) {
  if (flag.empty()) return nullptr;
  for (const auto& s : SettingSpecs())
    if (s.serve.flag == flag) return &s;
  return nullptr;
}

std::string_view ServeFlagOf(std::string_view key) {
  const SettingSpec* spec = FindSettingSpec(key);
  if (!spec || spec->serve.flag.empty()) Fail("internal: setting '{}' has no `vllm serve` flag", key);
  return spec->serve.flag;
}

std::string_view VllmEnvOf(std::string_view key) {
  const SettingSpec* spec = FindSettingSpec(key);
  if (!spec || spec->vllm_env.empty()) Fail("internal: setting '{}' injects no vLLM environment variable", key);
  return spec->vllm_env;
}

std::string FlagName(std::string_view key) {
  std::string out = "--";
  for (char c : key) out += c == '_' ? '-' : c;
  return out;
}

std::vector<std::string> FlagAliases(const SettingSpec& spec) {
  std::vector<std::string> out;
  std::string_view rest = spec.aliases;
  while (!rest.empty()) {
    size_t comma = rest.find(',');
    out.emplace_back(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
  }
  return out;
}

std::string SettingHelp(const SettingSpec& spec) {
  std::string help(spec.help);
  ReplaceAll(help, "{flag}", spec.serve.flag);
  ReplaceAll(help, "{vllm_env}", spec.vllm_env);
  return help;
}

std::string VllmDefaultsToml() {
  toml::table table;
  for (const auto& s : SettingSpecs()) table.insert(s.key, std::string(s.vllm_default));
  std::ostringstream out;
  out << "# vLLM's own defaults of every ppdeploy setting (generated from deploy/settings_table.cc)\n" << table << "\n";
  return out.str();
}

std::optional<std::string> ServeFlagVersionProblem(const SettingSpec& spec, std::string_view line, std::string_view row,
                                                   bool v0_engine) {
  const auto at = ReleaseLine(line);
  const auto first = ReleaseLine(spec.serve.first_line), last = ReleaseLine(spec.serve.last_line);
  if (at && ((first && *at < *first) || (last && *at > *last)))
    return fmt::format("{}: {} does not exist in vLLM {} (it exists in {} to {})", spec.env, spec.serve.flag, row,
                       spec.serve.first_line.empty() ? "every release" : spec.serve.first_line,
                       spec.serve.last_line.empty() ? "the newest" : spec.serve.last_line);
  if (spec.serve.needs_v0 && !v0_engine) {
    const SettingSpec* engine = FindSettingSpec("engine");
    return fmt::format(
        "{}: {} other than vLLM's default {} needs the V0 engine ({}=v0 where the release ships it); the V1 engine of "
        "vLLM {} refuses it",
        spec.env, spec.serve.flag, spec.vllm_default, engine ? engine->env : "VLLM_ENGINE", row);
  }
  return std::nullopt;
}

bool IsValidUtf8(std::string_view s) { return !FindInvalidUtf8(s).has_value(); }

std::map<std::string, std::string> ParseSettingsToml(std::string_view text, const std::string& source) {
  if (!IsValidUtf8(text)) Fail("{}: not valid UTF-8 text", source);
  toml::table table;
  try {
    table = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    Fail("{}: line {}: malformed TOML: {}", source, e.source().begin.line, EscapeForMessage(e.description()));
  }
  std::map<std::string, std::string> out;
  for (auto&& entry : table) {  // not a structured binding: clang 14 cannot capture one in a lambda
    const toml::node& node = entry.second;
    std::string key(entry.first.str());
    const SettingSpec* spec = FindSettingSpec(key);
    if (!spec)
      Fail("{}: line {}: unknown setting '{}' (known: {})", source, node.source().begin.line, EscapeForMessage(key),
           KnownKeys());
    const std::string where = fmt::format("{}: line {}: {}", source, node.source().begin.line, key);
    std::string value = TomlValueText(*spec, node, where);
    if (value.find('\0') != std::string::npos) Fail("{}: value contains a NUL byte", where);
    out[key] = std::move(value);
  }
  return out;
}

ResolvedSettings ResolveSettings(const SettingInputs& in) {
  auto vllm = ParseSettingsToml(in.vllm_defaults_text, in.vllm_defaults_source);
  auto defaults = ParseSettingsToml(in.defaults_text, in.defaults_source);
  std::map<std::string, std::string> file;
  if (in.file_text) file = ParseSettingsToml(*in.file_text, in.file_source);
  for (const auto& [key, value] : in.flags)
    if (!FindSettingSpec(key)) Fail("unknown setting '{}' on the command line (known: {})", key, KnownKeys());

  auto env_of = [&](const SettingSpec& spec) -> std::optional<std::pair<std::string, std::string>> {
    if (!in.getenv) return std::nullopt;
    if (auto v = in.getenv(spec.env)) return std::make_pair(std::string(spec.env), *v);
    if (!spec.alt_env.empty())
      if (auto v = in.getenv(spec.alt_env)) return std::make_pair(std::string(spec.alt_env), *v);
    return std::nullopt;
  };
  // One setting through every layer; `with_defaults` = whether the default deployment applies.
  auto resolve = [&](const SettingSpec& spec, bool with_defaults) {
    std::string key(spec.key);
    SettingValue v{key, "", SettingSource::kVllmDefault, LowestLayerOrigin(spec, "")};
    auto d = vllm.find(key);
    if (d == vllm.end()) Fail("{}: setting '{}' has no default", in.vllm_defaults_source, key);
    v.value = d->second;
    if (auto f = defaults.find(key); f != defaults.end() && with_defaults)
      v = {key, f->second, SettingSource::kDefault, std::string(kDefaultDeploymentOrigin)};
    if (auto f = file.find(key); f != file.end())
      v = {key, f->second, SettingSource::kFile, "profile " + in.file_source};
    if (auto e = env_of(spec)) v = {key, e->second, SettingSource::kEnv, "env " + e->first};
    if (auto fl = in.flags.find(key); fl != in.flags.end())
      v = {key, fl->second.value, SettingSource::kFlag,
           "flag " + (fl->second.flag.empty() ? FlagName(key) : fl->second.flag)};
    return v;
  };
  const SettingValue model = resolve(*FindSettingSpec("model"), true);
  auto d = defaults.find("model");
  const bool seed_applies =
      DefaultDeploymentApplies(model.value, model.source, d == defaults.end() ? "" : d->second, in.same_model);
  ResolvedSettings out;
  for (const auto& spec : SettingSpecs()) out.push_back(resolve(spec, seed_applies || !spec.model_specific));
  return out;
}

const SettingValue& Get(const ResolvedSettings& settings, std::string_view key) {
  for (const auto& s : settings)
    if (s.key == key) return s;
  Fail("internal: setting '{}' was not resolved", key);
}

}  // namespace ppdeploy
