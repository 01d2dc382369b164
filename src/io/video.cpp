// Video decoding through FFmpeg (see video.h for the contract).
//
// Opening = probe the bytes, refuse containers off the list, open the demuxer with nested
// opens refused, read the stream information, pick the first video stream, check the limits,
// then read every packet header once (no decoding) to number the frames in presentation order
// and find each frame's keyframe. Decoding = restart or seek to that keyframe when needed,
// decode forward, identify each decoded frame by its timestamp, convert the wanted ones to RGB
// exactly like the golden's ffmpeg command.
#include "io/video.h"

#include <algorithm>
#include <cstdarg>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <numeric>
#include <string_view>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/avutil.h>
#include <libavutil/error.h>
#include <libavutil/frame.h>
#include <libavutil/log.h>
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>
}

#include "core/error.h"
#include "io/ffmpeg_owners.h"

namespace qwen35 {
namespace {

// ---- FFmpeg's messages -------------------------------------------------------------------------
// FFmpeg logs through one process-wide callback. We install ours once: a message of error level
// goes to the calling thread's LogCapture, so that our error can quote the reason a library call
// failed; everything else is dropped rather than printed to stderr by a library.

thread_local std::string* t_log_sink = nullptr;

void capture_ffmpeg_log(void* context, int level, const char* format, va_list args) {
  if (level > AV_LOG_ERROR || t_log_sink == nullptr) return;
  char line[512];
  int print_prefix = 0;  // no "[h264 @ 0x...]" prefix
  av_log_format_line2(context, level, format, args, line, sizeof(line), &print_prefix);
  std::string_view text(line);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ' || text.back() == '.')) text.remove_suffix(1);
  if (!text.empty()) t_log_sink->assign(text);  // the latest error explains the failing call
}

class LogCapture {
 public:
  LogCapture() : previous_(t_log_sink) {
    static std::once_flag installed;
    std::call_once(installed, [] { av_log_set_callback(capture_ffmpeg_log); });
    t_log_sink = &message_;
  }
  ~LogCapture() { t_log_sink = previous_; }
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;

 private:
  std::string message_;
  std::string* previous_;
};

std::string ffmpeg_error_text(int code) {
  char text[AV_ERROR_MAX_STRING_SIZE] = {};
  av_strerror(code, text, sizeof(text));
  std::string out = text;
  if (t_log_sink != nullptr && !t_log_sink->empty()) out += " (" + *t_log_sink + ")";
  return out;
}

[[noreturn]] void fail_ffmpeg(std::string_view what, int code) { fail(what, ": ", ffmpeg_error_text(code)); }

// ---- ownership of FFmpeg objects -----------------------------------------------------------------

using ffmpeg::CodecContextPtr;
using ffmpeg::FramePtr;
using ffmpeg::PacketPtr;

struct DictionaryFreer {
  AVDictionary* dictionary = nullptr;
  ~DictionaryFreer() { av_dict_free(&dictionary); }
};
// Drops a received frame's buffers when the loop iteration ends, however it ends.
struct FrameUnref {
  AVFrame* frame;
  ~FrameUnref() { av_frame_unref(frame); }
};

FramePtr allocate_frame() {
  FramePtr frame(av_frame_alloc());
  if (!frame) fail("out of memory for a video frame");
  return frame;
}

// ---- what we open --------------------------------------------------------------------------------

// Demuxers by FFmpeg name ("mov" reads MP4/MOV/3GP, "matroska" also WebM, "mpeg" MPEG-PS). Each
// is also passed as format_whitelist, so FFmpeg itself refuses anything else.
// "gif" is the animated-GIF demuxer (frame times from the files' delays), not the gif_pipe image
// reader.
constexpr std::string_view kAllowedContainers[] = {"mov", "mp4", "matroska", "webm", "avi", "mpegts", "mpeg", "flv", "gif"};
constexpr char kContainerWhitelist[] = "mov,mp4,matroska,webm,avi,mpegts,mpeg,flv,gif";
constexpr char kSupportedContainers[] = "MP4/MOV, Matroska/WebM, AVI, MPEG-TS/PS, FLV, GIF";

struct AllowedCodec {
  AVCodecID id;
  const char* label;
};
constexpr AllowedCodec kAllowedCodecs[] = {
    {AV_CODEC_ID_H264, "H.264"},      {AV_CODEC_ID_HEVC, "HEVC"},
    {AV_CODEC_ID_VP8, "VP8"},         {AV_CODEC_ID_VP9, "VP9"},
    {AV_CODEC_ID_AV1, "AV1"},         {AV_CODEC_ID_MPEG4, "MPEG-4 Part 2"},
    {AV_CODEC_ID_MPEG1VIDEO, "MPEG-1"}, {AV_CODEC_ID_MPEG2VIDEO, "MPEG-2"},
    {AV_CODEC_ID_MJPEG, "Motion JPEG"}, {AV_CODEC_ID_GIF, "GIF"},
};

bool codec_allowed(AVCodecID id) {
  return std::any_of(std::begin(kAllowedCodecs), std::end(kAllowedCodecs), [&](const AllowedCodec& c) { return c.id == id; });
}

std::string supported_codecs() {
  std::string out;
  for (const AllowedCodec& c : kAllowedCodecs) out += (out.empty() ? "" : ", ") + std::string(c.label);
  return out;
}

// Every decoder FFmpeg has for the allowed codecs, as codec_whitelist: avformat_find_stream_info
// opens decoders to fill in stream parameters, and must not open any other (an audio stream's
// parameters stay incomplete, which costs us nothing).
const std::string& decoder_whitelist() {
  static const std::string names = [] {
    std::string out;
    void* iterator = nullptr;
    while (const AVCodec* codec = av_codec_iterate(&iterator))
      if (av_codec_is_decoder(codec) && codec_allowed(codec->id)) out += (out.empty() ? "" : ",") + std::string(codec->name);
    return out;
  }();
  return names;
}

bool container_allowed(std::string_view demuxer_names) {
  // FFmpeg names a demuxer by a comma-separated list ("mov,mp4,m4a,3gp,3g2,mj2").
  while (!demuxer_names.empty()) {
    const size_t comma = demuxer_names.find(',');
    const std::string_view name = demuxer_names.substr(0, comma);
    if (std::find(std::begin(kAllowedContainers), std::end(kAllowedContainers), name) != std::end(kAllowedContainers))
      return true;
    if (comma == std::string_view::npos) break;
    demuxer_names.remove_prefix(comma + 1);
  }
  return false;
}

std::string leading_bytes_hex(std::span<const uint8_t> bytes) {
  static const char* digits = "0123456789abcdef";
  std::string hex;
  for (size_t i = 0; i < std::min<size_t>(bytes.size(), 8); ++i) {
    hex += digits[bytes[i] >> 4];
    hex += digits[bytes[i] & 15];
    hex += ' ';
  }
  return hex;
}

[[noreturn]] void refuse_container(const AVInputFormat& format) {
  const std::string_view name = format.name;
  if (name.find("webp") != std::string_view::npos)
    fail("this is a WebP image, which FFmpeg's libraries are not used for (AnimatedWebpDecoder reads WebP animations)");
  if (name.find("_pipe") != std::string_view::npos || name == "image2")
    fail("this is an image (", name, "), not a video: decode it with decode_image");
  fail("the container ", name, " (", format.long_name ? format.long_name : "?",
       ") is not supported as video; supported: ", kSupportedContainers);
}

// Containers that point at other files or URLs (HLS, DASH, concat lists, MOV data references)
// reach them through io_open: nothing but the bytes we were given is ever read.
int refuse_nested_open(AVFormatContext*, AVIOContext**, const char* url, int, AVDictionary**) {
  av_log(nullptr, AV_LOG_ERROR, "the file refers to another resource (%s), which is not opened", url ? url : "");
  return AVERROR(EPERM);
}

// ---- input from memory ---------------------------------------------------------------------------

struct MemoryInput {
  std::span<const uint8_t> bytes;
  int64_t position = 0;
};

int read_memory(void* opaque, uint8_t* buffer, int size) {
  auto* in = static_cast<MemoryInput*>(opaque);
  const int64_t left = int64_t(in->bytes.size()) - in->position;
  if (left <= 0 || size <= 0) return AVERROR_EOF;
  const int n = int(std::min<int64_t>(left, size));
  std::memcpy(buffer, in->bytes.data() + in->position, size_t(n));
  in->position += n;
  return n;
}

int64_t seek_memory(void* opaque, int64_t offset, int whence) {
  auto* in = static_cast<MemoryInput*>(opaque);
  const int64_t size = int64_t(in->bytes.size());
  if (whence & AVSEEK_SIZE) return size;
  // Offsets beyond the file are refused before the addition could overflow.
  if (offset > size || offset < -size) return AVERROR(EINVAL);
  int64_t target = 0;
  switch (whence & ~AVSEEK_FORCE) {
    case SEEK_SET: target = offset; break;
    case SEEK_CUR: target = in->position + offset; break;
    case SEEK_END: target = size + offset; break;
    default: return AVERROR(EINVAL);
  }
  if (target < 0 || target > size) return AVERROR(EINVAL);
  in->position = target;
  return target;
}

constexpr int kIoBufferBytes = 64 << 10;

// One opened container over the bytes, positioned at its start, with its first video stream
// chosen and every other stream discarded. Never moved: the AVIOContext points at `input`.
struct Demuxer {
  MemoryInput input;
  ffmpeg::IoContextPtr io;  // declared before `format`: outlives it
  ffmpeg::InputFormatPtr format;
  int stream_index = -1;

  Demuxer() = default;
  Demuxer(const Demuxer&) = delete;
  Demuxer& operator=(const Demuxer&) = delete;
  AVStream* stream() const { return format->streams[stream_index]; }
};

std::unique_ptr<Demuxer> open_demuxer(std::span<const uint8_t> bytes) {
  auto demuxer = std::make_unique<Demuxer>();
  demuxer->input.bytes = bytes;
  auto* buffer = static_cast<uint8_t*>(av_malloc(kIoBufferBytes));
  if (buffer == nullptr) fail("out of memory for the video input buffer");
  AVIOContext* io = avio_alloc_context(buffer, kIoBufferBytes, 0, &demuxer->input, read_memory, nullptr, seek_memory);
  if (io == nullptr) {
    av_free(buffer);
    fail("out of memory for the video input");
  }
  demuxer->io.reset(io);

  // Probe ourselves first, so that a refused format is named and its demuxer never runs.
  const AVInputFormat* format = nullptr;
  const int score = av_probe_input_buffer2(io, &format, nullptr, nullptr, 0, 0);
  if (score < 0 || format == nullptr)
    fail("unrecognised video format (", bytes.size(), " bytes starting with ", leading_bytes_hex(bytes),
         "); supported: ", kSupportedContainers);
  if (!container_allowed(format->name)) refuse_container(*format);

  AVFormatContext* context = avformat_alloc_context();
  if (context == nullptr) fail("out of memory for the video container");
  context->pb = io;
  context->io_open = refuse_nested_open;
  DictionaryFreer options;
  av_dict_set(&options.dictionary, "format_whitelist", kContainerWhitelist, 0);
  av_dict_set(&options.dictionary, "codec_whitelist", decoder_whitelist().c_str(), 0);
  // On failure avformat_open_input frees the context itself.
  if (const int ret = avformat_open_input(&context, nullptr, format, &options.dictionary); ret < 0)
    fail_ffmpeg(str("cannot open the video (", format->name, ")"), ret);
  demuxer->format.reset(context);
  if (const int ret = avformat_find_stream_info(context, nullptr); ret < 0)
    fail_ffmpeg("cannot read the video's stream information", ret);

  // The first video stream that is not cover art (ffmpeg's -map 0:v:0 for ordinary files).
  int audio_streams = 0, cover_pictures = 0;
  for (unsigned i = 0; i < context->nb_streams; ++i) {
    const AVStream* stream = context->streams[i];
    if (stream->codecpar->codec_type == AVMEDIA_TYPE_AUDIO) ++audio_streams;
    if (stream->codecpar->codec_type != AVMEDIA_TYPE_VIDEO) continue;
    if (stream->disposition & AV_DISPOSITION_ATTACHED_PIC) {
      ++cover_pictures;
      continue;
    }
    if (demuxer->stream_index < 0) demuxer->stream_index = int(i);
  }
  if (demuxer->stream_index < 0)
    fail("the file has no video stream (", context->nb_streams, " streams: ", audio_streams, " audio",
         cover_pictures ? str(", ", cover_pictures, " cover picture") : std::string(), ")");
  for (unsigned i = 0; i < context->nb_streams; ++i)
    if (int(i) != demuxer->stream_index) context->streams[i]->discard = AVDISCARD_ALL;
  return demuxer;
}

// ---- RGB conversion, as the golden's ffmpeg command does it ---------------------------------------

// libavfilter's scale filter (FFmpeg 5.1) with in_color_matrix "auto": the frame's own matrix,
// BT.601 when the tag is unspecified, reserved or unknown to swscale.
int swscale_matrix(int colorspace) {
  return colorspace < 1 || colorspace > 10 || colorspace == 8 ? SWS_CS_ITU601 : colorspace;
}

// A C enum field read as the int it holds. Colour tags come from the file, and a value outside
// the enum (legal in C) is undefined behaviour to load as the C++ enum type.
template <typename Enum>
int enum_value(const Enum& field) {
  static_assert(sizeof(Enum) == sizeof(int));
  int value = 0;
  std::memcpy(&value, &field, sizeof(value));
  return value;
}

class RgbConverter {
 public:
  RgbImage convert(const AVFrame& frame) {
    const auto format = AVPixelFormat(frame.format);
    if (!sws_ || frame.width != width_ || frame.height != height_ || format != format_) prepare(frame.width, frame.height, format);
    set_colour_details(frame);
    const int rows = sws_scale(sws_.get(), frame.data, frame.linesize, 0, frame.height, rgb_->data, rgb_->linesize);
    if (rows != frame.height) fail("swscale converted ", rows, " of ", frame.height, " rows to RGB");
    RgbImage out(frame.width, frame.height);
    for (int y = 0; y < frame.height; ++y)
      std::memcpy(out.row(y), rgb_->data[0] + size_t(y) * size_t(rgb_->linesize[0]), out.row_bytes());
    return out;
  }

 private:
  // The scale filter's context: the command's sws_flags, and for yuv420p the MPEG-2 chroma
  // siting it sets explicitly (which equals swscale's default). The output frame has FFmpeg's
  // padded rows, like the filter's, and is copied into a packed RgbImage.
  void prepare(int width, int height, AVPixelFormat format) {
    if (av_pix_fmt_desc_get(format) == nullptr) fail("the decoder produced frames of unknown pixel format ", int(format));
    sws_.reset(sws_alloc_context());
    if (!sws_) fail("out of memory for the RGB converter");
    SwsContext* s = sws_.get();
    av_opt_set_int(s, "sws_flags", SWS_BICUBIC | SWS_ACCURATE_RND | SWS_FULL_CHR_H_INT, 0);
    av_opt_set_int(s, "srcw", width, 0);
    av_opt_set_int(s, "srch", height, 0);
    av_opt_set_int(s, "src_format", format, 0);
    av_opt_set_int(s, "dstw", width, 0);
    av_opt_set_int(s, "dsth", height, 0);
    av_opt_set_int(s, "dst_format", AV_PIX_FMT_RGB24, 0);
    if (format == AV_PIX_FMT_YUV420P) av_opt_set_int(s, "src_v_chr_pos", 128, 0);
    if (const int ret = sws_init_context(s, nullptr, nullptr); ret < 0) {
      sws_.reset();
      fail_ffmpeg(str("cannot convert ", av_get_pix_fmt_name(format), " frames to RGB"), ret);
    }
    rgb_ = allocate_frame();
    rgb_->format = AV_PIX_FMT_RGB24;
    rgb_->width = width;
    rgb_->height = height;
    if (const int ret = av_frame_get_buffer(rgb_.get(), 0); ret < 0) {
      sws_.reset();
      fail_ffmpeg("cannot allocate an RGB frame", ret);
    }
    width_ = width;
    height_ = height;
    format_ = format;
  }

  // What the scale filter does before every frame: the frame's matrix for both tables, its range
  // when tagged (otherwise swscale's own: limited for YUV, full for the yuvj formats).
  void set_colour_details(const AVFrame& frame) {
    int* inverse_table = nullptr;
    int* table = nullptr;
    int source_full = 0, destination_full = 0, brightness = 0, contrast = 0, saturation = 0;
    if (sws_getColorspaceDetails(sws_.get(), &inverse_table, &source_full, &table, &destination_full, &brightness,
                                 &contrast, &saturation) < 0)
      return;  // only for a context swscale did not set up, which prepare() rules out
    const int* matrix = sws_getCoefficients(swscale_matrix(enum_value(frame.colorspace)));
    const int range = enum_value(frame.color_range);
    if (range != AVCOL_RANGE_UNSPECIFIED) source_full = range == AVCOL_RANGE_JPEG;
    sws_setColorspaceDetails(sws_.get(), matrix, source_full, matrix, destination_full, brightness, contrast, saturation);
  }

  ffmpeg::SwsContextPtr sws_;
  FramePtr rgb_;
  int width_ = 0, height_ = 0;
  AVPixelFormat format_ = AV_PIX_FMT_NONE;
};

// Multiplies before dividing, so that whole seconds come out exact (61440 * 1 / 12288 = 5).
double seconds(double ticks, AVRational time_base) { return ticks * time_base.num / time_base.den; }

void check_duration(double seconds, std::string_view what, const VideoDecodeOptions& options) {
  if (seconds > options.max_duration_seconds)
    fail("the video ", what, " a duration of ", seconds, " s, above the limit of ", options.max_duration_seconds, " s");
}

// One frame of the stream, in presentation order.
struct FrameEntry {
  int64_t timestamp;     // pts (dts when the packet has none), in the stream's time base
  int64_t decode_order;  // position among the stream's frame packets in file order
  bool keyframe;
};

}  // namespace

double VideoInfo::fps_from_content() const {
  return duration_seconds > 0 && frame_count > 0 ? double(frame_count) / duration_seconds : average_fps;
}

struct VideoDecoder::State {
  std::span<const uint8_t> bytes;  // the caller's
  VideoDecodeOptions options;
  VideoInfo info;
  VideoDecodeStats stats;

  std::vector<FrameEntry> frames;         // [frame_count], presentation order
  std::vector<int64_t> start_keyframe;    // [frame_count] frame to decode from; -1: from the top
  bool identify_by_timestamp = false;     // every frame has its own timestamp
  bool seeking_allowed = false;           // starts as identify_by_timestamp; off after a bad seek

  const AVCodec* decoder = nullptr;
  CodecContextPtr codec;
  PacketPtr packet;
  FramePtr frame;
  RgbConverter converter;

  // Where the demuxer and decoder stand; null demuxer: reopen at the top before decoding.
  std::unique_ptr<Demuxer> demuxer;
  int64_t last_frame_out = -1;    // presentation index of the decoder's last frame since the top/seek
  int64_t last_packet_read = -1;  // decode order of the last packet read since the top/seek
  int64_t frames_out_in_order = 0;  // frames out since the top (the index when timestamps are not usable)
  int64_t seek_landing = -1;      // after a seek: decode order of the keyframe asked for
  bool draining = false;

  void scan(Demuxer& d);
  void open_codec(const AVStream& stream);
  int64_t frame_at(int64_t timestamp) const;
  void restart();
  bool seek_to(int64_t keyframe);
  void position_for(int64_t target);
  bool read_packet();
  struct Outcome {
    bool reached = false;
    std::string problem;  // why not
  };
  Outcome decode_until(int64_t target, std::span<const int64_t> wanted, std::vector<RgbImage>& decoded,
                       std::vector<char>& have);
};

// Reads every packet of the chosen stream once: the frame count, the timestamps and keyframes,
// the span of time. Nothing is decoded.
void VideoDecoder::State::scan(Demuxer& d) {
  const AVStream& stream = *d.stream();
  PacketPtr scan_packet(av_packet_alloc());
  if (!scan_packet) fail("out of memory for a video packet");
  struct Scanned {
    int64_t timestamp, end;
    bool keyframe;
  };
  std::vector<Scanned> scanned;  // decode order
  int64_t packets_of_stream = 0, packets_read = 0;
  // Other streams are discarded, but a demuxer may still hand some packets over; bound those too.
  const int64_t max_packets_read = options.max_frames * 8 + 1024;
  for (;;) {
    const int ret = av_read_frame(d.format.get(), scan_packet.get());
    if (ret == AVERROR_EOF) break;
    if (ret < 0) fail_ffmpeg(str("the video is damaged or truncated after ", scanned.size(), " frames"), ret);
    const AVPacket& p = *scan_packet;
    const int stream_index = p.stream_index, flags = p.flags;
    const int64_t pts = p.pts, dts = p.dts, duration = p.duration;
    av_packet_unref(scan_packet.get());
    if (++packets_read > max_packets_read) fail("the video has more than ", max_packets_read, " packets");
    if (stream_index != d.stream_index) continue;
    ++packets_of_stream;
    if (flags & AV_PKT_FLAG_CORRUPT) fail("the video is damaged or truncated: packet ", packets_of_stream, " is incomplete");
    if (flags & AV_PKT_FLAG_DISCARD) continue;  // before an edit list's start: the decoder drops it
    if (int64_t(scanned.size()) >= options.max_frames)
      fail("the video has more than ", options.max_frames, " frames, the limit");
    const int64_t timestamp = pts != AV_NOPTS_VALUE ? pts : dts;
    scanned.push_back({timestamp, timestamp == AV_NOPTS_VALUE ? timestamp : timestamp + std::max<int64_t>(duration, 0),
                       (flags & AV_PKT_FLAG_KEY) != 0});
  }
  // MP4 and a few others declare their sample count: fewer packets means a cut file.
  if (stream.nb_frames > 0 && packets_of_stream < stream.nb_frames)
    fail("the video is truncated: its stream declares ", stream.nb_frames, " frames but only ", packets_of_stream,
         " are in the file");
  if (scanned.empty()) fail("the video stream has no frames");

  const int64_t n = int64_t(scanned.size());
  std::vector<int64_t> order(static_cast<size_t>(n));  // presentation order -> decode order
  std::iota(order.begin(), order.end(), 0);
  identify_by_timestamp = std::none_of(scanned.begin(), scanned.end(), [](const Scanned& s) { return s.timestamp == AV_NOPTS_VALUE; });
  if (identify_by_timestamp) {
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return scanned[size_t(a)].timestamp < scanned[size_t(b)].timestamp; });
    for (int64_t i = 1; i < n && identify_by_timestamp; ++i)
      identify_by_timestamp = scanned[size_t(order[size_t(i)])].timestamp != scanned[size_t(order[size_t(i - 1)])].timestamp;
    if (!identify_by_timestamp) std::iota(order.begin(), order.end(), 0);  // duplicates: decode order it is
  }
  seeking_allowed = identify_by_timestamp;

  frames.resize(size_t(n));
  start_keyframe.resize(size_t(n));
  int64_t last_keyframe = -1;
  for (int64_t i = 0; i < n; ++i) {
    const Scanned& s = scanned[size_t(order[size_t(i)])];
    frames[size_t(i)] = {s.timestamp, order[size_t(i)], s.keyframe};
    if (s.keyframe) last_keyframe = i;
    start_keyframe[size_t(i)] = last_keyframe;
  }

  info.frame_count = n;
  if (identify_by_timestamp) {
    int64_t end = frames.back().timestamp;
    for (const Scanned& s : scanned) end = std::max(end, s.end);
    info.duration_seconds = seconds(double(end) - double(frames.front().timestamp), stream.time_base);
    check_duration(info.duration_seconds, "spans", options);
  }
}

void VideoDecoder::State::open_codec(const AVStream& stream) {
  codec.reset(avcodec_alloc_context3(decoder));
  if (!codec) fail("out of memory for the video decoder");
  if (const int ret = avcodec_parameters_to_context(codec.get(), stream.codecpar); ret < 0)
    fail_ffmpeg("cannot set up the video decoder", ret);
  // One thread, like the goldens' command (the output is bit-identical with more, but a request's
  // work stays on its own thread). The decoder itself refuses a bitstream whose frames exceed the
  // pixel limit; decoders check their padded (coded) size, so a limit set at the stream's exact
  // size is widened by the padding to the largest coding block (128).
  codec->thread_count = 1;
  codec->pkt_timebase = stream.time_base;
  codec->max_pixels = std::max(options.max_pixels, (int64_t(info.width) + 128) * (int64_t(info.height) + 128));
  if (const int ret = avcodec_open2(codec.get(), decoder, nullptr); ret < 0)
    fail_ffmpeg(str("cannot open the ", decoder->name, " decoder"), ret);
  packet.reset(av_packet_alloc());
  if (!packet) fail("out of memory for a video packet");
  frame = allocate_frame();
}

int64_t VideoDecoder::State::frame_at(int64_t timestamp) const {
  const auto it = std::lower_bound(frames.begin(), frames.end(), timestamp,
                                   [](const FrameEntry& f, int64_t t) { return f.timestamp < t; });
  return it != frames.end() && it->timestamp == timestamp ? int64_t(it - frames.begin()) : -1;
}

void VideoDecoder::State::restart() {
  demuxer.reset();
  demuxer = open_demuxer(bytes);
  avcodec_flush_buffers(codec.get());
  ++stats.restarts;
  last_frame_out = last_packet_read = seek_landing = -1;
  frames_out_in_order = 0;
  draining = false;
}

bool VideoDecoder::State::seek_to(int64_t keyframe) {
  const FrameEntry& k = frames[size_t(keyframe)];
  if (av_seek_frame(demuxer->format.get(), demuxer->stream_index, k.timestamp, AVSEEK_FLAG_BACKWARD) < 0) return false;
  avcodec_flush_buffers(codec.get());
  ++stats.seeks;
  last_frame_out = last_packet_read = -1;
  seek_landing = k.decode_order;
  draining = false;
  return true;
}

// Seek or reopen only when going forward cannot reach the target or would read packets that
// the target's keyframe makes unnecessary.
void VideoDecoder::State::position_for(int64_t target) {
  if (!demuxer) restart();
  const bool behind = last_frame_out >= target;
  if (!seeking_allowed) {
    if (behind) restart();
    return;
  }
  const int64_t keyframe = start_keyframe[size_t(target)];
  const bool keyframe_ahead = keyframe >= 0 && frames[size_t(keyframe)].decode_order > last_packet_read + 1;
  if (!behind && !keyframe_ahead) return;
  if (keyframe < 0) {
    restart();
  } else if (!seek_to(keyframe)) {
    seeking_allowed = false;
    restart();
  }
}

// The next packet of our stream; false at the end of the file.
bool VideoDecoder::State::read_packet() {
  for (;;) {
    const int ret = av_read_frame(demuxer->format.get(), packet.get());
    if (ret == AVERROR_EOF) return false;
    if (ret < 0) fail_ffmpeg("cannot read the video's packets", ret);
    if (packet->stream_index == demuxer->stream_index) {
      if (packet->flags & AV_PKT_FLAG_CORRUPT) fail("the video is damaged: an incomplete packet");
      return true;
    }
    av_packet_unref(packet.get());
  }
}

VideoDecoder::State::Outcome VideoDecoder::State::decode_until(int64_t target, std::span<const int64_t> wanted,
                                                               std::vector<RgbImage>& decoded, std::vector<char>& have) {
  for (;;) {
    int ret = avcodec_receive_frame(codec.get(), frame.get());
    if (ret == 0) {
      FrameUnref unref{frame.get()};
      ++stats.frames_decoded;
      int64_t index = frames_out_in_order++;
      if (identify_by_timestamp) {
        const int64_t timestamp = frame->pts != AV_NOPTS_VALUE ? frame->pts : frame->best_effort_timestamp;
        index = frame_at(timestamp);
        if (index < 0) return {false, str("the decoder gave a frame at timestamp ", timestamp, " that no packet has")};
      }
      // A frame shown before one already seen: after a seek into an open group of pictures, its
      // leading frames (before the keyframe we asked for, so never a target of this pass).
      if (index <= last_frame_out) continue;
      last_frame_out = index;
      if (frame->width != info.width || frame->height != info.height)
        fail("frame ", index, " is ", frame->width, "x", frame->height, " but the stream is ", info.width, "x", info.height,
             ": a change of frame size within a video is not supported");
      const auto it = std::lower_bound(wanted.begin(), wanted.end(), index);
      if (it != wanted.end() && *it == index && !have[size_t(it - wanted.begin())]) {
        if ((frame->flags & AV_FRAME_FLAG_CORRUPT) || frame->decode_error_flags)
          return {false, str("frame ", index, " is damaged (the decoder concealed errors in it)")};
        decoded[size_t(it - wanted.begin())] = converter.convert(*frame);
        have[size_t(it - wanted.begin())] = 1;
      }
      if (index < target) continue;
      if (index == target) return {true, {}};
      return {false, str("the decoder skipped frame ", target)};
    }
    if (ret == AVERROR_EOF) return {false, str("the stream ended after frame ", last_frame_out)};
    if (ret != AVERROR(EAGAIN)) return {false, "the decoder failed: " + ffmpeg_error_text(ret)};
    if (draining) return {false, "the decoder wants input after the end of the stream"};
    if (!read_packet()) {
      avcodec_send_packet(codec.get(), nullptr);  // drain the frames the decoder still holds
      draining = true;
      continue;
    }
    if (identify_by_timestamp) {
      const int64_t timestamp = packet->pts != AV_NOPTS_VALUE ? packet->pts : packet->dts;
      const int64_t index = frame_at(timestamp);
      if (index >= 0) {  // discarded packets (edit lists) are not frames
        const int64_t order = frames[size_t(index)].decode_order;
        if (seek_landing >= 0 && order > seek_landing) {
          av_packet_unref(packet.get());
          return {false, "a seek landed after the keyframe it was asked for"};
        }
        seek_landing = -1;
        last_packet_read = std::max(last_packet_read, order);
      }
    } else {
      ++last_packet_read;
    }
    ret = avcodec_send_packet(codec.get(), packet.get());
    av_packet_unref(packet.get());
    if (ret < 0) return {false, "the decoder rejected a packet: " + ffmpeg_error_text(ret)};
  }
}

VideoDecoder::VideoDecoder(std::span<const uint8_t> bytes, const VideoDecodeOptions& options)
    : state_(std::make_unique<State>()) {
  state_->bytes = bytes;
  state_->options = options;
  open();
}

void VideoDecoder::open() {
  LogCapture log;
  State& s = *state_;
  const VideoDecodeOptions& options = s.options;
  if (s.bytes.empty()) fail("cannot decode an empty video (0 bytes)");
  if (int64_t(s.bytes.size()) > options.max_file_bytes)
    fail("the video has ", s.bytes.size(), " bytes, above the limit of ", options.max_file_bytes);

  std::unique_ptr<Demuxer> demuxer = open_demuxer(s.bytes);
  const AVFormatContext& format = *demuxer->format;
  const AVStream& stream = *demuxer->stream();
  const AVCodecParameters& parameters = *stream.codecpar;
  s.info.container = format.iformat->name;

  if (!codec_allowed(parameters.codec_id))
    fail("the video codec ", avcodec_get_name(parameters.codec_id), " is not supported; supported: ", supported_codecs());
  s.decoder = avcodec_find_decoder(parameters.codec_id);
  if (s.decoder == nullptr) fail("this FFmpeg has no decoder for ", avcodec_get_name(parameters.codec_id));
  s.info.codec = s.decoder->name;

  // Limits from the headers, before any frame is decoded.
  s.info.width = parameters.width;
  s.info.height = parameters.height;
  if (parameters.width <= 0 || parameters.height <= 0)
    fail("the video stream declares no valid frame size (", parameters.width, "x", parameters.height, ")");
  if (int64_t(parameters.width) * parameters.height > options.max_pixels)
    fail("video frames of ", parameters.width, "x", parameters.height, " = ", int64_t(parameters.width) * parameters.height,
         " pixels exceed the limit of ", options.max_pixels, " pixels");
  if (stream.time_base.num <= 0 || stream.time_base.den <= 0)
    fail("the video stream has an invalid time base ", stream.time_base.num, "/", stream.time_base.den);
  if (format.duration != AV_NOPTS_VALUE && format.duration > 0)
    check_duration(double(format.duration) / AV_TIME_BASE, "container declares", options);
  if (stream.duration != AV_NOPTS_VALUE && stream.duration > 0)
    check_duration(seconds(double(stream.duration), stream.time_base), "stream declares", options);
  if (stream.nb_frames > options.max_frames)
    fail("the video declares ", stream.nb_frames, " frames, above the limit of ", options.max_frames);
  if (stream.avg_frame_rate.num > 0 && stream.avg_frame_rate.den > 0) s.info.average_fps = av_q2d(stream.avg_frame_rate);

  s.scan(*demuxer);
  if (!s.identify_by_timestamp) {  // no usable timestamps: the header's duration, if any
    if (stream.duration != AV_NOPTS_VALUE && stream.duration > 0) s.info.duration_seconds = seconds(double(stream.duration), stream.time_base);
    else if (format.duration != AV_NOPTS_VALUE && format.duration > 0) s.info.duration_seconds = double(format.duration) / AV_TIME_BASE;
  }
  if (parameters.codec_id == AV_CODEC_ID_GIF) check_animation_cost(s.info.frame_count, s.info.width, s.info.height, options);
  s.open_codec(stream);
  // The scan has consumed this demuxer; decoding reopens one at the top.
}

VideoDecoder::~VideoDecoder() = default;
VideoDecoder::VideoDecoder(VideoDecoder&&) noexcept = default;
VideoDecoder& VideoDecoder::operator=(VideoDecoder&&) noexcept = default;

const VideoInfo& VideoDecoder::info() const { return state_->info; }
const VideoDecodeStats& VideoDecoder::stats() const { return state_->stats; }

std::vector<RgbImage> VideoDecoder::decode_frames(std::span<const int64_t> indices) {
  LogCapture log;
  State& s = *state_;
  const std::vector<int64_t> wanted = frames_to_decode(indices, s.info, s.options);
  std::vector<RgbImage> decoded(wanted.size());
  std::vector<char> have(wanted.size(), 0);
  try {
    for (size_t k = 0; k < wanted.size(); ++k) {
      while (!have[k]) {
        s.position_for(wanted[k]);
        const State::Outcome outcome = s.decode_until(wanted[k], wanted, decoded, have);
        if (outcome.reached) break;
        if (!s.seeking_allowed)
          fail("cannot decode video frame ", wanted[k], " of ", s.info.frame_count, ": ", outcome.problem);
        // Reading in order from the top cannot be misled by a seek; it is the last resort.
        s.seeking_allowed = false;
        s.demuxer.reset();
      }
    }
  } catch (...) {
    s.demuxer.reset();  // the next call starts again from the top
    throw;
  }

  // In the order asked; a frame asked for once is moved, repeats are copies.
  std::vector<int64_t> uses(wanted.size(), 0);
  for (const int64_t i : indices) ++uses[size_t(std::lower_bound(wanted.begin(), wanted.end(), i) - wanted.begin())];
  std::vector<RgbImage> out;
  out.reserve(indices.size());
  for (const int64_t i : indices) {
    const size_t k = size_t(std::lower_bound(wanted.begin(), wanted.end(), i) - wanted.begin());
    if (--uses[k] == 0) out.push_back(std::move(decoded[k]));
    else out.push_back(decoded[k]);
  }
  return out;
}

std::vector<RgbImage> VideoDecoder::decode_all_frames() {
  std::vector<int64_t> all(size_t(state_->info.frame_count));
  std::iota(all.begin(), all.end(), 0);
  return decode_frames(all);
}

std::vector<int64_t> frames_to_decode(std::span<const int64_t> indices, const VideoInfo& info,
                                      const VideoDecodeOptions& options) {
  const int64_t n = info.frame_count;
  for (const int64_t i : indices)
    if (i < 0 || i >= n) fail("video frame index ", i, " is out of range: the video has ", n, " frames");
  const int64_t frame_bytes = int64_t(info.width) * info.height * 3;
  if (int64_t(indices.size()) > options.max_output_bytes / frame_bytes)
    fail(indices.size(), " video frames of ", info.width, "x", info.height, " exceed the output limit of ",
         options.max_output_bytes, " bytes");
  std::vector<int64_t> wanted(indices.begin(), indices.end());
  std::sort(wanted.begin(), wanted.end());
  wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end());
  return wanted;
}

void check_animation_cost(int64_t frames, int width, int height, const VideoDecodeOptions& options) {
  if (frames > options.max_frames) fail("the animation has ", frames, " frames, above the limit of ", options.max_frames);
  const int64_t pixels = int64_t(width) * int64_t(height);
  if (pixels > 0 && frames > options.max_animation_pixels / pixels)
    fail("the animation's ", frames, " frames of ", width, "x", height, " (each drawn over the ones before it) exceed the limit of ",
         options.max_animation_pixels, " pixels decoded");
}

std::vector<uint8_t> read_video_file(const std::string& path, const VideoDecodeOptions& options) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) fail("cannot read video file ", path, ": ", ec.message());
  if (int64_t(size) > options.max_file_bytes)
    fail("video file ", path, " has ", size, " bytes, above the limit of ", options.max_file_bytes);
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot open video file ", path);
  std::vector<uint8_t> bytes(size);
  in.read(reinterpret_cast<char*>(bytes.data()), std::streamsize(size));
  if (size_t(in.gcount()) != size) fail("short read on video file ", path);
  return bytes;
}

}  // namespace qwen35
