#include "core/page_buffer.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "core/error.h"

namespace qwen35 {
namespace {

size_t page_size() {
  static const size_t p = size_t(sysconf(_SC_PAGESIZE));
  return p;
}

}  // namespace

PageBuffer::PageBuffer(size_t bytes, bool huge_tail) {
  if (bytes == 0) return;
  // Map one huge page more than asked and start at a 2 MiB boundary, so that the kernel can back
  // the buffer with huge pages from its first byte.
  mapped_ = round_up_to_huge_page(bytes) + kHugePageBytes;
  void* p = mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) fail("cannot allocate ", bytes, " bytes: ", std::strerror(errno));
  uint8_t* base = static_cast<uint8_t*>(p);
  data_ = reinterpret_cast<uint8_t*>(round_up_to_huge_page(reinterpret_cast<uintptr_t>(base)));
  size_ = bytes;
#ifdef MADV_HUGEPAGE
  const size_t advised = huge_tail ? round_up_to_huge_page(bytes) : bytes / kHugePageBytes * kHugePageBytes;
  if (advised > 0) madvise(data_, advised, MADV_HUGEPAGE);  // advice only: failure is harmless
#endif
  // Keep the original mapping's start for munmap.
  mapped_base_ = base;
}

PageBuffer::~PageBuffer() {
  if (mapped_base_) munmap(mapped_base_, mapped_);
}

PageBuffer::PageBuffer(PageBuffer&& o) noexcept { *this = std::move(o); }

PageBuffer& PageBuffer::operator=(PageBuffer&& o) noexcept {
  if (this != &o) {
    if (mapped_base_) munmap(mapped_base_, mapped_);
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
    mapped_ = std::exchange(o.mapped_, 0);
    mapped_base_ = std::exchange(o.mapped_base_, nullptr);
  }
  return *this;
}

void drop_pages(const void* p, size_t n) {
  const uintptr_t begin = reinterpret_cast<uintptr_t>(p), end = begin + n;
  const uintptr_t ps = page_size();
  const uintptr_t a = (begin + ps - 1) / ps * ps, b = end / ps * ps;
  if (b > a) madvise(reinterpret_cast<void*>(a), b - a, MADV_DONTNEED);
}

}  // namespace qwen35
