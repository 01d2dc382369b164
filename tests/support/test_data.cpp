#include "support/test_data.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include "core/error.h"

namespace qwen35::test {

std::string data_path(const std::string& relative) { return std::string(QWEN35_TEST_DATA) + "/" + relative; }

std::string tiny_model_dir() { return data_path("tiny-qwen35"); }
std::string tiny_moe_model_dir() { return data_path("tiny-qwen35-moe"); }

std::string cli_binary() { return QWEN35_BINARY; }

namespace {

// Every temporary folder a test binary made, removed when it exits (tests need not clean up, and
// a failed assertion cannot leave hundreds of megabytes behind).
class TempDirs {
 public:
  ~TempDirs() {
    std::lock_guard<std::mutex> lock(mu_);
    for (const std::filesystem::path& d : dirs_) {
      std::error_code ec;
      std::filesystem::remove_all(d, ec);
    }
  }
  void add(const std::filesystem::path& d) {
    std::lock_guard<std::mutex> lock(mu_);
    dirs_.push_back(d);
  }

 private:
  std::mutex mu_;
  std::vector<std::filesystem::path> dirs_;
};

TempDirs& temp_dirs() {
  static TempDirs dirs;
  return dirs;
}

}  // namespace

std::string temp_dir(const std::string& tag) {
  static std::atomic<int> counter{0};
  auto dir = std::filesystem::temp_directory_path() /
             ("qwen35-test-" + tag + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  temp_dirs().add(dir);
  return dir.string();
}

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot read ", path);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

std::vector<uint8_t> read_file_bytes(const std::string& path) {
  const std::string s = read_text_file(path);
  return {s.begin(), s.end()};
}

std::vector<float> Golden::f32(const std::string& name) const {
  const TensorView& v = file_.get(name);
  if (v.dtype != DType::F32) fail(name, " is not F32");
  std::vector<float> out(size_t(v.numel()));
  std::memcpy(out.data(), v.data, v.nbytes);
  return out;
}

std::vector<int64_t> Golden::i64(const std::string& name) const {
  const TensorView& v = file_.get(name);
  if (v.dtype != DType::I64) fail(name, " is not I64");
  std::vector<int64_t> out(size_t(v.numel()));
  std::memcpy(out.data(), v.data, v.nbytes);
  return out;
}

std::vector<double> Golden::f64(const std::string& name) const {
  const TensorView& v = file_.get(name);
  if (v.dtype != DType::F64) fail(name, " is not F64");
  std::vector<double> out(size_t(v.numel()));
  std::memcpy(out.data(), v.data, v.nbytes);
  return out;
}

std::vector<uint8_t> Golden::u8(const std::string& name) const {
  const TensorView& v = file_.get(name);
  if (v.dtype != DType::U8) fail(name, " is not U8");
  const uint8_t* p = static_cast<const uint8_t*>(v.data);
  return std::vector<uint8_t>(p, p + v.nbytes);
}

double max_abs_error(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return INFINITY;
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    double d = std::fabs(double(a[i]) - double(b[i]));
    if (!(d <= m)) m = std::isnan(d) ? INFINITY : d;
  }
  return m;
}

double max_rel_error(const std::vector<float>& a, const std::vector<float>& b) {
  double scale = 0;
  for (float x : b) scale = std::max(scale, double(std::fabs(x)));
  double err = max_abs_error(a, b);
  if (scale == 0) return err == 0 ? 0 : INFINITY;
  return err / scale;
}

}  // namespace qwen35::test
