// A read-only memory map of a whole file. Weights are never copied: tensor views point into it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace qwen35 {

// How a huge-page mapping's bytes were found in the page cache, and what was read again.
struct FolioReport {
  bool known = false;        // the kernel reports 2 MiB-mapped bytes (else the rest is zero)
  size_t mappable = 0;       // bytes 2 MiB entries could map: the size rounded down to 2 MiB
  size_t small_before = 0;   // of those, in small folios once mapped
  size_t dropped = 0;        // bytes evicted from the page cache to be read again in 2 MiB folios
  size_t small_after = 0;    // in small folios after that
  double seconds = 0;        // spent finding and reading them again
};

class MappedFile {
 public:
  // Throws qwen35::Error when the file cannot be opened or mapped. huge_pages: the mapping starts
  // on a 2 MiB boundary and is advised as huge pages, so page-cache folios of 2 MiB (what 2 MiB
  // writes at 2 MiB offsets leave behind) are mapped whole: weights streamed from it miss the TLB
  // no more than from anonymous huge pages. Such a mapping is faulted in whole at once, and pieces
  // the page cache holds in small folios are read again from the file (folios() tells).
  explicit MappedFile(const std::string& path, bool huge_pages = false);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  const FolioReport& folios() const { return folios_; }

 private:
  void* map_in_huge_folios(int fd);

  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  FolioReport folios_;
};

}  // namespace qwen35
