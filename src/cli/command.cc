#include "cli/command.h"

namespace ppdeploy::cli {

std::vector<CommandRegistration>& CommandRegistry() {
  static std::vector<CommandRegistration> registry;
  return registry;
}

}  // namespace ppdeploy::cli
