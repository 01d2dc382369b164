// unique_ptr owners of FFmpeg objects, one deleter per kind, each calling the FFmpeg function that
// frees the object and what hangs off it. The video decoder (io/video.cpp) and the tests' encoders
// (tests/support/video_test_encoders.cpp) both hold their FFmpeg objects in these.
#pragma once

#include <memory>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/frame.h>
#include <libavutil/mem.h>
#include <libswscale/swscale.h>
}

namespace qwen35::ffmpeg {

// A demuxer opened with avformat_open_input.
struct InputFormatCloser {
  void operator()(AVFormatContext* c) const { avformat_close_input(&c); }
};
struct CodecContextFreer {
  void operator()(AVCodecContext* c) const { avcodec_free_context(&c); }
};
struct FrameFreer {
  void operator()(AVFrame* f) const { av_frame_free(&f); }
};
struct PacketFreer {
  void operator()(AVPacket* p) const { av_packet_free(&p); }
};
struct SwsFreer {
  void operator()(SwsContext* s) const { sws_freeContext(s); }
};
// A custom I/O context and its buffer, which belongs to the context by then (FFmpeg may have
// replaced the one it was given with a larger one).
struct IoContextFreer {
  void operator()(AVIOContext* io) const {
    av_freep(&io->buffer);
    avio_context_free(&io);
  }
};

using InputFormatPtr = std::unique_ptr<AVFormatContext, InputFormatCloser>;
using CodecContextPtr = std::unique_ptr<AVCodecContext, CodecContextFreer>;
using FramePtr = std::unique_ptr<AVFrame, FrameFreer>;
using PacketPtr = std::unique_ptr<AVPacket, PacketFreer>;
using SwsContextPtr = std::unique_ptr<SwsContext, SwsFreer>;
using IoContextPtr = std::unique_ptr<AVIOContext, IoContextFreer>;

}  // namespace qwen35::ffmpeg
