#include "server/api_handlers.h"

#include "server/job_answer.h"
#include "server/openai/api_error.h"
#include "server/openai/response.h"

namespace qwen35::server {
namespace {

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

std::vector<TokenLogprob> logprobs_of(std::vector<GenerationEvent>& events) {
  std::vector<TokenLogprob> lps;
  for (GenerationEvent& ev : events)
    for (TokenLogprob& lp : ev.logprobs) lps.push_back(std::move(lp));
  return lps;
}

// The streaming half of an AnswerFormat from a ChatStream or CompletionStream.
template <typename Stream>
void set_stream(AnswerFormat& f, std::shared_ptr<Stream> s, std::string first) {
  f.stream = true;
  f.start = [first = std::move(first)] { return first; };
  f.event = [s](const GenerationEvent& ev) { return s->event(ev); };
  f.finish = [s](const GenerationResult& r) { return s->finish(r); };
  f.error = [s](const ApiError& e) { return s->error(e); };
}

// Compiles the request's output format here, on the request pool, so that a schema or grammar the
// engine cannot enforce is a 400 naming it before the request waits in the queue.
void compile_format(const ApiContext& ctx, SamplingParams& params) {
  if (params.format.kind == OutputFormat::Kind::kNone) return;
  const Status st = ctx.engine->compile_output_format(&params.format);
  if (st.ok()) return;
  ApiError e = api_error_from(st);
  switch (params.format.kind) {
    case OutputFormat::Kind::kGrammar: e.param = "grammar"; break;
    case OutputFormat::Kind::kToolCalls: e.param = "tools"; break;
    default: e.param = "response_format"; break;
  }
  e.code = "invalid_value";
  throw e;
}

}  // namespace

void handle_chat_completions(const ApiContext& ctx, const HttpRequest& req, std::shared_ptr<Responder> res) {
  const nlohmann::ordered_json body = parse_json_body(req.body);
  ChatCompletionRequest cr = parse_chat_completion(body, ctx.engine->default_sampling(), ctx.policy);
  if (res->gone()) return;  // the client left while its images were fetched
  compile_format(ctx, cr.params);

  JobInput in;
  in.is_chat = true;
  in.params = cr.params;
  // Preparing here (template, tokens, images) keeps image decoding off the worker and gives the
  // exact prompt length before the request waits in the queue.
  Status st;
  std::unique_ptr<PreparedChat> prepared = ctx.engine->prepare_chat(cr.chat, &st);
  if (!prepared) {
    ApiError e = api_error_from(st);
    if (e.param.empty()) e.param = "messages";
    throw e;
  }
  in.prefix_hint = prepared->tokens();
  check_context(ctx, in.prefix_hint.size());
  in.prepared = std::move(prepared);

  const ResponseMeta meta = new_response_meta("chatcmpl", ctx.policy.model_id);
  std::shared_ptr<Job> job = submit(ctx, std::move(in));
  AnswerFormat f;
  if (cr.stream) {
    auto s = std::make_shared<ChatStream>(meta, cr.include_usage, cr.params.logprobs, cr.params.top_logprobs,
                                          token_text_of(ctx.engine));
    s->enable_tool_calls(cr.tools);
    std::string first = s->start();
    set_stream(f, s, std::move(first));
  } else {
    f.whole = [meta, engine = ctx.engine, logprobs = cr.params.logprobs, top = cr.params.top_logprobs,
               tools = cr.tools](std::vector<GenerationEvent>& events, const GenerationResult& r) {
      std::vector<TokenLogprob> lps = logprobs_of(events);
      return dump_json(chat_completion_json(meta, r, logprobs ? &lps : nullptr, top, token_text_of(engine), tools));
    };
  }
  answer_job(*ctx.worker, std::move(job), std::move(res), std::move(f));
}

void handle_completions(const ApiContext& ctx, const HttpRequest& req, std::shared_ptr<Responder> res) {
  const nlohmann::ordered_json body = parse_json_body(req.body);
  CompletionRequest cr = parse_completion(body, ctx.engine->default_sampling(), ctx.policy);
  compile_format(ctx, cr.params);

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
  std::shared_ptr<Job> job = submit(ctx, std::move(in));
  AnswerFormat f;
  if (cr.stream) {
    auto s = std::make_shared<CompletionStream>(meta, cr.include_usage, cr.params.logprobs, cr.params.top_logprobs,
                                                token_text_of(ctx.engine));
    std::string first = s->start(echo);
    set_stream(f, s, std::move(first));
  } else {
    f.whole = [meta, echo, engine = ctx.engine, logprobs = cr.params.logprobs, top = cr.params.top_logprobs](
                  std::vector<GenerationEvent>& events, const GenerationResult& r) {
      std::string text = echo;  // a raw completion is the text of both channels, in order
      for (const GenerationEvent& ev : events) text += ev.text;
      std::vector<TokenLogprob> lps = logprobs_of(events);
      return dump_json(text_completion_json(meta, text, r, logprobs ? &lps : nullptr, top, token_text_of(engine),
                                            echo.size()));
    };
  }
  answer_job(*ctx.worker, std::move(job), std::move(res), std::move(f));
}

}  // namespace qwen35::server
