// A Vulkan compute device: the instance, the chosen physical device, one compute queue, the
// pipelines of the embedded shaders and the staging memory of uploads and downloads.
//
// Thread contract: a Device is driven by one thread at a time (its passes, uploads and downloads
// share one queue and one staging buffer). Buffers are plain handles into it.
//
// Errors: every Vulkan call is checked. Device loss and exhausted device or host memory throw
// DeviceError with what was being done; after a loss the Device refuses further work (reopen it).
#pragma once

#include <vulkan/vulkan.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"

namespace qwen35::vk {

class DeviceError : public Error {
 public:
  enum class Kind { kLost, kOutOfMemory, kOther };
  DeviceError(Kind kind, const std::string& what) : Error(what), kind_(kind) {}
  Kind kind() const { return kind_; }

 private:
  Kind kind_;
};

// Throws DeviceError unless r is VK_SUCCESS; `what` names the step.
void check(VkResult r, const char* what);

// What `qwen35 info --devices` lists, and what selection looks at. Of the features, only float64
// changes what runs (the qmatmul variant); the others are listed for the reader of `info --devices`
// and enabled at device creation only once a shader needs them.
struct DeviceInfo {
  int index = 0;  // in the loader's order
  std::string name;
  std::string type;  // discrete, integrated, virtual, cpu, other
  std::string driver;
  uint32_t api_version = 0;
  uint64_t device_local_bytes = 0;  // the largest device-local heap
  uint32_t subgroup_size = 0;
  uint32_t max_shared_bytes = 0;
  bool float16 = false;          // shaderFloat16
  bool float64 = false;          // shaderFloat64 (the exact fma of the block-format dot products)
  bool int8 = false;             // shaderInt8
  bool int_dot = false;          // shaderIntegerDotProduct (int8 dot products)
  bool subgroup_arith = false;   // subgroup arithmetic in compute shaders
  bool usable = false;           // has what the backend needs (Vulkan 1.2, buffer device address)
  std::string missing;           // why not, when !usable
};

// The Vulkan devices the loader finds (empty when there is no loader or ICD).
std::vector<DeviceInfo> list_devices();
// The device selection prefers: discrete, then integrated, then virtual, then cpu (lavapipe); -1 if
// none is usable.
int best_device(const std::vector<DeviceInfo>& devices);
// What `--device` asks for, against the devices the loader finds: "cpu"; "vulkan" (the best usable
// device) or "vulkan:N" (device N of list_devices); "auto": the best usable device unless it is a
// software rasterizer (type cpu: lavapipe), which would be slower than the CPU backend itself.
// Throws for a malformed spec, and for a Vulkan device asked for by name that is missing or unusable.
struct DeviceChoice {
  int index = -1;   // the Vulkan device to open; -1: the CPU backend
  std::string why;  // one line for the start-up notice
};
DeviceChoice choose_device(const std::string& spec, const std::vector<DeviceInfo>& devices);
// QWEN35_VULKAN_VALIDATION=1: the Khronos validation layer is enabled and its errors counted.
bool validation_from_env();
// The device-local bytes the backend may use on `d`: its largest heap, or less where
// QWEN35_VULKAN_MEMORY_MIB caps it (what the fit check at load reads; tests force a model that
// does not fit with it). A malformed cap is an error.
uint64_t usable_device_bytes(const DeviceInfo& d);

struct DeviceOptions {
  int index = -1;  // -1: best_device
  bool validation = validation_from_env();
};

class Buffer;

class Device {
 public:
  static std::unique_ptr<Device> open(const DeviceOptions& opt = {});
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  const DeviceInfo& info() const { return info_; }
  VkDevice handle() const { return device_; }
  // Validation messages of severity error since open (0 without validation).
  int validation_errors() const;
  bool validation() const { return validation_; }

  // Host <-> device copies (blocking; through a staging buffer unless the memory is host-visible).
  void upload(Buffer& dst, size_t offset, const void* src, size_t bytes);
  void download(const Buffer& src, size_t offset, void* dst, size_t bytes);

  // The compute pipeline of an embedded shader (created once, through the pipeline cache).
  VkPipeline pipeline(const std::string& shader);
  VkPipelineLayout pipeline_layout() const { return layout_; }
  static constexpr uint32_t kPushBytes = 128;  // every shader's parameters: addresses and sizes

  // Runs a recorded command buffer and waits for it; throws DeviceError (and marks the device
  // lost) on device loss.
  VkCommandBuffer begin_commands();
  void submit_and_wait(VkCommandBuffer cb, const char* what);
  void discard_commands(VkCommandBuffer cb);

  // Memory: a device-local type for buffers, a host-visible one for staging.
  uint32_t memory_type(uint32_t type_bits, VkMemoryPropertyFlags want, VkMemoryPropertyFlags avoid = 0) const;
  VkMemoryPropertyFlags memory_flags(uint32_t type) const { return mem_.memoryTypes[type].propertyFlags; }
  void ensure_alive(const char* what) const;

 private:
  Device() = default;
  struct Messenger;
  DeviceInfo info_;
  bool validation_ = false;
  bool lost_ = false;
  VkInstance instance_ = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  std::unique_ptr<Messenger> messages_;
  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  VkPhysicalDeviceMemoryProperties mem_{};
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  uint32_t queue_family_ = 0;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;
  VkPipelineCache cache_ = VK_NULL_HANDLE;
  VkPipelineLayout layout_ = VK_NULL_HANDLE;
  std::map<std::string, VkPipeline> pipelines_;
  std::unique_ptr<Buffer> staging_;
};

}  // namespace qwen35::vk
