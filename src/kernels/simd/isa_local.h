// Scalar helpers for the files compiled with ISA flags (x86_*/). Such a file must not instantiate
// templates or inline functions that baseline code also uses (std::min, WeightMatrix::row,
// std::vector): the linker could pick its copy, with AVX instructions, for every caller. These
// have internal linkage instead, one copy per file.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

#include "kernels/kernels.h"

namespace qwen35::kernels {
namespace {

inline int64_t imin(int64_t a, int64_t b) { return a < b ? a : b; }

// Row r of a plain-layout matrix.
inline const void* row_of(const WeightMatrix& w, int64_t r) {
  return static_cast<const uint8_t*>(w.data) + size_t(r) * w.row_bytes;
}

inline int32_t load_i32(const void* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline int16_t load_i16(const void* p) {
  int16_t v;
  std::memcpy(&v, p, 2);
  return v;
}

// The calling thread's scratch of at least `bytes`, 64-byte aligned; it only grows (malloc'd, so
// no std::vector from this file; see above) and lives as long as the thread.
struct ThreadScratch {
  uint8_t* data = nullptr;
  size_t bytes = 0;
  ~ThreadScratch() { std::free(data); }
};
inline uint8_t* thread_scratch_bytes(size_t bytes) {
  thread_local ThreadScratch s;
  if (s.bytes < bytes) {
    std::free(s.data);
    s.data = static_cast<uint8_t*>(std::aligned_alloc(64, (bytes + 63) & ~size_t(63)));
    if (!s.data) {
      s.bytes = 0;
      throw std::bad_alloc();
    }
    s.bytes = bytes;
  }
  return s.data;
}

}  // namespace
}  // namespace qwen35::kernels
