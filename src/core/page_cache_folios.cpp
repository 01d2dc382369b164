#include "core/page_cache_folios.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <unordered_map>

namespace qwen35 {

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22  // Linux 5.14
#endif

void populate_mapping(const void* p, size_t n) {
  if (n == 0) return;
  if (::madvise(const_cast<void*>(p), n, MADV_POPULATE_READ) == 0 || errno != EINVAL) return;
  // An older kernel: fault each page in by reading it (other errors are left to the first real use).
  const size_t page = size_t(::sysconf(_SC_PAGESIZE));
  const volatile uint8_t* b = static_cast<const volatile uint8_t*>(p);
  for (size_t i = 0; i < n; i += page) (void)b[i];
}

std::vector<int64_t> pmd_mapped_bytes(std::span<const void* const> starts) {
  std::vector<int64_t> out(starts.size(), -1);
  std::unordered_map<uintptr_t, size_t> index;
  for (size_t i = 0; i < starts.size(); ++i) index.emplace(reinterpret_cast<uintptr_t>(starts[i]), i);
  std::FILE* f = std::fopen("/proc/self/smaps", "re");
  if (!f) return out;
  // Each mapping's block starts with its "start-end perms ..." line; its fields follow.
  char line[512];
  int64_t current = -1;
  while (std::fgets(line, sizeof line, f)) {
    unsigned long long start = 0, end = 0;
    char dash = 0;
    if (std::sscanf(line, "%llx%c%llx", &start, &dash, &end) == 3 && dash == '-') {
      const auto it = index.find(uintptr_t(start));
      current = it == index.end() ? -1 : int64_t(it->second);
      continue;
    }
    unsigned long long kb = 0;
    if (current >= 0 && std::sscanf(line, "FilePmdMapped: %llu kB", &kb) == 1) out[size_t(current)] = int64_t(kb) * 1024;
  }
  std::fclose(f);
  return out;
}

}  // namespace qwen35
