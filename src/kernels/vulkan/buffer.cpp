#include "kernels/vulkan/buffer.h"

#include "kernels/vulkan/device.h"

namespace qwen35::vk {

Buffer::Buffer(Device& dev, size_t bytes, Kind kind) : dev_(dev), size_(bytes) {
  dev.ensure_alive("allocating a buffer");
  const size_t alloc = bytes < 4 ? 4 : (bytes + 3) / 4 * 4;  // shaders read whole words
  VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bi.size = alloc;
  bi.usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  if (kind == Kind::kDevice) bi.usage |= VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT;
  bi.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  VkDevice d = dev.handle();
  check(vkCreateBuffer(d, &bi, nullptr, &buffer_), "vkCreateBuffer");
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(d, buffer_, &req);
  uint32_t type;
  if (kind == Kind::kDevice) {
    type = dev.memory_type(req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT);
    if (type == ~0u)  // device memory the host sees: mapped coherent, or not at all
      type = dev.memory_type(req.memoryTypeBits,
                             VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT | VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                 VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
    if (type == ~0u) type = dev.memory_type(req.memoryTypeBits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
  } else {
    type = dev.memory_type(req.memoryTypeBits, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT |
                                                   VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
    if (type == ~0u)
      type = dev.memory_type(req.memoryTypeBits, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
  }
  if (type == ~0u) {
    vkDestroyBuffer(d, buffer_, nullptr);
    fail("vulkan: no memory type for a ", kind == Kind::kDevice ? "device" : "staging", " buffer");
  }
  VkMemoryAllocateFlagsInfo flags{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO};
  flags.flags = VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT;
  VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  if (kind == Kind::kDevice) ai.pNext = &flags;
  ai.allocationSize = req.size;
  ai.memoryTypeIndex = type;
  VkResult r = vkAllocateMemory(d, &ai, nullptr, &memory_);
  if (r != VK_SUCCESS) {
    vkDestroyBuffer(d, buffer_, nullptr);
    check(r, str("vkAllocateMemory of ", alloc, " bytes").c_str());
  }
  vkBindBufferMemory(d, buffer_, memory_, 0);
  if (dev.memory_flags(type) & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) {
    r = vkMapMemory(d, memory_, 0, VK_WHOLE_SIZE, 0, &mapped_);
    if (r != VK_SUCCESS) {
      vkFreeMemory(d, memory_, nullptr);
      vkDestroyBuffer(d, buffer_, nullptr);
      check(r, "vkMapMemory");
    }
  }
  if (kind == Kind::kDevice) {
    VkBufferDeviceAddressInfo info{VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO};
    info.buffer = buffer_;
    address_ = vkGetBufferDeviceAddress(d, &info);
  }
}

Buffer::~Buffer() {
  VkDevice d = dev_.handle();
  if (mapped_) vkUnmapMemory(d, memory_);
  vkDestroyBuffer(d, buffer_, nullptr);
  vkFreeMemory(d, memory_, nullptr);
}

}  // namespace qwen35::vk
