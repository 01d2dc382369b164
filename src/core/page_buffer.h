// Large engine-owned memory (repacked and quantized weights, large work buffers): anonymous pages,
// advised as huge pages (fewer TLB misses while weights stream, far fewer page faults while they
// are written).
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

namespace qwen35 {

// The huge page size the engine aligns large memory and file mappings to.
constexpr size_t kHugePageBytes = size_t(2) << 20;
constexpr uintptr_t round_up_to_huge_page(uintptr_t n) { return (n + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes; }

class PageBuffer {
 public:
  PageBuffer() = default;
  // Throws qwen35::Error when the memory cannot be had. A first touch in an advised 2 MiB page makes
  // all of it resident: huge_tail = false leaves the last, partial one (all of a buffer under 2 MiB)
  // in small pages.
  explicit PageBuffer(size_t bytes, bool huge_tail = true);
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

// n zero-filled values of a trivial type T in a PageBuffer: for large per-request work buffers,
// whose first touch in 4 KiB pages costs page faults and a zeroing memset (a std::vector of the
// vision tower's 51 MB for one 512x512 image: 0.1 s on a Zen 5 VM).
template <class T>
class PageArray {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>);

 public:
  PageArray() = default;
  explicit PageArray(size_t n) : buf_(n * sizeof(T), false), n_(n) {}
  PageArray(PageArray&& o) noexcept : buf_(std::move(o.buf_)), n_(std::exchange(o.n_, 0)) {}
  PageArray& operator=(PageArray&& o) noexcept {
    buf_ = std::move(o.buf_);
    n_ = std::exchange(o.n_, 0);
    return *this;
  }

  T* data() const { return reinterpret_cast<T*>(buf_.data()); }
  size_t size() const { return n_; }
  T& operator[](size_t i) const { return data()[i]; }

 private:
  PageBuffer buf_;
  size_t n_ = 0;
};

// Gives the pages wholly inside [p, p + n) of a read-only file mapping back to the kernel: the
// process's resident memory drops, and a later read faults them in again from the page cache.
void drop_pages(const void* p, size_t n);

}  // namespace qwen35
