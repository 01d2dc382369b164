// The prepared-weights cache: a second load maps what the first wrote and computes the same bits;
// another --weights value or kernel table gets its own file (replacing the older one of the same
// sources), and a damaged or foreign file is never used.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/thread_pool.h"
#include "decoder_harness.h"
#include "model/model.h"
#include "model/weight_cache.h"
#include "support/test_data.h"

namespace qwen35::test {
namespace {

namespace fs = std::filesystem;

struct Loaded {
  std::unique_ptr<Model> model;
  std::vector<std::string> notices;
};

Loaded load(const std::string& cache, const std::string& weights, const kernels::KernelTable* table = nullptr) {
  static ThreadPool pool(2);
  Loaded l;
  ModelLoadOptions o;
  o.weights = weights;
  o.pool = &pool;
  o.table = table;
  o.weights_cache_dir = cache;
  o.on_notice = [&](const std::string& s) { l.notices.push_back(s); };
  l.model = Model::load(tiny_model_dir(), o);
  return l;
}

bool said(const Loaded& l, const std::string& what) {
  for (const std::string& n : l.notices)
    if (n.find(what) != std::string::npos) return true;
  return false;
}

std::vector<float> logits(const Model& m) {
  const std::vector<int64_t> ids = {5, 17, 300, 2, 999, 41, 7};
  DecoderState state = DecoderState::create(m.config().text);
  return run_tokens(m, ids, state, 3).logits;
}

std::vector<fs::path> cache_files(const std::string& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path());
  return out;
}

TEST(WeightCache, SecondLoadMapsTheFirstOnesPreparationBitForBit) {
  const std::string dir = temp_dir("weight-cache");
  const std::vector<float> plain = logits(*load("", "q8_0").model);
  const Loaded first = load(dir, "q8_0");
  EXPECT_TRUE(said(first, "wrote")) << "the first load writes the cache";
  const Loaded second = load(dir, "q8_0");
  EXPECT_TRUE(said(second, "mapped")) << "the second load maps it";
  const std::vector<float> a = logits(*first.model), b = logits(*second.model);
  ASSERT_EQ(a.size(), plain.size());
  EXPECT_EQ(0, std::memcmp(a.data(), plain.data(), a.size() * sizeof(float)));
  EXPECT_EQ(0, std::memcmp(b.data(), plain.data(), b.size() * sizeof(float)));
  EXPECT_EQ(second.model->weight_bytes(), first.model->weight_bytes());
  ASSERT_EQ(cache_files(dir).size(), 1u);

  // Another preset: its own file, which replaces the older one of the same model files.
  const Loaded other = load(dir, "q4_0");
  EXPECT_TRUE(said(other, "wrote"));
  EXPECT_EQ(cache_files(dir).size(), 1u);
  const Loaded other_again = load(dir, "q4_0");
  EXPECT_TRUE(said(other_again, "mapped"));
  // Another table: not the same packed layouts, so not the same file.
  const kernels::KernelTable& ref = kernels::ref_table();
  if (&ref != &kernels::active_table()) {
    const Loaded r = load(dir, "q4_0", &ref);
    EXPECT_FALSE(said(r, "mapped"));
  }
}

TEST(WeightCache, DamagedOrForeignFilesAreIgnored) {
  const std::string dir = temp_dir("weight-cache-bad");
  const std::vector<float> plain = logits(*load("", "q8_0").model);
  load(dir, "q8_0");
  const std::vector<fs::path> files = cache_files(dir);
  ASSERT_EQ(files.size(), 1u);
  // Truncated: ignored, the weights prepared again and the file rewritten.
  fs::resize_file(files[0], fs::file_size(files[0]) / 2);
  const Loaded t = load(dir, "q8_0");
  EXPECT_FALSE(said(t, "mapped"));
  EXPECT_TRUE(said(t, "wrote"));
  const std::vector<float> a = logits(*t.model);
  EXPECT_EQ(0, std::memcmp(a.data(), plain.data(), a.size() * sizeof(float)));
  // Garbage with the right name: ignored too.
  {
    std::ofstream out(files[0], std::ios::binary | std::ios::trunc);
    out << "qwen35-weights3" << std::string(100, '\xff');
  }
  EXPECT_FALSE(said(load(dir, "q8_0"), "mapped"));
  // A key for other sources finds nothing.
  std::unique_ptr<MappedFile> mapping;
  EXPECT_FALSE(load_weight_cache(files[0].string(), "another key", {}, mapping));
}

TEST(WeightCache, ALoadMakesItsFileTheMostRecentlyUsed) {
  const std::string dir = temp_dir("weight-cache-lru");
  load(dir, "q8_0");
  const std::vector<fs::path> files = cache_files(dir);
  ASSERT_EQ(files.size(), 1u);
  const auto old_time = fs::file_time_type::clock::now() - std::chrono::hours(24 * 30);
  fs::last_write_time(files[0], old_time);
  EXPECT_TRUE(said(load(dir, "q8_0"), "mapped"));
  EXPECT_GT(fs::last_write_time(files[0]), old_time + std::chrono::hours(24));
}

constexpr uint64_t GiB = uint64_t(1) << 30;

TEST(WeightCache, RemovesTheLeastRecentlyUsedOthersOnlyAsFarAsNeeded) {
  const std::vector<CacheFileInfo> others = {{"a", 5 * GiB, 30}, {"b", 3 * GiB, 10}, {"c", 4 * GiB, 20}};
  using List = std::vector<std::string>;
  // Room enough: nothing goes.
  EXPECT_EQ(weight_cache_evictions(others, 1 * GiB, 4 * GiB, 2 * GiB), List{});
  EXPECT_EQ(weight_cache_evictions(others, 2 * GiB, 4 * GiB, 2 * GiB), List{});
  // 6 GiB more with 2 GiB kept free of 4: the oldest (b), then the next (c), not a.
  EXPECT_EQ(weight_cache_evictions(others, 6 * GiB, 4 * GiB, 2 * GiB), (List{"b", "c"}));
  EXPECT_EQ(weight_cache_evictions(others, 5 * GiB, 4 * GiB, 2 * GiB), (List{"b"}));
  // Below the floor already: files go even for a small write.
  EXPECT_EQ(weight_cache_evictions(others, 1, 1 * GiB, 2 * GiB), (List{"b"}));
  // Not even all of them would make room: nothing is removed, nothing written.
  EXPECT_EQ(weight_cache_evictions(others, 14 * GiB, 4 * GiB, 2 * GiB), (List{"b", "c", "a"}));
  EXPECT_EQ(weight_cache_evictions(others, 15 * GiB, 4 * GiB, 2 * GiB), std::nullopt);
  EXPECT_EQ(weight_cache_evictions({}, 3 * GiB, 4 * GiB, 2 * GiB), std::nullopt);
}

TEST(WeightCache, KeepsTwoGiBOrATwentiethOfTheFileSystemFree) {
  EXPECT_EQ(weight_cache_free_floor(10 * GiB), 2 * GiB);
  EXPECT_EQ(weight_cache_free_floor(1024 * GiB), 1024 * GiB / 20);
}

}  // namespace
}  // namespace qwen35::test
