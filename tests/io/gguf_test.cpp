// GGUF reader and writer: round trips of every metadata type and tensor layout, llama.cpp's
// strict layout rules for what we write, split models, hostile headers built byte by byte, and a
// randomized mutation run. A broken file must give a qwen35::Error naming the key or tensor,
// never a crash or a huge allocation.
#include "io/gguf.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "io/gguf_writer.h"
#include "support/test_data.h"

namespace qwen35 {
namespace {

using ::testing::HasSubstr;

std::unique_ptr<GgufFile> parse(const std::vector<uint8_t>& b) { return GgufFile::from_bytes(b, "test.gguf"); }

std::string parse_error(const std::vector<uint8_t>& b) {
  try {
    parse(b);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// Builders for raw headers.
void put_u32(std::vector<uint8_t>& b, uint32_t v) { b.insert(b.end(), (uint8_t*)&v, (uint8_t*)&v + 4); }
void put_u64(std::vector<uint8_t>& b, uint64_t v) { b.insert(b.end(), (uint8_t*)&v, (uint8_t*)&v + 8); }
void put_str(std::vector<uint8_t>& b, const std::string& s) {
  put_u64(b, s.size());
  b.insert(b.end(), s.begin(), s.end());
}
std::vector<uint8_t> head(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
  std::vector<uint8_t> b = {'G', 'G', 'U', 'F'};
  put_u32(b, version);
  put_u64(b, n_tensors);
  put_u64(b, n_kv);
  return b;
}
// One tensor info.
void put_info(std::vector<uint8_t>& b, const std::string& name, std::vector<uint64_t> ne, uint32_t type,
              uint64_t offset) {
  put_str(b, name);
  put_u32(b, uint32_t(ne.size()));
  for (uint64_t x : ne) put_u64(b, x);
  put_u32(b, type);
  put_u64(b, offset);
}
void pad_to(std::vector<uint8_t>& b, size_t a) { b.resize((b.size() + a - 1) / a * a, 0); }

// A small file with every metadata type and a few tensors of several types.
GgufWriter sample_writer() {
  GgufWriter w;
  w.set_string("general.architecture", "qwen35");
  w.set_u8("t.u8", 200);
  w.set_u16("t.u16", 60000);
  w.set_u32("t.u32", 4000000000u);
  w.set_i32("t.i32", -7);
  w.set_u64("t.u64", 1ull << 40);
  w.set_i64("t.i64", -(1ll << 40));
  w.set_f32("t.f32", 1.5f);
  w.set_f64("t.f64", -2.25);
  w.set_bool("t.bool", true);
  w.set_array_i32("t.arr_i32", {11, 11, 10, 0});
  w.set_array_f32("t.arr_f32", {0.5f, 0.25f});
  w.set_array_bool("t.arr_bool", {false, true, false});
  w.set_array_strings("t.arr_str", {"a", "", "Ġthe", "<|im_end|>"});
  std::vector<float> m(3 * 8);
  for (size_t i = 0; i < m.size(); ++i) m[i] = float(i) - 4.0f;
  w.add_tensor_bytes("mat", DType::F32, Shape{3, 8}, m.data(), m.size() * 4);
  std::vector<uint16_t> h(5, 0x3c00);  // f16 ones
  w.add_tensor_bytes("vec_f16", DType::F16, Shape{5}, h.data(), h.size() * 2);
  std::vector<uint8_t> q(2 * 34, 1);  // two Q8_0 rows of 32
  w.add_tensor_bytes("q8", DType::Q8_0, Shape{2, 32}, q.data(), q.size());
  return w;
}

TEST(Gguf, RoundTripsEveryMetadataType) {
  const std::vector<uint8_t> bytes = sample_writer().to_bytes();
  auto f = parse(bytes);
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(f->get_string("general.architecture"), "qwen35");
  EXPECT_EQ(f->get_int("t.u8"), 200);
  EXPECT_EQ(f->get_int("t.u16"), 60000);
  EXPECT_EQ(f->get_int("t.u32"), 4000000000ll);
  EXPECT_EQ(f->get_int("t.i32"), -7);
  EXPECT_EQ(f->get_int("t.u64"), 1ll << 40);
  EXPECT_EQ(f->get_int("t.i64"), -(1ll << 40));
  EXPECT_EQ(f->get_float("t.f32"), 1.5);
  EXPECT_EQ(f->get_float("t.f64"), -2.25);
  EXPECT_EQ(f->get_bool_opt("t.bool"), true);
  const GgufValue& a = f->get_array("t.arr_i32");
  EXPECT_EQ(a.elem_type, GgufType::kI32);
  ASSERT_EQ(a.count, 4u);
  EXPECT_EQ(a.int_at(2), 10);
  EXPECT_EQ(f->get_array("t.arr_f32").float_at(1), 0.25);
  EXPECT_EQ(f->get_array("t.arr_bool").int_at(1), 1);
  const GgufValue& s = f->get_array("t.arr_str");
  ASSERT_EQ(s.count, 4u);
  EXPECT_EQ(s.string_at(1), "");
  EXPECT_EQ(s.string_at(2), "Ġthe");
  // Metadata keeps file order.
  EXPECT_EQ(f->metadata().front().first, "general.architecture");
  EXPECT_EQ(f->metadata().back().first, "t.arr_str");
  // Wrong-type access names the key.
  try {
    f->get_string("t.u8");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("'t.u8' must be a string"));
  }
  EXPECT_FALSE(f->get_int_opt("absent").has_value());
}

TEST(Gguf, TensorsAreViewsInLlamaCppLayout) {
  const std::vector<uint8_t> bytes = sample_writer().to_bytes();
  auto f = parse(bytes);
  ASSERT_EQ(f->tensors().size(), 3u);
  const GgufTensor& m = f->get_tensor("mat");
  EXPECT_EQ(m.n_dims, 2);
  EXPECT_EQ(m.ne[0], 8);  // ggml order: columns first
  EXPECT_EQ(m.ne[1], 3);
  EXPECT_EQ(m.shape(), (Shape{3, 8}));
  const TensorView v = m.view();
  EXPECT_EQ(v.dtype, DType::F32);
  EXPECT_EQ(v.as<float>()[9], 5.0f);
  // llama.cpp's reader: offsets are the running sum of 32-byte padded sizes in info order, and the
  // data section starts at a multiple of 32.
  uint64_t expect = 0;
  for (const GgufTensor& t : f->tensors()) {
    EXPECT_EQ(t.offset, expect) << t.name;
    EXPECT_EQ((t.data - f->tensors()[0].data) % 32, 0) << t.name;
    expect += (t.nbytes + 31) / 32 * 32;
  }
  EXPECT_EQ((f->tensors()[0].data - bytes.data()) % 32, 0);
  EXPECT_EQ(f->tensors()[1].file_offset, uint64_t(f->tensors()[1].data - bytes.data()));
  EXPECT_EQ(bytes.size() % 32, 0u);
  EXPECT_EQ(f->get_tensor("q8").dtype, DType::Q8_0);
  EXPECT_EQ(f->get_tensor("q8").nbytes, 68u);
}

TEST(Gguf, WriterRejectsBadTensors) {
  GgufWriter w;
  float x[32] = {};
  EXPECT_THROW(w.add_tensor_bytes("q", DType::Q8_0, Shape{1, 16}, x, 17), Error);  // not a block multiple
  w.add_tensor_bytes("a", DType::F32, Shape{4}, x, 16);
  EXPECT_THROW(w.add_tensor_bytes("a", DType::F32, Shape{4}, x, 16), Error);
  EXPECT_THROW(w.add_tensor_bytes(std::string(64, 'n'), DType::F32, Shape{4}, x, 16), Error);
  w.set_u32("k", 1);
  EXPECT_THROW(w.set_u32("k", 2), Error);
}

TEST(Gguf, WritesFilesAtomically) {
  const std::string dir = test::temp_dir("gguf_write");
  GgufWriter w = sample_writer();
  w.add_tensor("boom", DType::F32, Shape{4}, [](uint8_t*) { throw Error("fill failed"); });
  EXPECT_THROW(w.write(dir + "/x.gguf"), Error);
  EXPECT_FALSE(std::filesystem::exists(dir + "/x.gguf"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/x.gguf.part"));
  sample_writer().write(dir + "/y.gguf");
  EXPECT_TRUE(is_gguf_file(dir + "/y.gguf"));
  auto f = GgufFile::open(dir + "/y.gguf");
  EXPECT_EQ(f->tensors().size(), 3u);
  EXPECT_EQ(f->file_bytes(), std::filesystem::file_size(dir + "/y.gguf"));
  EXPECT_FALSE(is_gguf_file(dir));
  std::filesystem::remove_all(dir);
}

TEST(Gguf, OpensSplitModelsFromAnyPart) {
  const std::string dir = test::temp_dir("gguf_split");
  for (int k = 0; k < 3; ++k) {
    GgufWriter w;
    if (k == 0) w.set_string("general.architecture", "qwen35");
    w.set_u16("split.no", uint16_t(k));
    w.set_u16("split.count", 3);
    w.set_i32("split.tensors.count", 3);
    float v[4] = {float(k), 1, 2, 3};
    w.add_tensor_bytes("t" + std::to_string(k), DType::F32, Shape{4}, v, sizeof v);
    w.write(dir + "/m-0000" + std::to_string(k + 1) + "-of-00003.gguf");
  }
  for (const char* part : {"/m-00001-of-00003.gguf", "/m-00003-of-00003.gguf"}) {
    auto f = GgufFile::open(dir + part);
    EXPECT_EQ(f->part_paths().size(), 3u);
    EXPECT_EQ(f->get_string("general.architecture"), "qwen35");
    ASSERT_NE(f->find_tensor("t2"), nullptr);
    EXPECT_EQ(f->get_tensor("t2").view().as<float>()[0], 2.0f);
    EXPECT_EQ(f->get_tensor("t2").part, 2);
  }
  std::filesystem::remove(dir + "/m-00002-of-00003.gguf");
  EXPECT_THROW(GgufFile::open(dir + "/m-00001-of-00003.gguf"), Error);
  std::filesystem::remove_all(dir);
}

TEST(Gguf, HostileHeadersNameTheProblem) {
  // Magic and version.
  std::vector<uint8_t> b = head(0, 0);
  b[0] = 'X';
  EXPECT_THAT(parse_error(b), HasSubstr("magic"));
  EXPECT_THAT(parse_error(head(0, 0, 1)), HasSubstr("version 1"));
  EXPECT_THAT(parse_error(head(0, 0, 4)), HasSubstr("version 4"));
  EXPECT_THAT(parse_error(head(0, 0, 0x03000000)), HasSubstr("byte-swapped"));
  EXPECT_NO_THROW(parse(head(0, 0, 2)));
  // Lying counts: no allocation from them.
  EXPECT_THAT(parse_error(head(0, 1ull << 60)), HasSubstr("key/value count"));
  EXPECT_THAT(parse_error(head(~0ull, 0)), HasSubstr("tensor count"));
  // A key whose length runs past the end.
  b = head(0, 1);
  put_u64(b, 1ull << 50);
  b.resize(b.size() + 20, 'k');
  EXPECT_THAT(parse_error(b), HasSubstr("lying length"));
  // Empty and duplicate keys, unknown value types, arrays of arrays, huge arrays.
  b = head(0, 1);
  put_str(b, "");
  put_u32(b, 4);
  put_u32(b, 1);
  EXPECT_THAT(parse_error(b), HasSubstr("empty key"));
  b = head(0, 2);
  for (int i = 0; i < 2; ++i) put_str(b, "a"), put_u32(b, 4), put_u32(b, 1);
  EXPECT_THAT(parse_error(b), HasSubstr("'a' appears twice"));
  b = head(0, 1);
  put_str(b, "weird");
  put_u32(b, 13);
  put_u32(b, 0);
  EXPECT_THAT(parse_error(b), HasSubstr("'weird' has unknown value type 13"));
  b = head(0, 1);
  put_str(b, "nested");
  put_u32(b, 9);
  put_u32(b, 9);
  put_u64(b, 1);
  EXPECT_THAT(parse_error(b), HasSubstr("'nested' is an array of arrays"));
  b = head(0, 1);
  put_str(b, "tokens");
  put_u32(b, 9);
  put_u32(b, 8);
  put_u64(b, 1ull << 40);
  b.resize(b.size() + 64, 0);
  EXPECT_THAT(parse_error(b), HasSubstr("'tokens' claims 1099511627776 strings"));
  b = head(0, 1);
  put_str(b, "floats");
  put_u32(b, 9);
  put_u32(b, 6);
  put_u64(b, 1ull << 62);
  EXPECT_THAT(parse_error(b), HasSubstr("'floats' claims"));
  // Alignment.
  b = head(0, 1);
  put_str(b, "general.alignment");
  put_u32(b, 4);
  put_u32(b, 24);
  EXPECT_THAT(parse_error(b), HasSubstr("not a power of two"));
  b = head(0, 1);
  put_str(b, "general.alignment");
  put_u32(b, 5);
  put_u32(b, 32);
  EXPECT_THAT(parse_error(b), HasSubstr("general.alignment must be a u32"));
}

TEST(Gguf, HostileTensorInfosNameTheTensor) {
  auto one = [](const std::string& name, std::vector<uint64_t> ne, uint32_t type, uint64_t offset, size_t data) {
    std::vector<uint8_t> b = head(1, 0);
    put_info(b, name, std::move(ne), type, offset);
    pad_to(b, 32);
    b.resize(b.size() + data, 0);
    return b;
  };
  EXPECT_NO_THROW(parse(one("ok", {8, 2}, 0, 0, 64)));
  EXPECT_THAT(parse_error(one("ok", {8, 2}, 0, 0, 63)), HasSubstr("tensor 'ok' (64 bytes at data offset 0) runs past"));
  EXPECT_THAT(parse_error(one("far", {8}, 0, 1ull << 60, 64)), HasSubstr("'far'"));
  EXPECT_THAT(parse_error(one("mis", {8}, 0, 16, 64)), HasSubstr("'mis' has offset 16, not a multiple"));
  EXPECT_THAT(parse_error(one("neg", {~0ull}, 0, 0, 64)), HasSubstr("'neg' has a negative dimension"));
  EXPECT_THAT(parse_error(one("big", {1ull << 40, 1ull << 40}, 0, 0, 64)), HasSubstr("'big' has a shape whose size overflows"));
  EXPECT_THAT(parse_error(one("dims", {1, 1, 1, 1, 1}, 0, 0, 64)), HasSubstr("'dims' has 5 dimensions"));
  EXPECT_THAT(parse_error(one("ty", {8}, 99, 0, 64)), HasSubstr("'ty' has unknown ggml type 99"));
  EXPECT_THAT(parse_error(one("ty", {8}, 4, 0, 64)), HasSubstr("unknown ggml type 4"));  // removed Q4_2
  EXPECT_THAT(parse_error(one("blk", {48}, 8, 0, 64)), HasSubstr("'blk' of type Q8_0 has 48 elements per row"));
  EXPECT_THAT(parse_error(one(std::string(64, 'n'), {8}, 0, 0, 64)), HasSubstr("name of 64 bytes"));
  // A type the reader knows but qwen35 has no kernels for opens, and fails when used.
  auto f = parse(one("iq2", {256}, 16, 0, 96));
  EXPECT_FALSE(f->get_tensor("iq2").dtype.has_value());
  try {
    f->get_tensor("iq2").view();
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("tensor 'iq2' has ggml type IQ2_XXS"));
  }
  // Two tensors: overlap, duplicate name.
  std::vector<uint8_t> b = head(2, 0);
  put_info(b, "x", {16}, 0, 0);
  put_info(b, "y", {16}, 0, 32);
  pad_to(b, 32);
  b.resize(b.size() + 128, 0);
  EXPECT_THAT(parse_error(b), HasSubstr("tensors 'x' and 'y' overlap"));
  b = head(2, 0);
  put_info(b, "x", {8}, 0, 0);
  put_info(b, "x", {8}, 0, 32);
  pad_to(b, 32);
  b.resize(b.size() + 64, 0);
  EXPECT_THAT(parse_error(b), HasSubstr("'x' appears twice"));
}

TEST(Gguf, HonoursGeneralAlignment) {
  // A version-2 file with general.alignment 64: the data section and offsets follow it.
  std::vector<uint8_t> b = head(2, 1, 2);
  put_str(b, "general.alignment");
  put_u32(b, 4);
  put_u32(b, 64);
  put_info(b, "a", {4}, 0, 0);
  put_info(b, "b", {4}, 0, 64);
  pad_to(b, 64);
  const size_t data = b.size();
  b.resize(data + 128, 0);
  const float one = 1.0f, two = 2.0f;
  std::memcpy(&b[data], &one, 4);
  std::memcpy(&b[data + 64], &two, 4);
  auto f = parse(b);
  EXPECT_EQ(f->version(), 2u);
  EXPECT_EQ(f->alignment(), 64u);
  EXPECT_EQ(f->get_tensor("b").file_offset, data + 64);
  EXPECT_EQ(f->get_tensor("b").view().as<float>()[0], 2.0f);
  EXPECT_EQ(f->get_tensor("a").view().as<float>()[0], 1.0f);
  // With alignment 64 an offset of 32 is misaligned.
  b = head(1, 1);
  put_str(b, "general.alignment");
  put_u32(b, 4);
  put_u32(b, 64);
  put_info(b, "c", {4}, 0, 32);
  pad_to(b, 64);
  b.resize(b.size() + 128, 0);
  EXPECT_THAT(parse_error(b), HasSubstr("'c' has offset 32, not a multiple of the alignment 64"));
}

// Reads everything a parsed file exposes, so a bad view would be touched (and caught by ASan in a
// sanitizer build).
uint64_t touch_all(const GgufFile& f) {
  uint64_t h = 0;
  for (const auto& [k, v] : f.metadata()) {
    h += k.size();
    if (v.elem_type == GgufType::kString)
      for (std::string_view s : v.strings) h += s.empty() ? 0 : uint8_t(s.back());
    else
      for (uint64_t i = 0; i < v.count; ++i) h += uint64_t(v.float_at(i) != 0);
  }
  for (const GgufTensor& t : f.tensors())
    for (uint64_t i = 0; i < t.nbytes; i += 7) h += t.data[i];
  return h;
}

// Random mutations of a valid file: byte flips, overwritten 8-byte fields with hostile numbers,
// truncations and insertions. Each must parse or throw qwen35::Error.
TEST(Gguf, RandomMutationsNeverCrash) {
  const std::vector<uint8_t> good = sample_writer().to_bytes();
  std::mt19937_64 rng(20260301);
  const uint64_t hostile[] = {0, 1, 31, 32, 63, 64, 255, 1ull << 31, 1ull << 32, 1ull << 62, ~0ull, ~0ull >> 1};
  const int kIterations = 20000;
  int parsed = 0, rejected = 0;
  for (int it = 0; it < kIterations; ++it) {
    std::vector<uint8_t> b = good;
    const int edits = 1 + int(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      const size_t pos = size_t(rng() % b.size());
      switch (rng() % 5) {
        case 0: b[pos] ^= uint8_t(1u << (rng() % 8)); break;
        case 1: b[pos] = uint8_t(rng()); break;
        case 2: {
          const uint64_t v = hostile[rng() % std::size(hostile)];
          if (pos + 8 <= b.size()) std::memcpy(&b[pos], &v, 8);
          break;
        }
        case 3: b.resize(pos); break;
        case 4: b.insert(b.begin() + std::ptrdiff_t(pos), size_t(1 + rng() % 9), uint8_t(rng())); break;
      }
      if (b.empty()) break;
    }
    try {
      auto f = parse(b);
      touch_all(*f);
      ++parsed;
    } catch (const Error&) {
      ++rejected;
    }
  }
  EXPECT_EQ(parsed + rejected, kIterations);
  EXPECT_GT(rejected, kIterations / 4);  // the mutations do hit the checks
  EXPECT_GT(parsed, 0);                  // and some leave a valid file (e.g. a changed value byte)
}

}  // namespace
}  // namespace qwen35
