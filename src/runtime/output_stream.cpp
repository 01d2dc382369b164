#include "runtime/output_stream.h"

#include <algorithm>
#include <utility>

namespace qwen35 {

namespace {

// Drops the leading "\n" run of `text`; returns false when nothing else is left.
bool drop_leading_newlines(std::string_view& text) {
  const size_t k = text.find_first_not_of('\n');
  if (k == std::string_view::npos) {
    text = {};
    return false;
  }
  text.remove_prefix(k);
  return true;
}

}  // namespace

OutputStream::OutputStream(bool start_in_reasoning, std::vector<std::string> stop)
    : reasoning_mode_(start_in_reasoning), trim_leading_(start_in_reasoning) {
  for (std::string& s : stop) {
    if (!s.empty()) stop_.push_back(std::move(s));
  }
}

void OutputStream::release(Channel channel, std::string_view text, std::vector<OutputPiece>& out) {
  if (text.empty()) return;
  (channel == Channel::kReasoning ? reasoning_ : content_).append(text);
  // Merge with a piece this same call produced, so a caller sees one piece per channel change.
  if (out.size() > call_start_ && out.back().channel == channel) {
    out.back().text.append(text);
  } else {
    out.push_back({channel, std::string(text)});
  }
}

void OutputStream::release_held(std::vector<OutputPiece>& out) {
  if (held_newlines_ > 0) {
    release(Channel::kReasoning, std::string(held_newlines_, '\n'), out);
    held_newlines_ = 0;
  }
  if (!held_.empty()) {
    release(Channel::kContent, held_, out);
    held_.clear();
  }
}

bool OutputStream::push_text(std::string_view text, std::vector<OutputPiece>& out) {
  call_start_ = out.size();
  if (stopped_ || text.empty()) return stopped_;
  if (reasoning_mode_) {
    push_reasoning(text, out);
  } else {
    push_content(text, out);
  }
  return stopped_;
}

void OutputStream::push_reasoning(std::string_view text, std::vector<OutputPiece>& out) {
  if (trim_leading_) {
    if (!drop_leading_newlines(text)) return;
    trim_leading_ = false;
  }
  // Newlines at the end may be the ones before </think>: hold them until text follows.
  const size_t last = text.find_last_not_of('\n');
  if (last == std::string_view::npos) {
    held_newlines_ += text.size();
    return;
  }
  if (held_newlines_ > 0) {
    release(Channel::kReasoning, std::string(held_newlines_, '\n'), out);
    held_newlines_ = 0;
  }
  release(Channel::kReasoning, text.substr(0, last + 1), out);
  held_newlines_ = text.size() - (last + 1);
}

size_t OutputStream::partial_match_length() const {
  size_t best = 0;
  for (const std::string& s : stop_) {
    // Only lengths above `best` can improve it; a full-length match was handled by the caller.
    for (size_t len = std::min(held_.size(), s.size() - 1); len > best; --len) {
      if (held_.compare(held_.size() - len, len, s, 0, len) == 0) {
        best = len;
        break;
      }
    }
  }
  return best;
}

void OutputStream::push_content(std::string_view text, std::vector<OutputPiece>& out) {
  if (trim_leading_) {
    if (!drop_leading_newlines(text)) return;
    trim_leading_ = false;
  }
  if (stop_.empty()) {
    release(Channel::kContent, text, out);
    return;
  }
  // held_ is a proper prefix of some stop string and holds no match, so any match now ends in
  // the new text. The first occurrence of each stop string is its earliest-ending one.
  held_.append(text);
  size_t best_start = std::string::npos;
  size_t best_end = std::string::npos;
  for (const std::string& s : stop_) {
    const size_t pos = held_.find(s);
    if (pos == std::string::npos) continue;
    const size_t end = pos + s.size();
    if (end < best_end || (end == best_end && pos < best_start)) {
      best_start = pos;
      best_end = end;
    }
  }
  if (best_start != std::string::npos) {
    release(Channel::kContent, std::string_view(held_).substr(0, best_start), out);
    held_.clear();
    stopped_ = true;
    return;
  }
  // Release all but the longest tail that could still grow into a stop string.
  const size_t keep = partial_match_length();
  const size_t releasable = held_.size() - keep;
  release(Channel::kContent, std::string_view(held_).substr(0, releasable), out);
  held_.erase(0, releasable);
}

void OutputStream::push_think_start(std::vector<OutputPiece>& out) {
  call_start_ = out.size();
  if (stopped_ || reasoning_mode_) return;  // nested <think>: nothing to switch
  release_held(out);  // a stop string cannot span a reasoning block
  reasoning_mode_ = true;
  trim_leading_ = true;
}

void OutputStream::push_think_end(std::vector<OutputPiece>& out) {
  call_start_ = out.size();
  if (stopped_ || !reasoning_mode_) return;  // stray </think>: dropped
  held_newlines_ = 0;                        // the newlines before </think> are the template's
  reasoning_mode_ = false;
  trim_leading_ = true;
}

void OutputStream::finish(std::vector<OutputPiece>& out) {
  call_start_ = out.size();
  if (stopped_) return;
  release_held(out);
}

}  // namespace qwen35
