// Checkpoint folders: the sharded form (model-0000x-of-0000y.safetensors + index, as the real 9B
// ships) must give the same tensors as the single file, and a hostile index must give a clear
// qwen35::Error, never a file outside the folder or a crash.
#include "io/checkpoint.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "support/test_data.h"

namespace qwen35 {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using json = nlohmann::json;

std::string shard_name(int i, int n) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "model-%05d-of-%05d.safetensors", i + 1, n);
  return buf;
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  ASSERT_TRUE(out.good()) << path;
}

void add_view(SafetensorsWriter& w, const std::string& name, const TensorView& v) {
  w.add(name, v.dtype, v.shape, v.data, v.nbytes);
}

// Small tensors for the hostile-index cases.
void write_small(const std::string& path, const std::vector<std::pair<std::string, float>>& tensors) {
  SafetensorsWriter w;
  for (const auto& [name, value] : tensors) {
    float data[2] = {value, value};
    w.add_f32(name, Shape{2}, data);
  }
  w.write(path);
}

json index_of(const std::map<std::string, std::string>& weight_map) {
  return {{"metadata", {{"total_size", 0}}}, {"weight_map", weight_map}};
}

class CheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = test::temp_dir("checkpoint"); }
  void TearDown() override { fs::remove_all(dir_); }

  // The tiny model split round-robin into n shards plus the index; returns the weight map.
  std::map<std::string, std::string> write_sharded_tiny(int n) {
    SafetensorsFile single(test::tiny_model_dir() + "/model.safetensors");
    std::vector<SafetensorsWriter> writers(static_cast<size_t>(n));
    std::map<std::string, std::string> weight_map;
    int i = 0;
    for (const auto& [name, view] : single.tensors()) {
      add_view(writers[size_t(i % n)], name, view);
      weight_map[name] = shard_name(i % n, n);
      ++i;
    }
    for (int s = 0; s < n; ++s) writers[size_t(s)].write(dir_ + "/" + shard_name(s, n));
    write_text(dir_ + "/model.safetensors.index.json", index_of(weight_map).dump(2));
    return weight_map;
  }

  // The message of the qwen35::Error that Checkpoint::open(dir_) raises.
  std::string open_error(const std::string& dir) {
    try {
      Checkpoint::open(dir);
    } catch (const Error& e) {
      return e.what();
    }
    ADD_FAILURE() << "Checkpoint::open(" << dir << ") did not throw";
    return "";
  }
  std::string open_error() { return open_error(dir_); }

  void write_index(const json& index) { write_text(dir_ + "/model.safetensors.index.json", index.dump()); }

  std::string dir_;
};

TEST_F(CheckpointTest, SingleFileTinyModel) {
  auto ck = Checkpoint::open(test::tiny_model_dir());
  SafetensorsFile single(test::tiny_model_dir() + "/model.safetensors");
  EXPECT_EQ(ck->names().size(), single.tensors().size());
  EXPECT_NE(ck->find("model.language_model.embed_tokens.weight"), nullptr);
  EXPECT_EQ(ck->find("lm_head.weight"), nullptr);
  try {
    ck->get("lm_head.weight");
    ADD_FAILURE() << "get of a missing tensor did not throw";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("missing tensor 'lm_head.weight'"));
    EXPECT_THAT(e.what(), HasSubstr(test::tiny_model_dir()));
  }
}

TEST_F(CheckpointTest, ShardedTinyModelMatchesTheSingleFile) {
  const auto weight_map = write_sharded_tiny(3);
  auto ck = Checkpoint::open(dir_);
  SafetensorsFile single(test::tiny_model_dir() + "/model.safetensors");

  std::set<std::string> shards;
  for (const auto& [name, file] : weight_map) shards.insert(file);
  EXPECT_EQ(shards.size(), 3u);
  size_t total = 0;
  for (const auto& [name, want] : single.tensors()) {
    const TensorView* got = ck->find(name);
    ASSERT_NE(got, nullptr) << name;
    EXPECT_EQ(got->dtype, want.dtype) << name;
    EXPECT_EQ(got->shape, want.shape) << name;
    ASSERT_EQ(got->nbytes, want.nbytes) << name;
    EXPECT_EQ(std::memcmp(got->data, want.data, want.nbytes), 0) << name;
    EXPECT_NE(got->data, want.data) << name << " should come from a shard";
    total += want.nbytes;
  }
  const std::vector<std::string> names = ck->names();
  EXPECT_EQ(names.size(), single.tensors().size());
  EXPECT_EQ(ck->total_bytes(), total);
}

TEST_F(CheckpointTest, TheIndexWinsOverASingleFileAndOverStrayCopies) {
  // Both forms present: the index is used, and a tensor a shard holds but the index assigns to
  // another shard is taken from the shard the index names.
  write_small(dir_ + "/model.safetensors", {{"ignored", 9.0f}});
  write_small(dir_ + "/a.safetensors", {{"x", 1.0f}, {"y", 1.0f}});
  write_small(dir_ + "/b.safetensors", {{"y", 2.0f}});
  write_index(index_of({{"x", "a.safetensors"}, {"y", "b.safetensors"}}));
  auto ck = Checkpoint::open(dir_);
  EXPECT_EQ(ck->names(), (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(ck->get("y").as<float>()[0], 2.0f);
  EXPECT_EQ(ck->find("ignored"), nullptr);
}

TEST_F(CheckpointTest, ShardNamesOutsideTheFolderAreRejected) {
  // A real safetensors file one level up, which a path-following index would reach.
  const std::string inner = dir_ + "/model";
  fs::create_directories(inner + "/sub");
  write_small(dir_ + "/outside.safetensors", {{"x", 1.0f}});
  write_small(inner + "/sub/inside.safetensors", {{"x", 1.0f}});
  for (const std::string& bad : std::vector<std::string>{"../outside.safetensors", dir_ + "/outside.safetensors", "sub/inside.safetensors",
                                 "..", ".", "", "sub\\inside.safetensors"}) {
    write_text(inner + "/model.safetensors.index.json", index_of({{"x", bad}}).dump());
    EXPECT_THAT(open_error(inner), HasSubstr("weight_map names an invalid shard file '" + bad + "'")) << bad;
  }
}

TEST_F(CheckpointTest, ShardFileMissing) {
  write_small(dir_ + "/a.safetensors", {{"x", 1.0f}});
  write_index(index_of({{"x", "a.safetensors"}, {"y", "model-00002-of-00002.safetensors"}}));
  EXPECT_THAT(open_error(), HasSubstr("cannot open " + dir_ + "/model-00002-of-00002.safetensors"));
}

TEST_F(CheckpointTest, ShardIsBrokenOrADirectory) {
  write_text(dir_ + "/a.safetensors", "garbage");
  write_index(index_of({{"x", "a.safetensors"}}));
  EXPECT_THAT(open_error(), HasSubstr(dir_ + "/a.safetensors: not a valid safetensors file"));
  fs::remove(dir_ + "/a.safetensors");
  fs::create_directory(dir_ + "/a.safetensors");
  EXPECT_THAT(open_error(), HasSubstr("a.safetensors is not a regular file"));
}

TEST_F(CheckpointTest, IndexListsATensorTheShardLacks) {
  write_small(dir_ + "/a.safetensors", {{"x", 1.0f}});
  write_small(dir_ + "/b.safetensors", {{"y", 1.0f}});
  write_index(index_of({{"x", "a.safetensors"}, {"y", "a.safetensors"}, {"z", "b.safetensors"}}));
  const std::string msg = open_error();
  EXPECT_THAT(msg, HasSubstr("model.safetensors.index.json lists tensor 'y' in a.safetensors but that shard does not contain it"));
}

TEST_F(CheckpointTest, SameTensorTwiceInTheIndex) {
  // A JSON object can only name a tensor twice through a duplicate key: ambiguous, so rejected.
  write_small(dir_ + "/a.safetensors", {{"x", 1.0f}});
  write_small(dir_ + "/b.safetensors", {{"x", 2.0f}});
  write_text(dir_ + "/model.safetensors.index.json",
             R"({"weight_map": {"x": "a.safetensors", "x": "b.safetensors"}})");
  EXPECT_THAT(open_error(), HasSubstr("weight_map lists tensor 'x' more than once"));
}

TEST_F(CheckpointTest, IndexIsNotValid) {
  write_small(dir_ + "/a.safetensors", {{"x", 1.0f}});
  write_text(dir_ + "/model.safetensors.index.json", "{\"weight_map\": {\"x\": ");
  EXPECT_THAT(open_error(), HasSubstr("model.safetensors.index.json: not valid JSON"));
  write_text(dir_ + "/model.safetensors.index.json", "");
  EXPECT_THAT(open_error(), HasSubstr("not valid JSON"));
  write_index(json::array({1, 2}));
  EXPECT_THAT(open_error(), HasSubstr("expected an object with a \"weight_map\" object"));
  write_index(json{{"metadata", json::object()}});
  EXPECT_THAT(open_error(), HasSubstr("expected an object with a \"weight_map\" object"));
  write_index(json{{"weight_map", json::array({"a.safetensors"})}});
  EXPECT_THAT(open_error(), HasSubstr("expected an object with a \"weight_map\" object"));
  write_index(json{{"weight_map", {{"x", 7}}}});
  EXPECT_THAT(open_error(), HasSubstr("weight_map entry 'x' is not a file name"));
  write_index(json{{"weight_map", json::object()}});
  EXPECT_THAT(open_error(), HasSubstr("weight_map is empty"));
}

TEST_F(CheckpointTest, FolderWithoutWeightsOrMissing) {
  EXPECT_THAT(open_error(), HasSubstr("model folder " + dir_ + " has neither model.safetensors nor model.safetensors.index.json"));
  EXPECT_THAT(open_error(dir_ + "/nope"), HasSubstr("model folder " + dir_ + "/nope does not exist or is not a directory"));
  write_text(dir_ + "/file", "x");
  EXPECT_THAT(open_error(dir_ + "/file"), HasSubstr("does not exist or is not a directory"));
  EXPECT_THAT(open_error(dir_ + "/file/sub"), HasSubstr("does not exist or is not a directory"));
  // A name the OS refuses (ENAMETOOLONG) is still a qwen35::Error, not a filesystem_error.
  EXPECT_THAT(open_error(dir_ + "/" + std::string(300, 'a')), HasSubstr("is not a directory"));
}

}  // namespace
}  // namespace qwen35
