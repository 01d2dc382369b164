// qwen35 generate (not written yet).
#include <cstdio>

namespace qwen35::app {

int cmd_generate(int argc, char** argv) {
  std::fprintf(stderr, "qwen35 generate: not available yet\n");
  return 1;
}

}  // namespace qwen35::app
