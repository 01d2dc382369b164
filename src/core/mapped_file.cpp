#include "core/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "core/error.h"
#include "core/page_buffer.h"

namespace qwen35 {

namespace {

// A read-only private mapping of fd's first n bytes at a 2 MiB-aligned address (the file offset
// 0 then sits on a huge-page boundary), advised as huge pages. nullptr on failure.
void* map_aligned(int fd, size_t n) {
  void* r = ::mmap(nullptr, n + kHugePageBytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (r == MAP_FAILED) return nullptr;
  const uintptr_t base = reinterpret_cast<uintptr_t>(r), at = round_up_to_huge_page(base);
  void* p = ::mmap(reinterpret_cast<void*>(at), n, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0);
  if (p == MAP_FAILED) {
    ::munmap(r, n + kHugePageBytes);
    return nullptr;
  }
  // Give back the reservation around the file mapping.
  const size_t page = size_t(::sysconf(_SC_PAGESIZE)), end = (at + n + page - 1) / page * page;
  if (at > base) ::munmap(r, at - base);
  if (base + n + kHugePageBytes > end) ::munmap(reinterpret_cast<void*>(end), base + n + kHugePageBytes - end);
#ifdef MADV_HUGEPAGE
  ::madvise(p, n, MADV_HUGEPAGE);  // advice only: failure is harmless
#endif
  return p;
}

}  // namespace

MappedFile::MappedFile(const std::string& path, bool huge_pages) : path_(path) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is rejected below as not a regular file.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) fail("cannot open ", path, ": ", std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    fail("cannot stat ", path, ": ", std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(path, " is not a regular file");
  }
  size_ = size_t(st.st_size);
  if (size_ > 0) {
    void* p = huge_pages ? map_aligned(fd, size_) : nullptr;
    if (!p) p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int e = errno;
      ::close(fd);
      fail("cannot map ", path, ": ", std::strerror(e));
    }
    data_ = static_cast<const uint8_t*>(p);
  }
  ::close(fd);
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
}

}  // namespace qwen35
