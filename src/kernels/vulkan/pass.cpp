#include "kernels/vulkan/pass.h"

#include "kernels/vulkan/buffer.h"
#include "kernels/vulkan/device.h"

namespace qwen35::vk {

Pass::Pass(Device& dev) : dev_(dev), cb_(dev.begin_commands()) {}

Pass::~Pass() {
  if (cb_) dev_.discard_commands(cb_);
}

void Pass::barrier() {
  if (!any_) {
    any_ = true;
    return;
  }
  VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                     VK_ACCESS_TRANSFER_WRITE_BIT;
  const VkPipelineStageFlags stages = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
  vkCmdPipelineBarrier(cb_, stages, stages, 0, 1, &mb, 0, nullptr, 0, nullptr);
}

void Pass::dispatch(const char* shader, const void* params, uint32_t bytes, uint32_t gx, uint32_t gy, uint32_t gz) {
  if (bytes > Device::kPushBytes) fail("vulkan: ", shader, "'s parameters take ", bytes, " bytes");
  if (gx == 0 || gy == 0 || gz == 0) return;
  barrier();
  vkCmdBindPipeline(cb_, VK_PIPELINE_BIND_POINT_COMPUTE, dev_.pipeline(shader));
  vkCmdPushConstants(cb_, dev_.pipeline_layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0, bytes, params);
  vkCmdDispatch(cb_, gx, gy, gz);
}

void Pass::copy(const Buffer& src, size_t src_offset, Buffer& dst, size_t dst_offset, size_t bytes) {
  if (src_offset + bytes > src.size() || dst_offset + bytes > dst.size()) fail("vulkan: a copy runs past its buffers");
  if (bytes == 0) return;
  barrier();
  VkBufferCopy c{src_offset, dst_offset, bytes};
  vkCmdCopyBuffer(cb_, src.handle(), dst.handle(), 1, &c);
}

void Pass::fill_zero(Buffer& dst, size_t offset, size_t bytes) {
  if (offset + bytes > dst.size() || offset % 4 || bytes % 4) fail("vulkan: fill_zero needs whole words inside the buffer");
  if (bytes == 0) return;
  barrier();
  vkCmdFillBuffer(cb_, dst.handle(), offset, bytes, 0);
}

void Pass::run() {
  VkCommandBuffer cb = cb_;
  cb_ = VK_NULL_HANDLE;
  dev_.submit_and_wait(cb, "a compute pass");
}

Grid grid_for(uint64_t n, uint32_t per_group) {
  const uint64_t groups = (n + per_group - 1) / per_group;
  Grid g;
  if (groups <= 65535) {
    g.x = uint32_t(groups == 0 ? 1 : groups);
  } else {
    g.x = 65535;
    g.y = uint32_t((groups + 65534) / 65535);
  }
  return g;
}

}  // namespace qwen35::vk
