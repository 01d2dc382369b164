// Large engine-owned memory (repacked and quantized weights): anonymous pages, advised as huge
// pages (fewer TLB misses while weights stream, far fewer page faults while they are written).
#pragma once

#include <cstddef>
#include <cstdint>

namespace qwen35 {

// The huge page size the engine aligns large memory and file mappings to.
constexpr size_t kHugePageBytes = size_t(2) << 20;
constexpr uintptr_t round_up_to_huge_page(uintptr_t n) { return (n + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes; }

class PageBuffer {
 public:
  PageBuffer() = default;
  // Throws qwen35::Error when the memory cannot be had.
  explicit PageBuffer(size_t bytes);
  ~PageBuffer();
  PageBuffer(PageBuffer&& o) noexcept;
  PageBuffer& operator=(PageBuffer&& o) noexcept;
  PageBuffer(const PageBuffer&) = delete;
  PageBuffer& operator=(const PageBuffer&) = delete;

  uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  uint8_t* mapped_base_ = nullptr;  // what mmap returned (data_ is its first 2 MiB boundary)
  size_t mapped_ = 0;
};

// Gives the pages wholly inside [p, p + n) of a read-only file mapping back to the kernel: the
// process's resident memory drops, and a later read faults them in again from the page cache.
void drop_pages(const void* p, size_t n);

}  // namespace qwen35
