// The ffmpeg command line as the oracle: the goldens' decode command run on synthetic clips with
// every colour tag the scale filter distinguishes, full-range JPEG pixels and an H.264 stream
// with B-frames. Our frames must be its rgb24 output byte for byte. Skipped where no `ffmpeg`
// is installed (Debian: package ffmpeg); the golden clip's hash does not need it.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

#include "io/video.h"
#include "support/video_test_encoders.h"
#include "support/test_data.h"

namespace qwen35 {
namespace {

bool have_ffmpeg_cli() { return std::system("ffmpeg -version > /dev/null 2>&1") == 0; }

// The command of tests/data/tiny-qwen35/golden_video/README.md ("Decoding").
std::vector<uint8_t> ffmpeg_rgb24(const std::string& clip) {
  const std::string out = clip + ".rgb";
  const std::string command = "ffmpeg -v error -nostdin -threads 1 -i '" + clip +
                              "' -map 0:v:0 -fps_mode passthrough -sws_flags bicubic+accurate_rnd+full_chroma_int"
                              " -f rawvideo -pix_fmt rgb24 - > '" + out + "'";
  if (std::system(command.c_str()) != 0) throw std::runtime_error("ffmpeg failed: " + command);
  return test::read_file_bytes(out);
}

TEST(VideoFfmpegCli, FramesAreTheCommandsRgb24) {
  if (!have_ffmpeg_cli()) GTEST_SKIP() << "no ffmpeg command line";
  struct Clip {
    const char* name;
    test::VideoSpec spec;
  };
  std::vector<Clip> clips;
  test::VideoSpec s;
  s.muxer = "matroska", s.width = 66, s.height = 50, s.frames = 6;
  // AVColorSpace, AVColorRange: the matrices swscale has (and two it has not: BT.601 instead).
  const int tags[][2] = {{2, 0}, {1, 1}, {1, 2}, {4, 1}, {5, 2}, {6, 0}, {7, 1}, {9, 1}, {10, 1}, {12, 1}};
  for (const auto& tag : tags) {
    s.colorspace = tag[0], s.color_range = tag[1];
    clips.push_back({"mpeg4", s});
  }
  s.colorspace = 2, s.color_range = 0, s.muxer = "avi", s.encoder = "mjpeg";
  clips.push_back({"mjpeg yuvj420p", s});
  s.muxer = "mp4", s.encoder = "libx264", s.max_b_frames = 2, s.keyframe_interval = 4;
  clips.push_back({"h264 B-frames", s});

  const std::string dir = test::temp_dir("video-cli");
  for (size_t i = 0; i < clips.size(); ++i) {
    const Clip& clip = clips[i];
    const test::VideoBytes bytes = test::encode_video(clip.spec);
    const std::string path = dir + "/clip" + std::to_string(i);
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    const std::vector<uint8_t> expected = ffmpeg_rgb24(path);

    VideoDecoder decoder(bytes);
    std::vector<uint8_t> ours;
    for (const RgbImage& frame : decoder.decode_all_frames()) ours.insert(ours.end(), frame.pixels.begin(), frame.pixels.end());
    ASSERT_EQ(ours.size(), expected.size()) << clip.name;
    int worst = 0;
    for (size_t k = 0; k < ours.size(); ++k) worst = std::max(worst, std::abs(int(ours[k]) - int(expected[k])));
    EXPECT_EQ(worst, 0) << clip.name << " colorspace " << clip.spec.colorspace << " range " << clip.spec.color_range;
  }
}

}  // namespace
}  // namespace qwen35
