// A small command-line reader shared by the subcommands: `--name value`, `--flag`, positionals.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace qwen35::app {

class Args {
 public:
  // `with_value`: options that take a value ("-m", "--ids", ...); `flags`: options that don't;
  // `repeated`: options that take a value and may appear several times (read with get_all).
  // Throws qwen35::Error on unknown options or a missing value.
  Args(int argc, char** argv, const std::set<std::string>& with_value, const std::set<std::string>& flags,
       const std::set<std::string>& repeated = {});

  bool has(const std::string& name) const {
    return values_.count(name) || flags_.count(name) || repeated_.count(name);
  }
  std::optional<std::string> get(const std::string& name) const;
  std::string get_or(const std::string& name, const std::string& fallback) const;
  std::string require(const std::string& name) const;
  int64_t get_int(const std::string& name, int64_t fallback) const;
  double get_double(const std::string& name, double fallback) const;
  // The value within [min, max]; anything else (not a number, NaN, infinite, out of range) is
  // refused with the option's name and the range.
  int64_t get_int_in(const std::string& name, int64_t fallback, int64_t min, int64_t max) const;
  double get_double_in(const std::string& name, double fallback, double min, double max) const;
  const std::vector<std::string>& positionals() const { return positionals_; }
  std::vector<std::string> get_all(const std::string& name) const;

 private:
  std::map<std::string, std::string> values_;
  std::map<std::string, std::vector<std::string>> repeated_;
  std::set<std::string> flags_;
  std::vector<std::string> positionals_;
};

// "1,2,3" -> {1, 2, 3}; throws on anything that is not a comma-separated list of integers >= 0,
// naming the option and what its values are ("bad token id 'x' in --ids").
std::vector<int32_t> parse_int_list(const std::string& text, const std::string& option, const std::string& what);
std::vector<int32_t> parse_id_list(const std::string& text);  // --ids

}  // namespace qwen35::app
