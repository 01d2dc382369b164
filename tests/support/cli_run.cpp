#include "support/cli_run.h"

#include <sys/wait.h>

#include <cstdio>

#include "support/test_data.h"

namespace qwen35::test {

RunOutput run_cli(const std::string& args, int timeout_s, bool merge_stderr) {
  const std::string cmd = "timeout " + std::to_string(timeout_s) + " " + cli_binary() + " " + args +
                          (merge_stderr ? " 2>&1" : " 2>/dev/null") + " < /dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return {-1, "popen failed"};
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  const int st = pclose(p);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

}  // namespace qwen35::test
