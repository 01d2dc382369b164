#include "text/utf8.h"

namespace qwen35::utf8 {

namespace {

// Unicode Table 3-7 (well-formed byte sequences): for a lead byte, the total length and the
// allowed range of the second byte (later bytes are always 80..BF).
struct LeadInfo {
  uint8_t length;  // 0: never a lead byte
  uint8_t lo, hi;  // range of the second byte
};

constexpr LeadInfo lead_info(uint8_t b) {
  if (b < 0x80) return {1, 0, 0};
  if (b < 0xC2) return {0, 0, 0};
  if (b < 0xE0) return {2, 0x80, 0xBF};
  if (b == 0xE0) return {3, 0xA0, 0xBF};
  if (b == 0xED) return {3, 0x80, 0x9F};  // excludes the surrogates D800..DFFF
  if (b < 0xF0) return {3, 0x80, 0xBF};
  if (b == 0xF0) return {4, 0x90, 0xBF};  // excludes overlongs
  if (b < 0xF4) return {4, 0x80, 0xBF};
  if (b == 0xF4) return {4, 0x80, 0x8F};  // excludes > U+10FFFF
  return {0, 0, 0};
}

bool is_continuation(uint8_t b) { return (b & 0xC0) == 0x80; }

// How many bytes of a sequence starting at s[0] are consistent with its lead byte (capped at
// the expected length and at the end of `s`).
size_t matching_prefix(std::string_view s, const LeadInfo& info) {
  size_t n = 1;
  if (s.size() < 2) return n;
  uint8_t b1 = uint8_t(s[1]);
  if (b1 < info.lo || b1 > info.hi) return n;
  n = 2;
  while (n < info.length && n < s.size() && is_continuation(uint8_t(s[n]))) ++n;
  return n;
}

}  // namespace

void append(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(char(cp));
  } else if (cp < 0x800) {
    out.push_back(char(0xC0 | (cp >> 6)));
    out.push_back(char(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(char(0xE0 | (cp >> 12)));
    out.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(char(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(char(0xF0 | (cp >> 18)));
    out.push_back(char(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(char(0x80 | (cp & 0x3F)));
  }
}

size_t decode(std::string_view s, char32_t* cp) {
  if (s.empty()) return 0;
  uint8_t b0 = uint8_t(s[0]);
  if (b0 < 0x80) {
    *cp = b0;
    return 1;
  }
  LeadInfo info = lead_info(b0);
  if (info.length == 0 || matching_prefix(s, info) != info.length) return 0;
  char32_t v = b0 & (0x7F >> info.length);
  for (size_t i = 1; i < info.length; ++i) v = (v << 6) | (uint8_t(s[i]) & 0x3F);
  *cp = v;
  return info.length;
}

size_t maximal_subpart(std::string_view s) {
  if (s.empty()) return 0;
  LeadInfo info = lead_info(uint8_t(s[0]));
  if (info.length <= 1) return 1;
  return matching_prefix(s, info);
}

bool is_valid(std::string_view s) {
  size_t i = 0;
  const size_t n = s.size();
  while (i < n) {
    if (uint8_t(s[i]) < 0x80) {
      ++i;
      continue;
    }
    char32_t cp;
    size_t len = decode(s.substr(i), &cp);
    if (len == 0) return false;
    i += len;
  }
  return true;
}

void append_lossy(std::string& out, std::string_view bytes) {
  size_t i = 0;
  const size_t n = bytes.size();
  while (i < n) {
    // Copy the longest run of well-formed text in one go.
    size_t run = i;
    while (run < n) {
      if (uint8_t(bytes[run]) < 0x80) {
        ++run;
        continue;
      }
      char32_t cp;
      size_t len = decode(bytes.substr(run), &cp);
      if (len == 0) break;
      run += len;
    }
    out.append(bytes.data() + i, run - i);
    i = run;
    if (i < n) {
      out.append(kReplacementUtf8);
      i += maximal_subpart(bytes.substr(i));
    }
  }
}

size_t incomplete_tail(std::string_view bytes) {
  const size_t n = bytes.size();
  for (size_t k = 3; k >= 1; --k) {
    if (n < k) continue;
    std::string_view tail = bytes.substr(n - k);
    LeadInfo info = lead_info(uint8_t(tail[0]));
    if (info.length > k && matching_prefix(tail, info) == k) return k;
  }
  return 0;
}

}  // namespace qwen35::utf8
