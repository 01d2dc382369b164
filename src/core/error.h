// Errors raised inside the library. Loading and request parsing throw qwen35::Error with an
// expected-vs-actual message; the public API turns it into a Status at the boundary.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace qwen35 {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Concatenates anything streamable: str("expected ", a, ", got ", b).
template <typename... Args>
std::string str(Args&&... args) {
  std::ostringstream os;
  (os << ... << std::forward<Args>(args));
  return os.str();
}

template <typename... Args>
[[noreturn]] void fail(Args&&... args) {
  throw Error(str(std::forward<Args>(args)...));
}

}  // namespace qwen35
