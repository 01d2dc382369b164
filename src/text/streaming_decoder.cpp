#include "text/streaming_decoder.h"

#include "text/utf8.h"

namespace qwen35 {

std::string StreamingDecoder::push(int32_t id) {
  std::string out;
  push(id, out);
  return out;
}

void StreamingDecoder::push(int32_t id, std::string& out) {
  if (!tokenizer_->is_valid_id(id) || (skip_special_ && tokenizer_->is_special(id))) return;
  pending_.append(tokenizer_->token_bytes(id));
  // Everything but a tail that is a proper prefix of a well-formed sequence can be decided now:
  // a lead byte is never a continuation byte, so no ill-formed subpart before the tail can grow
  // into it, and the lossy decoding of the head is final.
  size_t hold = utf8::incomplete_tail(pending_);
  size_t ready = pending_.size() - hold;
  if (ready == 0) return;
  utf8::append_lossy(out, std::string_view(pending_).substr(0, ready));
  pending_.erase(0, ready);
}

std::string StreamingDecoder::finish() {
  std::string out;
  utf8::append_lossy(out, pending_);
  pending_.clear();
  return out;
}

}  // namespace qwen35
