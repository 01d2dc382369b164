// Speculative decoding with the MTP head, and speculation for sampled requests: the output is
// always that of plain decoding (greedy: token for token; sampled: token for token for the same
// seed, and the same distribution), at the end of the context, with stops inside accepted drafts
// and across prefix reuse; the head's cache stays what a teacher-forced pass would have made.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <utility>

#include "io/gguf_writer.h"
#include "model/gguf_export.h"
#include "runtime/engine_impl.h"
#include "runtime/engine_internal.h"
#include "runtime/prefix_cache.h"
#include "runtime/sampler.h"
#include "runtime/session_impl.h"
#include "runtime/sequence.h"
#include "runtime_harness.h"
#include "text/tokenizer_gguf.h"
#include "text/tokenizer_json.h"
#include "support/test_data.h"

namespace qwen35::test {
namespace {

std::vector<int32_t> random_ids(std::mt19937& rng, int n) {
  std::uniform_int_distribution<int32_t> d(0, 150000);
  std::vector<int32_t> ids(static_cast<size_t>(n));
  for (auto& x : ids) x = d(rng);
  return ids;
}

SamplingParams with_spec(SamplingParams p, SpecMode mode, int draft_max) {
  p.speculative.mode = mode;
  p.speculative.draft_max = draft_max;
  return p;
}

std::unique_ptr<Engine> engine_with_context(int64_t ctx) {
  EngineOptions o;
  o.model_dir = tiny_model_dir();
  o.threads = 2;
  o.context_size = ctx;
  Status st;
  auto e = Engine::load(o, &st);
  EXPECT_TRUE(e) << st.message;
  return e;
}

// The head's state of a session after flushing every fed pair: [pairs] cache rows and the one
// pending row of the last fed token.
struct HeadState {
  int64_t pairs = 0;
  std::vector<uint8_t> keys, values;  // rows in the cache's dtype
  std::vector<float> pending_hidden;
};

HeadState head_state(Sequence& seq) {
  seq.flush_mtp();
  auto snap = seq.snapshot();
  return {seq.mtp_pairs(), snap->mtp_key_rows, snap->mtp_value_rows, snap->mtp_hidden};
}

// What a plain decoder makes of the same timeline: the prompt in one prefill block, then one
// token per step, the head run once over all of it.
HeadState reference_head_state(const EngineImpl& e, const std::vector<int32_t>& prompt,
                               const std::vector<int32_t>& timeline) {
  Sequence seq(e);
  seq.feed_text(prompt.data(), int64_t(prompt.size()), DeltaRuleMode::kAuto, 0, nullptr);
  for (size_t i = prompt.size(); i < timeline.size(); ++i) seq.feed_text(&timeline[i], 1, DeltaRuleMode::kAuto, 0, nullptr);
  return head_state(seq);
}

// Cache rows of the tiny model's head as f32, whatever the cache's dtype.
std::vector<float> rows_f32(const std::vector<uint8_t>& raw, int64_t pairs) {
  const TextConfig& cfg = impl_of(tiny_engine()).text_config();
  const int64_t row = int64_t(cfg.num_kv_heads) * cfg.head_dim;
  if (pairs == 0) return {};
  const DType dtype = raw.size() == size_t(pairs * row) * 2 ? DType::F16 : DType::F32;
  KvCache kv(cfg.num_kv_heads, cfg.head_dim, dtype);
  kv.append_raw(raw.data(), raw.data(), pairs);
  std::vector<float> out(size_t(pairs * row));
  for (int64_t t = 0; t < pairs; ++t) kv.key_f32(t, out.data() + t * row);
  return out;
}

void expect_same_head_state(const HeadState& a, const HeadState& b, const std::string& what) {
  EXPECT_EQ(a.pairs, b.pairs) << what;
  ASSERT_EQ(a.keys.size(), b.keys.size()) << what;
  EXPECT_EQ(a.keys, b.keys) << what;
  EXPECT_EQ(a.values, b.values) << what;
  ASSERT_EQ(a.pending_hidden.size(), b.pending_hidden.size()) << what;
  EXPECT_EQ(0, std::memcmp(a.pending_hidden.data(), b.pending_hidden.data(), a.pending_hidden.size() * sizeof(float)))
      << what;
}

TEST(MtpSpeculation, TheTinyModelHasAHeadAndTheEngineRunsIt) {
  const Engine& engine = tiny_engine();
  EXPECT_TRUE(engine.info().has_mtp);
  EXPECT_TRUE(engine.info().mtp_active);
  EXPECT_NE(impl_of(engine).mtp, nullptr);
  EngineOptions o;
  o.model_dir = tiny_model_dir();
  o.speculative.mode = SpecMode::kPld;
  Status st;
  auto pld_only = Engine::load(o, &st);
  ASSERT_TRUE(pld_only) << st.message;
  EXPECT_TRUE(pld_only->info().has_mtp);
  EXPECT_FALSE(pld_only->info().mtp_active);  // not run at all
  auto g = pld_only->new_session()->start_completion({1, 2, 3}, with_spec(greedy(4), SpecMode::kMtp, 3), nullptr, &st);
  EXPECT_EQ(g, nullptr);
  EXPECT_EQ(st.code, StatusCode::kInvalidArgument);
  EXPECT_NE(st.message.find("mtp"), std::string::npos) << st.message;
  g = engine.new_session()->start_completion({1, 2, 3}, with_spec(greedy(4), SpecMode::kMtp, 17), nullptr, &st);
  EXPECT_EQ(g, nullptr);
  EXPECT_EQ(st.code, StatusCode::kInvalidArgument);
}

// The head's cache has the trunk's element type (--kv-type), and speculation keeps greedy output
// and the head's cache equal to a teacher-forced pass with either.
TEST(MtpSpeculation, TheHeadsCacheHasTheEnginesKvType) {
  const TextConfig& cfg = impl_of(tiny_engine()).text_config();
  const std::vector<int32_t> prompt = {11, 22, 33, 44, 55, 66, 77, 88, 99, 11, 22, 33};
  for (const char* kv_type : {"f16", "f32"}) {
    EngineOptions o;
    o.model_dir = tiny_model_dir();
    o.threads = 2;
    o.kv_type = kv_type;
    Status st;
    auto engine = Engine::load(o, &st);
    ASSERT_TRUE(engine) << st.message;
    const GenerationResult plain = engine->new_session()->complete(prompt, greedy(12, SpecMode::kOff), nullptr, &st);
    ASSERT_TRUE(st.ok()) << st.message;
    auto session = engine->new_session();
    const GenerationResult spec = session->complete(prompt, with_spec(greedy(12), SpecMode::kMtp, 3), nullptr, &st);
    ASSERT_TRUE(st.ok()) << st.message;
    EXPECT_EQ(spec.tokens, plain.tokens) << kv_type;
    EXPECT_GT(spec.mtp_drafted, 0) << kv_type;
    const HeadState got = head_state(impl_of(*session).seq);
    const size_t elem = std::string(kv_type) == "f16" ? 2 : 4;
    EXPECT_EQ(got.keys.size(), size_t(got.pairs) * size_t(cfg.num_kv_heads * cfg.head_dim) * elem) << kv_type;
    expect_same_head_state(got, reference_head_state(impl_of(*engine), prompt, session->tokens()), kv_type);
  }
}

// A GGUF model, dense or MoE (whose head has an MoE FFN), drafts with its MTP block (bundled by
// convert) exactly as the folder does with mtp.*: greedy output equals plain greedy; a GGUF
// without the block has no head, so --spec mtp refuses to load and auto decodes without it.
TEST(MtpSpeculation, GgufModelsDraftWithTheirMtpBlock) {
  const std::string dir = temp_dir("spec_gguf");
  for (const Engine* from : tiny_engines()) {  // the dense model, and the MoE one with its MoE head
    const Model& folder = *impl_of(*from).model;
    const std::string tag = folder.config().text.is_moe() ? "moe" : "dense";
    for (bool with_mtp : {true, false}) {
      GgufExportOptions x;
      x.matrix_type = uniform_matrix_type(DType::BF16);
      x.file_type = 32;
      x.mtp = with_mtp;
      GgufWriter w;
      export_text_gguf(folder, x, w);
      const TokenizerSpec spec = load_tokenizer_json(folder.dir());
      write_tokenizer_gguf(spec, tokenizer_keys_from_hf(folder.dir(), spec, folder.config().text.vocab_size), w);
      const std::string path = dir + "/tiny-" + tag + (with_mtp ? ".gguf" : "-no-mtp.gguf");
      w.write(path);
      EngineOptions o;
      o.model_dir = path;
      o.threads = 2;
      o.speculative.mode = SpecMode::kMtp;
      Status st;
      auto engine = Engine::load(o, &st);
      if (!with_mtp) {
        EXPECT_EQ(engine, nullptr);
        EXPECT_NE(st.message.find("multi-token-prediction head"), std::string::npos) << st.message;
        o.speculative.mode = SpecMode::kAuto;
        engine = Engine::load(o, &st);
        ASSERT_TRUE(engine) << st.message;
        EXPECT_FALSE(engine->info().has_mtp);
        EXPECT_FALSE(engine->info().mtp_active);
        const GenerationResult r = engine->new_session()->complete({1, 2, 3, 4}, greedy(6), nullptr, &st);
        ASSERT_TRUE(st.ok()) << st.message;
        EXPECT_EQ(r.mtp_drafted, 0);
        continue;
      }
      ASSERT_TRUE(engine) << st.message;
      EXPECT_TRUE(engine->info().has_mtp);
      EXPECT_TRUE(engine->info().mtp_active);
      std::mt19937 rng(21);
      for (int draft_max : {1, 3, 8}) {
        const auto prompt = random_ids(rng, 10);
        const GenerationResult plain = engine->new_session()->complete(prompt, greedy(20, SpecMode::kOff), nullptr, &st);
        ASSERT_TRUE(st.ok()) << st.message;
        auto session = engine->new_session();
        const GenerationResult spec = session->complete(prompt, with_spec(greedy(20), SpecMode::kMtp, draft_max), nullptr, &st);
        ASSERT_TRUE(st.ok()) << st.message;
        EXPECT_EQ(spec.tokens, plain.tokens) << tag << " draft_max " << draft_max;
        EXPECT_GT(spec.mtp_drafted, 0) << tag;
      }
    }
  }
  std::filesystem::remove_all(dir);
}

// The head's own drafts (which the random tiny model rarely gets right) for several lengths:
// plain greedy tokens, and the head's cache equal bit for bit to a plain teacher-forced pass.
TEST(MtpSpeculation, GreedyEqualsPlainTokenForToken) {
  for (const Engine* e : tiny_engines()) {
  const Engine& engine = *e;
  SCOPED_TRACE(engine.info().name);
  std::mt19937 rng(11);
  std::vector<std::vector<int32_t>> prompts = {random_ids(rng, 1), random_ids(rng, 9), random_ids(rng, 40)};
  auto phrase = random_ids(rng, 4);
  std::vector<int32_t> repetitive;
  for (int r = 0; r < 5; ++r) repetitive.insert(repetitive.end(), phrase.begin(), phrase.end());
  prompts.push_back(repetitive);
  for (const auto& prompt : prompts) {
    Status st;
    const GenerationResult plain = engine.new_session()->complete(prompt, greedy(20, SpecMode::kOff), nullptr, &st);
    ASSERT_TRUE(st.ok()) << st.message;
    EXPECT_EQ(plain.drafted(), 0);
    for (int k : {1, 3, 8}) {
      auto session = engine.new_session();
      const GenerationResult r = session->complete(prompt, with_spec(greedy(20), SpecMode::kMtp, k), nullptr, &st);
      ASSERT_TRUE(st.ok()) << st.message;
      EXPECT_EQ(r.tokens, plain.tokens) << "draft_max " << k;
      EXPECT_GT(r.mtp_drafted, 0);
      EXPECT_EQ(r.pld_drafted, 0);
      std::vector<int32_t> timeline = session->tokens();
      expect_same_head_state(head_state(impl_of(*session).seq), reference_head_state(impl_of(engine), prompt, timeline),
                             "draft_max " + std::to_string(k));
    }
  }
  }
}

std::unique_ptr<Engine> engine_with_draft_vocab(int64_t draft_vocab) {
  EngineOptions o;
  o.model_dir = tiny_model_dir();
  o.threads = 2;
  o.draft_vocab = draft_vocab;
  o.speculative.mode = SpecMode::kMtp;
  Status st;
  auto e = Engine::load(o, &st);
  EXPECT_TRUE(e) << st.message;
  return e;
}

// Every draft of a run, by the length of the history it followed.
using DraftLog = std::map<size_t, std::vector<int32_t>>;

GenerationResult run_logging_drafts(const Engine& engine, const std::vector<int32_t>& prompt, const SamplingParams& p,
                                    DraftLog& log, std::vector<TokenLogprob>* logprobs = nullptr) {
  auto session = engine.new_session();
  Status st;
  auto gen = session->start_completion(prompt, p,
                                       [&](const GenerationEvent& ev) {
                                         if (logprobs) logprobs->insert(logprobs->end(), ev.logprobs.begin(), ev.logprobs.end());
                                         return true;
                                       },
                                       &st);
  EXPECT_TRUE(gen) << st.message;
  if (!gen) return {};
  impl_of(*gen).rewrite_mtp_draft = [&](const std::vector<int32_t>& history, std::vector<int32_t>& d) {
    log[history.size()] = d;
  };
  while (gen->step()) {
  }
  return gen->result();
}

// A reduced draft vocabulary changes the drafts, never the output: with the head drafting from ids
// [0, 64) and the added tokens only, greedy runs equal plain greedy token for token and sampled runs
// equal plain sampling with the same seed (tokens and logprobs); every draft lies in the subset, and
// the drafts differ from the full head's at the same points (so the reduced path is what ran).
TEST(MtpSpeculation, AReducedDraftVocabularyChangesTheDraftsNotTheOutput) {
  const auto full = engine_with_draft_vocab(0);
  const auto small = engine_with_draft_vocab(64);
  ASSERT_TRUE(full && small);
  const DraftVocab& subset = *impl_of(*small).draft_vocab;
  EXPECT_TRUE(impl_of(*full).draft_vocab->is_full());
  EXPECT_EQ(full->info().mtp_draft_vocab, full->info().vocab_size);
  EXPECT_EQ(small->info().mtp_draft_vocab, subset.rows());
  EXPECT_LT(subset.rows(), 64 + 128);  // [0, 64) and the few groups of the added tokens
  for (const char* name : {"<|im_end|>", "<think>", "</think>"}) {
    const auto id = impl_of(*small).tokenizer->token_to_id(name);
    ASSERT_TRUE(id) << name;
    EXPECT_TRUE(subset.contains(*id)) << name;
  }
  std::mt19937 rng(31);
  int differing = 0, compared = 0;
  for (int trial = 0; trial < 3; ++trial) {
    const auto prompt = random_ids(rng, 5 + 11 * trial);
    Status st;
    const GenerationResult plain = small->new_session()->complete(prompt, greedy(16, SpecMode::kOff), nullptr, &st);
    ASSERT_TRUE(st.ok()) << st.message;
    DraftLog full_drafts, small_drafts;
    const GenerationResult a = run_logging_drafts(*full, prompt, with_spec(greedy(16), SpecMode::kMtp, 3), full_drafts);
    const GenerationResult b = run_logging_drafts(*small, prompt, with_spec(greedy(16), SpecMode::kMtp, 3), small_drafts);
    EXPECT_EQ(a.tokens, plain.tokens) << "trial " << trial;
    EXPECT_EQ(b.tokens, plain.tokens) << "trial " << trial;
    EXPECT_GT(b.mtp_drafted, 0);
    for (const auto& [at, d] : small_drafts) {
      for (int32_t id : d) EXPECT_TRUE(subset.contains(id)) << "draft token " << id << " after " << at;
      if (auto f = full_drafts.find(at); f != full_drafts.end()) {
        ++compared;
        differing += f->second != d;
      }
    }
  }
  EXPECT_GT(compared, 0);
  EXPECT_GT(differing, 0) << "the reduced head drafted what the full head drafts: the test exercised nothing";

  SamplingParams p;
  p.temperature = 0.7f;
  p.top_k = 40;
  p.presence_penalty = 0.4f;
  p.max_tokens = 16;
  p.ignore_eos = true;
  p.logprobs = true;
  p.top_logprobs = 2;
  const auto prompt = random_ids(rng, 9);
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    p.seed = seed;
    Status st;
    std::vector<TokenLogprob> plain_lps, spec_lps;
    DraftLog none, drafts;
    const GenerationResult plain = run_logging_drafts(*small, prompt, with_spec(p, SpecMode::kOff, 1), none, &plain_lps);
    const GenerationResult spec = run_logging_drafts(*small, prompt, with_spec(p, SpecMode::kMtp, 3), drafts, &spec_lps);
    EXPECT_TRUE(none.empty());
    EXPECT_GT(spec.mtp_drafted, 0) << "seed " << seed;
    EXPECT_EQ(spec.tokens, plain.tokens) << "seed " << seed;
    ASSERT_EQ(spec_lps.size(), plain_lps.size());
    for (size_t i = 0; i < spec_lps.size(); ++i) {
      EXPECT_EQ(spec_lps[i].token, plain_lps[i].token);
      EXPECT_EQ(spec_lps[i].logprob, plain_lps[i].logprob);
    }
    for (const auto& [at, d] : drafts)
      for (int32_t id : d) EXPECT_TRUE(subset.contains(id)) << "seed " << seed << " draft token " << id;
  }
}

// The head drafts as usual, then the test rewrites the draft from the plain answer with mistakes:
// whole drafts accepted, partial matches and misses keep the greedy output and the head's cache.
TEST(MtpSpeculation, AcceptedAndRejectedDraftsKeepGreedyOutputAndTheHeadsCache) {
  for (const Engine* e : tiny_engines()) {
  const Engine& engine = *e;
  SCOPED_TRACE(engine.info().name);
  std::mt19937 rng(12);
  for (int trial = 0; trial < 3; ++trial) {
    const auto prompt = random_ids(rng, 5 + 11 * trial);
    Status st;
    const GenerationResult plain = engine.new_session()->complete(prompt, greedy(40, SpecMode::kOff), nullptr, &st);
    ASSERT_TRUE(st.ok());
    auto session = engine.new_session();
    auto gen = session->start_completion(prompt, with_spec(greedy(40), SpecMode::kMtp, 5), nullptr, &st);
    ASSERT_TRUE(st.ok());
    int calls = 0;
    impl_of(*gen).rewrite_mtp_draft = [&](const std::vector<int32_t>& history, std::vector<int32_t>& d) {
      const size_t done = history.size() - prompt.size();
      const int wrong_at = calls % 3 == 0 ? int(d.size()) : (calls * 5 + trial) % int(d.size() + 1);
      for (size_t i = 0; i < d.size() && done + i < plain.tokens.size(); ++i)
        d[i] = int(i) == wrong_at ? (plain.tokens[done + i] + 1) % 1000 : plain.tokens[done + i];
      ++calls;
    };
    while (gen->step()) {
    }
    const GenerationResult& r = gen->result();
    EXPECT_EQ(r.tokens, plain.tokens) << "trial " << trial;
    EXPECT_GT(r.mtp_accepted, 0);
    EXPECT_LT(r.mtp_accepted, r.mtp_drafted);
    EXPECT_EQ(session->tokens().size(), prompt.size() + plain.tokens.size() - 1);
    expect_same_head_state(head_state(impl_of(*session).seq),
                           reference_head_state(impl_of(engine), prompt, session->tokens()),
                           "trial " + std::to_string(trial));
  }
  }
}

// Right drafts up to the last position of the context, and a stop string inside an accepted
// draft: output, timeline and the head's cache are those of plain greedy decoding.
TEST(MtpSpeculation, ExactAtTheContextEndAndAfterAStopInsideAnAcceptedDraft) {
  std::mt19937 rng(13);
  const auto prompt = random_ids(rng, 10);
  auto right_drafts = [](const std::vector<int32_t>& prompt, const std::vector<int32_t>& answer) {
    return [&prompt, &answer](const std::vector<int32_t>& history, std::vector<int32_t>& d) {
      const size_t done = history.size() - prompt.size();
      for (size_t i = 0; i < d.size() && done + i < answer.size(); ++i) d[i] = answer[done + i];
    };
  };
  for (int64_t ctx : {24, 31, 40}) {
    auto engine = engine_with_context(ctx);
    Status st;
    auto plain_session = engine->new_session();
    const GenerationResult plain = plain_session->complete(prompt, greedy(1000, SpecMode::kOff), nullptr, &st);
    ASSERT_TRUE(st.ok());
    EXPECT_EQ(plain.stop_reason, StopReason::kContextFull);
    auto session = engine->new_session();
    auto gen = session->start_completion(prompt, with_spec(greedy(1000), SpecMode::kMtp, 6), nullptr, &st);
    impl_of(*gen).rewrite_mtp_draft = right_drafts(prompt, plain.tokens);
    while (gen->step()) {
    }
    EXPECT_EQ(gen->result().tokens, plain.tokens) << "ctx " << ctx;
    EXPECT_EQ(gen->result().stop_reason, StopReason::kContextFull);
    EXPECT_GT(gen->result().mtp_accepted, 0);
    EXPECT_EQ(session->tokens(), plain_session->tokens()) << "ctx " << ctx;
    expect_same_head_state(head_state(impl_of(*session).seq), head_state(impl_of(*plain_session).seq), "ctx");
  }
  auto engine = engine_with_context(4096);
  Status st;
  const GenerationResult probe = engine->new_session()->complete(prompt, greedy(20, SpecMode::kOff), nullptr, &st);
  SamplingParams params = greedy(20, SpecMode::kOff);
  params.stop = {engine->detokenize({probe.tokens[7]})};
  auto plain_session = engine->new_session();
  const GenerationResult plain = plain_session->complete(prompt, params, nullptr, &st);
  ASSERT_EQ(plain.stop_reason, StopReason::kStopString);
  auto session = engine->new_session();
  auto gen = session->start_completion(prompt, with_spec(params, SpecMode::kMtp, 8), nullptr, &st);
  impl_of(*gen).rewrite_mtp_draft = right_drafts(prompt, probe.tokens);
  while (gen->step()) {
  }
  EXPECT_EQ(gen->result().content, plain.content);
  EXPECT_EQ(gen->result().stop_reason, StopReason::kStopString);
  EXPECT_GT(gen->result().mtp_accepted, 0);
  EXPECT_EQ(session->tokens(), plain_session->tokens());
  expect_same_head_state(head_state(impl_of(*session).seq), head_state(impl_of(*plain_session).seq), "stop");
}

ChatRequest two_turns(const std::string& q1, const GenerationResult& a1, const std::string& q2) {
  ChatRequest r;
  r.messages.push_back(ChatMessage::Text("system", "You are terse."));
  r.messages.push_back(ChatMessage::Text("user", q1));
  ChatMessage a = ChatMessage::Text("assistant", a1.content);
  a.reasoning_content = a1.reasoning;
  r.messages.push_back(a);
  r.messages.push_back(ChatMessage::Text("user", q2));
  return r;
}

// A follow-up turn on the same session (its own timeline) and on another session (a snapshot from
// the shared prefix cache) drafts from a head whose cache came through the reuse: same tokens as
// a cold plain run, and a cache of one row per fed pair close to the cold run's (the cold run
// prefills in other blocks, so the main model's states differ in rounding).
TEST(MtpSpeculation, PrefixReuseCarriesTheHeadsCache) {
  // The reused rows were made by verify blocks, the cold ones by a chunked prefill, so they agree
  // to the decoder goldens' tolerance with an f32 cache; an f16 cache rounds each side once, which
  // can add one f16 unit in the last place (2^-10 of the row scale).
  for (const char* kv_type : {"f32", "f16"}) {
    const double tol = std::string(kv_type) == "f32" ? 1e-4 : 1e-4 + 1.0 / 1024;
    EngineOptions o;
    o.model_dir = tiny_model_dir();
    o.threads = 2;
    o.kv_type = kv_type;
    Status st;
    auto engine = Engine::load(o, &st);
    ASSERT_TRUE(engine) << st.message;
    PrefixCache cache(size_t(256) << 20);
    auto a = engine->new_session(&cache), b = engine->new_session(&cache);
    ChatRequest turn1;
    turn1.messages = {ChatMessage::Text("system", "You are terse."), ChatMessage::Text("user", "Name three rivers.")};
    const SamplingParams mtp = with_spec(greedy(10), SpecMode::kMtp, 3);
    const GenerationResult r1 = a->chat(turn1, mtp, nullptr, &st);
    ASSERT_TRUE(st.ok()) << st.message;
    const ChatRequest turn2 = two_turns("Name three rivers.", r1, "And two mountains?");
    const GenerationResult on_a = a->chat(turn2, mtp, nullptr, &st);
    ASSERT_TRUE(st.ok());
    const GenerationResult on_b = b->chat(turn2, mtp, nullptr, &st);
    ASSERT_TRUE(st.ok());
    EXPECT_GT(on_a.cached_tokens, 0);
    EXPECT_GT(on_b.cached_tokens, 0);
    auto cold_session = engine->new_session();
    const GenerationResult cold = cold_session->chat(turn2, greedy(10, SpecMode::kOff), nullptr, &st);
    EXPECT_EQ(on_a.tokens, cold.tokens) << kv_type;
    EXPECT_EQ(on_b.tokens, cold.tokens) << kv_type;
    EXPECT_GT(on_a.mtp_drafted, 0);
    const HeadState want = head_state(impl_of(*cold_session).seq);
    for (Session* s : {a.get(), b.get()}) {
      const HeadState got = head_state(impl_of(*s).seq);
      EXPECT_EQ(got.pairs, int64_t(s->tokens().size()) - 1);
      EXPECT_EQ(got.pairs, want.pairs);
      EXPECT_LE(max_rel_error(rows_f32(got.keys, got.pairs), rows_f32(want.keys, want.pairs)), tol) << kv_type;
      EXPECT_LE(max_rel_error(rows_f32(got.values, got.pairs), rows_f32(want.values, want.pairs)), tol) << kv_type;
    }
  }
}

// A snapshot carries the head's cache: continuing after restore() drafts exactly as before.
TEST(MtpSpeculation, SnapshotsCarryTheHeadsCache) {
  const Engine& engine = tiny_engine();
  std::mt19937 rng(14);
  const auto prompt = random_ids(rng, 12);
  auto session = engine.new_session();
  Status st;
  session->complete(prompt, with_spec(greedy(6), SpecMode::kMtp, 2), nullptr, &st);
  ASSERT_TRUE(st.ok());
  auto snap = session->snapshot();
  const HeadState before = head_state(impl_of(*session).seq);
  auto more = prompt;
  more.insert(more.end(), session->tokens().begin() + int64_t(prompt.size()), session->tokens().end());
  more.push_back(7);
  const GenerationResult direct = session->complete(more, with_spec(greedy(8), SpecMode::kMtp, 4), nullptr, &st);
  auto other = engine.new_session();
  other->restore(*snap);
  expect_same_head_state(head_state(impl_of(*other).seq), before, "restored");
  const GenerationResult restored = other->complete(more, with_spec(greedy(8), SpecMode::kMtp, 4), nullptr, &st);
  EXPECT_EQ(direct.tokens, restored.tokens);
  EXPECT_EQ(direct.mtp_drafted, restored.mtp_drafted);
  expect_same_head_state(head_state(impl_of(*other).seq), head_state(impl_of(*session).seq), "continued");
}

// Quantized at load (q8_0 and a K-quant mix; the MoE model's llama-quantize mixes, which refuse
// q8_0 for it): the head's drafts, accepted and rejected, keep the plain greedy output of the same
// quantized model, and its cache stays bit-identical to a teacher-forced pass (quantized kernels
// compute every row the same way whatever the block, and a verified block's rows share expert passes).
TEST(MtpSpeculation, QuantizedWeightsKeepTheInvariants) {
  std::mt19937 rng(16);
  const auto prompt = random_ids(rng, 13);
  const std::pair<std::string, const char*> runs[] = {
      {tiny_model_dir(), "q8_0"}, {tiny_model_dir(), "q4_k_m"}, {tiny_moe_model_dir(), "q4_k_m"}, {tiny_moe_model_dir(), "q6_k"}};
  for (const auto& [model_dir, weights] : runs) {
    EngineOptions o;
    o.model_dir = model_dir;
    o.threads = 2;
    o.context_size = 512;
    o.weights = weights;
    Status st;
    auto engine = Engine::load(o, &st);
    ASSERT_TRUE(engine) << st.message;
    ASSERT_TRUE(engine->info().mtp_active);
    const GenerationResult plain = engine->new_session()->complete(prompt, greedy(24, SpecMode::kOff), nullptr, &st);
    ASSERT_TRUE(st.ok());
    auto session = engine->new_session();
    auto gen = session->start_completion(prompt, with_spec(greedy(24), SpecMode::kMtp, 4), nullptr, &st);
    int calls = 0;
    impl_of(*gen).rewrite_mtp_draft = [&](const std::vector<int32_t>& history, std::vector<int32_t>& d) {
      const size_t done = history.size() - prompt.size();
      const int wrong_at = calls++ % 2 == 0 ? int(d.size()) : calls % int(d.size());
      for (size_t i = 0; i < d.size() && done + i < plain.tokens.size(); ++i)
        d[i] = int(i) == wrong_at ? (plain.tokens[done + i] + 1) % 1000 : plain.tokens[done + i];
    };
    while (gen->step()) {
    }
    const std::string what = model_dir + " " + weights;
    EXPECT_EQ(gen->result().tokens, plain.tokens) << what;
    EXPECT_GT(gen->result().mtp_accepted, 0) << what;
    expect_same_head_state(head_state(impl_of(*session).seq),
                           reference_head_state(impl_of(*engine), prompt, session->tokens()), what);
  }
}

// Sampling with every filter and penalty: each mode of speculation returns exactly the tokens plain
// sampling draws with the same seed, with drafts right, partly right and wrong (rewritten from
// the plain answer), so accepted and rejected rows both occur.
TEST(SpeculativeSampling, SameTokensAsPlainSamplingForTheSameSeed) {
  const Engine& engine = tiny_engine();
  std::mt19937 rng(15);
  const auto prompt = random_ids(rng, 7);
  SamplingParams p;
  p.temperature = 0.7f;
  p.top_k = 6;
  p.top_p = 0.95f;
  p.min_p = 0.02f;
  p.presence_penalty = 0.4f;
  p.frequency_penalty = 0.3f;
  p.repetition_penalty = 1.1f;
  p.max_tokens = 24;
  p.ignore_eos = true;
  p.logprobs = true;
  p.top_logprobs = 2;
  int64_t accepted = 0, drafted = 0;
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    p.seed = seed;
    Status st;
    std::vector<TokenLogprob> plain_lps, spec_lps;
    const GenerationResult plain = engine.new_session()->complete(
        prompt, with_spec(p, SpecMode::kOff, 1),
        [&](const GenerationEvent& ev) {
          plain_lps.insert(plain_lps.end(), ev.logprobs.begin(), ev.logprobs.end());
          return true;
        },
        &st);
    ASSERT_TRUE(st.ok()) << st.message;
    for (SpecMode mode : {SpecMode::kMtp, SpecMode::kPld}) {
      spec_lps.clear();
      auto session = engine.new_session();
      auto gen = session->start_completion(prompt, with_spec(p, mode, 4),
                                           [&](const GenerationEvent& ev) {
                                             spec_lps.insert(spec_lps.end(), ev.logprobs.begin(), ev.logprobs.end());
                                             return true;
                                           },
                                           &st);
      ASSERT_TRUE(st.ok());
      int calls = 0;
      auto from_plain = [&](const std::vector<int32_t>& history, std::vector<int32_t>& d) {
        const size_t done = history.size() - prompt.size();
        const int wrong_at = calls++ % 2 == 0 ? int(d.size()) : calls % int(d.size() + 1);
        for (size_t i = 0; i < d.size() && done + i < plain.tokens.size(); ++i)
          d[i] = int(i) == wrong_at ? (plain.tokens[done + i] + 1) % 1000 : plain.tokens[done + i];
      };
      impl_of(*gen).rewrite_mtp_draft = from_plain;
      impl_of(*gen).draft_source = [&](const std::vector<int32_t>& history, int max_tokens, std::vector<int32_t>& out) {
        out.assign(size_t(std::min(max_tokens, 4)), 0);
        from_plain(history, out);
      };
      while (gen->step()) {
      }
      const GenerationResult& r = gen->result();
      EXPECT_EQ(r.tokens, plain.tokens) << "seed " << seed << " mode " << spec_mode_name(mode);
      ASSERT_EQ(spec_lps.size(), plain_lps.size());
      for (size_t i = 0; i < spec_lps.size(); ++i) {
        EXPECT_EQ(spec_lps[i].token, plain_lps[i].token);
        EXPECT_EQ(spec_lps[i].logprob, plain_lps[i].logprob);
      }
      accepted += r.accepted();
      drafted += r.drafted();
    }
  }
  EXPECT_GT(accepted, 0);
  EXPECT_LT(accepted, drafted);
}

// Pearson's chi-square statistic of homogeneity for two samples over the same categories (cells
// with fewer than 5 expected in total are pooled), and its degrees of freedom.
std::pair<double, int> chi_square(const std::map<std::vector<int32_t>, int>& a, const std::map<std::vector<int32_t>, int>& b,
                                  int na, int nb) {
  std::map<std::vector<int32_t>, std::pair<int, int>> cells;
  for (const auto& [k, n] : a) cells[k].first += n;
  for (const auto& [k, n] : b) cells[k].second += n;
  std::vector<std::pair<int, int>> used;
  std::pair<int, int> pooled{0, 0};
  for (const auto& [k, c] : cells) {
    const double expected_min = double(c.first + c.second) * std::min(na, nb) / double(na + nb);
    if (expected_min < 5) {
      pooled.first += c.first;
      pooled.second += c.second;
    } else {
      used.push_back(c);
    }
  }
  if (pooled.first + pooled.second > 0) used.push_back(pooled);
  double stat = 0;
  for (const auto& [x, y] : used) {
    const double total = x + y;
    const double ea = total * na / double(na + nb), eb = total * nb / double(na + nb);
    stat += (x - ea) * (x - ea) / ea + (y - eb) * (y - eb) / eb;
  }
  return {stat, int(used.size()) - 1};
}

// Upper 0.1% point of the chi-square distribution (Wilson-Hilferty), so a correct implementation
// fails this fixed-seed test with probability about 1/1000.
double chi_square_critical(int df) {
  const double z = 3.090232;  // standard normal 0.999 quantile
  const double h = 2.0 / (9.0 * df);
  return df * std::pow(1 - h + z * std::sqrt(h), 3);
}

// The output distribution of speculative sampling equals plain sampling's: the first three tokens
// of many sampled runs (top_k 3: a small vocabulary of 27 triples; a presence penalty, so later
// tokens depend on accepted earlier ones), speculation with one-token drafts of the likeliest
// token (accepted about half the time) against plain sampling with other seeds. A wrong rule
// (accept with p(d), but draw rejections from p itself rather than from p without d) is run on
// the same numbers to show that the test would see it.
TEST(SpeculativeSampling, OutputDistributionMatchesPlainSampling) {
  const Engine& engine = tiny_engine();
  const EngineImpl& e = impl_of(engine);
  const std::vector<int32_t> prompt = {9707, 11, 1879, 0};
  SamplingParams p;
  p.temperature = 0.7f;
  p.top_k = 3;
  p.presence_penalty = 1.0f;
  p.max_tokens = 3;
  p.ignore_eos = true;
  // The draft after t1: the likeliest next token under the same filters and penalties.
  std::map<int32_t, int32_t> draft_after;
  std::vector<float> logits(size_t(e.text_config().vocab_size));
  std::map<std::vector<int32_t>, std::vector<std::pair<int32_t, double>>> dist_cache;
  // The distribution plain sampling draws from after `history` (likeliest first).
  auto likeliest_after = [&](const std::vector<int32_t>& history) {
    auto& d = dist_cache[history];
    if (d.empty()) {
      Sequence seq(e);
      seq.feed_text(history.data(), int64_t(history.size()), DeltaRuleMode::kAuto, 1, logits.data());
      Sampler s(p, e.text_config().vocab_size);
      for (size_t i = prompt.size(); i < history.size(); ++i) s.accept(history[i]);
      d = s.distribution(logits.data());
    }
    return d;
  };
  const int kRuns = 400;
  std::map<std::vector<int32_t>, int> spec, plain;
  int64_t drafted = 0, accepted = 0;
  for (int run = 0; run < 2 * kRuns; ++run) {
    const bool speculate = run < kRuns;
    p.seed = uint64_t(run + 1);
    auto session = engine.new_session();
    Status st;
    auto gen = session->start_completion(prompt, with_spec(p, speculate ? SpecMode::kPld : SpecMode::kOff, 1), nullptr, &st);
    ASSERT_TRUE(st.ok());
    impl_of(*gen).draft_source = [&](const std::vector<int32_t>& history, int max_tokens, std::vector<int32_t>& out) {
      const int32_t t1 = history.back();
      if (!draft_after.count(t1)) draft_after[t1] = likeliest_after(history)[0].first;
      out.assign(1, draft_after[t1]);
    };
    while (gen->step()) {
    }
    const GenerationResult& r = gen->result();
    ASSERT_EQ(r.tokens.size(), 3u);
    (speculate ? spec : plain)[r.tokens]++;
    drafted += r.drafted();
    accepted += r.accepted();
  }
  EXPECT_EQ(drafted, kRuns);
  EXPECT_GT(accepted, kRuns / 5);
  EXPECT_LT(accepted, kRuns * 4 / 5);
  const auto [stat, df] = chi_square(spec, plain, kRuns, kRuns);
  std::printf("chi-square speculative vs plain sampling: %.2f, df %d, critical %.2f; %lld/%lld drafts accepted\n", stat, df,
              chi_square_critical(df), (long long)accepted, (long long)drafted);
  EXPECT_GE(df, 8);
  EXPECT_LT(stat, chi_square_critical(df));

  // Power: the wrong rule on the second token, with the exact distributions of the model.
  std::mt19937_64 wrong_rng(99);
  std::uniform_real_distribution<double> u(0, 1);
  auto draw = [&](const std::vector<std::pair<int32_t, double>>& dist) {
    double x = u(wrong_rng), acc = 0;
    for (const auto& [id, q] : dist)
      if (x < (acc += q)) return id;
    return dist.back().first;
  };
  std::map<std::vector<int32_t>, int> wrong;
  const auto first = likeliest_after(prompt);
  for (int run = 0; run < kRuns; ++run) {
    std::vector<int32_t> h = prompt;
    h.push_back(draw(first));
    const auto second = likeliest_after(h);
    const int32_t d = second[0].first;
    double pd = 0;
    for (const auto& [id, q] : second) pd += id == d ? q : 0;
    h.push_back(u(wrong_rng) < pd ? d : draw(second));
    h.push_back(draw(likeliest_after(h)));
    wrong[std::vector<int32_t>(h.begin() + int64_t(prompt.size()), h.end())]++;
  }
  const auto [wrong_stat, wrong_df] = chi_square(wrong, plain, kRuns, kRuns);
  std::printf("chi-square of the wrong rule vs plain sampling: %.2f, df %d\n", wrong_stat, wrong_df);
  EXPECT_GT(wrong_stat, chi_square_critical(wrong_df));
}

}  // namespace
}  // namespace qwen35::test
