// A device buffer: one allocation of device-local memory, addressed by shaders through its device
// address (Vulkan 1.2 buffer device address), so a tensor is an address and a shape.
#pragma once

#include <vulkan/vulkan.h>

#include <cstddef>
#include <cstdint>

namespace qwen35::vk {

class Device;

class Buffer {
 public:
  enum class Kind { kDevice, kStaging };
  Buffer(Device& dev, size_t bytes, Kind kind = Kind::kDevice);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  size_t size() const { return size_; }
  VkBuffer handle() const { return buffer_; }
  // The address of byte `offset` (shaders read 32-bit words: keep offsets multiples of 4).
  VkDeviceAddress address(size_t offset = 0) const { return address_ + offset; }
  // Host pointer of host-visible memory (staging, or device memory that is host-visible), else null.
  void* mapped() const { return mapped_; }

 private:
  Device& dev_;
  size_t size_ = 0;
  VkBuffer buffer_ = VK_NULL_HANDLE;
  VkDeviceMemory memory_ = VK_NULL_HANDLE;
  VkDeviceAddress address_ = 0;
  void* mapped_ = nullptr;
};

}  // namespace qwen35::vk
