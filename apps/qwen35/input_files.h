// Reading the CLI's input files with a size cap, so an endless or huge input (/dev/zero, a FIFO,
// a multi-gigabyte file) is a clear error naming it, not an out-of-memory kill.
#pragma once

#include <cstddef>
#include <istream>
#include <string>

namespace qwen35::app {

constexpr size_t kMaxImageFileBytes = size_t(64) << 20;   // an image for `run`
constexpr size_t kMaxVideoFileBytes = size_t(1) << 30;    // a video for `run` (only its sampled frames are decoded)
constexpr size_t kMaxInputFileBytes = size_t(256) << 20;  // messages, tools: JSON with images inside
constexpr size_t kMaxInputLineBytes = size_t(64) << 20;   // one line on stdin (`tokenize`)

// The bytes of `path` ("-": stdin); throws qwen35::Error naming `what` when it cannot be read or
// holds more than max_bytes.
std::string read_capped(const std::string& path, size_t max_bytes, const std::string& what);

// Like std::getline (the '\n' is dropped); throws qwen35::Error for a line over max_bytes.
bool read_line_capped(std::istream& in, std::string& line, size_t max_bytes);

}  // namespace qwen35::app
