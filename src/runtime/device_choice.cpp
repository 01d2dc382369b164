#include "runtime/device_choice.h"

#include "core/error.h"

#if QWEN35_HAVE_VULKAN
#include "kernels/vulkan/device.h"
#include "model/vulkan/decoder_vulkan.h"
#endif

namespace qwen35 {

#if QWEN35_HAVE_VULKAN

int choose_decoder_device(const std::string& spec, std::string& why) {
  const vk::DeviceChoice c = vk::choose_device(spec, spec == "cpu" ? std::vector<vk::DeviceInfo>{} : vk::list_devices());
  why = c.why;
  return c.index;
}

std::unique_ptr<DecoderBackend> open_decoder_device(int index, const Model& model) {
  return VulkanDecoderBackend::open(index, model.config().text, model.text_weights());
}

#else

int choose_decoder_device(const std::string& spec, std::string& why) {
  if (spec == "cpu" || spec == "auto") {
    why = spec == "cpu" ? "the CPU (--device cpu)" : "the CPU: built without Vulkan";
    return -1;
  }
  if (spec == "vulkan" || spec.starts_with("vulkan:"))
    fail("--device ", spec, ": this build has no Vulkan backend (configure with libvulkan-dev and glslc)");
  fail("--device ", spec, ": expected auto, cpu, vulkan or vulkan:N");
}

std::unique_ptr<DecoderBackend> open_decoder_device(int, const Model&) {
  fail("this build has no Vulkan backend");
}

#endif

}  // namespace qwen35
