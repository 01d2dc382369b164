#include "kernels/vulkan/device.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "kernels/vulkan/buffer.h"
#include "kernels/vulkan/shader_table.h"

namespace qwen35::vk {

struct Device::Messenger {
  std::atomic<int> errors{0};
};

namespace {

constexpr size_t kStagingBytes = size_t(64) << 20;  // uploads and downloads go through in slices

const char* result_name(VkResult r) {
  switch (r) {
    case VK_ERROR_OUT_OF_HOST_MEMORY: return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED: return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST: return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_MEMORY_MAP_FAILED: return "VK_ERROR_MEMORY_MAP_FAILED";
    case VK_ERROR_LAYER_NOT_PRESENT: return "VK_ERROR_LAYER_NOT_PRESENT";
    case VK_ERROR_EXTENSION_NOT_PRESENT: return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_FEATURE_NOT_PRESENT: return "VK_ERROR_FEATURE_NOT_PRESENT";
    case VK_ERROR_INCOMPATIBLE_DRIVER: return "VK_ERROR_INCOMPATIBLE_DRIVER";
    case VK_ERROR_TOO_MANY_OBJECTS: return "VK_ERROR_TOO_MANY_OBJECTS";
    case VK_TIMEOUT: return "VK_TIMEOUT";
    default: return "VkResult";
  }
}

const char* type_name(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "cpu";
    default: return "other";
  }
}

int type_rank(const std::string& type) {
  if (type == "discrete") return 0;
  if (type == "integrated") return 1;
  if (type == "virtual") return 2;
  if (type == "cpu") return 3;
  return 4;
}

VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                          VkDebugUtilsMessageTypeFlagsEXT, const VkDebugUtilsMessengerCallbackDataEXT* data,
                                          void* user) {
  if (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) {
    static_cast<std::atomic<int>*>(user)->fetch_add(1);
    std::fprintf(stderr, "vulkan validation: %s\n", data->pMessage);
  } else if (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) {
    std::fprintf(stderr, "vulkan validation (warning): %s\n", data->pMessage);
  }
  return VK_FALSE;
}

bool has_layer(const char* name) {
  uint32_t n = 0;
  vkEnumerateInstanceLayerProperties(&n, nullptr);
  std::vector<VkLayerProperties> layers(n);
  vkEnumerateInstanceLayerProperties(&n, layers.data());
  for (const auto& l : layers)
    if (std::strcmp(l.layerName, name) == 0) return true;
  return false;
}

// VK_NULL_HANDLE when the loader finds no driver at all.
VkInstance create_instance(bool validation) {
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "qwen35";
  app.apiVersion = VK_API_VERSION_1_2;
  VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ci.pApplicationInfo = &app;
  const char* layer = "VK_LAYER_KHRONOS_validation";
  const char* ext = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
  if (validation) {
    if (!has_layer(layer))
      fail("vulkan: validation was asked for (QWEN35_VULKAN_VALIDATION=1) but ", layer,
           " is not installed (Debian: vulkan-validationlayers)");
    ci.enabledLayerCount = 1;
    ci.ppEnabledLayerNames = &layer;
    ci.enabledExtensionCount = 1;
    ci.ppEnabledExtensionNames = &ext;
  }
  VkInstance inst = VK_NULL_HANDLE;
  const VkResult r = vkCreateInstance(&ci, nullptr, &inst);
  if (r == VK_ERROR_INCOMPATIBLE_DRIVER) return VK_NULL_HANDLE;
  check(r, "vkCreateInstance");
  return inst;
}

DeviceInfo describe(VkPhysicalDevice pd, int index) {
  DeviceInfo d;
  d.index = index;
  VkPhysicalDeviceProperties base;
  vkGetPhysicalDeviceProperties(pd, &base);
  VkPhysicalDeviceDriverProperties drv{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
  VkPhysicalDeviceSubgroupProperties sub{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES, &drv};
  VkPhysicalDeviceProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, &sub};
  const bool v12 = base.apiVersion >= VK_API_VERSION_1_2;
  if (v12) vkGetPhysicalDeviceProperties2(pd, &props);
  d.name = base.deviceName;
  d.type = type_name(base.deviceType);
  d.api_version = base.apiVersion;
  d.max_shared_bytes = base.limits.maxComputeSharedMemorySize;
  if (v12) {
    d.driver = std::string(drv.driverName) + " " + drv.driverInfo;
    d.subgroup_size = sub.subgroupSize;
    d.subgroup_arith = (sub.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                       (sub.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT);
  }
  VkPhysicalDeviceMemoryProperties mem;
  vkGetPhysicalDeviceMemoryProperties(pd, &mem);
  for (uint32_t h = 0; h < mem.memoryHeapCount; ++h)
    if (mem.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
      d.device_local_bytes = std::max<uint64_t>(d.device_local_bytes, mem.memoryHeaps[h].size);
  if (!v12) {
    d.missing = "Vulkan 1.2";
    return d;
  }
  VkPhysicalDeviceShaderIntegerDotProductFeatures dot{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES};
  VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  if (base.apiVersion >= VK_API_VERSION_1_3) f12.pNext = &dot;
  VkPhysicalDeviceFeatures2 f{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &f12};
  vkGetPhysicalDeviceFeatures2(pd, &f);
  d.float16 = f12.shaderFloat16;
  d.float64 = f.features.shaderFloat64;
  d.int8 = f12.shaderInt8;
  d.int_dot = base.apiVersion >= VK_API_VERSION_1_3 && dot.shaderIntegerDotProduct;
  d.usable = f12.bufferDeviceAddress;
  if (!d.usable) d.missing = "bufferDeviceAddress";
  return d;
}

}  // namespace

void check(VkResult r, const char* what) {
  if (r == VK_SUCCESS) return;
  const std::string msg = str("vulkan: ", what, " failed: ", result_name(r), " (", int(r), ")");
  if (r == VK_ERROR_DEVICE_LOST)
    throw DeviceError(DeviceError::Kind::kLost, msg + "; the device was lost (driver reset or hang)");
  if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY)
    throw DeviceError(DeviceError::Kind::kOutOfMemory, msg + "; out of memory");
  throw DeviceError(DeviceError::Kind::kOther, msg);
}

bool validation_from_env() {
  const char* v = std::getenv("QWEN35_VULKAN_VALIDATION");
  return v && std::strcmp(v, "1") == 0;
}

uint64_t usable_device_bytes(const DeviceInfo& d) {
  const char* v = std::getenv("QWEN35_VULKAN_MEMORY_MIB");
  if (!v || !*v) return d.device_local_bytes;
  const std::string s(v);
  if (s.size() > 9 || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
    fail("QWEN35_VULKAN_MEMORY_MIB=", s, ": expected a number of MiB");
  return std::min<uint64_t>(d.device_local_bytes, uint64_t(std::stoull(s)) << 20);
}

std::vector<DeviceInfo> list_devices() {
  VkInstance inst = create_instance(false);
  if (!inst) return {};
  uint32_t n = 0;
  vkEnumeratePhysicalDevices(inst, &n, nullptr);
  std::vector<VkPhysicalDevice> pds(n);
  vkEnumeratePhysicalDevices(inst, &n, pds.data());
  std::vector<DeviceInfo> out;
  for (uint32_t i = 0; i < n; ++i) out.push_back(describe(pds[i], int(i)));
  vkDestroyInstance(inst, nullptr);
  return out;
}

int best_device(const std::vector<DeviceInfo>& devices) {
  int best = -1;
  for (const DeviceInfo& d : devices) {
    if (!d.usable) continue;
    if (best < 0 || type_rank(d.type) < type_rank(devices[size_t(best)].type) ||
        (type_rank(d.type) == type_rank(devices[size_t(best)].type) &&
         d.device_local_bytes > devices[size_t(best)].device_local_bytes))
      best = int(&d - devices.data());
  }
  return best;
}

DeviceChoice choose_device(const std::string& spec, const std::vector<DeviceInfo>& devices) {
  const auto named = [&](const DeviceInfo& d) { return str(d.name, " (", d.type, ", device ", d.index, ")"); };
  if (spec == "cpu") return {-1, "the CPU (--device cpu)"};
  if (spec == "auto") {
    const int best = best_device(devices);
    if (best < 0) return {-1, "the CPU: no usable Vulkan device"};
    const DeviceInfo& d = devices[size_t(best)];
    if (d.type == "cpu") return {-1, str("the CPU: the only Vulkan device is a software rasterizer, ", named(d))};
    return {best, str("Vulkan on ", named(d))};
  }
  if (spec == "vulkan") {
    const int best = best_device(devices);
    if (best < 0) fail("--device vulkan: no usable Vulkan device", devices.empty() ? " (no Vulkan driver found)" : "");
    return {best, str("Vulkan on ", named(devices[size_t(best)]))};
  }
  if (spec.starts_with("vulkan:")) {
    const std::string n = spec.substr(7);
    int index = -1;
    if (!n.empty() && n.size() <= 3 && std::all_of(n.begin(), n.end(), [](char c) { return c >= '0' && c <= '9'; }))
      index = std::stoi(n);
    if (index < 0) fail("--device ", spec, ": expected vulkan:N with N a device number (qwen35 info --devices)");
    if (index >= int(devices.size()))
      fail("--device ", spec, ": there are ", devices.size(), " Vulkan devices (qwen35 info --devices)");
    const DeviceInfo& d = devices[size_t(index)];
    if (!d.usable) fail("--device ", spec, ": ", d.name, " lacks ", d.missing);
    return {index, str("Vulkan on ", named(d))};
  }
  fail("--device ", spec, ": expected auto, cpu, vulkan or vulkan:N");
}

std::unique_ptr<Device> Device::open(const DeviceOptions& opt) {
  std::unique_ptr<Device> dev(new Device());
  dev->validation_ = opt.validation;
  dev->instance_ = create_instance(opt.validation);
  if (!dev->instance_) fail("vulkan: no Vulkan driver found (Debian: mesa-vulkan-drivers for the CPU's lavapipe)");
  if (opt.validation) {
    dev->messages_ = std::make_unique<Messenger>();
    VkDebugUtilsMessengerCreateInfoEXT mi{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
    mi.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT;
    mi.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                     VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
    mi.pfnUserCallback = on_message;
    mi.pUserData = &dev->messages_->errors;
    auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(dev->instance_, "vkCreateDebugUtilsMessengerEXT"));
    if (!create) fail("vulkan: the validation layer has no vkCreateDebugUtilsMessengerEXT");
    check(create(dev->instance_, &mi, nullptr, &dev->messenger_), "vkCreateDebugUtilsMessengerEXT");
  }

  uint32_t n = 0;
  vkEnumeratePhysicalDevices(dev->instance_, &n, nullptr);
  std::vector<VkPhysicalDevice> pds(n);
  vkEnumeratePhysicalDevices(dev->instance_, &n, pds.data());
  std::vector<DeviceInfo> infos;
  for (uint32_t i = 0; i < n; ++i) infos.push_back(describe(pds[i], int(i)));
  int index = opt.index;
  if (index < 0) {
    index = best_device(infos);
    if (index < 0) fail("vulkan: none of the ", n, " Vulkan devices has Vulkan 1.2 with buffer device addresses");
  } else if (index >= int(n)) {
    fail("vulkan: device ", index, " asked for, but there are ", n, " (qwen35 info --devices lists them)");
  } else if (!infos[size_t(index)].usable) {
    fail("vulkan: device ", index, " (", infos[size_t(index)].name, ") lacks ", infos[size_t(index)].missing);
  }
  dev->info_ = infos[size_t(index)];
  dev->physical_ = pds[size_t(index)];
  vkGetPhysicalDeviceMemoryProperties(dev->physical_, &dev->mem_);

  uint32_t nq = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(dev->physical_, &nq, nullptr);
  std::vector<VkQueueFamilyProperties> qf(nq);
  vkGetPhysicalDeviceQueueFamilyProperties(dev->physical_, &nq, qf.data());
  int family = -1;
  for (uint32_t i = 0; i < nq; ++i)  // a compute-only family (no graphics work to share with) first
    if ((qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT) && !(qf[i].queueFlags & VK_QUEUE_GRAPHICS_BIT)) family = int(i);
  for (uint32_t i = 0; i < nq && family < 0; ++i)
    if (qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT) family = int(i);
  if (family < 0) fail("vulkan: ", dev->info_.name, " has no compute queue");
  dev->queue_family_ = uint32_t(family);

  const float priority = 1.0f;
  VkDeviceQueueCreateInfo qi{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qi.queueFamilyIndex = dev->queue_family_;
  qi.queueCount = 1;
  qi.pQueuePriorities = &priority;
  VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  f12.bufferDeviceAddress = VK_TRUE;
  VkPhysicalDeviceFeatures2 f{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, &f12};
  f.features.shaderFloat64 = dev->info_.float64;
  VkDeviceCreateInfo di{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, &f};
  di.queueCreateInfoCount = 1;
  di.pQueueCreateInfos = &qi;
  check(vkCreateDevice(dev->physical_, &di, nullptr, &dev->device_), "vkCreateDevice");
  vkGetDeviceQueue(dev->device_, dev->queue_family_, 0, &dev->queue_);

  VkCommandPoolCreateInfo pi{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pi.flags = VK_COMMAND_POOL_CREATE_TRANSIENT_BIT;
  pi.queueFamilyIndex = dev->queue_family_;
  check(vkCreateCommandPool(dev->device_, &pi, nullptr, &dev->pool_), "vkCreateCommandPool");
  VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  check(vkCreateFence(dev->device_, &fi, nullptr, &dev->fence_), "vkCreateFence");
  VkPipelineCacheCreateInfo ci{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
  check(vkCreatePipelineCache(dev->device_, &ci, nullptr, &dev->cache_), "vkCreatePipelineCache");
  VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, kPushBytes};
  VkPipelineLayoutCreateInfo li{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  li.pushConstantRangeCount = 1;
  li.pPushConstantRanges = &range;
  check(vkCreatePipelineLayout(dev->device_, &li, nullptr, &dev->layout_), "vkCreatePipelineLayout");
  return dev;
}

Device::~Device() {
  if (device_) {
    vkDeviceWaitIdle(device_);
    staging_.reset();
    for (auto& [name, p] : pipelines_) vkDestroyPipeline(device_, p, nullptr);
    vkDestroyPipelineLayout(device_, layout_, nullptr);
    vkDestroyPipelineCache(device_, cache_, nullptr);
    vkDestroyFence(device_, fence_, nullptr);
    vkDestroyCommandPool(device_, pool_, nullptr);
    vkDestroyDevice(device_, nullptr);
  }
  if (messenger_) {
    auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance_, "vkDestroyDebugUtilsMessengerEXT"));
    if (destroy) destroy(instance_, messenger_, nullptr);
  }
  if (instance_) vkDestroyInstance(instance_, nullptr);
}

int Device::validation_errors() const { return messages_ ? messages_->errors.load() : 0; }

void Device::ensure_alive(const char* what) const {
  if (lost_) throw DeviceError(DeviceError::Kind::kLost, str("vulkan: ", what, ": the device was lost earlier"));
}

uint32_t Device::memory_type(uint32_t type_bits, VkMemoryPropertyFlags want, VkMemoryPropertyFlags avoid) const {
  for (uint32_t i = 0; i < mem_.memoryTypeCount; ++i)
    if ((type_bits & (1u << i)) && (mem_.memoryTypes[i].propertyFlags & want) == want &&
        (mem_.memoryTypes[i].propertyFlags & avoid) == 0)
      return i;
  return ~0u;
}

VkPipeline Device::pipeline(const std::string& shader) {
  if (auto it = pipelines_.find(shader); it != pipelines_.end()) return it->second;
  const ShaderCode* code = nullptr;
  for (const ShaderCode& s : shader_table())
    if (s.name == shader) code = &s;
  if (!code) fail("vulkan: no shader named '", shader, "' is built in");
  VkShaderModuleCreateInfo mi{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  mi.codeSize = code->count * 4;
  mi.pCode = code->words;
  VkShaderModule module;
  check(vkCreateShaderModule(device_, &mi, nullptr, &module), "vkCreateShaderModule");
  VkComputePipelineCreateInfo pi{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  pi.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
  pi.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  pi.stage.module = module;
  pi.stage.pName = "main";
  pi.layout = layout_;
  VkPipeline p;
  const VkResult r = vkCreateComputePipelines(device_, cache_, 1, &pi, nullptr, &p);
  vkDestroyShaderModule(device_, module, nullptr);
  check(r, "vkCreateComputePipelines");
  pipelines_[shader] = p;
  return p;
}

VkCommandBuffer Device::begin_commands() {
  ensure_alive("recording commands");
  VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  ai.commandPool = pool_;
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = 1;
  VkCommandBuffer cb;
  check(vkAllocateCommandBuffers(device_, &ai, &cb), "vkAllocateCommandBuffers");
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  check(vkBeginCommandBuffer(cb, &bi), "vkBeginCommandBuffer");
  return cb;
}

void Device::submit_and_wait(VkCommandBuffer cb, const char* what) {
  struct Free {
    Device* d;
    VkCommandBuffer cb;
    ~Free() { vkFreeCommandBuffers(d->device_, d->pool_, 1, &cb); }
  } free_cb{this, cb};
  try {
    check(vkEndCommandBuffer(cb), "vkEndCommandBuffer");
    VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    si.commandBufferCount = 1;
    si.pCommandBuffers = &cb;
    check(vkQueueSubmit(queue_, 1, &si, fence_), what);
    check(vkWaitForFences(device_, 1, &fence_, VK_TRUE, UINT64_MAX), what);
    check(vkResetFences(device_, 1, &fence_), "vkResetFences");
  } catch (const DeviceError& e) {
    if (e.kind() == DeviceError::Kind::kLost) lost_ = true;
    else vkDeviceWaitIdle(device_);
    throw;
  }
}

void Device::discard_commands(VkCommandBuffer cb) { vkFreeCommandBuffers(device_, pool_, 1, &cb); }

void Device::upload(Buffer& dst, size_t offset, const void* src, size_t bytes) {
  ensure_alive("upload");
  if (offset + bytes > dst.size()) fail("vulkan: upload of ", bytes, " bytes at ", offset, " past a buffer of ", dst.size());
  if (dst.mapped()) {
    std::memcpy(static_cast<uint8_t*>(dst.mapped()) + offset, src, bytes);
    return;
  }
  if (!staging_) staging_ = std::make_unique<Buffer>(*this, kStagingBytes, Buffer::Kind::kStaging);
  for (size_t done = 0; done < bytes; done += kStagingBytes) {
    const size_t n = std::min(kStagingBytes, bytes - done);
    std::memcpy(staging_->mapped(), static_cast<const uint8_t*>(src) + done, n);
    VkCommandBuffer cb = begin_commands();
    VkBufferCopy c{0, offset + done, n};
    vkCmdCopyBuffer(cb, staging_->handle(), dst.handle(), 1, &c);
    submit_and_wait(cb, "upload");
  }
}

void Device::download(const Buffer& src, size_t offset, void* dst, size_t bytes) {
  ensure_alive("download");
  if (offset + bytes > src.size()) fail("vulkan: download of ", bytes, " bytes at ", offset, " past a buffer of ", src.size());
  if (src.mapped()) {
    std::memcpy(dst, static_cast<const uint8_t*>(src.mapped()) + offset, bytes);
    return;
  }
  if (!staging_) staging_ = std::make_unique<Buffer>(*this, kStagingBytes, Buffer::Kind::kStaging);
  for (size_t done = 0; done < bytes; done += kStagingBytes) {
    const size_t n = std::min(kStagingBytes, bytes - done);
    VkCommandBuffer cb = begin_commands();
    VkBufferCopy c{offset + done, 0, n};
    vkCmdCopyBuffer(cb, src.handle(), staging_->handle(), 1, &c);
    submit_and_wait(cb, "download");
    std::memcpy(static_cast<uint8_t*>(dst) + done, staging_->mapped(), n);
  }
}

}  // namespace qwen35::vk
