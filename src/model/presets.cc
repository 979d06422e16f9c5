#include "model/presets.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>

#include "core/embedded_data.h"
#include "core/error.h"
#include "core/json_fields.h"

namespace ppdeploy {

namespace {

bool SameNameIgnoringCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](unsigned char x, unsigned char y) {
           return std::tolower(x) == std::tolower(y);
         });
}

}  // namespace

ModelConfig ModelPreset::Parse() const { return ParseModelConfig(config, "preset " + name); }

const std::vector<ModelPreset>& ModelPresets() {
  static const std::vector<ModelPreset> presets = [] {
    std::vector<ModelPreset> out;
    for (std::string_view path : ListEmbedded("models")) {
      std::string source = "data/" + std::string(path);
      auto j = ParseJsonText(*FindEmbedded(path), source);
      JsonContext c{source, ""};
      ModelPreset p;
      p.name = ReqString(j, "name", c);
      if (j.contains("aliases"))
        for (const auto& a : j["aliases"]) p.aliases.push_back(a.get<std::string>());
      p.description = OptString(j, "description", c).value_or("");
      p.source = OptString(j, "source", c).value_or("");
      if (!j.contains("config") || !j["config"].is_object()) Fail("{}: config: expected an object", source);
      p.config = j["config"];
      if (j.contains("measured")) p.measured = j["measured"];
      out.push_back(std::move(p));
    }
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
    return out;
  }();
  return presets;
}

const ModelPreset* FindModelPreset(const std::string& name) {
  for (const auto& p : ModelPresets()) {
    if (SameNameIgnoringCase(p.name, name)) return &p;
    for (const auto& a : p.aliases)
      if (SameNameIgnoringCase(a, name)) return &p;
  }
  return nullptr;
}

bool SameModel(const std::string& a, const std::string& b) {
  if (a == b) return true;
  const ModelPreset* pa = FindModelPreset(a);
  return pa != nullptr && pa == FindModelPreset(b);
}

std::string PresetNames() {
  std::vector<std::string> names;
  for (const auto& p : ModelPresets()) names.push_back(p.name);
  return fmt::format("{}", fmt::join(names, ", "));
}

}  // namespace ppdeploy
