#include <algorithm>
#include <chrono>
#include <cstring>

#include "core/error.h"
#include "runtime/batch_gate.h"
#include "runtime/engine_internal.h"
#include "runtime/prefix_cache.h"
#include "runtime/session_impl.h"

namespace qwen35 {
namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

}  // namespace

const char* stop_reason_name(StopReason r) {
  switch (r) {
    case StopReason::kNone: return "none";
    case StopReason::kEos: return "eos";
    case StopReason::kStopString: return "stop";
    case StopReason::kMaxTokens: return "length";
    case StopReason::kContextFull: return "context";
    case StopReason::kCancelled: return "cancelled";
  }
  return "none";
}

Generation::Impl::Impl(Session::Impl& s, PromptPlan p, const SamplingParams& prm, EventCallback cb)
    : session(s),
      engine(s.engine),
      plan(std::move(p)),
      params(prm),
      on_event(std::move(cb)),
      sampler(prm, s.engine.text_config().vocab_size),
      output(plan.starts_in_reasoning, prm.stop),
      decoder(*s.engine.tokenizer, /*skip_special=*/true),
      thought(prm.reasoning_budget, plan.starts_in_reasoning, plan.split_reasoning ? s.engine.think_start_id : -1,
              plan.split_reasoning ? s.engine.think_end_id : -1, s.engine.thought_closing_ids),
      constraint(s.engine, prm.format, plan.starts_in_reasoning, plan.split_reasoning),
      policy(prm.speculative, s.seq.has_mtp(), s.spec_costs) {
  result.prompt_tokens = plan.size();
  for (const PromptImage& img : plan.images) (img.pad_id == engine.video_pad_id ? result.video_tokens : result.image_tokens) += img.count;
  result.timings.load_images_ms = plan.load_images_ms;
  history = plan.ids;
  next_prompt = session.reuse_prefix(plan);
  result.cached_tokens = next_prompt;
}

// Vision runs in slices, one per step(), so a server interleaves it with other requests' steps
// and can cancel it between any two (a large image is many slices, not one long stall).
bool Generation::Impl::vision_slice(int64_t from, int64_t to, BatchGate* gate) {
  for (PromptImage& img : plan.images) {
    if (!img.embeddings.empty() || img.start + img.count <= from || img.start >= to) continue;
    const auto t0 = Clock::now();
    const VisionTower& tower = *engine.model->vision();
    if (!img.vision)
      img.vision = std::make_shared<VisionRun>(tower, img.processed.pixel_values.data(),
                                               int64_t(img.processed.pixel_values.size()) / tower.patch_dim(),
                                               std::vector<ImageGrid>{img.processed.grid});
    bool more;
    {
      const BatchGate::Outside outside(gate);  // the other generations' passes need not wait for the slice
      more = img.vision->step(engine.compute);
    }
    if (!more) {
      img.embeddings = std::move(img.vision->output());
      img.vision.reset();
      if (int64_t(img.embeddings.size()) != img.count * engine.text_config().hidden_size)
        fail("the vision tower returned ", img.embeddings.size() / size_t(engine.text_config().hidden_size),
             " image tokens where the prompt has ", img.count);
      std::vector<float>().swap(img.processed.pixel_values);  // no longer needed: give the memory back
    }
    result.timings.vision_ms += ms_since(t0);
    return true;
  }
  return false;
}

void Generation::Impl::prefill_step(BatchGate* gate) {
  const int64_t P = plan.size(), H = engine.text_config().hidden_size;
  Sequence& seq = session.seq;
  int64_t n = block_in_flight;  // a block part-way through the layers goes on first
  if (n == 0) {
    n = std::min<int64_t>(prefill_limit > 0 ? prefill_limit : engine.options.prefill_block, P - next_prompt);
    for (int64_t point : plan.snapshot_points)
      if (point > next_prompt && point < next_prompt + n) n = point - next_prompt;
    if (vision_slice(next_prompt, next_prompt + n, gate)) return;  // this step was a slice of vision
  }
  const auto t0 = Clock::now();
  const bool last = next_prompt + n == P;
  logits.resize(size_t(engine.text_config().vocab_size));
  if (block_in_flight == 0) {
    embed_buf.resize(size_t(n * H));
    engine.model->decoder().embed(plan.ids.data() + next_prompt, n, embed_buf.data());
    for (const PromptImage& img : plan.images) {  // image pads take the vision tower's rows
      for (int64_t i = std::max(img.start, next_prompt); i < std::min(img.start + img.count, next_prompt + n); ++i)
        std::memcpy(embed_buf.data() + (i - next_prompt) * H, img.embeddings.data() + (i - img.start) * H,
                    size_t(H) * sizeof(float));
    }
    pos_buf.resize(size_t(3 * n));
    for (int a = 0; a < 3; ++a)
      std::copy_n(plan.positions.data() + a * P + next_prompt, n, pos_buf.data() + a * n);
    seq.begin_block(plan.ids.data() + next_prompt, plan.keys.data() + next_prompt, embed_buf.data(), pos_buf.data(), n,
                    DeltaRuleMode::kAuto);
    block_in_flight = n;
  }
  const int first_layer = seq.block_layers_done();
  const bool through = seq.advance_block(prefill_layers(n), last ? 1 : 0, logits.data(), gate);
  prefill_token_layers += n * ((through ? engine.text_config().num_layers : seq.block_layers_done()) - first_layer);
  result.timings.prefill_ms += ms_since(t0);
  if (!through) return;
  block_in_flight = 0;
  seq.flush_mtp();  // the head's cache over the prompt, before any snapshot of it
  next_prompt += n;
  result.timings.prefill_tokens += n;

  if (std::find(plan.snapshot_points.begin(), plan.snapshot_points.end(), next_prompt) != plan.snapshot_points.end())
    impl_of(*session.cache).put(session.seq.snapshot());
  if (last) {
    session.seq.set_rope_delta(plan.rope_delta);
    if (params.max_tokens == 0) return finish(StopReason::kMaxTokens);
    if (thought.closing_due()) return;  // budget 0: the next step forces the closing instead of sampling
    TokenLogprob lp;
    const int32_t t = sample_row(logits.data(), params.logprobs ? &lp : nullptr);
    handle_token(t, params.logprobs ? &lp : nullptr);
  }
}

int32_t Generation::Impl::sample_row(float* row, TokenLogprob* logprob) {
  constraint.mask(row, engine.text_config().vocab_size);
  const int32_t t = sampler.sample(row, logprob);
  sampler.accept(t);
  constraint.observe(t);
  return t;
}

bool Generation::Impl::handle_token(int32_t token, TokenLogprob* logprob) {
  if (!params.ignore_eos && engine.is_eos(token)) {
    finish(StopReason::kEos);
    return false;
  }
  result.tokens.push_back(token);
  result.completion_tokens = int64_t(result.tokens.size());
  thought.observe(token);
  result.reasoning_tokens = thought.thought_tokens();
  history.push_back(token);
  pending = token;
  pieces.clear();
  bool stopped = false;
  if (plan.split_reasoning && token == engine.think_start_id) output.push_think_start(pieces);
  else if (plan.split_reasoning && token == engine.think_end_id) output.push_think_end(pieces);
  else stopped = output.push_text(decoder.push(token), pieces);
  std::vector<TokenLogprob> lps;
  if (logprob) {
    logprob->text = std::string(engine.tokenizer->token_bytes(token));
    lps.push_back(std::move(*logprob));
  }
  if (!emit(pieces, logprob ? &lps : nullptr)) return false;
  if (stopped) {
    finish(StopReason::kStopString);
    return false;
  }
  if (params.max_tokens >= 0 && result.completion_tokens >= params.max_tokens) {
    finish(StopReason::kMaxTokens);
    return false;
  }
  // The token just emitted is fed next, at position history.size() - 1. (Not seq.length(): a
  // verified draft has already fed tokens that are handed out after this one.)
  if (int64_t(history.size()) > engine.context_size) {
    finish(StopReason::kContextFull);
    return false;
  }
  return true;
}

bool Generation::Impl::emit(std::vector<OutputPiece>& ps, std::vector<TokenLogprob>* logprobs) {
  if (!on_event) return true;
  for (OutputPiece& p : ps) {
    if (p.text.empty()) continue;
    GenerationEvent ev;
    ev.channel = p.channel;
    ev.text = std::move(p.text);
    if (logprobs) ev.logprobs = std::move(*logprobs), logprobs = nullptr;
    if (!on_event(ev)) {
      cancelled = true;
      finish(StopReason::kCancelled);
      return false;
    }
  }
  if (logprobs && !logprobs->empty()) {
    GenerationEvent ev;
    ev.logprobs = std::move(*logprobs);
    if (!on_event(ev)) {
      cancelled = true;
      finish(StopReason::kCancelled);
      return false;
    }
  }
  return true;
}

void Generation::Impl::decode_step(BatchGate* gate) {
  const auto t0 = Clock::now();
  if (thought.closing_due()) {
    close_thought(gate);
    result.timings.decode_ms += ms_since(t0);
    return;
  }
  const int64_t room = engine.context_size - session.seq.length() - 1;  // tokens after `pending`
  const int64_t left = params.max_tokens >= 0 ? params.max_tokens - result.completion_tokens : INT64_MAX;
  // A verify step emits its accepted drafts and one more token: at most `left`, and no thought
  // token past the reasoning budget.
  const int max_draft = int(std::min<int64_t>({room, left - 1, thought.room() - 1, params.speculative.draft_max}));
  const SpecMode mode = params.speculative.mode;
  draft.clear();
  SpecPolicy::Plan plan;
  if (max_draft > 0 && mode != SpecMode::kOff) {
    pld_draft.clear();
    if (mode == SpecMode::kAuto || mode == SpecMode::kPld) {
      if (draft_source) draft_source(history, max_draft, pld_draft);
      else lookup.draft(history, max_draft, pld_draft);
    }
    plan = policy.plan(max_draft, int(std::min<size_t>(pld_draft.size(), size_t(max_draft))));
    if (plan.source == DraftSource::kPld) {
      draft.assign(pld_draft.begin(), pld_draft.begin() + plan.tokens);
    } else if (plan.source == DraftSource::kMtp) {
      const auto d0 = Clock::now();
      session.seq.mtp_draft(pending, plan.tokens, draft);
      const double ms = ms_since(d0);
      if (rewrite_mtp_draft) rewrite_mtp_draft(history, draft);
      result.timings.draft_ms += ms;
      session.spec_costs.record_mtp_step(ms / double(plan.tokens));
    }
  }
  if (!draft.empty()) decode_with_draft(draft, plan.source, gate);
  else plain_step(gate);
  result.timings.decode_ms += ms_since(t0);
}

void Generation::Impl::plain_step(BatchGate* gate) {
  const auto t0 = Clock::now();
  const int32_t in = pending;
  session.seq.feed_text(&in, 1, DeltaRuleMode::kAuto, 1, logits.data(), /*traced=*/false, gate);
  session.spec_costs.record_block(1, ms_since(t0));
  TokenLogprob lp;
  const int32_t t = sample_row(logits.data(), params.logprobs ? &lp : nullptr);
  handle_token(t, params.logprobs ? &lp : nullptr);
}

// Verifies [pending, draft...] in one block. The block runs the recurrent delta rule, whose
// arithmetic per token is exactly that of single-token decoding, so row i of its logits is
// bit-identical to what plain decoding would compute at that position once the drafts before it
// are accepted. The block is fed traced: keeping only its accepted part afterwards replays the
// DeltaNet recurrences from the trace instead of feeding those tokens again.
//
// Acceptance is the speculative sampling rule for a deterministic draft: q is one-hot at the draft
// token d, so d is accepted with probability min(1, p(d)/q(d)) = p(d), and on rejection the token
// comes from normalize(max(0, p - q)) = p without d, renormalised. Drawing x from p with the
// request's generator and accepting d exactly when x == d realises both at once: P(accept) =
// p(d), and a rejection leaves x distributed as p restricted to x != d. p is the distribution
// plain sampling draws from -- penalties over the tokens accepted so far (sampler.accept runs per
// emitted token, in order), temperature, top-k/p, min-p -- and each emitted token takes exactly
// one draw, so the output is the very token sequence plain decoding gives for the same seed.
// Greedy is the same rule with p one-hot at the argmax.
void Generation::Impl::decode_with_draft(const std::vector<int32_t>& d, DraftSource source, BatchGate* gate) {
  const int64_t k = int64_t(d.size()), V = engine.text_config().vocab_size;
  block.assign(1, pending);
  block.insert(block.end(), d.begin(), d.end());
  session.seq.save_deltanet(save);
  logits.resize(size_t((k + 1) * V));
  const auto t0 = Clock::now();
  session.seq.feed_text(block.data(), k + 1, DeltaRuleMode::kRecurrent, k + 1, logits.data(), /*traced=*/true, gate);
  session.spec_costs.record_block(int(k + 1), ms_since(t0));
  std::vector<int32_t> emitted;
  std::vector<TokenLogprob> lps;
  int64_t accepted = 0;
  for (int64_t i = 0; i <= k; ++i) {
    TokenLogprob lp;
    const int32_t t = sample_row(logits.data() + i * V, params.logprobs ? &lp : nullptr);
    emitted.push_back(t);
    lps.push_back(std::move(lp));
    if (i == k || t != d[size_t(i)]) break;
    ++accepted;
  }
  if (source == DraftSource::kMtp) {
    result.mtp_drafted += k;
    result.mtp_accepted += accepted;
  } else {
    result.pld_drafted += k;
    result.pld_accepted += accepted;
    lookup.report(int(k), int(accepted));
  }
  policy.report(source, int(k), int(accepted));
  if (accepted < k) session.seq.rewind(save, accepted + 1);  // keep pending and the accepted drafts
  int64_t fed = accepted + 1;  // tokens of `block` in the sequence now
  for (size_t i = 0; i < emitted.size(); ++i) {
    if (handle_token(emitted[i], params.logprobs ? &lps[i] : nullptr)) continue;
    // Stopped at emitted token i: plain decoding would have fed block[0..i] and not token i
    // itself, so leave the timeline exactly so (the next turn's prefix match depends on it).
    if (int64_t(i) + 1 < fed) {
      session.seq.rewind(save, int64_t(i) + 1);
      fed = int64_t(i) + 1;
    }
    break;
  }
  logits.resize(size_t(V));
}

// The closing tokens are emitted as they are (no logits, no logprobs; not recorded for the
// penalties, which are about the model's own repetition, like the prompt's tokens are not) and
// then fed as one block with the recurrent delta rule, the arithmetic of feeding them one by
// one. As everywhere, the last emitted token stays pending; if the generation stops at closing
// token i, the timeline ends just before it, as plain decoding would leave it.
void Generation::Impl::close_thought(BatchGate* gate) {
  const std::vector<int32_t>& closing = thought.begin_closing();
  block.clear();
  if (pending >= 0) block.push_back(pending);  // none yet when a budget of 0 closes the thought at once
  for (size_t i = 0; i < closing.size(); ++i) {
    constraint.observe(closing[i]);
    if (!handle_token(closing[i], nullptr)) break;
    if (i + 1 < closing.size()) block.push_back(closing[i]);
  }
  if (!block.empty())
    session.seq.feed_text(block.data(), int64_t(block.size()), DeltaRuleMode::kRecurrent, 0, nullptr,
                          /*traced=*/false, gate);
}

int Generation::Impl::prefill_layers(int64_t n) const {
  if (prefill_layer_budget <= 0 || engine.device) return 0;  // a device pass takes every layer
  const int64_t layers = prefill_layer_budget / std::max<int64_t>(n, 1);
  return int(std::clamp<int64_t>(layers, 1, engine.text_config().num_layers));
}

void Generation::Impl::drop_block_in_flight() {
  if (block_in_flight == 0) return;
  block_in_flight = 0;
  session.seq.discard_block();
}

void Generation::Impl::finish(StopReason reason) {
  if (done) return;
  done = true;
  drop_block_in_flight();  // cancelled part-way through a prompt block
  pieces.clear();
  const std::string tail = decoder.finish();
  if (!tail.empty()) output.push_text(tail, pieces);
  output.finish(pieces);
  if (!cancelled) emit(pieces, nullptr);
  result.stop_reason = cancelled ? StopReason::kCancelled : reason;
  result.content = output.content();
  result.reasoning = output.reasoning();
  result.timings.decode_tokens = result.completion_tokens > 0 ? result.completion_tokens - 1 : 0;
  session.busy = false;
}

bool Generation::Impl::step(BatchGate* gate) {
  if (done) return false;
  try {
    if (next_prompt < plan.size()) prefill_step(gate);
    else decode_step(gate);
  } catch (...) {
    drop_block_in_flight();
    session.busy = false;
    done = true;
    throw;
  }
  return !done;
}

Generation::Generation(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Generation::~Generation() {
  if (impl_ && !impl_->done) {
    impl_->drop_block_in_flight();
    impl_->session.busy = false;
  }
}
bool Generation::step() { return impl_->step(nullptr); }
bool Generation::done() const { return impl_->done; }
void Generation::cancel() {
  impl_->cancelled = true;
  impl_->finish(StopReason::kCancelled);
}
const GenerationResult& Generation::result() const { return impl_->result; }
int64_t Generation::pending_prompt_tokens() const { return impl_->plan.size() - impl_->next_prompt; }

}  // namespace qwen35
