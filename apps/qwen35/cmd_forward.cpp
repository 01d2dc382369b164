// qwen35 forward (not written yet).
#include <cstdio>

namespace qwen35::app {

int cmd_forward(int argc, char** argv) {
  std::fprintf(stderr, "qwen35 forward: not available yet\n");
  return 1;
}

}  // namespace qwen35::app
