// qwen35 run (not written yet).
#include <cstdio>

namespace qwen35::app {

int cmd_run(int argc, char** argv) {
  std::fprintf(stderr, "qwen35 run: not available yet\n");
  return 1;
}

}  // namespace qwen35::app
