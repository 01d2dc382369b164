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

std::string decoder_device_misfit(int index, const Model& model, int64_t context, DType kv) {
  const std::vector<vk::DeviceInfo> devices = vk::list_devices();
  if (index < 0 || index >= int(devices.size())) fail("vulkan: no device ", index);
  const vk::DeviceInfo& d = devices[size_t(index)];
  const uint64_t need = VulkanDecoderBackend::device_bytes(model.config().text, model.text_weights(), context, kv);
  const uint64_t have = vk::usable_device_bytes(d);
  if (need <= have) return {};
  constexpr uint64_t MiB = uint64_t(1) << 20;
  return str("the CPU: the text decoder needs ", (need + MiB - 1) / MiB, " MiB on the device (its weights and one ",
             context, "-token sequence), and ", d.name, " has ", have / MiB, " MiB usable",
             have < d.device_local_bytes ? " (QWEN35_VULKAN_MEMORY_MIB)" : "");
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

std::string decoder_device_misfit(int, const Model&, int64_t, DType) { fail("this build has no Vulkan backend"); }

#endif

}  // namespace qwen35
