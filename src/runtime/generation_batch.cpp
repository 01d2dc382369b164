#include <algorithm>
#include <thread>

#include "qwen35/engine.h"
#include "kernels/kernels.h"
#include "runtime/batch_gate.h"
#include "runtime/session_impl.h"

namespace qwen35 {

int64_t decoding_prefill_limit(const EngineOptions& o) {
  const int64_t chunk = kernels::kDeltaChunk;
  if (o.prefill_block % chunk != 0) return o.prefill_block;
  return std::min(o.prefill_block, (o.decoding_prefill_block + chunk - 1) / chunk * chunk);
}

struct GenerationBatch::Impl {
  explicit Impl(const Engine& e) : engine(e.impl()), gate(e.impl()) {}
  const EngineImpl& engine;
  BatchGate gate;
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
  const int64_t budget = decoding ? limit * o.decoding_prefill_layers : 0;
  auto prompt = [&](size_t i) { return !gens[i]->done() && gens[i]->pending_prompt_tokens() > 0; };
  size_t chosen = gens.size();
  for (size_t i = 0; i < gens.size() && chosen == gens.size(); ++i)
    if (prompt(i) && gens[i]->impl().block_in_flight > 0) chosen = i;
  for (size_t i = 0; i < gens.size() && chosen == gens.size(); ++i)
    if (prompt(i)) chosen = i;
  std::vector<size_t> stepped;
  for (size_t i = 0; i < gens.size(); ++i) {
    if (prompt(i) && decoding && i != chosen) {
      outcomes[i].more = true;  // not this round
      continue;
    }
    gens[i]->impl().prefill_limit = limit;
    gens[i]->impl().prefill_layer_budget = budget;
    stepped.push_back(i);
  }
  auto one = [&](size_t i) {
    try {
      outcomes[i].more = gens[i]->step();
    } catch (...) {
      outcomes[i].error = std::current_exception();
    }
  };
  if (stepped.size() == 1) return one(stepped[0]);  // nothing to batch with: the plain path
  BatchGate& gate = impl_->gate;
  gate.begin_round(int(stepped.size()));
  // A thread per step and round: a few tens of microseconds against a decode step of many
  // milliseconds, and no idle threads between requests.
  std::vector<std::thread> threads;
  threads.reserve(stepped.size());
  for (size_t i : stepped)
    threads.emplace_back([&, i] {
      BatchGate::set_current(&gate);
      one(i);
      BatchGate::set_current(nullptr);
      gate.leave();
    });
  for (std::thread& t : threads) t.join();
}

uint64_t GenerationBatch::batches() const { return impl_->gate.batches(); }
uint64_t GenerationBatch::batched_rows() const { return impl_->gate.batched_rows(); }

}  // namespace qwen35
