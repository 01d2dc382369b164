// Huge-page file mappings: a file the page cache holds in small folios is read again in 2 MiB
// ones when mapped, one already held in 2 MiB folios is left as it is, and either way the mapping
// shows the file's bytes.
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "core/mapped_file.h"
#include "core/page_buffer.h"
#include "support/test_data.h"

namespace qwen35 {
namespace {

namespace fs = std::filesystem;

constexpr size_t kFileBytes = size_t(40) << 20;  // 20 huge pages, five probe pieces of 8 MiB

uint8_t byte_at(size_t i) { return uint8_t((i * 2654435761u) >> 13); }

// Writes the test bytes in pieces of `piece` bytes and flushes them to disk: the page cache keeps
// a file in folios the size of the writes that filled it (2 MiB writes at 2 MiB offsets give 2 MiB
// folios where the file system has large folios), and only clean pages can be evicted.
void write_file(const std::string& path, size_t piece) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  std::vector<uint8_t> buf(piece);
  for (size_t at = 0; at < kFileBytes; at += piece) {
    for (size_t i = 0; i < piece; ++i) buf[i] = byte_at(at + i);
    ASSERT_EQ(::write(fd, buf.data(), piece), ssize_t(piece));
  }
  ASSERT_EQ(::fsync(fd), 0);
  ::close(fd);
}

bool same_bytes(const MappedFile& f) {
  if (f.size() != kFileBytes) return false;
  for (size_t i = 0; i < kFileBytes; ++i)
    if (f.data()[i] != byte_at(i)) return false;
  return true;
}

// Whether a file written in 2 MiB pieces came out mapped by 2 MiB entries: where it does not, the
// kernel or file system keeps no large folios of files and there is nothing to mend.
bool maps_by_huge_entries(const FolioReport& f) { return f.known && f.small_before < f.mappable; }

TEST(MappedFile, SmallFoliosAreReadAgainInHugeOnes) {
  const fs::path dir = test::temp_dir("mapped-file");
  const std::string whole = (dir / "whole").string(), small = (dir / "small").string();
  write_file(whole, kHugePageBytes);
  write_file(small, 4096);

  const MappedFile w(whole, /*huge_pages=*/true);
  ASSERT_TRUE(same_bytes(w));
  const FolioReport& wf = w.folios();
  if (!maps_by_huge_entries(wf)) GTEST_SKIP() << "no file page is mapped by a 2 MiB entry here (" << dir << ")";
  EXPECT_EQ(wf.mappable, kFileBytes);
  EXPECT_EQ(wf.dropped, 0u) << "a file held in 2 MiB folios is not read again";
  EXPECT_LE(wf.small_after * 50, wf.mappable);

  const MappedFile s(small, /*huge_pages=*/true);
  ASSERT_TRUE(same_bytes(s));
  const FolioReport& sf = s.folios();
  ASSERT_TRUE(sf.known);
  EXPECT_GT(sf.small_before * 2, sf.mappable) << "4 KiB writes should have left small folios";
  EXPECT_GT(sf.dropped, 0u);
  EXPECT_LE(sf.dropped, sf.mappable);
  // Fragmented memory can deny a few 2 MiB folios; most must come back whole.
  EXPECT_LT(sf.small_after * 4, sf.small_before) << sf.small_after << " of " << sf.mappable << " bytes still small";

  // Mapped again: the file is in 2 MiB folios now, so nothing is read twice.
  const MappedFile again(small, /*huge_pages=*/true);
  ASSERT_TRUE(same_bytes(again));
  EXPECT_EQ(again.folios().small_before, sf.small_after);
  if (sf.small_after * 50 <= sf.mappable) {
    EXPECT_EQ(again.folios().dropped, 0u);
  }
}

// Only the damaged piece is read again: what a partial eviction leaves (the rest still in 2 MiB
// folios) is evicted and refilled in small folios here by reading one 4 KiB page of every 64 KiB
// of it without readahead.
TEST(MappedFile, OnlyThePiecesInSmallFoliosAreReadAgain) {
  const fs::path dir = test::temp_dir("mapped-file");
  const std::string path = (dir / "partly").string();
  write_file(path, kHugePageBytes);
  constexpr size_t kFrom = size_t(16) << 20, kBytes = size_t(8) << 20;
  {
    const MappedFile first(path, /*huge_pages=*/true);
    if (!maps_by_huge_entries(first.folios())) GTEST_SKIP() << "no file page is mapped by a 2 MiB entry here (" << dir << ")";
  }
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::posix_fadvise(fd, off_t(kFrom), off_t(kBytes), POSIX_FADV_DONTNEED), 0);
  ASSERT_EQ(::posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM), 0);
  char page[4096];
  for (size_t at = kFrom; at < kFrom + kBytes; at += 65536) ASSERT_EQ(::pread(fd, page, sizeof page, off_t(at)), ssize_t(sizeof page));
  ::close(fd);

  const MappedFile f(path, /*huge_pages=*/true);
  ASSERT_TRUE(same_bytes(f));
  EXPECT_EQ(f.folios().small_before, kBytes);
  EXPECT_EQ(f.folios().dropped, kBytes) << "only the 8 MiB piece that held small folios";
  EXPECT_LT(f.folios().small_after * 4, kBytes);
}

TEST(MappedFile, PlainMappingsAndShortFilesAreLeftAlone) {
  const std::string path = (fs::path(test::temp_dir("mapped-file")) / "short").string();
  {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::write(fd, "qwen35", 6), 6);
    ::close(fd);
  }
  for (bool huge : {false, true}) {
    const MappedFile f(path, huge);
    ASSERT_EQ(f.size(), 6u);
    EXPECT_EQ(std::memcmp(f.data(), "qwen35", 6), 0);
    EXPECT_EQ(f.folios().mappable, 0u);
    EXPECT_EQ(f.folios().dropped, 0u);
  }
}

}  // namespace
}  // namespace qwen35
