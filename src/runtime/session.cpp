#include <algorithm>

#include "core/error.h"
#include "runtime/engine_internal.h"
#include "runtime/prefix_cache.h"
#include "runtime/session_impl.h"

namespace qwen35 {
namespace {

constexpr size_t kPrivateCacheBytes = size_t(512) << 20;

Status status_from(const std::exception& e, StatusCode code = StatusCode::kInvalidArgument) {
  return Status::Error(code, e.what());
}

}  // namespace

Session::Impl::Impl(const EngineImpl& e, PrefixCache* shared) : engine(e), seq(e) {
  if (!shared) own_cache = std::make_unique<PrefixCache>(kPrivateCacheBytes);
  cache = shared ? shared : own_cache.get();
}

int64_t Session::Impl::reuse_prefix(const PromptPlan& plan) {
  // At least the last prompt token must be processed: its logits give the first new token.
  const int64_t limit = plan.size() - 1;
  const auto& own = seq.keys();
  const int64_t own_len = seq.length();
  const bool extends_own =
      own_len <= limit && std::equal(own.begin(), own.end(), plan.keys.begin(), plan.keys.begin() + own_len);
  auto cached = impl_of(*cache).find(plan.keys.data(), limit);
  const int64_t cached_len = cached ? int64_t(cached->tokens.size()) : 0;
  if (extends_own && own_len >= cached_len) return own_len;
  if (cached) {
    seq.restore(*cached);
    return cached_len;
  }
  seq.reset();
  return 0;
}

Session::Session(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Session::~Session() = default;

namespace {

// Plans the prompt, checks it fits, and hands the session to a new Generation.
template <typename PlanFn>
std::unique_ptr<Generation> start(Session::Impl& s, PlanFn plan_fn, const SamplingParams& params, EventCallback on_event,
                                  Status* status) {
  if (s.busy) {
    *status = Status::Error(StatusCode::kUnavailable, "the session is already generating");
    return nullptr;
  }
  const SpeculativeParams& spec = params.speculative;
  if (spec.draft_max < 1 || spec.draft_max > SpeculativeParams::kMaxDraft) {
    *status = Status::Error(StatusCode::kInvalidArgument, "speculative draft_max must be in [1, " +
                                                              std::to_string(SpeculativeParams::kMaxDraft) + "], got " +
                                                              std::to_string(spec.draft_max));
    return nullptr;
  }
  if (spec.mode == SpecMode::kMtp && !s.engine.mtp) {
    *status = Status::Error(StatusCode::kInvalidArgument,
                            s.engine.model->mtp() ? "speculative mode 'mtp' is disabled on this engine (started with speculation pld or off)"
                                                  : "speculative mode 'mtp' needs a multi-token-prediction head, and this model has none");
    return nullptr;
  }
  // A format not compiled yet (Engine::compile_output_format) is compiled here.
  SamplingParams p = params;
  if (p.format.kind != OutputFormat::Kind::kNone && !p.format.compiled) {
    if (Status st = compile_output_format(&p.format); !st.ok()) {
      *status = std::move(st);
      return nullptr;
    }
  }
  PromptPlan plan;
  try {
    plan = plan_fn();
  } catch (const ContextOverflow& e) {
    *status = status_from(e, StatusCode::kContextOverflow);
    return nullptr;
  } catch (const std::exception& e) {
    *status = status_from(e);
    return nullptr;
  }
  if (plan.size() + 1 > s.engine.context_size) {
    *status = Status::Error(StatusCode::kContextOverflow,
                            "the prompt has " + std::to_string(plan.size()) + " tokens but the context is " +
                                std::to_string(s.engine.context_size) + " tokens");
    return nullptr;
  }
  try {
    s.busy = true;
    auto g = ImplAccess::make<Generation>(
        std::make_unique<Generation::Impl>(s, std::move(plan), p, std::move(on_event)));
    *status = Status::Ok();
    return g;
  } catch (const std::exception& e) {
    s.busy = false;
    *status = status_from(e, StatusCode::kInternal);
    return nullptr;
  }
}

}  // namespace

std::unique_ptr<Generation> Session::start_chat(const ChatRequest& request, const SamplingParams& params,
                                                EventCallback on_event, Status* status) {
  return start(*impl_, [&] { return plan_chat(impl_->engine, request); }, params, std::move(on_event), status);
}

std::unique_ptr<Generation> Session::start_prepared(PreparedChat&& chat, const SamplingParams& params,
                                                    EventCallback on_event, Status* status) {
  return start(*impl_, [&] { return std::move(impl_of(chat).plan); }, params, std::move(on_event), status);
}

std::unique_ptr<Generation> Session::start_completion(const std::vector<int32_t>& prompt, const SamplingParams& params,
                                                      EventCallback on_event, Status* status) {
  if (prompt.empty()) {
    *status = Status::Error(StatusCode::kInvalidArgument, "the prompt is empty");
    return nullptr;
  }
  return start(*impl_, [&] { return plan_completion(impl_->engine, prompt); }, params, std::move(on_event), status);
}

namespace {
GenerationResult run_to_end(std::unique_ptr<Generation> g, Status* status) {
  if (!g) return {};
  try {
    while (g->step()) {
    }
  } catch (const std::exception& e) {
    *status = failure_status(e);
    return g->result();
  }
  return g->result();
}
}  // namespace

GenerationResult Session::chat(const ChatRequest& request, const SamplingParams& params, EventCallback on_event,
                               Status* status) {
  return run_to_end(start_chat(request, params, std::move(on_event), status), status);
}

GenerationResult Session::complete(const std::vector<int32_t>& prompt, const SamplingParams& params,
                                   EventCallback on_event, Status* status) {
  return run_to_end(start_completion(prompt, params, std::move(on_event), status), status);
}

const std::vector<int32_t>& Session::tokens() const { return impl_->seq.tokens(); }

std::unique_ptr<Snapshot> Session::snapshot() const {
  auto impl = std::make_unique<Snapshot::Impl>();
  impl->data = impl_->seq.snapshot();
  return ImplAccess::make<Snapshot>(std::move(impl));
}

void Session::restore(const Snapshot& snapshot) {
  if (impl_->busy) fail("Session::restore while a generation is running");
  impl_->seq.restore(*impl_of(snapshot).data);
}

void Session::reset() {
  if (impl_->busy) fail("Session::reset while a generation is running");
  impl_->seq.reset();
}

PreparedChat::PreparedChat(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PreparedChat::~PreparedChat() = default;
PreparedChat::PreparedChat(PreparedChat&&) noexcept = default;
PreparedChat& PreparedChat::operator=(PreparedChat&&) noexcept = default;
const std::vector<int32_t>& PreparedChat::tokens() const { return impl_->plan.ids; }

Snapshot::Snapshot(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Snapshot::~Snapshot() = default;
size_t Snapshot::bytes() const { return impl_->data->bytes(); }
int64_t Snapshot::tokens() const { return int64_t(impl_->data->tokens.size()); }

}  // namespace qwen35
