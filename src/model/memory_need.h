// What a GGUF model needs in memory, known before it is loaded: its weights as the file holds
// them (every expert of a mixture of experts: any token may route to any, so all of them stay
// resident, not just the few a token reads), and a sequence's caches at a context length (the
// DeltaNet states, fixed, and the attention layers' KV cache, growing with the context). `serve`
// says this at start and refuses a model that cannot fit rather than thrash or be killed midway.
#pragma once

#include <cstdint>
#include <string>

#include "core/dtype.h"

namespace qwen35 {

struct MemoryNeed {
  std::string name;             // the file's name, for messages
  uint64_t weights = 0;         // tensor bytes of every part
  uint64_t state = 0;           // a sequence's DeltaNet states
  uint64_t per_token = 0;       // a sequence's KV cache bytes per token of context
  int64_t context = 0;          // the context the engine will use
  int64_t max_context = 0;      // the model's maximum
  int layers = 0, experts = 0;  // experts: routed experts per layer (0: a dense model)
  uint64_t sequence(int64_t tokens) const { return state + per_token * uint64_t(tokens); }
  uint64_t total() const { return weights + sequence(context); }
};

// The need of the GGUF model at `path` (any part of a split one) for a context of `context` tokens
// (0: the engine's default, min(model maximum, 32768)) and KV elements of `kv`. Reads only the
// file's header and metadata.
MemoryNeed gguf_memory_need(const std::string& path, int64_t context, DType kv);

// The memory this process may use: the machine's, or its cgroup's limit where that is lower.
uint64_t usable_memory_bytes();

// Headroom the check keeps beside weights and caches: the engine's working buffers (a prefill
// block's activations, logits) and the rest of the system.
inline constexpr uint64_t kMemoryHeadroom = uint64_t(1) << 29;

struct MemoryVerdict {
  bool fits = false;
  std::string message;  // what the model needs against `memory`, and when it cannot fit, what to do
};
// `parallel` conversations may each grow to the context: said, but not refused (caches grow with
// use, and the check refuses only what cannot serve even one).
MemoryVerdict memory_verdict(const MemoryNeed& need, uint64_t memory, int parallel);

}  // namespace qwen35
