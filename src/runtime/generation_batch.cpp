#include <thread>

#include "qwen35/engine.h"
#include "runtime/batch_gate.h"

namespace qwen35 {

struct GenerationBatch::Impl {
  explicit Impl(const Engine& e) : gate(e.impl()) {}
  BatchGate gate;
};

GenerationBatch::GenerationBatch(const Engine& engine) : impl_(std::make_unique<Impl>(engine)) {}
GenerationBatch::~GenerationBatch() = default;

void GenerationBatch::step(const std::vector<Generation*>& gens, std::vector<Outcome>& outcomes) {
  outcomes.assign(gens.size(), Outcome{});
  auto one = [&](size_t i) {
    try {
      outcomes[i].more = gens[i]->step();
    } catch (...) {
      outcomes[i].error = std::current_exception();
    }
  };
  if (gens.size() == 1) return one(0);  // nothing to batch with: the plain path
  BatchGate& gate = impl_->gate;
  gate.begin_round(int(gens.size()));
  // A thread per step and round: a few tens of microseconds against a decode step of many
  // milliseconds, and no idle threads between requests.
  std::vector<std::thread> threads;
  threads.reserve(gens.size());
  for (size_t i = 0; i < gens.size(); ++i)
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
