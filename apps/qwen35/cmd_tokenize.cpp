// qwen35 tokenize (not written yet).
#include <cstdio>

namespace qwen35::app {

int cmd_tokenize(int argc, char** argv) {
  std::fprintf(stderr, "qwen35 tokenize: not available yet\n");
  return 1;
}

}  // namespace qwen35::app
