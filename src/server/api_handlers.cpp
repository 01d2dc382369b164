#include "server/api_handlers.h"

#include <chrono>

#include "server/api_error.h"
#include "server/connection_watch.h"
#include "server/openai_response.h"

namespace qwen35::server {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kPoll = std::chrono::milliseconds(100);  // how often a waiting handler looks at its client
constexpr auto kKeepAlive = std::chrono::seconds(10);   // an SSE comment after this much silence

ConnectionWatch watch_of(const httplib::Request& req) {
  return ConnectionWatch(req.local_addr, req.local_port, req.remote_addr, req.remote_port);
}

TokenText token_text_of(const Engine* engine) {
  return [engine](int32_t id) { return engine->detokenize({id}); };
}

void check_context(const ApiContext& ctx, size_t prompt_tokens) {
  const int64_t n_ctx = ctx.engine->info().context_size;
  if (int64_t(prompt_tokens) + 1 > n_ctx)
    throw api_error_from(Status::Error(StatusCode::kContextOverflow, "the prompt has " + std::to_string(prompt_tokens) +
                                                                         " tokens but the context is " +
                                                                         std::to_string(n_ctx) + " tokens"));
}

std::shared_ptr<Job> submit(const ApiContext& ctx, JobInput in) {
  std::shared_ptr<Job> job = ctx.worker->submit(std::move(in));
  if (!job)
    throw ApiError(503, "the server is busy (" + std::to_string(ctx.worker->queue_length()) +
                            " requests waiting); try again later", "unavailable_error", "", "queue_full");
  return job;
}

// Waits until the job leaves the queue; false (and the job cancelled) when the client went away.
bool wait_started(const ApiContext& ctx, const std::shared_ptr<Job>& job, const ConnectionWatch& watch) {
  while (job->wait_started(kPoll) == Job::State::kQueued) {
    if (watch.closed()) {
      ctx.worker->cancel(job);
      return false;
    }
  }
  return true;
}

// Waits for the end, collecting every event; false (and the job cancelled) when the client went away.
bool collect(const ApiContext& ctx, const std::shared_ptr<Job>& job, const ConnectionWatch& watch,
             std::vector<GenerationEvent>& events) {
  for (;;) {
    Job::Batch b = job->take_events(kPoll);
    for (GenerationEvent& ev : b.events) events.push_back(std::move(ev));
    if (b.finished) return true;
    if (watch.closed()) {
      ctx.worker->cancel(job);
      return false;
    }
  }
}

void throw_if_failed(const Job& job) {
  const Status st = job.status();
  if (!st.ok()) throw api_error_from(st);
}

void client_gone(httplib::Response& res) {
  res.status = 499;  // nobody reads it; keeps the logs and metrics honest
  res.set_content(dump_json(error_json(499, "client closed the request", "invalid_request_error", "", "cancelled")),
                  "application/json");
}

template <typename Stream>
struct StreamState {
  std::shared_ptr<Job> job;
  Worker* worker = nullptr;
  Stream fmt;
  ConnectionWatch watch;
  std::string first;  // the opening chunk(s)
  bool opened = false;
  Clock::time_point last_write = Clock::now();
};

// Answers 200 text/event-stream and moves the job's events out as they come.
template <typename Stream>
void stream_job(const ApiContext& ctx, httplib::Response& res, std::shared_ptr<Job> job, ConnectionWatch watch,
                Stream fmt, std::string first) {
  auto st = std::make_shared<StreamState<Stream>>(
      StreamState<Stream>{std::move(job), ctx.worker, std::move(fmt), watch, std::move(first)});
  res.status = 200;
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.set_chunked_content_provider(
      "text/event-stream",
      [st](size_t, httplib::DataSink& sink) {
        auto write = [&](const std::string& s) {
          if (s.empty()) return true;
          st->last_write = Clock::now();
          return sink.write(s.data(), s.size());
        };
        auto give_up = [&] {
          st->worker->cancel(st->job);
          return false;
        };
        if (!st->opened) {
          st->opened = true;
          if (!write(st->first)) return give_up();
        }
        Job::Batch b = st->job->take_events(kPoll);
        std::string out;
        for (const GenerationEvent& ev : b.events) out += st->fmt.event(ev);
        if (b.finished) {
          const Status status = st->job->status();
          out += status.ok() ? st->fmt.finish(st->job->result()) : st->fmt.error(api_error_from(status));
          if (!write(out)) return false;
          sink.done();
          return true;
        }
        if (!out.empty()) return write(out) ? true : give_up();
        if (st->watch.closed()) return give_up();
        if (Clock::now() - st->last_write > kKeepAlive && !write(": keep-alive\n\n")) return give_up();
        return true;
      },
      [st](bool success) {
        if (!success) st->worker->cancel(st->job);
      });
}

std::vector<TokenLogprob> logprobs_of(std::vector<GenerationEvent>& events) {
  std::vector<TokenLogprob> lps;
  for (GenerationEvent& ev : events)
    for (TokenLogprob& lp : ev.logprobs) lps.push_back(std::move(lp));
  return lps;
}

}  // namespace

void handle_chat_completions(const ApiContext& ctx, const httplib::Request& req, httplib::Response& res) {
  const nlohmann::ordered_json body = parse_json_body(req.body);
  ChatCompletionRequest cr = parse_chat_completion(body, ctx.engine->default_sampling(), ctx.policy);

  JobInput in;
  in.is_chat = true;
  in.params = cr.params;
  // The rendered prompt (before image expansion) chooses the session and catches a prompt that
  // cannot fit before it waits in the queue; the worker checks the exact length again.
  std::string prompt;
  if (Status st = ctx.engine->render_chat(cr.chat, &prompt); !st.ok()) {
    ApiError e = api_error_from(st);
    if (e.param.empty()) e.param = "messages";
    throw e;
  }
  in.prefix_hint = ctx.engine->tokenize(prompt);
  check_context(ctx, in.prefix_hint.size());
  in.chat = std::move(cr.chat);

  const ResponseMeta meta = new_response_meta("chatcmpl", ctx.policy.model_id);
  const ConnectionWatch watch = watch_of(req);
  std::shared_ptr<Job> job = submit(ctx, std::move(in));
  if (!wait_started(ctx, job, watch)) return client_gone(res);

  if (cr.stream) {
    if (job->state() == Job::State::kFinished) throw_if_failed(*job);  // did not start: a proper error status
    ChatStream fmt(meta, cr.include_usage, cr.params.logprobs, cr.params.top_logprobs, token_text_of(ctx.engine));
    fmt.enable_tool_calls(cr.tools);
    std::string first = fmt.start();
    return stream_job(ctx, res, std::move(job), watch, std::move(fmt), std::move(first));
  }
  std::vector<GenerationEvent> events;
  if (!collect(ctx, job, watch, events)) return client_gone(res);
  throw_if_failed(*job);
  std::vector<TokenLogprob> lps = logprobs_of(events);
  const nlohmann::ordered_json out = chat_completion_json(meta, job->result(), cr.params.logprobs ? &lps : nullptr,
                                                  cr.params.top_logprobs, token_text_of(ctx.engine), cr.tools);
  res.set_content(dump_json(out), "application/json");
}

void handle_completions(const ApiContext& ctx, const httplib::Request& req, httplib::Response& res) {
  const nlohmann::ordered_json body = parse_json_body(req.body);
  CompletionRequest cr = parse_completion(body, ctx.engine->default_sampling(), ctx.policy);

  JobInput in;
  in.is_chat = false;
  in.params = cr.params;
  in.prompt = cr.prompt_is_text ? ctx.engine->tokenize(cr.prompt_text) : cr.prompt_ids;
  if (in.prompt.empty()) bad_field("prompt", "the prompt has no tokens", "invalid_value");
  const int64_t vocab = ctx.engine->info().vocab_size;
  for (int32_t id : in.prompt)
    if (id >= vocab)
      bad_field("prompt", "token id " + std::to_string(id) + " is outside the vocabulary [0, " + std::to_string(vocab) + ")",
                "invalid_value");
  check_context(ctx, in.prompt.size());
  in.prefix_hint = in.prompt;
  const std::string echo = cr.echo ? (cr.prompt_is_text ? cr.prompt_text : ctx.engine->detokenize(in.prompt)) : "";

  const ResponseMeta meta = new_response_meta("cmpl", ctx.policy.model_id);
  const ConnectionWatch watch = watch_of(req);
  std::shared_ptr<Job> job = submit(ctx, std::move(in));
  if (!wait_started(ctx, job, watch)) return client_gone(res);

  if (cr.stream) {
    if (job->state() == Job::State::kFinished) throw_if_failed(*job);
    CompletionStream fmt(meta, cr.include_usage, cr.params.logprobs, cr.params.top_logprobs, token_text_of(ctx.engine));
    std::string first = fmt.start(echo);
    return stream_job(ctx, res, std::move(job), watch, std::move(fmt), std::move(first));
  }
  std::vector<GenerationEvent> events;
  if (!collect(ctx, job, watch, events)) return client_gone(res);
  throw_if_failed(*job);
  std::string text = echo;  // a raw completion is the text of both channels, in order
  for (const GenerationEvent& ev : events) text += ev.text;
  std::vector<TokenLogprob> lps = logprobs_of(events);
  const nlohmann::ordered_json out = text_completion_json(meta, text, job->result(), cr.params.logprobs ? &lps : nullptr,
                                                  cr.params.top_logprobs, token_text_of(ctx.engine), echo.size());
  res.set_content(dump_json(out), "application/json");
}

}  // namespace qwen35::server
