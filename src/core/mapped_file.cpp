#include "core/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>

#include "core/error.h"
#include "core/page_buffer.h"
#include "core/page_cache_folios.h"

namespace qwen35 {

namespace {

// A read-only private mapping of n bytes of fd from `offset` (a multiple of 2 MiB) at a 2 MiB-aligned
// address, so file and address agree on the huge-page boundaries, advised as huge pages. nullptr
// on failure.
void* map_aligned(int fd, size_t offset, size_t n) {
  void* r = ::mmap(nullptr, n + kHugePageBytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (r == MAP_FAILED) return nullptr;
  const uintptr_t base = reinterpret_cast<uintptr_t>(r), at = round_up_to_huge_page(base);
  void* p = ::mmap(reinterpret_cast<void*>(at), n, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, off_t(offset));
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

// map_aligned, every page of it faulted in now.
void* map_populated(int fd, size_t offset, size_t n) {
  void* p = map_aligned(fd, offset, n);
  if (p) populate_mapping(p, n);
  return p;
}

// The bytes of the mapping at p mapped by 2 MiB entries; -1 when the kernel does not say.
int64_t pmd_mapped(const void* p) {
  const void* const one[] = {p};
  return pmd_mapped_bytes(one)[0];
}

// Small folios are looked for in pieces of this size (one probe mapping each).
constexpr size_t kProbeBytes = size_t(8) << 20;

// Whether the file's first 2 MiB, dropped from the page cache and faulted in again through a
// huge-page mapping, come back mapped by one 2 MiB entry: a file with no such entry at all may
// have been read in small folios only, or live where large folios of files do not exist.
bool reads_in_huge_folios(int fd) {
  if (::posix_fadvise(fd, 0, off_t(kHugePageBytes), POSIX_FADV_DONTNEED) != 0) return false;
  void* q = map_populated(fd, 0, kHugePageBytes);
  if (!q) return false;
  const bool huge = pmd_mapped(q) == int64_t(kHugePageBytes);
  ::munmap(q, kHugePageBytes);
  return huge;
}

}  // namespace

void* MappedFile::map_in_huge_folios(int fd) {
  void* p = map_populated(fd, 0, size_);
  if (!p) return nullptr;
  FolioReport& r = folios_;
  r.mappable = size_ / kHugePageBytes * kHugePageBytes;
  auto small_of = [&](int64_t pmd) { return r.mappable - std::min(size_t(pmd), r.mappable); };
  auto since = [](auto t) { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count(); };
  const int64_t pmd = pmd_mapped(p);
  if (pmd < 0) return p;  // the kernel does not say
  r.known = true;
  r.small_before = r.small_after = small_of(pmd);
  if (r.small_before * 50 <= r.mappable) return p;  // below 2% the gain is not worth a disk read
  const auto t0 = std::chrono::steady_clock::now();
  // Find the pieces held in small folios: each probed through a mapping of its own, since smaps
  // reports a mapping's total only; those pieces are dropped from the page cache (with our mapping
  // gone, no page of theirs is mapped here) and faulted in again through the huge-page mapping,
  // which reads them in 2 MiB folios.
  ::munmap(p, size_);
  if (pmd == 0 && !reads_in_huge_folios(fd)) {
    // This kernel or file system keeps no large folios of files: reading again would not help.
    r.seconds = since(t0);
    return map_aligned(fd, 0, size_);
  }
  std::vector<const void*> probes;
  for (size_t off = 0; off < r.mappable; off += kProbeBytes) {
    const size_t n = std::min(kProbeBytes, r.mappable - off);
    probes.push_back(map_populated(fd, off, n));
  }
  const std::vector<int64_t> pieces = pmd_mapped_bytes(probes);
  for (size_t i = 0; i < probes.size(); ++i) {
    const size_t off = i * kProbeBytes, n = std::min(kProbeBytes, r.mappable - off);
    if (!probes[i]) continue;
    ::munmap(const_cast<void*>(probes[i]), n);
    if (pieces[i] >= 0 && size_t(pieces[i]) < n && ::posix_fadvise(fd, off_t(off), off_t(n), POSIX_FADV_DONTNEED) == 0)
      r.dropped += n;
  }
  p = map_populated(fd, 0, size_);
  if (!p) return nullptr;
  const int64_t after = pmd_mapped(p);
  if (after >= 0) r.small_after = small_of(after);
  r.seconds = since(t0);
  return p;
}

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
    void* p = huge_pages ? map_in_huge_folios(fd) : nullptr;
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
