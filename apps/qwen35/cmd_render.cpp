// qwen35 render (not written yet).
#include <cstdio>

namespace qwen35::app {

int cmd_render(int argc, char** argv) {
  std::fprintf(stderr, "qwen35 render: not available yet\n");
  return 1;
}

}  // namespace qwen35::app
