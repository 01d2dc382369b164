// Synthetic clips (made in memory by FFmpeg's encoders, video_test_encoders.h) in several
// containers, with keyframes every few frames and with B-frames: frame counting, seeking equal
// to decoding in order, what seeking costs, and the colour tags the RGB conversion honours.
#include <algorithm>
#include <array>
#include <cmath>

#include <gtest/gtest.h>

#include "core/error.h"
#include "io/video.h"
#include "support/video_test_encoders.h"

namespace qwen35 {
namespace {

struct Case {
  const char* name;
  test::VideoSpec spec;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

std::vector<Case> cases() {
  std::vector<Case> out;
  test::VideoSpec s;
  s.muxer = "mp4", s.encoder = "mpeg4", s.frames = 40, s.keyframe_interval = 10;
  out.push_back({"mp4 mpeg4 I/P", s});
  s.max_b_frames = 2;
  out.push_back({"mp4 mpeg4 with B-frames", s});
  s.muxer = "matroska", s.keyframe_interval = 12, s.fps = 25;
  out.push_back({"matroska mpeg4 with B-frames", s});
  s.muxer = "avi", s.max_b_frames = 0, s.keyframe_interval = 8, s.fps = 10;
  out.push_back({"avi mpeg4", s});
  s.muxer = "mov", s.encoder = "mjpeg", s.keyframe_interval = 1;
  out.push_back({"mov motion jpeg", s});
  return out;
}

class SyntheticVideo : public ::testing::TestWithParam<Case> {};

TEST_P(SyntheticVideo, CountsEveryFrameAndSeeksToTheSameFrames) {
  const test::VideoSpec& spec = GetParam().spec;
  const test::VideoBytes bytes = test::encode_video(spec);
  VideoDecoder in_order(bytes);
  const VideoInfo& info = in_order.info();
  EXPECT_EQ(info.frame_count, spec.frames);
  EXPECT_EQ(info.width, spec.width);
  EXPECT_EQ(info.height, spec.height);
  EXPECT_NEAR(info.average_fps, spec.fps, 1e-9);
  EXPECT_NEAR(info.duration_seconds, double(spec.frames) / spec.fps, 1e-9);

  const std::vector<RgbImage> all = in_order.decode_all_frames();
  ASSERT_EQ(int64_t(all.size()), spec.frames);
  EXPECT_EQ(in_order.stats().seeks, 0);
  EXPECT_EQ(in_order.stats().restarts, 1);
  for (size_t i = 1; i < all.size(); ++i) ASSERT_NE(all[i].pixels, all[i - 1].pixels) << "frames " << i - 1 << ", " << i;

  const std::vector<std::vector<int64_t>> requests = {
      {0, 7, 13, 20, 26, 33, 39}, {39, 38, 1}, {25, 25, 5}, {spec.frames - 1}, {11}, {0}};
  VideoDecoder reused(bytes);
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

TEST_P(SyntheticVideo, ALateFrameCostsItsGroupOfPicturesNotTheFile) {
  const test::VideoSpec& spec = GetParam().spec;
  const test::VideoBytes bytes = test::encode_video(spec);
  VideoDecoder decoder(bytes);
  const int64_t last = spec.frames - 1;
  decoder.decode_frames(std::vector<int64_t>{last});
  // From the keyframe at or before the last frame: at most one group of pictures, plus the
  // B-frames an open group borrows from the one before.
  EXPECT_LE(decoder.stats().frames_decoded, spec.keyframe_interval + spec.max_b_frames + 1);
  EXPECT_EQ(decoder.stats().seeks, 1);
}

INSTANTIATE_TEST_SUITE_P(Containers, SyntheticVideo, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           std::string name = info.param.name;
                           std::replace_if(name.begin(), name.end(), [](char c) { return !std::isalnum(uint8_t(c)); }, '_');
                           return name;
                         });

// ---- colour -------------------------------------------------------------------------------------

// Y'CbCr -> R'G'B' (0..255 floats) with Kr, Kb of a matrix, limited or full range.
std::array<double, 3> to_rgb(const std::array<double, 3>& ycbcr, double kr, double kb, bool full) {
  const double y = full ? ycbcr[0] / 255.0 : (ycbcr[0] - 16.0) / 219.0;
  const double cb = (ycbcr[1] - 128.0) / (full ? 255.0 : 224.0), cr = (ycbcr[2] - 128.0) / (full ? 255.0 : 224.0);
  const double kg = 1.0 - kr - kb;
  const double r = y + 2.0 * (1.0 - kr) * cr, b = y + 2.0 * (1.0 - kb) * cb;
  const double g = (y - kr * r - kb * b) / kg;
  return {r * 255.0, g * 255.0, b * 255.0};
}

// The inverse, to recover the Y'CbCr a BT.601 limited-range RGB pixel came from.
std::array<double, 3> to_ycbcr_601_limited(const uint8_t* rgb) {
  const double kr = 0.299, kb = 0.114, kg = 1.0 - kr - kb;
  const double r = rgb[0] / 255.0, g = rgb[1] / 255.0, b = rgb[2] / 255.0;
  const double y = kr * r + kg * g + kb * b;
  return {16.0 + 219.0 * y, 128.0 + 224.0 * (b - y) / (2.0 * (1.0 - kb)), 128.0 + 224.0 * (r - y) / (2.0 * (1.0 - kr))};
}

RgbImage first_frame(const test::VideoSpec& spec) {
  const test::VideoBytes bytes = test::encode_video(spec);
  VideoDecoder decoder(bytes);
  return decoder.decode_frames(std::vector<int64_t>{0}).at(0);
}

// The same flat colour, untagged and tagged: the tagged clip's RGB is what its matrix and range
// make of the Y'CbCr the untagged clip (BT.601, limited) shows, and visibly not the untagged RGB.
TEST(VideoColour, TagsChooseTheMatrixAndRangeLikeTheScaleFilter) {
  test::VideoSpec spec;
  spec.muxer = "matroska", spec.frames = 2, spec.flat = true;
  spec.flat_yuv[0] = 120, spec.flat_yuv[1] = 70, spec.flat_yuv[2] = 190;
  const RgbImage untagged = first_frame(spec);
  const uint8_t* centre = untagged.at(untagged.width / 2, untagged.height / 2);
  const std::array<double, 3> ycbcr = to_ycbcr_601_limited(centre);

  struct Tag {
    int colorspace, range;
    double kr, kb;
    bool full;
  };
  const Tag tags[] = {{1, 1, 0.2126, 0.0722, false},   // BT.709, limited
                      {2, 2, 0.299, 0.114, true},      // untagged matrix (BT.601), full range
                      {9, 1, 0.2627, 0.0593, false}};  // BT.2020 non-constant, limited
  for (const Tag& tag : tags) {
    spec.colorspace = tag.colorspace, spec.color_range = tag.range;
    const RgbImage tagged = first_frame(spec);
    const uint8_t* got = tagged.at(tagged.width / 2, tagged.height / 2);
    const std::array<double, 3> want = to_rgb(ycbcr, tag.kr, tag.kb, tag.full);
    int moved = 0;
    for (int c = 0; c < 3; ++c) {
      EXPECT_NEAR(got[c], std::clamp(want[c], 0.0, 255.0), 2.0) << "colorspace " << tag.colorspace << " range " << tag.range << " channel " << c;
      moved = std::max(moved, std::abs(int(got[c]) - int(centre[c])));
    }
    EXPECT_GT(moved, 4) << "colorspace " << tag.colorspace << " range " << tag.range << " gave the untagged colour";
  }
}

}  // namespace
}  // namespace qwen35
