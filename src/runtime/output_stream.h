// Routes generated text to the reasoning or the content channel and applies stop strings, as
// text streams in. The generation loop decodes tokens to whole UTF-8 pieces itself and reports
// the <think> / </think> tokens as calls, so nothing here parses markers out of text.
//
// Channels (what the chat template needs to render the turn back, and what vLLM's qwen3
// reasoning parser returns):
//   * Reasoning starts at start_in_reasoning (the prompt ended with "<think>\n") or at an
//     emitted <think>, and ends at </think>.
//   * Newlines at both ends of the reasoning are dropped: the template writes
//     "<think>\n" + reasoning + "\n</think>\n\n" and strips them when it reads a turn back. So a
//     trailing run of "\n" is held until more reasoning text shows whether it was inside.
//   * After an emitted </think>, leading newlines of the content are dropped (the template's
//     "\n\n" separator). Content that never followed a </think> (thinking off, raw completions)
//     is passed through untouched.
//   * </think> outside reasoning (thinking off, or a second one) is dropped and changes nothing;
//     <think> inside reasoning likewise.
//
// Stop strings apply to the content channel only. They are the caller's way to end the answer
// (OpenAI's `stop`); matching them in the reasoning would cut a thinking model off before it has
// answered at all, and the reasoning's wording is not something a client can predict.
//   * Matched across piece boundaries: a tail of the content that could still begin a stop
//     string is held back until the next text resolves it.
//   * The first match to complete wins (on equal ends, the one starting earlier). That is what a
//     stream can decide without waiting, and it makes the result independent of how the text
//     was split into pieces.
//   * The text before the match is released; the stop string and everything after it never are.
//     After a match every push is ignored.
//   * An emitted <think> in the content releases the held tail: a stop string does not match
//     across a reasoning block.
//
// Invariant: content() and reasoning() equal the concatenation of the released pieces of each
// channel, and the released text does not depend on how the same text was split into pieces.
//
// Thread contract: one OutputStream per generation, used by one thread.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "qwen35/engine.h"

namespace qwen35 {

struct OutputPiece {
  Channel channel = Channel::kContent;
  std::string text;  // never empty
};

class OutputStream {
 public:
  // start_in_reasoning: the prompt already ended with "<think>\n" (thinking on), so the model's
  // first text is reasoning. Empty stop strings are ignored.
  OutputStream(bool start_in_reasoning, std::vector<std::string> stop);

  // One piece of generated text (valid, complete UTF-8). Appends the newly releasable text to
  // `out` (one piece per channel change, merged within this call). Returns true when a stop
  // string has matched, now or earlier.
  bool push_text(std::string_view text, std::vector<OutputPiece>& out);
  void push_think_start(std::vector<OutputPiece>& out);  // the model emitted <think>
  void push_think_end(std::vector<OutputPiece>& out);    // the model emitted </think>

  // End of generation (EOS, length, cancel): releases everything still held, which is never
  // part of a matched stop string (after a match nothing is held).
  void finish(std::vector<OutputPiece>& out);

  bool stopped() const { return stopped_; }
  bool in_reasoning() const { return reasoning_mode_; }
  // Everything released so far on each channel.
  const std::string& content() const { return content_; }
  const std::string& reasoning() const { return reasoning_; }

 private:
  void push_reasoning(std::string_view text, std::vector<OutputPiece>& out);
  void push_content(std::string_view text, std::vector<OutputPiece>& out);
  void release(Channel channel, std::string_view text, std::vector<OutputPiece>& out);
  void release_held(std::vector<OutputPiece>& out);
  // Length of the longest suffix of held_ that is a proper prefix of some stop string.
  size_t partial_match_length() const;

  std::vector<std::string> stop_;
  bool reasoning_mode_;
  bool stopped_ = false;
  bool trim_leading_ = false;    // drop "\n" at the start of the current channel's text
  size_t held_newlines_ = 0;     // reasoning: trailing "\n" not yet known to be inside
  std::string held_;             // content: tail that may begin a stop string
  size_t call_start_ = 0;        // out.size() when the current call began (merging)
  std::string content_;
  std::string reasoning_;
};

}  // namespace qwen35
