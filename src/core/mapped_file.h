// A read-only memory map of a whole file. Weights are never copied: tensor views point into it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace qwen35 {

class MappedFile {
 public:
  // Throws qwen35::Error when the file cannot be opened or mapped. huge_pages: the mapping starts
  // on a 2 MiB boundary and is advised as huge pages, so page-cache folios of 2 MiB (what 2 MiB
  // writes at 2 MiB offsets leave behind) are mapped whole: weights streamed from it miss the TLB
  // no more than from anonymous huge pages.
  explicit MappedFile(const std::string& path, bool huge_pages = false);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace qwen35
