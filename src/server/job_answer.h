// Moves a worker job's output to an HTTP client without a thread waiting for either: the job's
// listener wakes the answer on the connection's thread, which takes the new events and writes
// them. Non-streaming: one answer when the job ends. Streaming: 200 text/event-stream as soon as
// the job runs (a job that fails before it runs gets a proper error status instead), then SSE
// chunks; an error after the start becomes an error event. When the client goes away, the job
// is cancelled (queued: at once; running: at its next step).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "qwen35/engine.h"
#include "server/http/message.h"
#include "server/openai/api_error.h"
#include "server/worker/worker.h"

namespace qwen35::server {

struct AnswerFormat {
  bool stream = false;
  // Streaming: the opening chunk(s), each event, the end (usage, [DONE]), an error event.
  std::function<std::string()> start;
  std::function<std::string(const GenerationEvent&)> event;
  std::function<std::string(const GenerationResult&)> finish;
  std::function<std::string(const ApiError&)> error;
  // Not streaming: the JSON answer from every event and the result.
  std::function<std::string(std::vector<GenerationEvent>& events, const GenerationResult&)> whole;
};

// Answers `responder` with `job` (already submitted to `worker`).
void answer_job(Worker& worker, std::shared_ptr<Job> job, std::shared_ptr<Responder> responder, AnswerFormat format);

// The HTTP answer for an API error: its status and error object.
HttpResponse error_response(const ApiError& e);

}  // namespace qwen35::server
