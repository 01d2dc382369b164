#include "server/model_card.h"

namespace qwen35::server {

nlohmann::json model_meta(const ModelInfo& info) {
  nlohmann::json m = {{"context_size", info.context_size},
                      {"has_vision", info.has_vision},
                      {"vocab_size", info.vocab_size},
                      {"num_layers", info.num_layers},
                      {"hidden_size", info.hidden_size},
                      {"weight_bytes", info.weight_bytes},
                      {"format", info.format},
                      {"file_type", info.file_type},
                      {"file_bytes", info.file_bytes},
                      {"has_mtp", info.has_mtp},
                      {"kernels", info.kernels}};
  if (!info.mmproj_path.empty()) m["mmproj"] = info.mmproj_path;
  return m;
}

}  // namespace qwen35::server
