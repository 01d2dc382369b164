// libFuzzer target for a model-file reader that opens a path (safetensors; GGUF once it exists):
// the input is written to an in-memory file and opened as the reader opens any file. A bad file
// must be a qwen35::Error; every tensor view the reader hands out must lie inside the file (each
// byte is read, so AddressSanitizer sees a view that does not).
//
// Which reader: QWEN35_FUZZ_READER_HEADER (its header) and QWEN35_FUZZ_READER_TYPE (a class
// constructible from a path, with a tensors() map of TensorView), set by fuzz/CMakeLists.txt.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.h"
#include QWEN35_FUZZ_READER_HEADER

namespace {

int input_file() {
  static const int fd = memfd_create("qwen35-fuzz-input", 0);
  return fd;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const int fd = input_file();
  if (fd < 0 || ftruncate(fd, 0) != 0 || (size > 0 && pwrite(fd, data, size, 0) != ssize_t(size))) __builtin_trap();
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  try {
    const QWEN35_FUZZ_READER_TYPE file(path);
    unsigned sum = 0;
    for (const auto& [name, view] : file.tensors()) {
      const auto* bytes = static_cast<const unsigned char*>(view.data);
      for (size_t i = 0; i < view.nbytes; ++i) sum += bytes[i];
    }
    volatile unsigned sink = sum;
    (void)sink;
  } catch (const qwen35::Error&) {
  }
  return 0;
}
