// The generating endpoints: POST /v1/chat/completions and POST /v1/completions.
//
// A handler parses and validates the body (ApiError on any problem, before anything is queued),
// submits a job to the worker and waits for it to leave the queue, watching the client's
// connection. Non-streaming: waits for the end and answers one JSON object. Streaming: answers
// 200 text/event-stream and moves the job's events to the socket as SSE chunks; a failed write
// or a closed connection cancels the generation.
#pragma once

#include <httplib.h>

#include "qwen35/engine.h"
#include "server/metrics.h"
#include "server/openai_request.h"
#include "server/worker.h"

namespace qwen35::server {

struct ApiContext {
  const Engine* engine = nullptr;
  Worker* worker = nullptr;
  RequestPolicy policy;
};

// Both throw ApiError for a bad request; the caller turns it into the error answer.
void handle_chat_completions(const ApiContext& ctx, const httplib::Request& req, httplib::Response& res);
void handle_completions(const ApiContext& ctx, const httplib::Request& req, httplib::Response& res);

}  // namespace qwen35::server
