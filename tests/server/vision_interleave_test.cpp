// Images on the worker (issue 11, finding 4): vision runs in slices between other requests'
// steps, stops when its request is cancelled, and images are resized down to the token cap.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "image_test_encoders.h"
#include "server/worker/worker.h"
#include "server_harness.h"
#include "support/test_data.h"

namespace qwen35::server {
namespace {

using namespace std::chrono_literals;

std::unique_ptr<Engine> engine_with(int64_t context, int64_t image_max_tokens = 0) {
  EngineOptions o;
  o.model_dir = test::tiny_model_dir();
  o.threads = 2;
  o.context_size = context;
  o.image_max_tokens = image_max_tokens;
  Status st;
  std::unique_ptr<Engine> e = Engine::load(o, &st);
  EXPECT_TRUE(e) << st.message;
  return e;
}

ChatRequest image_question(int side) {
  ChatRequest r;
  ChatMessage m;
  m.role = "user";
  m.content.push_back(ContentPart::Image(test::encode_png_zeros(side, side)));
  m.content.push_back(ContentPart::Text("What is it?"));
  r.messages.push_back(std::move(m));
  r.enable_thinking = false;
  return r;
}

JobInput prepared_job(const Engine& e, const ChatRequest& chat, int64_t max_tokens) {
  JobInput in;
  in.is_chat = true;
  Status st;
  std::unique_ptr<PreparedChat> p = e.prepare_chat(chat, &st);
  EXPECT_TRUE(p) << st.message;
  in.prefix_hint = p->tokens();
  in.prepared = std::move(p);
  in.params = test::greedy(max_tokens);
  return in;
}

JobInput text_job(int64_t max_tokens) {
  JobInput in;
  in.is_chat = false;
  in.prompt = {100, 200, 300, 400};
  in.prefix_hint = in.prompt;
  in.params = test::greedy(max_tokens);
  return in;
}

int64_t image_pads(const Engine& e, const std::vector<int32_t>& ids) {
  const int32_t pad = e.tokenize("<|image_pad|>").at(0);
  return std::count(ids.begin(), ids.end(), pad);
}

// A 1024-token image takes dozens of vision slices; a short text generation started beside it
// finishes while the image is still in its vision tower (before the slicing, the image's first
// step did all of its vision at once and every other stream waited for it).
TEST(VisionInterleave, AnotherStreamFinishesWhileAnImageIsInVision) {
  std::unique_ptr<Engine> e = engine_with(2048);
  Worker w(*e, {2, 4, 64 << 20});
  auto image = w.submit(prepared_job(*e, image_question(1024), 2));
  auto text = w.submit(text_job(8));
  ASSERT_TRUE(image && text);
  ASSERT_TRUE(text->wait_finished(60s));
  EXPECT_TRUE(text->status().ok());
  EXPECT_EQ(text->result().completion_tokens, 8);
  EXPECT_FALSE(image->wait_finished(0ms)) << "the image request did not wait for its vision at all";
  ASSERT_TRUE(image->wait_finished(120s));
  ASSERT_TRUE(image->status().ok()) << image->status().message;
  const GenerationResult r = image->result();
  EXPECT_EQ(r.completion_tokens, 2);
  EXPECT_GT(r.prompt_tokens, 1024);
  EXPECT_GT(r.timings.vision_ms, 0);
}

// Cancelling a request in the middle of its vision ends it at once, before any prefill.
TEST(VisionInterleave, CancellingStopsVisionBetweenSlices) {
  std::unique_ptr<Engine> e = engine_with(2048);
  Worker w(*e, {1, 4, 64 << 20});
  auto image = w.submit(prepared_job(*e, image_question(1024), 2));
  ASSERT_TRUE(image);
  ASSERT_NE(image->wait_started(60s), Job::State::kQueued);
  w.cancel(image);
  ASSERT_TRUE(image->wait_finished(10s));
  EXPECT_EQ(image->status().code, StatusCode::kCancelled);
  EXPECT_EQ(image->result().timings.prefill_tokens, 0);
  // The worker goes on serving.
  auto next = w.submit(text_job(3));
  ASSERT_TRUE(next && next->wait_finished(60s));
  EXPECT_EQ(next->result().completion_tokens, 3);
}

// --image-max-tokens: a large picture is resized down to the cap (here a 1536 x 1536 PNG, 2304
// tokens at its own size), keeping its aspect ratio as smart_resize does.
TEST(VisionInterleave, ImagesAreResizedDownToTheTokenCap) {
  std::unique_ptr<Engine> capped = engine_with(8192, 256), free = engine_with(8192);
  Status st;
  auto p = capped->prepare_chat(image_question(1536), &st);
  ASSERT_TRUE(p) << st.message;
  EXPECT_LE(image_pads(*capped, p->tokens()), 256);
  EXPECT_GE(image_pads(*capped, p->tokens()), 200);
  auto q = free->prepare_chat(image_question(1536), &st);
  ASSERT_TRUE(q) << st.message;
  EXPECT_EQ(image_pads(*free, q->tokens()), 2304);
  // A wide picture keeps its shape within the cap.
  ChatRequest wide;
  ChatMessage m;
  m.role = "user";
  m.content.push_back(ContentPart::Image(test::encode_png_zeros(4000, 500)));
  wide.messages.push_back(std::move(m));
  auto w = capped->prepare_chat(wide, &st);
  ASSERT_TRUE(w) << st.message;
  EXPECT_LE(image_pads(*capped, w->tokens()), 256);
  // The cap is positive or 0 (none).
  EngineOptions o;
  o.model_dir = test::tiny_model_dir();
  o.image_max_tokens = -1;
  EXPECT_FALSE(Engine::load(o, &st));
}

// A prepared chat runs exactly as the same chat prepared on the worker.
TEST(VisionInterleave, PreparedChatsEqualChatsPreparedByTheWorker) {
  std::unique_ptr<Engine> e = engine_with(2048);
  Worker w(*e, {1, 4, 64 << 20});
  const ChatRequest chat = image_question(300);
  JobInput plain;
  plain.is_chat = true;
  plain.chat = chat;
  plain.params = test::greedy(6);
  auto a = w.submit(prepared_job(*e, chat, 6));
  ASSERT_TRUE(a && a->wait_finished(60s));
  auto b = w.submit(std::move(plain));
  ASSERT_TRUE(b && b->wait_finished(60s));
  ASSERT_TRUE(a->status().ok() && b->status().ok()) << a->status().message << b->status().message;
  EXPECT_EQ(a->result().tokens, b->result().tokens);
  EXPECT_EQ(a->result().prompt_tokens, b->result().prompt_tokens);
}

}  // namespace
}  // namespace qwen35::server
