// The generating endpoints: POST /v1/chat/completions and POST /v1/completions.
//
// A handler runs on a request thread (RequestPool): it parses and validates the body (ApiError
// on any problem, before anything is queued), prepares the prompt (template, tokens, images
// decoded and preprocessed, exact length checked against the context), submits a job to the
// worker and hands it to answer_job(), which answers as the job runs (job_answer.h). No thread
// waits for the generation.
#pragma once

#include <memory>

#include "qwen35/engine.h"
#include "server/http/message.h"
#include "server/openai/request.h"
#include "server/worker/worker.h"

namespace qwen35::server {

struct ApiContext {
  const Engine* engine = nullptr;
  Worker* worker = nullptr;
  RequestPolicy policy;
};

// Both throw ApiError for a bad request; the caller turns it into the error answer.
void handle_chat_completions(const ApiContext& ctx, const HttpRequest& req, std::shared_ptr<Responder> res);
void handle_completions(const ApiContext& ctx, const HttpRequest& req, std::shared_ptr<Responder> res);

}  // namespace qwen35::server
