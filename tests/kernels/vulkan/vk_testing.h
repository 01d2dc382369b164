// The device the Vulkan tests share (opened once, validation on) and host <-> device helpers.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "kernels/vulkan/buffer.h"
#include "kernels/vulkan/device.h"
#include "kernels/vulkan/ops.h"
#include "kernels/vulkan/pass.h"

namespace qwen35::vk::testing {

// nullptr when the machine has no Vulkan driver at all (the tests then skip, unless
// QWEN35_REQUIRE_VULKAN=1 makes that a failure).
inline Device* test_device() {
  static std::unique_ptr<Device> dev = [] {
    std::unique_ptr<Device> d;
    if (list_devices().empty()) return d;
    DeviceOptions o;
    o.validation = true;  // always in tests
    d = Device::open(o);
    return d;
  }();
  return dev.get();
}

#define QWEN35_NEED_VULKAN()                                                                   \
  Device* dev = ::qwen35::vk::testing::test_device();                                          \
  if (!dev) {                                                                                  \
    const char* req = std::getenv("QWEN35_REQUIRE_VULKAN");                                    \
    if (req && std::strcmp(req, "1") == 0) FAIL() << "no Vulkan driver (QWEN35_REQUIRE_VULKAN=1)"; \
    GTEST_SKIP() << "no Vulkan driver on this machine";                                        \
  }                                                                                            \
  const int validation_errors_before = dev->validation_errors();                               \
  struct ValidationCheck {                                                                     \
    Device* d;                                                                                 \
    int before;                                                                                \
    ~ValidationCheck() { EXPECT_EQ(d->validation_errors(), before) << "Vulkan validation errors"; } \
  } validation_check{dev, validation_errors_before}

// A device buffer holding `v` (at least 4 bytes).
template <typename T>
std::unique_ptr<Buffer> to_device(Device& dev, const std::vector<T>& v) {
  auto b = std::make_unique<Buffer>(dev, v.size() * sizeof(T));
  if (!v.empty()) dev.upload(*b, 0, v.data(), v.size() * sizeof(T));
  return b;
}

template <typename T>
std::unique_ptr<Buffer> zeros(Device& dev, size_t n) {
  return to_device(dev, std::vector<T>(n, T{}));
}

template <typename T>
std::vector<T> from_device(Device& dev, const Buffer& b, size_t n) {
  std::vector<T> v(n);
  dev.download(b, 0, v.data(), n * sizeof(T));
  return v;
}

}  // namespace qwen35::vk::testing
