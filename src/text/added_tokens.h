// Finding added tokens (<|im_start|>, <think>, ...) in text, the way the reference does it: all
// tokens at once, leftmost match first and the longest token among those starting there, matches
// never overlapping and never bounded by word edges (`<|im_start|>>` is the token, then '>').
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "text/tokenizer_spec.h"

namespace qwen35 {

class AddedTokenMatcher {
 public:
  struct Match {
    size_t start, end;  // byte range in the text, stripped whitespace included
    int32_t id;
  };

  AddedTokenMatcher() = default;
  explicit AddedTokenMatcher(const std::vector<AddedToken>& tokens);

  bool empty() const { return tokens_.empty(); }

  // Appends the matches in `text`, in order. With `skip_special`, matches of special tokens are
  // dropped after matching (their text stays plain text and is not searched again), which is what
  // the reference's split_special_tokens mode does.
  void find(std::string_view text, bool skip_special, std::vector<Match>& out) const;

 private:
  struct Node {
    std::vector<std::pair<uint8_t, int32_t>> children;  // byte -> node index
    int32_t token = -1;                                 // index into tokens_ when a token ends here
  };

  // Index into tokens_ of the longest token that starts at text[pos], or -1; *end gets its end.
  int32_t longest_at(std::string_view text, size_t pos, size_t* end) const;

  std::vector<AddedToken> tokens_;
  std::vector<Node> nodes_;   // a byte trie; nodes_[0] is the root
  bool first_byte_[256] = {};  // bytes that can start a token: the scan skips everything else
};

}  // namespace qwen35
