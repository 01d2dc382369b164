// Prepared weights kept on disk. Repacking (and quantizing at load) writes every byte of the
// weights into fresh anonymous memory, which is slow to fault in (on virtual machines especially)
// and is redone on every start. With a cache directory, the first start writes the prepared
// matrices to one file there; later starts with the same model files, --weights and kernel table
// map that file instead: the weights come straight from the page cache, nothing is repacked, and
// the source tensors are never read.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/mapped_file.h"
#include "kernels/kernels.h"

namespace qwen35 {

struct CachedMatrix {
  CachedMatrix(std::string n, kernels::WeightMatrix* m) : name(std::move(n)), w(m), source_rows(m->rows), source_cols(m->cols) {}
  std::string name;
  kernels::WeightMatrix* w;
  // The shape as bound from the model files (preparation may pad it): what a cache file must match.
  int64_t source_rows, source_cols;
};

// What identifies a prepared model: the cache format, each source file's path, size and
// modification time, the --weights value and the kernel table (its packed layouts).
std::string weight_cache_key(const std::vector<std::string>& source_files, const std::string& weights,
                             const std::string& table_name);
// The cache file for `key` in `dir`.
std::string weight_cache_path(const std::string& dir, const std::string& key);

// Points every matrix at its prepared bytes in the cache file, which `mapping` then keeps mapped.
// False (nothing changed) when the file is missing, is for another key, or does not describe
// exactly these matrices (names, shapes); a damaged file is ignored the same way.
bool load_weight_cache(const std::string& path, const std::string& key, const std::vector<CachedMatrix>& matrices,
                       std::unique_ptr<MappedFile>& mapping);
// Writes the prepared matrices (atomically: a temporary file renamed into place) and removes
// older cache files of the same sources in `dir`. The cache never fills the disk: the write must
// leave weight_cache_free_floor() of the file system free: an older preparation of the same
// sources (replaced anyway) and then the least recently used cache files of other models are
// removed to make room; when that is not enough nothing is written.
// Throws qwen35::Error when it cannot write (or would not leave the floor free).
void save_weight_cache(const std::string& dir, const std::string& key, const std::vector<CachedMatrix>& matrices);

// Space the cache leaves free on its file system: 2 GiB or 5% of its capacity, the larger.
uint64_t weight_cache_free_floor(uint64_t capacity);

struct CacheFileInfo {
  std::string path;
  uint64_t bytes;
  int64_t last_use;  // modification time, which a load refreshes: larger is more recent
};
// Which of `others` (cache files of other models) to remove, least recently used first, so that
// writing `needed` bytes leaves `floor` free of `available`; nullopt when removing all of them
// would not be enough.
std::optional<std::vector<std::string>> weight_cache_evictions(std::vector<CacheFileInfo> others, uint64_t needed,
                                                               uint64_t available, uint64_t floor);

}  // namespace qwen35
