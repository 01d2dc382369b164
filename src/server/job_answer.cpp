#include "server/job_answer.h"

#include <atomic>

#include "server/openai/response.h"

namespace qwen35::server {
namespace {

class JobAnswer : public std::enable_shared_from_this<JobAnswer> {
 public:
  JobAnswer(Worker& worker, std::shared_ptr<Job> job, std::shared_ptr<Responder> responder, AnswerFormat format)
      : worker_(worker), job_(std::move(job)), responder_(std::move(responder)), format_(std::move(format)) {}

  void start() {
    responder_->on_gone([weak = weak_from_this()] {
      if (auto self = weak.lock()) self->worker_.cancel(self->job_);
    });
    // The listener keeps this alive until the job finishes (the job drops it then).
    job_->set_listener([self = shared_from_this()] { self->wake(); });
  }

 private:
  // Any thread: schedules one drain on the connection's thread (many wakes, one drain).
  void wake() {
    if (scheduled_.exchange(true)) return;
    responder_->post([self = shared_from_this()] {
      self->scheduled_.store(false);
      self->drain();
    });
  }

  void drain() {
    if (done_ || responder_->gone()) return;
    if (job_->state() == Job::State::kQueued) return;
    if (!format_.stream) {
      Job::Batch b = job_->take_events(std::chrono::milliseconds(0));
      for (GenerationEvent& ev : b.events) events_.push_back(std::move(ev));
      if (!b.finished) return;
      done_ = true;
      const Status st = job_->status();
      if (!st.ok()) return responder_->respond(error_response(api_error_from(st)));
      HttpResponse r;
      r.body = format_.whole(events_, job_->result());
      r.set_header("Content-Type", "application/json");
      return responder_->respond(std::move(r));
    }
    if (!opened_) {
      if (job_->state() == Job::State::kFinished && job_->start_order() == 0) {  // never ran
        done_ = true;
        return responder_->respond(error_response(api_error_from(job_->status())));
      }
      opened_ = true;
      HttpResponse head;
      head.set_header("Content-Type", "text/event-stream");
      head.set_header("Cache-Control", "no-cache");
      head.set_header("X-Accel-Buffering", "no");
      responder_->start_stream(std::move(head), ": keep-alive\n\n");
      responder_->write(format_.start());
    }
    Job::Batch b = job_->take_events(std::chrono::milliseconds(0));
    std::string out;
    for (const GenerationEvent& ev : b.events) out += format_.event(ev);
    if (b.finished) {
      done_ = true;
      const Status st = job_->status();
      out += st.ok() ? format_.finish(job_->result()) : format_.error(api_error_from(st));
      responder_->write(std::move(out));
      return responder_->end_stream();
    }
    if (!out.empty()) responder_->write(std::move(out));
  }

  Worker& worker_;
  std::shared_ptr<Job> job_;
  std::shared_ptr<Responder> responder_;
  AnswerFormat format_;
  std::atomic<bool> scheduled_{false};
  bool opened_ = false;                 // connection thread only, like the rest below
  bool done_ = false;
  std::vector<GenerationEvent> events_;
};

}  // namespace

HttpResponse error_response(const ApiError& e) {
  HttpResponse r;
  r.status = e.status;
  r.body = dump_json(error_json(e));
  r.set_header("Content-Type", "application/json");
  if (e.status == 503) r.set_header("Retry-After", "1");
  return r;
}

void answer_job(Worker& worker, std::shared_ptr<Job> job, std::shared_ptr<Responder> responder, AnswerFormat format) {
  std::make_shared<JobAnswer>(worker, std::move(job), std::move(responder), std::move(format))->start();
}

}  // namespace qwen35::server
