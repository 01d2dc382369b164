// qwen35 serve (not written yet).
#include <cstdio>

namespace qwen35::app {

int cmd_serve(int argc, char** argv) {
  std::fprintf(stderr, "qwen35 serve: not available yet\n");
  return 1;
}

}  // namespace qwen35::app
