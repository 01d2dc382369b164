#include "apps/qwen35/input_files.h"

#include <fstream>
#include <iostream>

#include "core/error.h"

namespace qwen35::app {

std::string read_capped(const std::string& path, size_t max_bytes, const std::string& what) {
  std::ifstream file;
  std::istream* in = &std::cin;
  if (path != "-") {
    file.open(path, std::ios::binary);
    if (!file) fail("cannot read ", what, " '", path, "'");
    in = &file;
  }
  std::string bytes;
  char buf[1 << 16];
  while (in->read(buf, sizeof(buf)) || in->gcount() > 0) {
    bytes.append(buf, size_t(in->gcount()));
    if (bytes.size() > max_bytes)
      fail(what, " '", path, "' is larger than ", max_bytes >> 20, " MiB (an endless input such as /dev/zero?)");
  }
  if (in->bad()) fail("cannot read ", what, " '", path, "'");
  return bytes;
}

bool read_line_capped(std::istream& in, std::string& line, size_t max_bytes) {
  line.clear();
  std::streambuf* sb = in.rdbuf();
  for (;;) {
    const int c = sb->sbumpc();
    if (c == std::char_traits<char>::eof()) {
      in.setstate(std::ios::eofbit);
      return !line.empty();
    }
    if (c == '\n') return true;
    line.push_back(char(c));
    if (line.size() > max_bytes) fail("an input line is longer than ", max_bytes >> 20, " MiB");
  }
}

}  // namespace qwen35::app
