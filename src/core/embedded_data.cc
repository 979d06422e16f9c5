#include "core/embedded_data.h"

namespace ppdeploy {

std::optional<std::string_view> FindEmbedded(std::string_view path) {
  for (const EmbeddedFile& f : EmbeddedFiles())
    if (f.path == path) return f.content;
  return std::nullopt;
}

std::vector<std::string_view> ListEmbedded(std::string_view dir) {
  std::vector<std::string_view> out;
  std::string prefix(dir);
  if (!prefix.empty() && prefix.back() != '/') prefix += '/';
  for (const EmbeddedFile& f : EmbeddedFiles())
    if (f.path.substr(0, prefix.size()) == prefix) out.push_back(f.path);
  return out;
}

}  // namespace ppdeploy
