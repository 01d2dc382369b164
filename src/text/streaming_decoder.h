// Incremental detokenization for generation: ids arrive one at a time, text leaves as soon as it is
// whole. A token can end in the middle of a UTF-8 character (an emoji is often split over two
// tokens), so bytes that may still be completed by the next token are held back.
//
// Invariant: the concatenation of every push() result and finish() equals
// Tokenizer::decode(all ids, skip_special), U+FFFD included where the bytes really are ill-formed.
//
// Thread contract: one StreamingDecoder per sequence, used by one thread; it only reads the
// Tokenizer, which must outlive it.
#pragma once

#include <cstdint>
#include <string>

#include "text/tokenizer.h"

namespace qwen35 {

class StreamingDecoder {
 public:
  explicit StreamingDecoder(const Tokenizer& tokenizer, bool skip_special = false)
      : tokenizer_(&tokenizer), skip_special_(skip_special) {}

  // Adds one id and returns the text it completes (often empty, sometimes more than one
  // character). Ids that name no token, and special ones when skipping, add nothing.
  std::string push(int32_t id);
  // The same, appending to `out` (no allocation once `out` has grown: for generation loops).
  void push(int32_t id, std::string& out);

  // Ends the stream: returns what is still held (as U+FFFD: bytes that never became a character).
  std::string finish();

  // Bytes held back waiting for the rest of a character (0..3).
  size_t pending_bytes() const { return pending_.size(); }

  // Forgets held bytes, e.g. when a sequence is rewound.
  void reset() { pending_.clear(); }

 private:
  const Tokenizer* tokenizer_;
  bool skip_special_;
  std::string pending_;
};

}  // namespace qwen35
