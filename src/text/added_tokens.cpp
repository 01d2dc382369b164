#include "text/added_tokens.h"

#include <cstring>

#include "text/unicode.h"
#include "text/utf8.h"

namespace qwen35 {

namespace {

// The code point that ends just before `pos` (text is well-formed UTF-8).
char32_t code_point_before(std::string_view text, size_t pos, size_t* start) {
  size_t s = pos - 1;
  while (s > 0 && (uint8_t(text[s]) & 0xC0) == 0x80) --s;
  char32_t cp = 0;
  utf8::decode(text.substr(s, pos - s), &cp);
  *start = s;
  return cp;
}

}  // namespace

AddedTokenMatcher::AddedTokenMatcher(const std::vector<AddedToken>& tokens) : tokens_(tokens) {
  nodes_.emplace_back();
  for (size_t t = 0; t < tokens_.size(); ++t) {
    const std::string& content = tokens_[t].content;
    if (content.empty()) continue;
    first_byte_[uint8_t(content[0])] = true;
    int32_t node = 0;
    for (char c : content) {
      int32_t next = -1;
      for (auto [byte, child] : nodes_[node].children)
        if (byte == uint8_t(c)) next = child;
      if (next < 0) {
        next = int32_t(nodes_.size());
        nodes_[node].children.emplace_back(uint8_t(c), next);
        nodes_.emplace_back();
      }
      node = next;
    }
    // Two added tokens with one content: the first listed wins, as in the reference's vocabulary.
    if (nodes_[node].token < 0) nodes_[node].token = int32_t(t);
  }
}

int32_t AddedTokenMatcher::longest_at(std::string_view text, size_t pos, size_t* end) const {
  int32_t node = 0, found = -1;
  for (size_t i = pos; i < text.size(); ++i) {
    int32_t next = -1;
    for (auto [byte, child] : nodes_[node].children)
      if (byte == uint8_t(text[i])) {
        next = child;
        break;
      }
    if (next < 0) break;
    node = next;
    if (nodes_[node].token >= 0) {
      found = nodes_[node].token;
      *end = i + 1;
    }
  }
  return found;
}

void AddedTokenMatcher::find(std::string_view text, bool skip_special, std::vector<Match>& out) const {
  if (tokens_.empty()) return;
  size_t taken = 0;  // end of the previous kept match: lstrip never reaches back past it
  size_t pos = 0;
  const size_t n = text.size();
  while (pos < n) {
    if (!first_byte_[uint8_t(text[pos])]) {
      ++pos;
      continue;
    }
    size_t end = 0;
    int32_t t = longest_at(text, pos, &end);
    if (t < 0) {
      ++pos;
      continue;
    }
    size_t start = pos;
    pos = end;  // matches never overlap, kept or not
    const AddedToken& token = tokens_[t];
    if (skip_special && token.special) continue;
    if (token.single_word) {
      size_t unused;
      char32_t cp = 0;
      bool word_before = start > 0 && unicode::is_word_char(code_point_before(text, start, &unused));
      bool word_after = end < n && utf8::decode(text.substr(end), &cp) && unicode::is_word_char(cp);
      if (word_before || word_after) continue;
    }
    if (token.lstrip) {
      while (start > taken) {
        size_t s;
        if (!unicode::is_white_space(code_point_before(text, start, &s))) break;
        start = s;
      }
    }
    if (token.rstrip) {
      char32_t cp;
      size_t len;
      while (end < n && (len = utf8::decode(text.substr(end), &cp)) && unicode::is_white_space(cp)) end += len;
      pos = end;
    }
    out.push_back({start, end, token.id});
    taken = end;
  }
}

}  // namespace qwen35
