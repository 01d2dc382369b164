// Runs the qwen35 command-line binary the way a user's shell would, for the CLI tests.
#pragma once

#include <string>

namespace qwen35::test {

struct RunOutput {
  int status;       // the exit status
  std::string out;  // stdout, with stderr merged in unless asked otherwise
};

// `args` are shell words after the binary; stdin is /dev/null, and the run is killed after
// timeout_s seconds (status 124).
RunOutput run_cli(const std::string& args, int timeout_s = 600, bool merge_stderr = true);

}  // namespace qwen35::test
