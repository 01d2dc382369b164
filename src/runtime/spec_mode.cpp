// The names of the speculation modes (CLI, API and JSON), kept apart from engine loading so that
// request parsing links without the model (the fuzz targets).
#include "qwen35/engine.h"

namespace qwen35 {

const char* spec_mode_name(SpecMode m) {
  switch (m) {
    case SpecMode::kAuto: return "auto";
    case SpecMode::kMtp: return "mtp";
    case SpecMode::kPld: return "pld";
    case SpecMode::kOff: return "off";
  }
  return "auto";
}

bool parse_spec_mode(const std::string& text, SpecMode* out) {
  for (SpecMode m : {SpecMode::kAuto, SpecMode::kMtp, SpecMode::kPld, SpecMode::kOff}) {
    if (text == spec_mode_name(m)) {
      *out = m;
      return true;
    }
  }
  return false;
}

}  // namespace qwen35
