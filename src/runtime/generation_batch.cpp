#include <algorithm>
#include <chrono>
#include <thread>

#include "qwen35/engine.h"
#include "kernels/kernels.h"
#include "runtime/batch_gate.h"
#include "runtime/engine_internal.h"
#include "runtime/prefill_pacer.h"
#include "runtime/session_impl.h"

namespace qwen35 {

int64_t decoding_prefill_limit(const EngineOptions& o) {
  const int64_t chunk = kernels::kDeltaChunk;
  if (o.prefill_block % chunk != 0) return o.prefill_block;
  return std::min(o.prefill_block, (o.decoding_prefill.block + chunk - 1) / chunk * chunk);
}

namespace {
// The pacer's range: one layer of a decoding prefill block a round at least, the whole block
// through every layer at most; it starts at two layers.
PrefillPacer make_pacer(const EngineImpl& e) {
  const int64_t limit = decoding_prefill_limit(e.options);
  return PrefillPacer(limit, limit * e.text_config().num_layers, 2 * limit, e.options.decoding_prefill.share);
}
// One step of each of `stepped` on a thread of its own, each handed the gate that batches their
// model passes: one(i, &gate).
template <typename Step>
void step_together(BatchGate& gate, const std::vector<size_t>& stepped, Step& one) {
  gate.begin_round(int(stepped.size()));
  // A thread per step and round: a few tens of microseconds against a decode step of many
  // milliseconds, and no idle threads between requests.
  std::vector<std::thread> threads;
  threads.reserve(stepped.size());
  for (size_t i : stepped)
    threads.emplace_back([&, i] {
      const BatchGate::Participant participant(gate);
      one(i, &gate);
    });
  for (std::thread& t : threads) t.join();
}

}  // namespace

struct GenerationBatch::Impl {
  explicit Impl(const Engine& e) : engine(impl_of(e)), gate(impl_of(e)), pacer(make_pacer(impl_of(e))) {}
  const EngineImpl& engine;
  BatchGate gate;
  PrefillPacer pacer;  // used when options.decoding_prefill.layers is 0
};

GenerationBatch::GenerationBatch(const Engine& engine) : impl_(std::make_unique<Impl>(engine)) {}
GenerationBatch::~GenerationBatch() = default;

void GenerationBatch::step(const std::vector<Generation*>& gens, std::vector<Outcome>& outcomes) {
  outcomes.assign(gens.size(), Outcome{});
  // While any of them decodes, the decoding ones' next tokens wait for this round's pass: one
  // prompt advances, by a small block through a few layers (the one with a block part-way
  // through the layers, else the first in line); the other prompts wait their turn.
  bool decoding = false;
  for (Generation* g : gens) decoding |= !g->done() && g->pending_prompt_tokens() == 0;
  const EngineOptions& o = impl_->engine.options;
  const int64_t limit = decoding ? decoding_prefill_limit(o) : 0;
  const bool paced = o.decoding_prefill.layers <= 0;
  const int64_t budget = !decoding ? 0 : paced ? impl_->pacer.budget() : limit * o.decoding_prefill.layers;
  auto prompt = [&](size_t i) { return !gens[i]->done() && gens[i]->pending_prompt_tokens() > 0; };
  size_t chosen = gens.size();
  for (size_t i = 0; i < gens.size() && chosen == gens.size(); ++i)
    if (prompt(i) && impl_of(*gens[i]).block_in_flight > 0) chosen = i;
  for (size_t i = 0; i < gens.size() && chosen == gens.size(); ++i)
    if (prompt(i)) chosen = i;
  std::vector<size_t> stepped;
  for (size_t i = 0; i < gens.size(); ++i) {
    if (prompt(i) && decoding && i != chosen) {
      outcomes[i].more = true;  // not this round
      continue;
    }
    impl_of(*gens[i]).prefill_limit = limit;
    impl_of(*gens[i]).prefill_layer_budget = budget;
    stepped.push_back(i);
  }
  auto one = [&](size_t i, BatchGate* gate) {
    try {
      outcomes[i].more = impl_of(*gens[i]).step(gate);
    } catch (...) {
      outcomes[i].error = std::current_exception();
    }
  };
  const auto t0 = std::chrono::steady_clock::now();
  auto seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  if (stepped.size() == 1) {  // nothing to batch with: the plain path
    one(stepped[0], nullptr);
    // A decode step alone is the pacer's plain round too (a burst of prompts may leave it no other).
    if (paced && decoding && stepped[0] != chosen) impl_->pacer.decode_round(seconds(), 1);
    return;
  }
  if (!paced || !decoding) return step_together(impl_->gate, stepped, one);
  int64_t token_layers = 0;
  for (size_t i : stepped) token_layers -= impl_of(*gens[i]).prefill_token_layers;
  step_together(impl_->gate, stepped, one);
  for (size_t i : stepped) token_layers += impl_of(*gens[i]).prefill_token_layers;
  const bool prompt_stepped = chosen < gens.size();  // the chosen prompt always steps
  const int streams = int(stepped.size()) - (prompt_stepped ? 1 : 0);
  if (!prompt_stepped) impl_->pacer.decode_round(seconds(), streams);
  else impl_->pacer.prefill_round(seconds(), token_layers, streams);  // a vision slice (no token-layers) is ignored
}

uint64_t GenerationBatch::batches() const { return impl_->gate.batches(); }
uint64_t GenerationBatch::batched_rows() const { return impl_->gate.batched_rows(); }

}  // namespace qwen35
