// The subcommand table of the qwen35 binary.
#pragma once

#include <vector>

namespace qwen35::app {

struct Command {
  const char* name;
  const char* summary;
  int (*run)(int argc, char** argv);  // argv[0] is the command name
};

const std::vector<Command>& commands();

}  // namespace qwen35::app
