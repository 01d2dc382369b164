#include "text/byte_level.h"

#include <array>

#include "text/utf8.h"

namespace qwen35::byte_level {

namespace {

bool stands_for_itself(int b) { return (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255); }

struct Tables {
  std::array<char32_t, 256> char_of{};
  std::array<int16_t, 324> byte_of{};  // every alphabet code point is < 256 + 68

  Tables() {
    byte_of.fill(-1);
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      char32_t cp = stands_for_itself(b) ? char32_t(b) : next++;
      char_of[b] = cp;
      byte_of[cp] = int16_t(b);
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

char32_t char_of_byte(uint8_t byte) { return tables().char_of[byte]; }

int byte_of_char(char32_t cp) { return cp < tables().byte_of.size() ? tables().byte_of[cp] : -1; }

std::string encode(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) utf8::append(out, char_of_byte(uint8_t(c)));
  return out;
}

bool decode(std::string_view token, std::string* bytes) {
  bytes->clear();
  size_t i = 0;
  while (i < token.size()) {
    char32_t cp;
    size_t len = utf8::decode(token.substr(i), &cp);
    int b = len ? byte_of_char(cp) : -1;
    if (b < 0) {
      bytes->assign(token);
      return false;
    }
    bytes->push_back(char(b));
    i += len;
  }
  return true;
}

}  // namespace qwen35::byte_level
