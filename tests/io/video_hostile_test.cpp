// Hostile and wrong input for the video decoder: empty, cut, bit-flipped and random bytes,
// files that are not videos (WAV, PNG, audio-only MP4/Matroska, an HLS playlist), an
// unsupported codec, and every limit. The only acceptable outcomes are frames or a qwen35::Error
// (anything else, a crash or another exception type, fails the test); where the input is
// certainly bad, an Error with a useful message.
#include <cstring>
#include <random>
#include <string>

#include <gtest/gtest.h>

#include "core/error.h"
#include "io/video.h"
#include "support/video_test_encoders.h"
#include "support/test_data.h"

namespace qwen35 {
namespace {

using Bytes = std::vector<uint8_t>;

Bytes golden_clip() { return test::read_file_bytes(test::data_path("tiny-qwen35/golden_video/pan_200x150_12fps.mp4")); }

Bytes text_bytes(const std::string& s) { return Bytes(s.begin(), s.end()); }

// Opens and decodes every frame. True when that worked, false on qwen35::Error; any other
// exception escapes and fails the test.
bool decodes(const Bytes& bytes, const VideoDecodeOptions& options = {}) {
  try {
    VideoDecoder decoder(bytes, options);
    const std::vector<RgbImage> frames = decoder.decode_all_frames();
    EXPECT_EQ(int64_t(frames.size()), decoder.info().frame_count);
    for (const RgbImage& f : frames) EXPECT_EQ(f.pixels.size(), size_t(f.width) * size_t(f.height) * 3);
    return true;
  } catch (const Error&) {
    return false;
  }
}

// The message of the Error that opening (and decoding) `bytes` throws; fails if none is thrown.
std::string error_of(const Bytes& bytes, const VideoDecodeOptions& options = {}) {
  try {
    VideoDecoder decoder(bytes, options);
    decoder.decode_all_frames();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return {};
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(VideoHostile, EmptyInputIsAnError) { EXPECT_TRUE(contains(error_of({}), "empty")); }

TEST(VideoHostile, RandomBytesAreAnError) {
  std::mt19937 rng(7);
  for (size_t size : {1, 7, 64, 1000, 70000}) {
    Bytes b(size);
    for (auto& v : b) v = uint8_t(rng());
    EXPECT_FALSE(decodes(b)) << size << " random bytes";
  }
}

TEST(VideoHostile, EveryCutOfTheClipIsAnError) {
  const Bytes clip = golden_clip();
  ASSERT_TRUE(decodes(clip));
  std::vector<size_t> cuts = {1, 4, 8, 12, 16, 32, 100, 1000};
  for (size_t i = 1; i < 40; ++i) cuts.push_back(clip.size() * i / 40);
  cuts.push_back(clip.size() - 1);
  for (size_t cut : cuts) {
    const Bytes part(clip.begin(), clip.begin() + ptrdiff_t(cut));
    EXPECT_FALSE(decodes(part)) << "cut at " << cut << " of " << clip.size();
  }
}

TEST(VideoHostile, FlippedBytesGiveFramesOrAnError) {
  const Bytes clip = golden_clip();
  std::mt19937 rng(11);
  int errors = 0;
  for (int trial = 0; trial < 150; ++trial) {
    Bytes b = clip;
    const int flips = 1 + trial % 4;
    for (int f = 0; f < flips; ++f) b[rng() % b.size()] ^= uint8_t(1 + rng() % 255);
    errors += decodes(b) ? 0 : 1;
  }
  // Most single flips land in picture data and merely change pixels; what matters is that none
  // crashed. Flips in the headers must have been reported.
  EXPECT_GT(errors, 0);
}

TEST(VideoHostile, FlippedHeaderBytesGiveFramesOrAnError) {
  const Bytes clip = golden_clip();
  // The first boxes of the file (ftyp, and moov or the start of mdat), and its last ones.
  for (size_t at = 0; at < clip.size(); at += at < 1024 || at + 1024 > clip.size() ? 7 : 1021) {
    Bytes b = clip;
    b[at] ^= 0xff;
    decodes(b);
  }
}

TEST(VideoHostile, FilesThatAreNotVideosAreNamed) {
  EXPECT_TRUE(contains(error_of(test::wav_silence(8000)), "wav")) << error_of(test::wav_silence(8000));
  const Bytes png = test::read_file_bytes(test::data_path("tiny-qwen35/chelsea.png"));
  EXPECT_TRUE(contains(error_of(png), "image")) << error_of(png);
  const Bytes gif = {'G', 'I', 'F', '8', '9', 'a', 1, 0, 1, 0, 0x80, 0, 0, 0, 0, 0, 255, 255, 255,
                     0x2c, 0, 0, 0, 0, 1, 0, 1, 0, 0, 2, 2, 0x44, 1, 0, 0x3b};
  EXPECT_TRUE(decodes(gif));  // a GIF is a video of its frames (here one)
  const Bytes hls = text_bytes("#EXTM3U\n#EXT-X-TARGETDURATION:10\n#EXTINF:10,\nfile:///etc/passwd\n#EXT-X-ENDLIST\n");
  EXPECT_FALSE(decodes(hls));
  const Bytes text = text_bytes("this is not a video, just some text that goes on for a while\n");
  EXPECT_FALSE(decodes(text));
}

TEST(VideoHostile, AudioOnlyFilesHaveNoVideoStream) {
  for (const char* muxer : {"mov", "matroska"}) {
    const std::string message = error_of(test::encode_audio_only(muxer));
    EXPECT_TRUE(contains(message, "no video stream")) << muxer << ": " << message;
  }
}

TEST(VideoHostile, UnsupportedCodecIsNamed) {
  test::VideoSpec spec;
  spec.muxer = "mov", spec.encoder = "png", spec.frames = 3;
  const std::string message = error_of(test::encode_video(spec));
  EXPECT_TRUE(contains(message, "png") && contains(message, "not supported")) << message;
}

TEST(VideoHostile, LimitsAreCheckedBeforeTheWork) {
  const Bytes clip = golden_clip();
  VideoDecodeOptions o;
  o.max_file_bytes = int64_t(clip.size()) - 1;
  EXPECT_TRUE(contains(error_of(clip, o), "bytes")) << error_of(clip, o);
  o = {};
  o.max_pixels = 200 * 150 - 1;
  EXPECT_TRUE(contains(error_of(clip, o), "pixels")) << error_of(clip, o);
  o = {};
  o.max_frames = 59;
  EXPECT_TRUE(contains(error_of(clip, o), "frames")) << error_of(clip, o);
  o = {};
  o.max_duration_seconds = 4.0;
  EXPECT_TRUE(contains(error_of(clip, o), "duration")) << error_of(clip, o);
  // Each limit is inclusive: the clip itself is exactly at them.
  o = {};
  o.max_file_bytes = int64_t(clip.size()), o.max_pixels = 200 * 150, o.max_frames = 60, o.max_duration_seconds = 5.0;
  o.max_output_bytes = int64_t(60) * 200 * 150 * 3;
  EXPECT_TRUE(decodes(clip, o));
  o.max_output_bytes -= 1;
  EXPECT_FALSE(decodes(clip, o));
}

TEST(VideoHostile, AnAbsurdDeclaredDurationIsRefused) {
  Bytes clip = golden_clip();
  // mvhd (version 0): version/flags, creation, modification, timescale, duration.
  const std::string mvhd = "mvhd";
  const auto at = std::search(clip.begin(), clip.end(), mvhd.begin(), mvhd.end());
  ASSERT_NE(at, clip.end());
  const size_t box = size_t(at - clip.begin()) + 4;
  ASSERT_EQ(clip[box], 0) << "expected a version 0 mvhd";
  for (int i = 0; i < 4; ++i) clip[box + 16 + size_t(i)] = 0xff;  // 2^32 - 1 ticks: weeks at any timescale
  const std::string message = error_of(clip);
  EXPECT_TRUE(contains(message, "duration")) << message;
}

TEST(VideoHostile, BadIndicesAreErrorsAndTheDecoderRecovers) {
  const Bytes clip = golden_clip();
  VideoDecoder decoder(clip);
  EXPECT_THROW(decoder.decode_frames(std::vector<int64_t>{60}), Error);
  EXPECT_THROW(decoder.decode_frames(std::vector<int64_t>{-1}), Error);
  VideoDecodeOptions o;
  o.max_output_bytes = 200 * 150 * 3;
  VideoDecoder limited(clip, o);
  EXPECT_THROW(limited.decode_frames(std::vector<int64_t>{1, 2}), Error);
  EXPECT_EQ(limited.decode_frames(std::vector<int64_t>{2}).size(), 1u);
  EXPECT_EQ(decoder.decode_frames(std::vector<int64_t>{59, 0}).size(), 2u);
}

}  // namespace
}  // namespace qwen35
