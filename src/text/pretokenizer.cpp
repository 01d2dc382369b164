#include "text/pretokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <cstdio>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "core/error.h"
#include "text/unicode.h"
#include "text/utf8.h"

namespace qwen35 {

namespace {

using Ranges = std::vector<std::pair<char32_t, char32_t>>;

void append_code_point(std::string& out, char32_t cp) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "\\x{%X}", unsigned(cp));
  out += buf;
}

// Ranges as the inside of a character class: "\x{9}-\x{D}\x{20}...".
std::string class_items(const Ranges& ranges) {
  std::string out;
  for (const auto& [lo, hi] : ranges) {
    append_code_point(out, lo);
    if (hi != lo) {
      out += '-';
      append_code_point(out, hi);
    }
  }
  return out;
}

Ranges complement(const Ranges& ranges) {
  Ranges out;
  char32_t next = 0;
  for (const auto& [lo, hi] : ranges) {
    if (lo > next) out.emplace_back(next, lo - 1);
    next = hi + 1;
  }
  if (next <= 0x10FFFF) out.emplace_back(next, 0x10FFFF);
  // Surrogates are not characters in UTF mode; PCRE2 rejects them in a class.
  Ranges cleaned;
  for (auto [lo, hi] : out) {
    if (hi < 0xD800 || lo > 0xDFFF) {
      cleaned.emplace_back(lo, hi);
      continue;
    }
    if (lo < 0xD800) cleaned.emplace_back(lo, 0xD7FF);
    if (hi > 0xDFFF) cleaned.emplace_back(0xE000, hi);
  }
  return cleaned;
}

std::string pcre2_unicode_version() {
  char buf[64] = {};
  if (pcre2_config(PCRE2_CONFIG_UNICODE_VERSION, buf) < 0) return "0.0";
  std::string v = buf;
  // "14.0.0" -> "14.0": ICU's Age values have two components.
  size_t first = v.find('.');
  size_t second = first == std::string::npos ? first : v.find('.', first + 1);
  return second == std::string::npos ? v : v.substr(0, second);
}

// Class items for the characters ICU puts in \p{name} that PCRE2's tables are too old to know.
// Cached per name: ICU set building costs a few milliseconds.
const std::string& newer_members(const std::string& name) {
  static std::mutex mu;
  static std::unordered_map<std::string, std::string> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(name);
  if (it != cache.end()) return it->second;
  std::string items;
  if (!name.empty() && name[0] != '^') {
    try {
      items = class_items(unicode::ranges_of_set("[[:" + name + ":]-[:Age=" + pcre2_unicode_version() + ":]]"));
    } catch (const Error&) {
      items.clear();  // a name only PCRE2 knows: nothing to add
    }
  }
  return cache.emplace(name, std::move(items)).first->second;
}

const std::string& white_space_items() {
  static const std::string items = class_items(unicode::ranges_of_set("[:White_Space:]"));
  return items;
}

const std::string& non_white_space_items() {
  static const std::string items = class_items(complement(unicode::ranges_of_set("[:White_Space:]")));
  return items;
}

bool is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

}  // namespace

std::optional<std::string_view> split_pattern_for_pre_type(std::string_view pre) {
  if (pre == "qwen35") return kQwen35SplitPattern;
  if (pre == "qwen2") return kQwen2SplitPattern;
  if (pre == "gpt-2" || pre == "gpt2") return kGpt2SplitPattern;
  return std::nullopt;
}

std::string translate_pattern(std::string_view p) {
  std::string out;
  out.reserve(p.size() * 4);
  bool in_class = false;
  size_t i = 0;
  while (i < p.size()) {
    char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      char e = p[i + 1];
      if (e == 's') {
        out += in_class ? white_space_items() : "[" + white_space_items() + "]";
        i += 2;
      } else if (e == 'S') {
        out += in_class ? non_white_space_items() : "[^" + white_space_items() + "]";
        i += 2;
      } else if (e == 'p' && i + 2 < p.size()) {
        // \p{Name} or the one-letter form \pL.
        std::string name;
        if (p[i + 2] == '{') {
          size_t close = p.find('}', i + 3);
          if (close == std::string_view::npos) fail("split pattern: unterminated \\p{ at offset ", i);
          name = std::string(p.substr(i + 3, close - i - 3));
          i = close + 1;
        } else {
          name = std::string(1, p[i + 2]);
          i += 3;
        }
        std::string original = "\\p{" + name + "}";
        const std::string& extra = newer_members(name);
        if (extra.empty()) {
          out += original;
        } else if (in_class) {
          out += original + extra;
        } else {
          out += "[" + original + extra + "]";
        }
      } else if (e == 'u' && i + 5 < p.size() && is_hex(p[i + 2]) && is_hex(p[i + 3]) && is_hex(p[i + 4]) &&
                 is_hex(p[i + 5])) {
        out += "\\x{" + std::string(p.substr(i + 2, 4)) + "}";
        i += 6;
      } else if (e == 'Q') {
        size_t end = p.find("\\E", i + 2);
        size_t stop = end == std::string_view::npos ? p.size() : end + 2;
        out.append(p.substr(i, stop - i));
        i = stop;
      } else {
        out += c;
        out += e;
        i += 2;
      }
      continue;
    }
    if (!in_class && c == '[') {
      in_class = true;
      out += c;
      ++i;
      if (i < p.size() && p[i] == '^') out += p[i++];
      if (i < p.size() && p[i] == ']') out += p[i++];  // a leading ']' is a literal
      continue;
    }
    if (in_class && c == '[' && i + 1 < p.size() && p[i + 1] == ':') {
      size_t end = p.find(":]", i + 2);
      size_t stop = end == std::string_view::npos ? p.size() : end + 2;
      out.append(p.substr(i, stop - i));
      i = stop;
      continue;
    }
    if (in_class && c == ']') in_class = false;
    out += c;
    ++i;
  }
  return out;
}

RegexSplitter::RegexSplitter(std::string_view pattern) : pattern_(pattern) {
  std::string translated = translate_pattern(pattern);
  int error = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()), translated.size(),
                                   PCRE2_UTF | PCRE2_UCP, &error, &offset, nullptr);
  if (!code) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof message);
    fail("split pattern does not compile (", reinterpret_cast<const char*>(message), " at offset ", offset,
         " of the translated pattern): ", pattern);
  }
  jit_ = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
  code_ = code;
}

RegexSplitter::~RegexSplitter() {
  if (code_) pcre2_code_free(static_cast<pcre2_code*>(code_));
}

RegexSplitter::RegexSplitter(RegexSplitter&& other) noexcept
    : pattern_(std::move(other.pattern_)), code_(std::exchange(other.code_, nullptr)), jit_(other.jit_) {}

RegexSplitter& RegexSplitter::operator=(RegexSplitter&& other) noexcept {
  if (this != &other) {
    if (code_) pcre2_code_free(static_cast<pcre2_code*>(code_));
    pattern_ = std::move(other.pattern_);
    code_ = std::exchange(other.code_, nullptr);
    jit_ = other.jit_;
  }
  return *this;
}

namespace {

// Match data and a JIT stack per thread, reused across calls: split() runs once per text segment
// and allocating them each time would dominate short inputs.
struct MatchScratch {
  pcre2_match_data* data = nullptr;
  pcre2_jit_stack* jit_stack = nullptr;
  pcre2_match_context* context = nullptr;

  MatchScratch() {
    data = pcre2_match_data_create(1, nullptr);
    context = pcre2_match_context_create(nullptr);
    // The default 32 KiB machine stack is enough for these patterns, but a larger one costs
    // nothing until used and keeps unusual patterns from failing on long inputs.
    jit_stack = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, nullptr);
    if (jit_stack) pcre2_jit_stack_assign(context, nullptr, jit_stack);
  }
  ~MatchScratch() {
    pcre2_match_data_free(data);
    pcre2_match_context_free(context);
    if (jit_stack) pcre2_jit_stack_free(jit_stack);
  }
};

MatchScratch& scratch() {
  thread_local MatchScratch s;
  return s;
}

}  // namespace

void RegexSplitter::split(std::string_view text, std::vector<std::string_view>& pieces) const {
  const auto* code = static_cast<const pcre2_code*>(code_);
  MatchScratch& s = scratch();
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  const size_t n = text.size();
  size_t gap_start = 0;  // start of the text not yet emitted
  size_t pos = 0;        // where the next search starts
  while (pos < n) {
    // The text was validated once up front; without NO_UTF_CHECK PCRE2 would re-validate the
    // whole subject on every call, making a long text quadratic.
    int rc = jit_ ? pcre2_jit_match(code, subject, n, pos, PCRE2_NO_UTF_CHECK, s.data, s.context)
                  : pcre2_match(code, subject, n, pos, PCRE2_NO_UTF_CHECK, s.data, s.context);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(rc, message, sizeof message);
      fail("split pattern failed on the input: ", reinterpret_cast<const char*>(message));
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(s.data);
    size_t start = ov[0], end = ov[1];
    if (end == start) {
      // An empty match produces no piece; step over one character so the search moves on.
      char32_t cp;
      size_t len = utf8::decode(text.substr(start), &cp);
      pos = start + (len ? len : 1);
      continue;
    }
    if (start > gap_start) pieces.push_back(text.substr(gap_start, start - gap_start));
    pieces.push_back(text.substr(start, end - start));
    gap_start = pos = end;
  }
  if (gap_start < n) pieces.push_back(text.substr(gap_start));
}

PreTokenizer::PreTokenizer(const std::vector<std::string>& patterns) {
  steps_.reserve(patterns.size());
  for (const std::string& p : patterns) steps_.emplace_back(p);
}

void PreTokenizer::split(std::string_view text, std::vector<std::string_view>& pieces,
                         std::vector<std::string_view>& scratch_pieces) const {
  if (text.empty()) return;
  if (steps_.empty()) {
    pieces.push_back(text);
    return;
  }
  if (steps_.size() == 1) {
    steps_[0].split(text, pieces);
    return;
  }
  scratch_pieces.clear();
  steps_[0].split(text, scratch_pieces);
  for (size_t k = 1; k < steps_.size(); ++k) {
    std::vector<std::string_view> next;
    for (std::string_view piece : scratch_pieces) steps_[k].split(piece, next);
    scratch_pieces.swap(next);
  }
  pieces.insert(pieces.end(), scratch_pieces.begin(), scratch_pieces.end());
}

}  // namespace qwen35
