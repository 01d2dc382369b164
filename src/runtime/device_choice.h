// --device: which backend the text decoder runs on (EngineOptions::device).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/dtype.h"
#include "model/decoder_backend.h"
#include "model/model.h"

namespace qwen35 {

// The Vulkan device `spec` asks for (-1: the CPU), and a line saying which and why. Throws for a
// malformed spec and for a device asked for by name that is missing (or a build without Vulkan).
int choose_decoder_device(const std::string& spec, std::string& why);
// The decoder's backend on Vulkan device `index` (a model loaded with prepare = false).
std::unique_ptr<DecoderBackend> open_decoder_device(int index, const Model& model);
// Empty when the decoder's weights and one sequence of `context` tokens (KV elements `kv`) fit in
// the usable memory of device `index` (vk::usable_device_bytes); else a line saying what the model
// needs against what the device has, for the start-up notice (the engine then runs on the CPU).
std::string decoder_device_misfit(int index, const Model& model, int64_t context, DType kv);

}  // namespace qwen35
