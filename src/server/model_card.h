// The "meta" object of a /v1/models entry: what the server runs (file format and type, sizes,
// context, vision, MTP), built from the engine's ModelInfo.
#pragma once

#include <nlohmann/json.hpp>

#include "qwen35/engine.h"

namespace qwen35::server {

nlohmann::json model_meta(const ModelInfo& info);

}  // namespace qwen35::server
