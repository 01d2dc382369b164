#include "model/weight_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>

#include "core/error.h"
#include "core/page_buffer.h"

namespace qwen35 {
namespace {

// 4: written in whole 2 MiB pieces (files of 3 were written in small ones).
constexpr char kMagic[16] = "qwen35-weights4";
constexpr size_t kAlign = 4096;

// Writes a file in whole 2 MiB pieces at 2 MiB offsets: the page cache then holds it in 2 MiB
// folios, which a huge-page mapping maps whole (small writes leave 4 KiB pages; qmatmul_bench
// streamed 10-12 GB/s a core from those, 13-16 from huge pages).
class PieceWriter {
 public:
  explicit PieceWriter(const std::string& path) : fd_(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) {
    if (fd_ >= 0) buf_.resize(kPiece);
  }
  ~PieceWriter() {
    if (fd_ >= 0) ::close(fd_);
  }
  bool ok() const { return fd_ >= 0 && ok_; }
  void write(const void* data, size_t n) { append(static_cast<const char*>(data), n); }
  void zeros(size_t n) { append(nullptr, n); }
  bool finish() {
    flush();
    return ok();
  }

 private:
  static constexpr size_t kPiece = kHugePageBytes;
  // n bytes from p (nullptr: zeros).
  void append(const char* p, size_t n) {
    while (n > 0 && ok_) {
      const size_t k = std::min(n, kPiece - fill_);
      if (p) std::memcpy(buf_.data() + fill_, p, k), p += k;
      else std::memset(buf_.data() + fill_, 0, k);
      fill_ += k, n -= k;
      if (fill_ == kPiece) flush();
    }
  }
  void flush() {
    for (size_t done = 0; done < fill_ && ok_;) {
      const ssize_t w = ::write(fd_, buf_.data() + done, fill_ - done);
      if (w <= 0) ok_ = false;
      else done += size_t(w);
    }
    fill_ = 0;
  }
  int fd_;
  bool ok_ = true;
  std::vector<char> buf_;
  size_t fill_ = 0;
};

// The part of the key that names the sources (older caches of the same sources get replaced).
std::string sources_part(const std::string& key) { return key.substr(0, key.find('\n')); }

std::string hex(uint64_t x) {
  char b[17];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(x));
  return b;
}

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

bool is_cache_file(const std::filesystem::path& p) {
  const std::string fn = p.filename().string();
  return fn.size() > 5 && fn.substr(fn.size() - 5) == ".q35w";
}

// Removes cache files until writing `bytes` to `path` leaves the floor free, or fails (removing
// nothing) when even all of them would not do. Older preparations of the same sources (names
// starting with `same_sources`), which the write replaces anyway, go first; then other models'
// files, least recently used first.
void make_room(const std::string& dir, const std::string& path, const std::string& same_sources, uint64_t bytes) {
  std::error_code ec;
  const std::filesystem::space_info sp = std::filesystem::space(dir, ec);
  if (ec) fail("weight cache: cannot tell the free space of ", dir, ": ", ec.message());
  std::vector<CacheFileInfo> others;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (!is_cache_file(e.path()) || e.path() == path) continue;
    struct stat st {};
    if (stat(e.path().c_str(), &st) != 0) continue;
    const bool replaced = e.path().filename().string().rfind(same_sources, 0) == 0;
    const int64_t mtime_ns = int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
    others.push_back({e.path().string(), uint64_t(st.st_size), replaced ? INT64_MIN : mtime_ns});
  }
  const uint64_t floor = weight_cache_free_floor(sp.capacity);
  const auto evict = weight_cache_evictions(others, bytes, sp.available, floor);
  if (!evict)
    fail("weight cache: ", (bytes + (1 << 20) - 1) >> 20, " MiB would leave less than ", floor >> 20, " MiB free of ",
         sp.available >> 20, " MiB in ", dir);
  for (const std::string& f : *evict) std::filesystem::remove(f, ec);
}

struct Header {
  uint32_t name_len;
  uint8_t dtype, layout, pad[2];
  int64_t rows, cols;
  uint64_t row_bytes, group_bytes, offset, bytes;
  int64_t alias;  // index of an earlier matrix with the very same bytes (a tied head), or -1
  int64_t source_rows, source_cols;
};

}  // namespace

std::string weight_cache_key(const std::vector<std::string>& source_files, const std::string& weights,
                             const std::string& table_name) {
  std::string sources;
  for (const std::string& f : source_files) {
    struct stat st {};
    if (stat(f.c_str(), &st) != 0) fail("weight cache: cannot stat ", f);
    const std::string abs = std::filesystem::absolute(f).lexically_normal().string();
    sources += abs + ":" + std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) + "." +
               std::to_string(st.st_mtim.tv_nsec) + ";";
  }
  // The preparation's own version: a file written by an older one maps correctly but holds what
  // that one prepared (2: a tied embedding is the packed LM head, not a plain copy beside it; 3:
  // interleave16's Q6_K blocks in the order the kernels read them; 4: Q6_K's quants as six bits a
  // byte, sub-block by sub-block), and is replaced by the next write.
  return "sources " + sources + "\nweights " + weights + "\ntable " + table_name + "\npreparation 4\n";
}

std::string weight_cache_path(const std::string& dir, const std::string& key) {
  return (std::filesystem::path(dir) / (hex(fnv1a(sources_part(key))) + "-" + hex(fnv1a(key)) + ".q35w")).string();
}

bool load_weight_cache(const std::string& path, const std::string& key, const std::vector<CachedMatrix>& matrices,
                       std::unique_ptr<MappedFile>& mapping) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return false;
  std::unique_ptr<MappedFile> f;
  try {
    f = std::make_unique<MappedFile>(path, /*huge_pages=*/true);
  } catch (const Error&) {
    return false;
  }
  const uint8_t* p = f->data();
  const size_t size = f->size();
  size_t at = 0;
  auto take = [&](void* out, size_t n) {
    if (at + n > size) return false;
    std::memcpy(out, p + at, n);
    at += n;
    return true;
  };
  char magic[16];
  uint64_t key_len = 0, n = 0;
  if (!take(magic, 16) || std::memcmp(magic, kMagic, 16) != 0 || !take(&key_len, 8) || key_len > size - at) return false;
  if (std::string(reinterpret_cast<const char*>(p + at), key_len) != key) return false;
  at += key_len;
  if (!take(&n, 8) || n != matrices.size()) return false;
  std::vector<kernels::WeightMatrix> bound(matrices.size());
  for (size_t i = 0; i < matrices.size(); ++i) {
    Header h{};
    if (!take(&h, sizeof h) || h.name_len > size - at) return false;
    const std::string name(reinterpret_cast<const char*>(p + at), h.name_len);
    at += h.name_len;
    if (name != matrices[i].name || h.source_rows != matrices[i].w->rows || h.source_cols != matrices[i].w->cols)
      return false;
    kernels::WeightMatrix& w = bound[i];
    w.dtype = DType(h.dtype);
    w.layout = h.layout;
    w.rows = h.rows;
    w.cols = h.cols;
    w.row_bytes = h.row_bytes;
    w.group_bytes = h.group_bytes;
    if (h.alias >= 0) {
      if (size_t(h.alias) >= i) return false;
      w.data = bound[size_t(h.alias)].data;
    } else {
      if (h.offset % kAlign != 0 || h.offset > size || h.bytes > size - h.offset || h.bytes != w.bytes()) return false;
      w.data = p + h.offset;
    }
  }
  for (size_t i = 0; i < matrices.size(); ++i) *matrices[i].w = bound[i];
  mapping = std::move(f);
  // The modification time orders the files for eviction: a load makes this one the most recent.
  ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);
  return true;
}

uint64_t weight_cache_free_floor(uint64_t capacity) { return std::max<uint64_t>(uint64_t(2) << 30, capacity / 20); }

std::optional<std::vector<std::string>> weight_cache_evictions(std::vector<CacheFileInfo> others, uint64_t needed,
                                                               uint64_t available, uint64_t floor) {
  std::sort(others.begin(), others.end(),
            [](const CacheFileInfo& a, const CacheFileInfo& b) { return a.last_use < b.last_use; });
  const auto fits = [&] { return available >= floor && available - floor >= needed; };
  std::vector<std::string> out;
  for (const CacheFileInfo& f : others) {
    if (fits()) return out;
    out.push_back(f.path);
    available += f.bytes;
  }
  if (fits()) return out;
  return std::nullopt;
}

void save_weight_cache(const std::string& dir, const std::string& key, const std::vector<CachedMatrix>& matrices) {
  std::filesystem::create_directories(dir);
  const std::string path = weight_cache_path(dir, key);
  const std::string tmp = path + ".tmp" + std::to_string(::getpid());
  const std::string prefix = hex(fnv1a(sources_part(key))) + "-";  // this model's cache files
  {
    std::vector<Header> headers(matrices.size());
    size_t header_bytes = 16 + 8 + key.size() + 8;
    for (const CachedMatrix& m : matrices) header_bytes += sizeof(Header) + m.name.size();
    size_t offset = (header_bytes + kAlign - 1) / kAlign * kAlign;
    for (size_t i = 0; i < matrices.size(); ++i) {
      const kernels::WeightMatrix& w = *matrices[i].w;
      Header& h = headers[i];
      h.name_len = uint32_t(matrices[i].name.size());
      h.dtype = uint8_t(w.dtype);
      h.layout = w.layout;
      h.rows = w.rows;
      h.cols = w.cols;
      h.row_bytes = w.row_bytes;
      h.group_bytes = w.group_bytes;
      h.alias = -1;
      h.source_rows = matrices[i].source_rows;
      h.source_cols = matrices[i].source_cols;
      for (size_t j = 0; j < i; ++j)
        if (matrices[j].w->data == w.data && matrices[j].w->bytes() == w.bytes() &&
            matrices[j].w->layout == w.layout && matrices[j].w->dtype == w.dtype)
          h.alias = int64_t(j);
      if (h.alias >= 0) continue;
      h.bytes = w.bytes();
      h.offset = offset;
      offset = (offset + h.bytes + kAlign - 1) / kAlign * kAlign;
    }
    make_room(dir, path, prefix, offset);
    PieceWriter out(tmp);
    if (!out.ok()) fail("weight cache: cannot write ", tmp);
    const uint64_t key_len = key.size(), n = matrices.size();
    out.write(kMagic, 16);
    out.write(&key_len, 8);
    out.write(key.data(), key.size());
    out.write(&n, 8);
    for (size_t i = 0; i < matrices.size(); ++i) {
      out.write(&headers[i], sizeof(Header));
      out.write(matrices[i].name.data(), matrices[i].name.size());
    }
    size_t at = header_bytes;
    for (size_t i = 0; i < matrices.size(); ++i) {
      if (headers[i].alias >= 0) continue;
      out.zeros(headers[i].offset - at);
      out.write(matrices[i].w->data, headers[i].bytes);
      at = headers[i].offset + headers[i].bytes;
    }
    if (!out.finish()) {
      std::error_code ec;
      std::filesystem::remove(tmp, ec);
      fail("weight cache: writing ", tmp, " failed (disk full?)");
    }
  }
  // One cache file per set of sources: an older preparation of the same files goes.
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string fn = e.path().filename().string();
    if (fn.rfind(prefix, 0) == 0 && is_cache_file(e.path()) && e.path() != path)
      std::filesystem::remove(e.path(), ec);
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    fail("weight cache: cannot rename ", tmp, " to ", path);
  }
}

}  // namespace qwen35
