#include "apps/qwen35/commands.h"

namespace qwen35::app {

const std::vector<Command>& commands() {
  static const std::vector<Command> table = {};
  return table;
}

}  // namespace qwen35::app
