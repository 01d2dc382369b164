// qwen35: one binary, subcommands. Each subcommand lives in its own file and is thin.
#include <cstdio>
#include <cstring>
#include <string>

#include "apps/qwen35/commands.h"
#include "core/error.h"

namespace {

void print_usage() {
  std::printf(
      "usage: qwen35 <command> [options]\n\n"
      "commands:\n");
  for (const qwen35::app::Command& c : qwen35::app::commands()) std::printf("  %-10s %s\n", c.name, c.summary);
  std::printf(
      "\nWithout -m, every command uses the bundled tiny test model (random weights, gibberish answers;\n"
      "$QWEN35_DEFAULT_MODEL names another). Run 'qwen35 <command> --help' for the options of one\n"
      "command; 'qwen35 --version' for the build.\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "help")) {
    print_usage();
    return argc < 2 ? 2 : 0;
  }
  if (!std::strcmp(argv[1], "--version") || !std::strcmp(argv[1], "version")) {
    std::printf("qwen35 %s (%s)\n", QWEN35_VERSION, QWEN35_GIT_COMMIT);
    return 0;
  }
  for (const qwen35::app::Command& c : qwen35::app::commands()) {
    if (c.name != std::string(argv[1])) continue;
    try {
      return c.run(argc - 1, argv + 1);
    } catch (const qwen35::Error& e) {  // bad options, bad input, a model that does not load
      std::fprintf(stderr, "qwen35 %s: %s\n", c.name, e.what());
      return 1;
    }
  }
  std::fprintf(stderr, "qwen35: unknown command '%s'\n\n", argv[1]);
  print_usage();
  return 2;
}
