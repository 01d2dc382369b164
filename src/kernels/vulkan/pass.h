// One pass of work on the device: dispatches and copies recorded into one command buffer, each
// step behind a barrier on the one before (a pass is a chain of dependent steps), submitted once.
#pragma once

#include <vulkan/vulkan.h>

#include <cstddef>
#include <cstdint>

namespace qwen35::vk {

class Buffer;
class Device;

class Pass {
 public:
  explicit Pass(Device& dev);
  ~Pass();  // a pass never run is dropped
  Pass(const Pass&) = delete;
  Pass& operator=(const Pass&) = delete;

  Device& device() const { return dev_; }
  // Runs `shader` over groups (gx, gy, gz) with `params` (at most Device::kPushBytes) as its push
  // constants.
  void dispatch(const char* shader, const void* params, uint32_t bytes, uint32_t gx, uint32_t gy = 1, uint32_t gz = 1);
  template <typename P>
  void dispatch(const char* shader, const P& params, uint32_t gx, uint32_t gy = 1, uint32_t gz = 1) {
    dispatch(shader, &params, uint32_t(sizeof(P)), gx, gy, gz);
  }
  void copy(const Buffer& src, size_t src_offset, Buffer& dst, size_t dst_offset, size_t bytes);
  void fill_zero(Buffer& dst, size_t offset, size_t bytes);  // bytes a multiple of 4
  // Submits the pass and waits for it (throws DeviceError on device loss or exhausted memory).
  void run();

 private:
  void barrier();
  Device& dev_;
  VkCommandBuffer cb_ = VK_NULL_HANDLE;
  bool any_ = false;
};

// Groups for n items of `per_group` each, spilling past the 65535-group limit of x into y.
struct Grid {
  uint32_t x = 1, y = 1;
};
Grid grid_for(uint64_t n, uint32_t per_group);

}  // namespace qwen35::vk
