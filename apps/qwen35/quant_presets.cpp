#include "apps/qwen35/quant_presets.h"

#include <algorithm>

#include "core/error.h"
#include "model/tensor_names.h"

namespace qwen35::app {

std::string preset_names() {
  std::string s;
  for (QuantPreset p : all_quant_presets()) {
    std::string n(preset_name(p));
    std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    s += (s.empty() ? "" : ", ") + n;
  }
  return s;
}

QuantPreset find_preset(const std::string& name) {
  if (auto p = parse_quant_preset(name)) return *p;
  fail("unknown --type '", name, "' (one of: ", preset_names(), ")");
}

bool mmproj_preset_ok(QuantPreset p) {
  return p == QuantPreset::F32 || p == QuantPreset::F16 || p == QuantPreset::BF16 || p == QuantPreset::Q8_0;
}

std::function<std::vector<DType>(const std::vector<ExportTensor>&)> preset_plan(QuantPreset p, int n_gqa, int n_experts) {
  return [p, n_gqa, n_experts](const std::vector<ExportTensor>& tensors) {
    std::vector<GgufTensorShape> shapes;
    int n_layers = 0;
    for (const ExportTensor& t : tensors) {
      shapes.push_back({t.name, t.ne});
      n_layers = std::max(n_layers, gguf_layer_index(t.name) + 1);
    }
    return preset_tensor_types(p, shapes, n_layers, n_gqa, n_experts);
  };
}

}  // namespace qwen35::app
