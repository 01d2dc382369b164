// The worker with the tiny model: FIFO admission, a bounded queue, round-robin interleaving,
// cancellation (queued and running), start failures, the shared prefix cache and the choice of
// session for a follow-up turn.
#include <gtest/gtest.h>

#include <chrono>

#include "server/worker/worker.h"
#include "server_harness.h"

namespace qwen35::server {
namespace {

using namespace std::chrono_literals;

JobInput completion(int64_t max_tokens, std::vector<int32_t> prompt = {100, 200, 300, 400}) {
  JobInput in;
  in.is_chat = false;
  in.prompt = std::move(prompt);
  in.prefix_hint = in.prompt;
  in.params = test::greedy(max_tokens);
  return in;
}

JobInput chat(const std::vector<ChatMessage>& messages, int64_t max_tokens) {
  JobInput in;
  in.is_chat = true;
  in.chat.messages = messages;
  in.chat.enable_thinking = false;
  in.params = test::greedy(max_tokens);
  std::string prompt;
  EXPECT_TRUE(test::small_engine().render_chat(in.chat, &prompt).ok());
  in.prefix_hint = test::small_engine().tokenize(prompt);
  return in;
}

void wait_done(const std::shared_ptr<Job>& job) { ASSERT_TRUE(job->wait_finished(60s)) << "the job did not finish"; }

TEST(Worker, RunsACompletionAndReportsEvents) {
  Metrics metrics;
  Worker w(test::small_engine(), {1, 4, 64 << 20}, &metrics);
  auto job = w.submit(completion(6));
  ASSERT_TRUE(job);
  std::string text;
  for (;;) {
    Job::Batch b = job->take_events(1s);
    for (const GenerationEvent& ev : b.events) text += ev.text;
    if (b.finished) break;
  }
  EXPECT_TRUE(job->status().ok()) << job->status().message;
  const GenerationResult r = job->result();
  EXPECT_EQ(r.completion_tokens, 6);
  EXPECT_EQ(r.stop_reason, StopReason::kMaxTokens);
  EXPECT_EQ(text, r.content + r.reasoning);
  EXPECT_EQ(job->session(), 0);
  EXPECT_EQ(job->start_order(), 1);
  const std::string m = metrics.render({});
  EXPECT_NE(m.find("qwen35_generations_total{outcome=\"length\"} 1"), std::string::npos) << m;
  EXPECT_NE(m.find("qwen35_generated_tokens_total 6"), std::string::npos) << m;
}

TEST(Worker, QueueIsFifoWithOneSession) {
  Worker w(test::small_engine(), {1, 16, 64 << 20});
  std::vector<std::shared_ptr<Job>> jobs;
  for (int i = 0; i < 6; ++i) jobs.push_back(w.submit(completion(3, {int32_t(10 + i), 20, 30})));
  for (auto& j : jobs) wait_done(j);
  for (size_t i = 0; i < jobs.size(); ++i) {
    EXPECT_EQ(jobs[i]->start_order(), int64_t(i + 1)) << "job " << i;
    EXPECT_TRUE(jobs[i]->status().ok());
  }
}

TEST(Worker, BoundedQueueRefusesWhenFull) {
  Worker w(test::small_engine(), {1, 2, 64 << 20});
  auto running = w.submit(completion(100000));
  ASSERT_TRUE(running);
  ASSERT_EQ(running->wait_started(30s), Job::State::kRunning);
  auto a = w.submit(completion(1)), b = w.submit(completion(1));
  ASSERT_TRUE(a && b);
  EXPECT_EQ(w.queue_length(), 2u);
  EXPECT_EQ(w.submit(completion(1)), nullptr) << "a third waiting request must be refused";
  w.cancel(running);
  wait_done(a);
  wait_done(b);
  EXPECT_TRUE(a->status().ok());
  EXPECT_TRUE(w.submit(completion(1)) != nullptr);  // room again
}

TEST(Worker, InterleavesActiveGenerations) {
  Worker w(test::small_engine(), {2, 8, 64 << 20});
  auto longer = w.submit(completion(100000));
  ASSERT_EQ(longer->wait_started(30s), Job::State::kRunning);
  auto shorter = w.submit(completion(4, {7, 8, 9}));
  wait_done(shorter);
  // The short one went through while the long one kept running: both progressed at once.
  EXPECT_EQ(longer->state(), Job::State::kRunning);
  EXPECT_NE(shorter->session(), longer->session());
  EXPECT_EQ(shorter->result().completion_tokens, 4);
  w.cancel(longer);
  wait_done(longer);
  EXPECT_EQ(longer->status().code, StatusCode::kCancelled);
}

TEST(Worker, CancelsARunningGenerationAndKeepsServing) {
  Metrics metrics;
  Worker w(test::small_engine(), {1, 8, 64 << 20}, &metrics);
  auto job = w.submit(completion(100000));
  ASSERT_EQ(job->wait_started(30s), Job::State::kRunning);
  // Let it produce something, then cancel.
  size_t events = 0;
  while (events < 3) {
    Job::Batch b = job->take_events(5s);
    events += b.events.size();
    ASSERT_FALSE(b.finished);
  }
  const auto t0 = std::chrono::steady_clock::now();
  w.cancel(job);
  wait_done(job);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
  EXPECT_EQ(job->status().code, StatusCode::kCancelled);
  EXPECT_EQ(job->result().stop_reason, StopReason::kCancelled);
  EXPECT_LT(job->result().completion_tokens, 100000);
  auto next = w.submit(completion(2));
  wait_done(next);
  EXPECT_TRUE(next->status().ok());
  EXPECT_EQ(next->result().completion_tokens, 2);
  EXPECT_NE(metrics.render({}).find("qwen35_generations_total{outcome=\"cancelled\"} 1"), std::string::npos);
}

TEST(Worker, CancelsAQueuedJobWithoutRunningIt) {
  Worker w(test::small_engine(), {1, 8, 64 << 20});
  auto running = w.submit(completion(100000));
  ASSERT_EQ(running->wait_started(30s), Job::State::kRunning);
  auto queued = w.submit(completion(5));
  EXPECT_EQ(queued->state(), Job::State::kQueued);
  w.cancel(queued);
  EXPECT_EQ(queued->state(), Job::State::kFinished);
  EXPECT_EQ(queued->status().code, StatusCode::kCancelled);
  EXPECT_EQ(queued->session(), -1);
  EXPECT_EQ(w.queue_length(), 0u);
  w.cancel(running);
  wait_done(running);
}

TEST(Worker, StartFailuresFinishTheJobWithTheEngineStatus) {
  Worker w(test::small_engine(), {1, 8, 64 << 20});
  std::vector<int32_t> too_long(size_t(test::small_engine().info().context_size) + 5, 100);
  auto over = w.submit(completion(1, too_long));
  wait_done(over);
  EXPECT_EQ(over->status().code, StatusCode::kContextOverflow);
  auto bad_id = w.submit(completion(1, {1, 2, 1 << 30}));
  wait_done(bad_id);
  EXPECT_EQ(bad_id->status().code, StatusCode::kInvalidArgument);
  JobInput broken = chat({ChatMessage::Text("user", "look")}, 1);
  broken.chat.messages[0].content.push_back(ContentPart::Image({1, 2, 3, 4}));
  auto img = w.submit(std::move(broken));
  wait_done(img);
  EXPECT_EQ(img->status().code, StatusCode::kInvalidArgument) << img->status().message;
  auto fine = w.submit(completion(1));  // and the worker still serves
  wait_done(fine);
  EXPECT_TRUE(fine->status().ok());
}

TEST(Worker, FollowUpTurnReusesThePrefixAndItsSession) {
  Worker w(test::small_engine(), {2, 8, 64 << 20});
  const std::string question =
      "Please describe, in a few words, what a recurrent neural network is and how it differs from attention.";
  std::vector<ChatMessage> turn1 = {ChatMessage::Text("system", "You are terse."), ChatMessage::Text("user", question)};
  auto first = w.submit(chat(turn1, 4));
  wait_done(first);
  ASSERT_TRUE(first->status().ok()) << first->status().message;
  EXPECT_EQ(first->result().cached_tokens, 0);

  auto unrelated = w.submit(chat({ChatMessage::Text("user", "hi")}, 2));
  wait_done(unrelated);
  EXPECT_NE(unrelated->session(), first->session()) << "an unrelated request must not take the conversation's session";

  std::vector<ChatMessage> turn2 = turn1;
  turn2.push_back(ChatMessage::Text("assistant", first->result().content));
  turn2.push_back(ChatMessage::Text("user", "And in one word?"));
  auto second = w.submit(chat(turn2, 2));
  wait_done(second);
  ASSERT_TRUE(second->status().ok()) << second->status().message;
  EXPECT_EQ(second->session(), first->session());
  EXPECT_GT(second->result().cached_tokens, 0);
  EXPECT_GT(w.cache().hits(), 0);
}

TEST(Worker, StopFinishesEverything) {
  auto w = std::make_unique<Worker>(test::small_engine(), WorkerOptions{1, 8, 64 << 20});
  auto running = w->submit(completion(100000));
  auto queued = w->submit(completion(3));
  ASSERT_EQ(running->wait_started(30s), Job::State::kRunning);
  w->stop();
  EXPECT_EQ(running->state(), Job::State::kFinished);
  EXPECT_EQ(running->status().code, StatusCode::kUnavailable);
  EXPECT_EQ(queued->status().code, StatusCode::kUnavailable);
  EXPECT_EQ(w->submit(completion(1)), nullptr);
}

}  // namespace
}  // namespace qwen35::server
