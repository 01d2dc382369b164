// The page cache's folios under a huge-page file mapping. A mapping advised as huge pages maps a
// cached 2 MiB stretch of a file with one page-table entry only where the page cache holds it as
// one 2 MiB folio. Stretches read back by read(), or refilled around pages that survived a partial
// eviction, sit in small folios, and weights streamed from those pay a TLB miss per 4 KiB (decode
// up to ~20% slower on the development VM). These find such stretches so they can be read again.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace qwen35 {

// Maps every page of the page-aligned range [p, p + n) of a mapping now (MADV_POPULATE_READ; on
// kernels without it, by reading one byte of each page), reading from the file what is not cached.
void populate_mapping(const void* p, size_t n);

// For each of `starts`, the bytes of the mapping that begins there that are mapped by 2 MiB
// page-table entries (FilePmdMapped in /proc/self/smaps); -1 where there is no mapping starting
// there or the kernel does not say.
std::vector<int64_t> pmd_mapped_bytes(std::span<const void* const> starts);

}  // namespace qwen35
