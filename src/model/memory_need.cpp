#include "model/memory_need.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>

#include "io/gguf.h"
#include "model/config.h"
#include "model/decoder_state.h"

namespace qwen35 {

MemoryNeed gguf_memory_need(const std::string& path, int64_t context, DType kv) {
  const std::unique_ptr<GgufFile> f = GgufFile::open(path);
  const TextConfig cfg = ModelConfig::from_gguf(*f, nullptr).text;
  MemoryNeed n;
  n.name = std::filesystem::path(path).filename().string();
  n.weights = f->tensor_bytes();
  n.max_context = cfg.max_position_embeddings;
  n.context = context > 0 ? context : std::min<int64_t>(n.max_context, 32768);
  n.layers = cfg.num_layers;
  n.experts = cfg.num_experts;
  // The engine's own state layout: its DeltaNet states, and per token a key and a value row in
  // every attention layer.
  const DecoderState s = DecoderState::create(cfg, kv);
  n.state = s.bytes();
  for (const KvCache& c : s.kv) n.per_token += 2 * c.row_bytes();
  return n;
}

namespace {
// The first number in a cgroup limit file ("max": none).
uint64_t cgroup_limit(const char* file) {
  std::ifstream in(file);
  std::string v;
  if (!(in >> v) || v.empty() || v.find_first_not_of("0123456789") != std::string::npos) return 0;
  try {
    return std::stoull(v);
  } catch (...) {
    return 0;
  }
}

std::string gib(uint64_t bytes) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f GiB", double(bytes) / double(uint64_t(1) << 30));
  return b;
}
}  // namespace

uint64_t usable_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  uint64_t m = pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : 0;
  // A container's limit (cgroup v2, then v1, whose "no limit" is a huge number) where it is lower.
  for (const char* f : {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    const uint64_t l = cgroup_limit(f);
    if (l > 0 && (m == 0 || l < m)) m = l;
  }
  return m;
}

MemoryVerdict memory_verdict(const MemoryNeed& need, uint64_t memory, int parallel) {
  MemoryVerdict v;
  // Pieces appended one by one: GCC 12 warns (-Wrestrict) on some `"literal" + std::string&&`.
  std::string what = need.name;
  what += " needs about ";
  what += gib(need.total());
  what += " of memory: ";
  what += gib(need.weights);
  what += " of weights";
  if (need.experts > 0) {
    what += " (all ";
    what += std::to_string(need.experts);
    what += " experts of each of its ";
    what += std::to_string(need.layers);
    what += " layers: any token may route to any of them)";
  }
  what += " and ";
  what += gib(need.sequence(need.context));
  what += " of caches for a ";
  what += std::to_string(need.context);
  what += "-token context";
  if (memory == 0) {  // unknown: say the need, refuse nothing
    v.fits = true;
    v.message = what + ".";
    return v;
  }
  what += "; this process can use ";
  what += gib(memory);
  v.fits = need.total() + kMemoryHeadroom <= memory;
  if (v.fits) {
    v.message = what + ".";
    const uint64_t all = need.weights + uint64_t(parallel) * need.sequence(need.context);
    if (parallel > 1 && all + kMemoryHeadroom > memory) {
      v.message += ' ';
      v.message += std::to_string(parallel);
      v.message += " parallel conversations at the full context would need ";
      v.message += gib(all);
      v.message += ": long ones at once may run out (--parallel, --ctx).";
    }
    return v;
  }
  const uint64_t fixed = need.weights + need.sequence(0) + kMemoryHeadroom;
  const int64_t tokens = fixed < memory && need.per_token > 0 ? int64_t((memory - fixed) / need.per_token) / 1024 * 1024 : 0;
  v.message = what;
  if (tokens >= 1024) {
    v.message += ", too little for that context: use --ctx ";
    v.message += std::to_string(tokens);
    v.message += " or less, or a smaller quantization of the model.";
  } else {
    v.message += ", too little for its weights: use a smaller quantization of the model (fewer bits per weight, "
                 "such as Q4_K_M or IQ4_XS; `qwen35 convert --type` writes one) or a machine with more memory.";
  }
  return v;
}

}  // namespace qwen35
