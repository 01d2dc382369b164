#include "apps/qwen35/args.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "core/error.h"

namespace qwen35::app {

Args::Args(int argc, char** argv, const std::set<std::string>& with_value, const std::set<std::string>& flags,
           const std::set<std::string>& repeated) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.size() > 1 && a[0] == '-' && a != "-") {
      std::string name = a, value;
      bool inline_value = false;
      if (auto eq = a.find('='); eq != std::string::npos && a.rfind("--", 0) == 0) {
        name = a.substr(0, eq);
        value = a.substr(eq + 1);
        inline_value = true;
      }
      if (with_value.count(name) || repeated.count(name)) {
        if (!inline_value) {
          if (i + 1 >= argc) fail("option ", name, " needs a value");
          value = argv[++i];
        }
        if (repeated.count(name)) repeated_[name].push_back(value);
        else values_[name] = value;
      } else if (flags.count(name) && !inline_value) {
        flags_.insert(name);
      } else {
        fail("unknown option ", name, " (see --help)");
      }
    } else {
      positionals_.push_back(a);
    }
  }
}

std::optional<std::string> Args::get(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

std::vector<std::string> Args::get_all(const std::string& name) const {
  auto it = repeated_.find(name);
  return it == repeated_.end() ? std::vector<std::string>{} : it->second;
}

std::string Args::get_or(const std::string& name, const std::string& fallback) const {
  return get(name).value_or(fallback);
}

std::string Args::require(const std::string& name) const {
  auto v = get(name);
  if (!v) fail("missing required option ", name, " (see --help)");
  return *v;
}

int64_t Args::get_int(const std::string& name, int64_t fallback) const {
  auto v = get(name);
  if (!v) return fallback;
  char* end = nullptr;
  errno = 0;
  long long x = std::strtoll(v->c_str(), &end, 10);
  if (v->empty() || *end || errno) fail("option ", name, " needs an integer, got '", *v, "'");
  return x;
}

double Args::get_double(const std::string& name, double fallback) const {
  auto v = get(name);
  if (!v) return fallback;
  char* end = nullptr;
  errno = 0;
  double x = std::strtod(v->c_str(), &end);
  if (v->empty() || *end || errno || !std::isfinite(x)) fail("option ", name, " needs a number, got '", *v, "'");
  return x;
}

int64_t Args::get_int_in(const std::string& name, int64_t fallback, int64_t min, int64_t max) const {
  const int64_t v = get_int(name, fallback);
  if (v < min || v > max) fail("option ", name, " must be between ", min, " and ", max, ", got ", v);
  return v;
}

double Args::get_double_in(const std::string& name, double fallback, double min, double max) const {
  const double v = get_double(name, fallback);
  if (!std::isfinite(v) || v < min || v > max) fail("option ", name, " must be between ", min, " and ", max, ", got ", *get(name));
  return v;
}

std::vector<int32_t> parse_id_list(const std::string& text) { return parse_int_list(text, "--ids", "token id"); }

std::vector<int32_t> parse_int_list(const std::string& text, const std::string& option, const std::string& what) {
  std::vector<int32_t> ids;
  size_t i = 0;
  while (i < text.size()) {
    size_t j = text.find(',', i);
    if (j == std::string::npos) j = text.size();
    std::string part = text.substr(i, j - i);
    char* end = nullptr;
    errno = 0;
    long long v = std::strtoll(part.c_str(), &end, 10);
    if (part.empty() || *end || errno || v < 0 || v > INT32_MAX) fail("bad ", what, " '", part, "' in ", option);
    ids.push_back(int32_t(v));
    i = j + 1;
  }
  if (ids.empty()) fail(option, " is empty");
  return ids;
}

}  // namespace qwen35::app
