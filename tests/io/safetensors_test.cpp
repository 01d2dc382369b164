// safetensors reader: round trips through SafetensorsWriter, then hostile files built byte by
// byte (lying lengths, bad shapes, offsets past the end, overlaps) and a randomized mutation run.
// Every broken file must give a qwen35::Error naming the file and the problem, never a crash.
#include "io/safetensors.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "support/test_data.h"

namespace qwen35 {
namespace {

using ::testing::HasSubstr;
using json = nlohmann::json;

// The 8-byte little-endian length prefix.
std::string u64_le(uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[size_t(i)] = char(uint8_t(v >> (8 * i)));
  return s;
}

// A file whose length prefix may lie: u64(header_len) + header + data.
std::string raw_file(uint64_t header_len, const std::string& header, const std::string& data = "") {
  return u64_le(header_len) + header + data;
}

// A well-formed frame around any header text.
std::string framed_text(const std::string& header, const std::string& data = "") {
  return raw_file(header.size(), header, data);
}

std::string framed(const json& header, const std::string& data = "") { return framed_text(header.dump(), data); }

json entry(const std::string& dtype, json shape, uint64_t begin, uint64_t end) {
  return {{"dtype", dtype}, {"shape", std::move(shape)}, {"data_offsets", {begin, end}}};
}

class SafetensorsTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = test::temp_dir("safetensors"); }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string write(const std::string& bytes, const std::string& name = "t.safetensors") {
    std::string path = dir_ + "/" + name;
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), std::streamsize(bytes.size()));
    EXPECT_TRUE(out.good());
    return path;
  }

  // The message of the qwen35::Error that opening `bytes` raises; it must name the file.
  std::string open_error(const std::string& bytes) {
    std::string path = write(bytes);
    try {
      SafetensorsFile f(path);
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), HasSubstr(path));
      return e.what();
    }
    ADD_FAILURE() << "opening the file did not throw";
    return "";
  }

  std::string dir_;
};

TEST_F(SafetensorsTest, RoundTripsEveryDtypeZeroSizedTensorsAndMetadata) {
  SafetensorsWriter w;
  std::vector<std::vector<uint8_t>> payloads;
  for (size_t i = 0; i < size_t(DType::kCount); ++i) {
    const DTypeInfo& info = dtype_info(DType(i));
    if (info.block_elems != 1) continue;  // block formats are GGUF-only
    std::vector<uint8_t> bytes(dtype_bytes(info.dtype, 6));
    for (size_t b = 0; b < bytes.size(); ++b) bytes[b] = uint8_t(b * 7 + i);
    w.add("t_" + std::string(info.name), info.dtype, Shape{2, 3}, bytes.data(), bytes.size());
  }
  w.add("empty", DType::BF16, Shape{0, 4}, nullptr, 0);
  w.add("empty_middle", DType::F32, Shape{3, 0, 5}, nullptr, 0);
  const float scalar = 2.5f;
  w.add_f32("scalar", Shape{}, &scalar);
  const int64_t ids[3] = {-1, 0, 1ll << 40};
  w.add_i64("ids", Shape{3}, ids);
  w.set_metadata("format", "pt");
  w.set_metadata("note", "hello \"world\"");
  const std::string path = dir_ + "/all.safetensors";
  w.write(path);

  SafetensorsFile f(path);
  EXPECT_EQ(f.path(), path);
  EXPECT_EQ(f.metadata().at("format"), "pt");
  EXPECT_EQ(f.metadata().at("note"), "hello \"world\"");
  EXPECT_EQ(f.metadata().size(), 2u);
  int plain = 0;
  for (size_t i = 0; i < size_t(DType::kCount); ++i) {
    const DTypeInfo& info = dtype_info(DType(i));
    if (info.block_elems != 1) continue;
    ++plain;
    const TensorView& v = f.get("t_" + std::string(info.name));
    EXPECT_EQ(v.dtype, info.dtype);
    EXPECT_EQ(v.shape, (Shape{2, 3}));
    ASSERT_EQ(v.nbytes, dtype_bytes(info.dtype, 6));
    for (size_t b = 0; b < v.nbytes; ++b) ASSERT_EQ(v.as<uint8_t>()[b], uint8_t(b * 7 + i)) << info.name;
  }
  EXPECT_EQ(f.tensors().size(), size_t(plain) + 4);
  EXPECT_EQ(f.get("empty").shape, (Shape{0, 4}));
  EXPECT_EQ(f.get("empty").nbytes, 0u);
  EXPECT_EQ(f.get("empty_middle").shape, (Shape{3, 0, 5}));
  EXPECT_EQ(f.get("scalar").shape.ndim, 0);
  EXPECT_EQ(f.get("scalar").as<float>()[0], 2.5f);
  EXPECT_EQ(f.get("ids").as<int64_t>()[2], 1ll << 40);
  EXPECT_TRUE(f.contains("ids"));
  EXPECT_FALSE(f.contains("nope"));
  try {
    f.get("nope");
    ADD_FAILURE() << "get of a missing tensor did not throw";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("'nope' not found"));
    EXPECT_THAT(e.what(), HasSubstr(path));
  }
}

TEST_F(SafetensorsTest, WriterAlignsEveryTensorToItsElementSize) {
  // Added narrowest first, so written in order each would be misaligned.
  SafetensorsWriter w;
  const uint8_t u8[3] = {1, 2, 3};
  const float f32[3] = {1, 2, 3};
  const uint16_t bf16[3] = {1, 2, 3};
  const int64_t i64[1] = {7};
  w.add("u8", DType::U8, Shape{3}, u8, 3);
  w.add("bf16", DType::BF16, Shape{3}, bf16, 6);
  w.add_f32("f32", Shape{3}, f32);
  w.add_i64("i64", Shape{1}, i64);
  const std::string path = dir_ + "/aligned.safetensors";
  w.write(path);
  SafetensorsFile f(path);
  for (const auto& [name, v] : f.tensors()) {
    EXPECT_EQ(reinterpret_cast<uintptr_t>(v.data) % dtype_info(v.dtype).block_bytes, 0u) << name;
  }
  EXPECT_EQ(f.get("u8").as<uint8_t>()[2], 3);
  EXPECT_EQ(f.get("bf16").as<uint16_t>()[2], 3);
  EXPECT_EQ(f.get("f32").as<float>()[2], 3.0f);
  EXPECT_EQ(f.get("i64").as<int64_t>()[0], 7);
  try {
    w.add("u8", DType::U8, Shape{3}, u8, 3);
    ADD_FAILURE() << "adding a tensor twice did not throw";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("tensor 'u8' added twice"));
  }
}

TEST_F(SafetensorsTest, EmptyHeaderHasNoTensors) {
  SafetensorsFile f(write(framed_text("{}")));
  EXPECT_TRUE(f.tensors().empty());
  // Trailing padding spaces inside the header are valid JSON whitespace.
  SafetensorsFile g(write(framed_text("{}      ")));
  EXPECT_TRUE(g.tensors().empty());
}

TEST_F(SafetensorsTest, FileTooShortForTheLengthPrefix) {
  EXPECT_THAT(open_error(""), HasSubstr("file is 0 bytes, shorter than the 8-byte header length"));
  EXPECT_THAT(open_error(std::string("\x02\0\0\0\0", 5)), HasSubstr("file is 5 bytes"));
}

TEST_F(SafetensorsTest, HeaderLengthLies) {
  EXPECT_THAT(open_error(raw_file(100, "{}")), HasSubstr("header length 100 runs past the end of the file (10 bytes)"));
  EXPECT_THAT(open_error(raw_file(1, "{}")), HasSubstr("header is not JSON"));  // cuts the header short
  EXPECT_THAT(open_error(raw_file(1ull << 63, "{}")), HasSubstr("header length 9223372036854775808 exceeds the limit"));
  EXPECT_THAT(open_error(raw_file(~0ull, "{}")), HasSubstr("exceeds the limit"));
  EXPECT_THAT(open_error(raw_file(0, "")), HasSubstr("header is not JSON"));
}

TEST_F(SafetensorsTest, HeaderIsNotAJsonObject) {
  EXPECT_THAT(open_error(framed_text("hello")), HasSubstr("header is not JSON"));
  EXPECT_THAT(open_error(framed_text("[1, 2]")), HasSubstr("header is not a JSON object"));
  EXPECT_THAT(open_error(framed_text("\"text\"")), HasSubstr("header is not a JSON object"));
  EXPECT_THAT(open_error(framed_text(R"({"a": {"dtype": "F32", "shape": [1)")), HasSubstr("header is not JSON"));
  EXPECT_THAT(open_error(framed_text(std::string("{\"a\"\0:1}", 8))), HasSubstr("header is not JSON"));
}

TEST_F(SafetensorsTest, EntryIsNotAnObjectOrMissesFields) {
  const std::string d(16, 'x');
  EXPECT_THAT(open_error(framed(json{{"a", 5}}, d)), HasSubstr("entry 'a' is not an object"));
  EXPECT_THAT(open_error(framed(json{{"a", {1, 2}}}, d)), HasSubstr("entry 'a' is not an object"));
  json e = entry("F32", {4}, 0, 16);
  e.erase("dtype");
  EXPECT_THAT(open_error(framed(json{{"a", e}}, d)), HasSubstr("tensor 'a' has no string dtype"));
  e = entry("F32", {4}, 0, 16);
  e["dtype"] = 3;
  EXPECT_THAT(open_error(framed(json{{"a", e}}, d)), HasSubstr("tensor 'a' has no string dtype"));
  e = entry("F32", {4}, 0, 16);
  e.erase("shape");
  EXPECT_THAT(open_error(framed(json{{"a", e}}, d)), HasSubstr("tensor 'a' has no shape array"));
  e = entry("F32", {4}, 0, 16);
  e["shape"] = 4;
  EXPECT_THAT(open_error(framed(json{{"a", e}}, d)), HasSubstr("tensor 'a' has no shape array"));
  e = entry("F32", {4}, 0, 16);
  e.erase("data_offsets");
  EXPECT_THAT(open_error(framed(json{{"a", e}}, d)), HasSubstr("tensor 'a' needs data_offsets [begin, end]"));
  e["data_offsets"] = {0, 8, 16};
  EXPECT_THAT(open_error(framed(json{{"a", e}}, d)), HasSubstr("tensor 'a' needs data_offsets [begin, end]"));
  EXPECT_THAT(open_error(framed(json{{"__metadata__", {1, 2}}}, d)), HasSubstr("__metadata__ is not an object"));
}

TEST_F(SafetensorsTest, UnknownDtype) {
  const std::string d(16, 'x');
  EXPECT_THAT(open_error(framed(json{{"w", entry("F8_E4M3", {16}, 0, 16)}}, d)),
              HasSubstr("tensor 'w' has unsupported dtype F8_E4M3"));
  EXPECT_THAT(open_error(framed(json{{"w", entry("f32", {4}, 0, 16)}}, d)), HasSubstr("unsupported dtype f32"));
  // Block formats are not safetensors dtypes.
  EXPECT_THAT(open_error(framed(json{{"w", entry("Q8_0", {16}, 0, 16)}}, d)), HasSubstr("unsupported dtype Q8_0"));
}

TEST_F(SafetensorsTest, BadShapes) {
  const std::string d(16, 'x');
  auto shape_error = [&](json shape) { return open_error(framed(json{{"w", entry("U8", std::move(shape), 0, 16)}}, d)); };
  EXPECT_THAT(shape_error({-1, -16}), HasSubstr("tensor 'w' has a negative or non-integer dimension"));
  EXPECT_THAT(shape_error({4, 2.5}), HasSubstr("tensor 'w' has a negative or non-integer dimension"));
  EXPECT_THAT(shape_error({16.0}), HasSubstr("negative or non-integer dimension"));
  EXPECT_THAT(shape_error({"16"}), HasSubstr("negative or non-integer dimension"));
  EXPECT_THAT(shape_error({1ull << 32, 1ull << 32, 1ull << 32}), HasSubstr("tensor 'w' shape overflows"));
  EXPECT_THAT(shape_error({1ull << 63}), HasSubstr("shape overflows"));
  EXPECT_THAT(shape_error({1, 1, 1, 1, 1, 1, 16}), HasSubstr("tensor 'w' has 7 dimensions (at most 6)"));
  // Beyond 2^64 the JSON number is a float.
  EXPECT_THAT(open_error(framed_text(R"({"w":{"dtype":"U8","shape":[18446744073709551616],"data_offsets":[0,16]}})", d)),
              HasSubstr("negative or non-integer dimension"));
  // A zero dimension must not let the others be anything (they would turn negative as int64).
  EXPECT_THAT(open_error(framed(json{{"w", entry("U8", {0, ~0ull}, 0, 0)}})), HasSubstr("tensor 'w' shape overflows"));
  EXPECT_THAT(open_error(framed(json{{"w", entry("U8", {1ull << 40, 0, 1ull << 40}, 0, 0)}})),
              HasSubstr("shape overflows"));
}

TEST_F(SafetensorsTest, BadDataOffsets) {
  const std::string d(16, 'x');
  EXPECT_THAT(open_error(framed(json{{"w", entry("U8", {0}, 8, 4)}}, d)),
              HasSubstr("tensor 'w' data_offsets begin 8 > end 4"));
  EXPECT_THAT(open_error(framed(json{{"w", entry("F32", {8}, 0, 32)}}, d)),
              HasSubstr("tensor 'w' ends at byte 32 past the data section (16 bytes)"));
  EXPECT_THAT(open_error(framed(json{{"w", entry("U8", {0}, 100, 100)}}, d)), HasSubstr("ends at byte 100 past the data"));
  EXPECT_THAT(open_error(framed(json{{"w", entry("U8", {1}, ~0ull - 1, ~0ull)}}, d)), HasSubstr("past the data section"));
  EXPECT_THAT(open_error(framed(json{{"w", entry("F32", {3}, 0, 16)}}, d)),
              HasSubstr("tensor 'w' of dtype F32 and shape [3] needs 12 bytes but its data_offsets span 16"));
  EXPECT_THAT(open_error(framed(json{{"w", entry("BF16", {2, 2}, 0, 4)}}, d)), HasSubstr("needs 8 bytes"));
  json neg = entry("U8", {4}, 0, 4);
  neg["data_offsets"] = {-4, 0};
  EXPECT_THAT(open_error(framed(json{{"w", neg}}, d)), HasSubstr("tensor 'w' has a non-integer data offset"));
  neg["data_offsets"] = {0, 4.0};
  EXPECT_THAT(open_error(framed(json{{"w", neg}}, d)), HasSubstr("non-integer data offset"));
}

TEST_F(SafetensorsTest, OverlappingTensors) {
  const std::string d(16, 'x');
  EXPECT_THAT(open_error(framed(json{{"a", entry("U8", {8}, 0, 8)}, {"b", entry("U8", {8}, 4, 12)}}, d)),
              HasSubstr("tensors 'a' and 'b' overlap"));
  EXPECT_THAT(open_error(framed(json{{"a", entry("U8", {8}, 0, 8)}, {"b", entry("U8", {8}, 0, 8)}}, d)),
              HasSubstr("overlap"));
  // b sits inside a, with an empty tensor between them in begin order.
  EXPECT_THAT(open_error(framed(json{{"a", entry("U8", {16}, 0, 16)},
                                     {"e", entry("U8", {0}, 4, 4)},
                                     {"b", entry("U8", {2}, 8, 10)}},
                                d)),
              HasSubstr("tensors 'a' and 'b' overlap"));
  // c overlaps a, not its sorted neighbour b.
  EXPECT_THAT(open_error(framed(json{{"a", entry("U8", {16}, 0, 16)},
                                     {"b", entry("U8", {2}, 2, 4)},
                                     {"c", entry("U8", {2}, 8, 10)}},
                                d)),
              HasSubstr("overlap"));
  // Adjacent tensors and empty tensors anywhere inside the data are fine.
  SafetensorsFile f(write(framed(json{{"a", entry("U8", {8}, 0, 8)},
                                      {"b", entry("U8", {8}, 8, 16)},
                                      {"e", entry("U8", {0}, 4, 4)},
                                      {"z", entry("U8", {0}, 16, 16)}},
                                 d),
                          "ok.safetensors"));
  EXPECT_EQ(f.tensors().size(), 4u);
}

TEST_F(SafetensorsTest, TruncatedDataSection) {
  SafetensorsWriter w;
  std::vector<float> a(64, 1.0f), b(64, 2.0f);
  w.add_f32("a", Shape{64}, a.data());
  w.add_f32("b", Shape{8, 8}, b.data());
  const std::string path = dir_ + "/full.safetensors";
  w.write(path);
  std::string bytes = test::read_text_file(path);
  EXPECT_THAT(open_error(bytes.substr(0, bytes.size() - 1)), HasSubstr("tensor 'b' ends at byte 512"));
  EXPECT_THAT(open_error(bytes.substr(0, bytes.size() - 300)), HasSubstr("truncated file?"));
  // Cut inside the header.
  const uint64_t header_len = bytes.size() - 8 - 512;
  EXPECT_THAT(open_error(bytes.substr(0, 8 + header_len / 2)), HasSubstr("runs past the end of the file"));
}

TEST_F(SafetensorsTest, NotARegularFileOrMissing) {
  try {
    SafetensorsFile f(dir_);
    ADD_FAILURE() << "opening a directory did not throw";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr(dir_ + " is not a regular file"));
  }
  const std::string missing = dir_ + "/missing.safetensors";
  try {
    SafetensorsFile f(missing);
    ADD_FAILURE() << "opening a missing file did not throw";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("cannot open " + missing));
  }
}

// Random byte flips, digit edits inside the header and truncations of a valid file: each either
// opens or throws qwen35::Error, and every view it hands out is exactly where the header says,
// inside the file, sized dtype * shape, and overlapping no other view.
TEST_F(SafetensorsTest, RandomMutationsNeverEscapeTheFile) {
  SafetensorsWriter w;
  std::vector<uint8_t> bytes(96);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = uint8_t(i);
  w.add("a", DType::F32, Shape{2, 3}, bytes.data(), 24);
  w.add("b", DType::BF16, Shape{4}, bytes.data(), 8);
  w.add("c", DType::U8, Shape{0, 7}, nullptr, 0);
  w.add("d", DType::I64, Shape{2, 2}, bytes.data(), 32);
  w.add("e", DType::I8, Shape{3}, bytes.data(), 3);
  w.set_metadata("format", "pt");
  const std::string valid_path = dir_ + "/valid.safetensors";
  w.write(valid_path);
  const std::string valid = test::read_text_file(valid_path);
  const size_t header_end = 8 + size_t(uint8_t(valid[0])) + (size_t(uint8_t(valid[1])) << 8);

  std::mt19937 rng(1234);
  auto uniform = [&](size_t n) { return size_t(rng() % n); };
  int opened = 0, rejected = 0;
  for (int iter = 0; iter < 400; ++iter) {
    std::string m = valid;
    const int edits = 1 + int(uniform(3));
    for (int k = 0; k < edits && !m.empty(); ++k) {
      switch (uniform(5)) {
        case 0: m[uniform(m.size())] ^= char(1 << uniform(8)); break;
        case 1: m[uniform(m.size())] = char(rng()); break;
        case 2: m[uniform(8)] = char(rng()); break;  // the length prefix
        case 3: {                                    // a digit of a shape or offset
          if (m.size() <= 8) break;
          size_t pos = 8 + uniform(std::min(m.size(), header_end) - 8);
          if (std::isdigit(uint8_t(m[pos]))) m[pos] = char('0' + uniform(10));
          break;
        }
        case 4: m.resize(uniform(m.size() + 1)); break;
      }
    }
    const std::string path = write(m, "mut.safetensors");
    try {
      SafetensorsFile f(path);
      ++opened;
      // Re-derive each tensor's place from the header independently of the reader.
      uint64_t hlen = 0;
      for (int i = 7; i >= 0; --i) hlen = (hlen << 8) | uint8_t(m[size_t(i)]);
      json header = json::parse(m.substr(8, size_t(hlen)));
      std::vector<std::pair<uint64_t, uint64_t>> spans;
      for (const auto& [name, v] : f.tensors()) {
        const uint64_t begin = header[name]["data_offsets"][0], end = header[name]["data_offsets"][1];
        ASSERT_LE(8 + hlen + end, m.size()) << "iteration " << iter << ": '" << name << "' ends past the file";
        ASSERT_EQ(v.nbytes, end - begin);
        for (int i = 0; i < v.shape.ndim; ++i) {
          ASSERT_GE(v.shape[i], 0);
        }
        ASSERT_EQ(uint64_t(v.numel()) * dtype_info(v.dtype).block_bytes, v.nbytes);
        if (v.nbytes) {
          ASSERT_EQ(std::memcmp(v.data, m.data() + 8 + hlen + begin, v.nbytes), 0);
        }
        if (begin != end) spans.push_back({begin, end});
      }
      std::sort(spans.begin(), spans.end());
      for (size_t i = 1; i < spans.size(); ++i) {
        ASSERT_LE(spans[i - 1].second, spans[i].first) << "iteration " << iter;
      }
    } catch (const Error& e) {
      ++rejected;
      EXPECT_THAT(e.what(), HasSubstr(path));
    }
  }
  // The run must exercise both outcomes to mean anything.
  EXPECT_GT(opened, 20);
  EXPECT_GT(rejected, 100);
}

}  // namespace
}  // namespace qwen35

namespace qwen35 {
namespace {

TEST_F(SafetensorsTest, MisalignedTensorsAreReadThroughAlignedCopies) {
  // A header length of 8k+1 shifts the data section: every tensor starts at an odd address.
  std::string data(12, '\0');
  const float values[3] = {1.5f, -2.25f, 3.0f};
  std::memcpy(data.data(), values, 12);
  std::string header = json{{"x", entry("F32", {3}, 0, 12)}}.dump();
  while ((8 + header.size()) % 8 != 1) header += ' ';
  SafetensorsFile f(write(raw_file(header.size(), header, data)));
  const TensorView& v = f.get("x");
  EXPECT_EQ(reinterpret_cast<uintptr_t>(v.data) % 4, 0u);
  EXPECT_EQ(v.as<float>()[0], 1.5f);
  EXPECT_EQ(v.as<float>()[2], 3.0f);
}

}  // namespace
}  // namespace qwen35
