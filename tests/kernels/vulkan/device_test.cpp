// The device layer: listing and choosing devices, buffers, passes, and clear errors.
#include <gtest/gtest.h>

#include <numeric>

#include "kernels/vulkan/shader_table.h"
#include "vk_testing.h"

namespace qwen35::vk {
namespace {

using testing::from_device;
using testing::to_device;

TEST(VulkanDevice, SelectionPrefersDiscreteThenIntegratedThenCpu) {
  std::vector<DeviceInfo> d(4);
  d[0].type = "cpu";
  d[1].type = "integrated";
  d[2].type = "discrete";
  d[3].type = "discrete";
  for (auto& x : d) x.usable = true;
  d[2].device_local_bytes = 8;
  d[3].device_local_bytes = 16;  // the larger of two equal kinds
  EXPECT_EQ(best_device(d), 3);
  d[3].usable = false;
  EXPECT_EQ(best_device(d), 2);
  d[2].usable = false;
  EXPECT_EQ(best_device(d), 1);
  d[1].usable = false;
  EXPECT_EQ(best_device(d), 0);
  d[0].usable = false;
  EXPECT_EQ(best_device(d), -1);
}

// --device: auto leaves a software rasterizer to the CPU backend, vulkan[:N] insists.
TEST(VulkanDevice, DeviceChoiceFollowsTheSpec) {
  std::vector<DeviceInfo> d(2);
  d[0].type = "cpu";
  d[0].name = "llvmpipe";
  d[1].type = "integrated";
  d[1].name = "iGPU";
  d[1].index = 1;
  d[0].usable = true;
  EXPECT_EQ(choose_device("cpu", d).index, -1);
  EXPECT_EQ(choose_device("auto", d).index, -1);  // only lavapipe is usable
  EXPECT_NE(choose_device("auto", d).why.find("software rasterizer"), std::string::npos);
  EXPECT_EQ(choose_device("vulkan", d).index, 0);
  EXPECT_EQ(choose_device("vulkan:0", d).index, 0);
  EXPECT_THROW(choose_device("vulkan:1", d), Error);  // not usable
  d[1].usable = true;
  EXPECT_EQ(choose_device("auto", d).index, 1);
  EXPECT_EQ(choose_device("vulkan", d).index, 1);
  EXPECT_EQ(choose_device("vulkan:1", d).index, 1);
  EXPECT_EQ(choose_device("auto", {}).index, -1);
  EXPECT_THROW(choose_device("vulkan", {}), Error);
  for (const char* bad : {"vulkan:2", "vulkan:", "vulkan:x", "vulkan:-1", "gpu", "", "Vulkan"})
    EXPECT_THROW(choose_device(bad, d), Error) << bad;
}

TEST(VulkanDevice, ListsTheOpenedDevice) {
  QWEN35_NEED_VULKAN();
  const std::vector<DeviceInfo> all = list_devices();
  ASSERT_FALSE(all.empty());
  EXPECT_TRUE(dev->info().usable);
  EXPECT_FALSE(dev->info().name.empty());
  EXPECT_GT(dev->info().device_local_bytes, 0u);
  EXPECT_TRUE(dev->validation());
  // Every shader the build embeds is valid SPIR-V the device turns into a pipeline.
  for (const ShaderCode& s : shader_table())
    if (dev->info().float64 || !s.name.ends_with("_f64")) {
      EXPECT_NE(dev->pipeline(std::string(s.name)), VK_NULL_HANDLE) << s.name;
    }
}

TEST(VulkanDevice, UploadDownloadAndPassCopies) {
  QWEN35_NEED_VULKAN();
  for (size_t n : {1, 3, 1000, 100003}) {
    std::vector<uint8_t> v(n);
    std::iota(v.begin(), v.end(), uint8_t(7));
    Buffer a(*dev, n), b(*dev, n + 8);
    dev->upload(a, 0, v.data(), n);
    EXPECT_EQ(from_device<uint8_t>(*dev, a, n), v);
    Pass p(*dev);
    p.fill_zero(b, 0, (n + 8) / 4 * 4);
    p.copy(a, 0, b, 4, n);
    p.run();
    std::vector<uint8_t> got(n + 8);
    dev->download(b, 0, got.data(), n + 8);
    EXPECT_EQ(std::vector<uint8_t>(got.begin() + 4, got.begin() + 4 + long(n)), v) << n;
    EXPECT_EQ(got[0], 0);
  }
}

TEST(VulkanDevice, ClearErrors) {
  QWEN35_NEED_VULKAN();
  Buffer a(*dev, 16);
  std::vector<uint8_t> v(32);
  try {
    dev->upload(a, 8, v.data(), 16);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("past a buffer of 16"), std::string::npos) << e.what();
  }
  try {
    dev->pipeline("no_such_shader");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no_such_shader"), std::string::npos) << e.what();
  }
  // A pass dropped without running is discarded cleanly.
  { Pass p(*dev); }
  // Results map to DeviceError kinds the server can act on.
  try {
    check(VK_ERROR_DEVICE_LOST, "a test step");
  } catch (const DeviceError& e) {
    EXPECT_EQ(e.kind(), DeviceError::Kind::kLost);
    EXPECT_NE(std::string(e.what()).find("a test step"), std::string::npos);
  }
  try {
    check(VK_ERROR_OUT_OF_DEVICE_MEMORY, "allocating");
  } catch (const DeviceError& e) {
    EXPECT_EQ(e.kind(), DeviceError::Kind::kOutOfMemory);
  }
  // A buffer larger than any device accepts fails with a clear out-of-memory error.
  try {
    Buffer huge(*dev, size_t(1) << 50);
    FAIL() << "allocated 2^50 bytes";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("vulkan"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace qwen35::vk
