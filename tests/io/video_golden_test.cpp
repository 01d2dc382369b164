// The golden clip (tests/data/tiny-qwen35/golden_video): metadata as the reference pipeline was
// given it, every frame's RGB against the sha256 of the ffmpeg command's output, the sampled
// frames against the stored tensor bit for bit, and seeking against decoding in order.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

extern "C" {
#include <libavutil/mem.h>
#include <libavutil/sha.h>
}

#include "core/error.h"
#include "io/video.h"
#include "support/test_data.h"

namespace qwen35 {
namespace {

const std::string kClip = "tiny-qwen35/golden_video/pan_200x150_12fps.mp4";
const std::string kGolden = "tiny-qwen35/golden_video/video_pan.safetensors";

nlohmann::json golden_video_entry() {
  const nlohmann::json manifest =
      nlohmann::json::parse(test::read_text_file(test::data_path("tiny-qwen35/golden_video/manifest.json")));
  for (const auto& c : manifest.at("cases"))
    if (c.at("name") == "video_pan") return c.at("videos").at(0);
  throw std::runtime_error("manifest.json has no case video_pan");
}

std::string sha256_hex(const std::vector<RgbImage>& frames) {
  AVSHA* sha = av_sha_alloc();
  av_sha_init(sha, 256);
  for (const RgbImage& f : frames) av_sha_update(sha, f.pixels.data(), f.pixels.size());
  uint8_t digest[32];
  av_sha_final(sha, digest);
  av_free(sha);
  std::string hex;
  char two[3];
  for (uint8_t b : digest) {
    std::snprintf(two, sizeof(two), "%02x", b);
    hex += two;
  }
  return hex;
}

// The stored [T, H, W, 3] frames as one RgbImage each.
std::vector<RgbImage> golden_frames(const test::Golden& golden) {
  const TensorView& v = golden.view("video0.frames_sampled_u8");
  EXPECT_EQ(v.dtype, DType::U8);
  const int t = int(v.shape[0]), h = int(v.shape[1]), w = int(v.shape[2]);
  std::vector<RgbImage> out;
  for (int i = 0; i < t; ++i) {
    RgbImage img(w, h);
    std::copy_n(v.as<uint8_t>() + size_t(i) * img.pixels.size(), img.pixels.size(), img.pixels.begin());
    out.push_back(std::move(img));
  }
  return out;
}

int max_level_difference(const RgbImage& a, const RgbImage& b) {
  if (a.pixels.size() != b.pixels.size()) return 256;
  int worst = 0;
  for (size_t i = 0; i < a.pixels.size(); ++i) worst = std::max(worst, std::abs(int(a.pixels[i]) - int(b.pixels[i])));
  return worst;
}

class GoldenVideo : public ::testing::Test {
 protected:
  std::vector<uint8_t> bytes = test::read_file_bytes(test::data_path(kClip));
  nlohmann::json entry = golden_video_entry();
};

TEST_F(GoldenVideo, MetadataIsWhatTheReferenceWasGiven) {
  const VideoDecoder decoder(bytes);
  const VideoInfo& info = decoder.info();
  const nlohmann::json& given = entry.at("metadata_given_to_processor");
  EXPECT_EQ(info.frame_count, given.at("total_num_frames").get<int64_t>());
  EXPECT_EQ(info.frame_count, entry.at("n_frames").get<int64_t>());
  EXPECT_EQ(info.width, given.at("width").get<int>());
  EXPECT_EQ(info.height, given.at("height").get<int>());
  EXPECT_DOUBLE_EQ(info.average_fps, given.at("fps").get<double>());
  EXPECT_DOUBLE_EQ(info.fps_from_content(), given.at("fps").get<double>());
  EXPECT_DOUBLE_EQ(info.duration_seconds, given.at("duration").get<double>());
  EXPECT_EQ(info.codec, entry.at("codec").get<std::string>());
  EXPECT_EQ(info.container, entry.at("container").get<std::string>());
  EXPECT_EQ(decoder.stats().frames_decoded, 0) << "opening must not decode";
}

TEST_F(GoldenVideo, AllFramesHashLikeTheFfmpegCommand) {
  VideoDecoder decoder(bytes);
  const std::vector<RgbImage> frames = decoder.decode_all_frames();
  ASSERT_EQ(int64_t(frames.size()), entry.at("n_frames").get<int64_t>());
  const std::string hash = sha256_hex(frames);
  if (hash != entry.at("all_frames_rgb24_sha256").get<std::string>()) {
    // Say how far off we are on the frames the golden stores.
    const test::Golden golden(kGolden);
    const std::vector<int64_t> indices = golden.i64("video0.frame_indices");
    const std::vector<RgbImage> expected = golden_frames(golden);
    int worst = 0;
    for (size_t i = 0; i < indices.size(); ++i) worst = std::max(worst, max_level_difference(frames[size_t(indices[i])], expected[i]));
    ADD_FAILURE() << "sha256 " << hash << " differs from the golden's; max level difference on the stored frames: " << worst;
  }
  EXPECT_EQ(decoder.stats().seeks, 0) << "decoding every frame reads the file in order";
  EXPECT_EQ(decoder.stats().frames_decoded, int64_t(frames.size()));
}

TEST_F(GoldenVideo, SampledFramesEqualTheStoredTensorBitForBit) {
  const test::Golden golden(kGolden);
  const std::vector<int64_t> indices = golden.i64("video0.frame_indices");
  ASSERT_EQ(indices.size(), entry.at("sampled_indices").size());
  const std::vector<RgbImage> expected = golden_frames(golden);
  VideoDecoder decoder(bytes);
  const std::vector<RgbImage> frames = decoder.decode_frames(indices);
  ASSERT_EQ(frames.size(), expected.size());
  for (size_t i = 0; i < frames.size(); ++i) {
    EXPECT_EQ(frames[i].width, expected[i].width);
    EXPECT_EQ(frames[i].height, expected[i].height);
    EXPECT_EQ(max_level_difference(frames[i], expected[i]), 0) << "frame " << indices[i];
  }
}

TEST_F(GoldenVideo, SeekingGivesTheFramesOfAnInOrderDecode) {
  VideoDecoder in_order(bytes);
  const std::vector<RgbImage> all = in_order.decode_all_frames();
  const test::Golden golden(kGolden);
  std::vector<int64_t> indices = golden.i64("video0.frame_indices");
  // Backwards, repeated and single: every request must give the frame the in-order pass gave.
  std::vector<std::vector<int64_t>> requests = {indices, {59, 0, 33, 33, 7}, {int64_t(all.size()) - 1}, {30}, {0}};
  std::reverse(indices.begin(), indices.end());
  requests.push_back(indices);
  VideoDecoder reused(bytes);  // one decoder across requests: later ones go back in the file
  for (const auto& request : requests) {
    VideoDecoder fresh(bytes);
    for (VideoDecoder* decoder : {&fresh, &reused}) {
      const std::vector<RgbImage> frames = decoder->decode_frames(request);
      ASSERT_EQ(frames.size(), request.size());
      for (size_t i = 0; i < request.size(); ++i)
        EXPECT_EQ(frames[i].pixels, all[size_t(request[i])].pixels) << "frame " << request[i];
    }
  }
}

TEST_F(GoldenVideo, ReadsTheFileWithinItsLimit) {
  const std::string path = test::data_path(kClip);
  EXPECT_EQ(read_video_file(path), bytes);
  VideoDecodeOptions small;
  small.max_file_bytes = int64_t(bytes.size()) - 1;
  EXPECT_THROW(read_video_file(path, small), Error);
  EXPECT_THROW(read_video_file(path + ".missing"), Error);
}

}  // namespace
}  // namespace qwen35
