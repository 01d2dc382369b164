#include "support/video_test_encoders.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <stdexcept>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/channel_layout.h>
#include <libavutil/frame.h>
#include <libavutil/log.h>
}

#include "io/ffmpeg_owners.h"

namespace qwen35::test {
namespace {

void check(int ret, const char* what) {
  if (ret < 0) {
    char text[AV_ERROR_MAX_STRING_SIZE] = {};
    av_strerror(ret, text, sizeof(text));
    throw std::runtime_error(std::string("test encoder: ") + what + ": " + text);
  }
}

// FFmpeg 7 made the written buffer const.
#if LIBAVFORMAT_VERSION_MAJOR >= 61
using WrittenBytes = const uint8_t*;
#else
using WrittenBytes = uint8_t*;
#endif

// A muxer writing into memory through a seekable AVIOContext: MP4 and AVI go back to patch
// their headers, which FFmpeg's dynamic buffers cannot do. take() finishes the file.
class MemoryMuxer {
 public:
  explicit MemoryMuxer(const std::string& muxer) {
    check(avformat_alloc_output_context2(&format_, nullptr, muxer.c_str(), nullptr), "output context");
    constexpr int kBufferBytes = 4096;
    auto* buffer = static_cast<uint8_t*>(av_malloc(kBufferBytes));
    format_->pb = avio_alloc_context(buffer, kBufferBytes, 1, this, nullptr, write, seek);
    check(format_->pb ? 0 : AVERROR(ENOMEM), "memory output");
  }
  ~MemoryMuxer() {
    if (format_->pb) ffmpeg::IoContextFreer{}(format_->pb);
    avformat_free_context(format_);
  }
  MemoryMuxer(const MemoryMuxer&) = delete;
  MemoryMuxer& operator=(const MemoryMuxer&) = delete;

  AVFormatContext* get() const { return format_; }
  VideoBytes take() {
    check(av_write_trailer(format_), "trailer");
    avio_flush(format_->pb);
    return bytes_;
  }

 private:
  static int write(void* opaque, WrittenBytes data, int size) {
    auto* self = static_cast<MemoryMuxer*>(opaque);
    const size_t end = self->position_ + size_t(size);
    if (end > self->bytes_.size()) self->bytes_.resize(end);
    std::memcpy(self->bytes_.data() + self->position_, data, size_t(size));
    self->position_ = end;
    return size;
  }
  static int64_t seek(void* opaque, int64_t offset, int whence) {
    auto* self = static_cast<MemoryMuxer*>(opaque);
    if (whence & AVSEEK_SIZE) return int64_t(self->bytes_.size());
    switch (whence & ~AVSEEK_FORCE) {
      case SEEK_SET: self->position_ = size_t(offset); break;
      case SEEK_CUR: self->position_ = size_t(int64_t(self->position_) + offset); break;
      case SEEK_END: self->position_ = size_t(int64_t(self->bytes_.size()) + offset); break;
      default: return AVERROR(EINVAL);
    }
    return int64_t(self->position_);
  }

  AVFormatContext* format_ = nullptr;
  VideoBytes bytes_;
  size_t position_ = 0;
};

uint8_t pattern(int x, int y, int t, int plane) {
  return uint8_t((x * (plane + 1) * 3 + y * 2 + t * 5 + plane * 60) & 0xff);
}

void fill_flat(AVFrame& frame, const uint8_t yuv[3]) {
  for (int plane = 0; plane < 3; ++plane) {
    const int shift = plane == 0 ? 0 : 1;
    for (int y = 0; y < (frame.height + shift) >> shift; ++y)
      std::memset(frame.data[plane] + size_t(y) * size_t(frame.linesize[plane]), yuv[plane], size_t((frame.width + shift) >> shift));
  }
}

void fill_frame(AVFrame& frame, int t) {
  const bool rgb = frame.format == AV_PIX_FMT_RGB24;
  const bool gray = frame.format == AV_PIX_FMT_GRAY8;
  const int square = 8, sx = (t * 3) % std::max(1, frame.width - square), sy = (t * 2) % std::max(1, frame.height - square);
  for (int plane = 0; plane < (rgb || gray ? 1 : 3); ++plane) {
    const int shift = plane == 0 || rgb ? 0 : 1;  // 4:2:0 chroma
    const int w = rgb ? frame.width * 3 : (frame.width + shift) >> shift;
    const int h = (frame.height + shift) >> shift;
    for (int y = 0; y < h; ++y) {
      uint8_t* row = frame.data[plane] + size_t(y) * size_t(frame.linesize[plane]);
      for (int x = 0; x < w; ++x) {
        const int px = rgb ? x / 3 : x << shift, py = y << shift;
        const bool inside = px >= sx && px < sx + square && py >= sy && py < sy + square;
        row[x] = inside ? uint8_t(plane == 0 || rgb ? 235 : 90) : pattern(x, y, t, rgb ? x % 3 : plane);
      }
    }
  }
}

void write_packets(AVCodecContext* encoder, AVFormatContext* format, AVStream* stream, AVFrame* frame) {
  ffmpeg::PacketPtr packet(av_packet_alloc());
  check(avcodec_send_frame(encoder, frame), "send frame");
  for (;;) {
    const int ret = avcodec_receive_packet(encoder, packet.get());
    if (ret == AVERROR(EAGAIN) || ret == AVERROR_EOF) return;
    check(ret, "receive packet");
    av_packet_rescale_ts(packet.get(), encoder->time_base, stream->time_base);
    packet->stream_index = stream->index;
    check(av_interleaved_write_frame(format, packet.get()), "write packet");
  }
}

}  // namespace

VideoBytes encode_video(const VideoSpec& spec) {
  av_log_set_level(AV_LOG_ERROR);  // the encoders' statistics would fill the test output
  const AVCodec* codec = avcodec_find_encoder_by_name(spec.encoder.c_str());
  if (!codec) throw std::runtime_error("test encoder: no encoder " + spec.encoder);
  MemoryMuxer muxer(spec.muxer);
  ffmpeg::CodecContextPtr encoder(avcodec_alloc_context3(codec));
  encoder->width = spec.width;
  encoder->height = spec.height;
  encoder->time_base = AVRational{1, spec.fps};
  encoder->framerate = AVRational{spec.fps, 1};
  encoder->gop_size = spec.keyframe_interval;
  encoder->max_b_frames = spec.max_b_frames;
  encoder->thread_count = 1;
  encoder->colorspace = AVColorSpace(spec.colorspace);
  encoder->color_range = AVColorRange(spec.color_range);
  if (spec.encoder == "png") encoder->pix_fmt = AV_PIX_FMT_RGB24;
  else if (spec.encoder == "gif") encoder->pix_fmt = AV_PIX_FMT_GRAY8;
  else if (spec.encoder == "mjpeg") encoder->pix_fmt = AV_PIX_FMT_YUVJ420P;
  else encoder->pix_fmt = AV_PIX_FMT_YUV420P;
  if (muxer.get()->oformat->flags & AVFMT_GLOBALHEADER) encoder->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
  check(avcodec_open2(encoder.get(), codec, nullptr), "open encoder");
  AVStream* stream = avformat_new_stream(muxer.get(), nullptr);
  check(stream ? 0 : AVERROR(ENOMEM), "new stream");
  check(avcodec_parameters_from_context(stream->codecpar, encoder.get()), "stream parameters");
  stream->time_base = encoder->time_base;
  stream->avg_frame_rate = encoder->framerate;
  check(avformat_write_header(muxer.get(), nullptr), "header");

  ffmpeg::FramePtr frame(av_frame_alloc());
  frame->format = encoder->pix_fmt;
  frame->width = spec.width;
  frame->height = spec.height;
  check(av_frame_get_buffer(frame.get(), 0), "frame buffer");
  for (int t = 0; t < spec.frames; ++t) {
    check(av_frame_make_writable(frame.get()), "writable frame");
    if (spec.flat) fill_flat(*frame, spec.flat_yuv);
    else fill_frame(*frame, t);
    frame->pts = t;
    write_packets(encoder.get(), muxer.get(), stream, frame.get());
  }
  write_packets(encoder.get(), muxer.get(), stream, nullptr);
  return muxer.take();
}

VideoBytes encode_audio_only(const std::string& muxer_name) {
  MemoryMuxer muxer(muxer_name);
  AVStream* stream = avformat_new_stream(muxer.get(), nullptr);
  check(stream ? 0 : AVERROR(ENOMEM), "new stream");
  AVCodecParameters& p = *stream->codecpar;
  p.codec_type = AVMEDIA_TYPE_AUDIO;
  p.codec_id = AV_CODEC_ID_PCM_S16LE;
  p.sample_rate = 8000;
  p.format = AV_SAMPLE_FMT_S16;
  av_channel_layout_default(&p.ch_layout, 1);
  p.bits_per_coded_sample = 16;
  p.block_align = 2;
  stream->time_base = AVRational{1, 8000};
  check(avformat_write_header(muxer.get(), nullptr), "header");
  ffmpeg::PacketPtr packet(av_packet_alloc());
  for (int i = 0; i < 10; ++i) {
    check(av_new_packet(packet.get(), 1600), "packet");
    std::memset(packet->data, 0, 1600);
    packet->pts = packet->dts = int64_t(i) * 800;
    packet->duration = 800;
    packet->stream_index = stream->index;
    check(av_interleaved_write_frame(muxer.get(), packet.get()), "write packet");
  }
  return muxer.take();
}

VideoBytes wav_silence(int samples) {
  auto le32 = [](VideoBytes& b, uint32_t v) {
    for (int i = 0; i < 4; ++i) b.push_back(uint8_t(v >> (8 * i)));
  };
  auto le16 = [](VideoBytes& b, uint16_t v) {
    b.push_back(uint8_t(v));
    b.push_back(uint8_t(v >> 8));
  };
  VideoBytes b;
  const uint32_t data_bytes = uint32_t(samples) * 2;
  for (char c : std::string("RIFF")) b.push_back(uint8_t(c));
  le32(b, 36 + data_bytes);
  for (char c : std::string("WAVEfmt ")) b.push_back(uint8_t(c));
  le32(b, 16);
  le16(b, 1);      // PCM
  le16(b, 1);      // mono
  le32(b, 8000);   // sample rate
  le32(b, 16000);  // byte rate
  le16(b, 2);      // block align
  le16(b, 16);     // bits per sample
  for (char c : std::string("data")) b.push_back(uint8_t(c));
  le32(b, data_bytes);
  b.resize(b.size() + data_bytes, 0);
  return b;
}

}  // namespace qwen35::test
