// Every command refuses out-of-range values by the option's name, before loading a model, and
// reads its input files with a cap (issue 11, finding 9).
#include <gtest/gtest.h>

#include <string>

#include "support/cli_run.h"
#include "support/test_data.h"

namespace qwen35::test {
namespace {

RunOutput run(const std::string& args) { return run_cli(args, 60); }

void expect_refused(const std::string& args, const std::string& option) {
  const RunOutput r = run(args);
  EXPECT_EQ(r.status, 1) << args << "\n" << r.out;
  EXPECT_NE(r.out.find(option), std::string::npos) << args << "\n" << r.out;
  EXPECT_EQ(r.out.find("loading"), std::string::npos) << "checked only after loading: " << args << "\n" << r.out;
  EXPECT_EQ(r.out.find("bad_alloc"), std::string::npos) << r.out;
}

TEST(CliBounds, OutOfRangeValuesAreRefusedByName) {
  const std::string m = "-m " + tiny_model_dir();
  for (const std::string& cmd : {"run " + m + " - hi", "generate " + m + " --ids 1,2"}) {
    expect_refused(cmd + " -n -5", "-n");
    expect_refused(cmd + " -n 99999999999", "-n");
    expect_refused(cmd + " --temp nan", "--temp");
    expect_refused(cmd + " --temp inf", "--temp");
    expect_refused(cmd + " --temp -1", "--temp");
    expect_refused(cmd + " --temp 1e9", "--temp");
    expect_refused(cmd + " --top-p 0", "--top-p");
    expect_refused(cmd + " --top-p 1.5", "--top-p");
    expect_refused(cmd + " --top-k -3", "--top-k");
    expect_refused(cmd + " --min-p 2", "--min-p");
    expect_refused(cmd + " --repeat-penalty 0", "--repeat-penalty");
    expect_refused(cmd + " --presence-penalty 3", "--presence-penalty");
    expect_refused(cmd + " --seed -1", "--seed");
    expect_refused(cmd + " --threads 100000", "--threads");
    expect_refused(cmd + " --threads -1", "--threads");
    expect_refused(cmd + " --ctx -1", "--ctx");
    expect_refused(cmd + " --ctx 1e9", "--ctx");
    expect_refused(cmd + " --prefill-block 0", "--prefill-block");
    expect_refused(cmd + " --decoding-prefill-layers -1", "--decoding-prefill-layers");
    expect_refused(cmd + " --decoding-prefill-share 0", "--decoding-prefill-share");
    expect_refused(cmd + " --decoding-prefill-share nan", "--decoding-prefill-share");
    expect_refused(cmd + " --image-size 33", "--image-size");
    expect_refused(cmd + " --image-max-tokens -2", "--image-max-tokens");
    expect_refused(cmd + " --reasoning-budget -2", "--reasoning-budget");
    expect_refused(cmd + " --reasoning-budget 1.5", "--reasoning-budget");
    expect_refused(cmd + " --spec maybe", "--spec");
    expect_refused(cmd + " --draft-max 0", "--draft-max");
    expect_refused(cmd + " --draft-max 17", "--draft-max");
  }
  for (const char* bad : {"--port 70000", "--port -1", "--parallel 0", "--parallel 1000", "--max-queue -1",
                          "--cache-ram -1", "--cache-ram 99999999999", "--max-body-mib 0",
                          "--max-body-mib 99999999999999", "--max-image-mib 0", "--max-images -1",
                          "--max-header-kib 0", "--max-connections 0", "--header-timeout 0", "--body-timeout -5",
                          "--idle-timeout 999999", "--cors-origin evil.example", "--cors-origin http://a/b",
                          "--threads 100000", "--reasoning-budget -3", "--reasoning-budget lots"}) {
    const std::string flag(bad, std::string(bad).find(' '));
    expect_refused("serve " + m + " " + bad, flag);
  }
  expect_refused("forward " + m + " --ids 1 --out /tmp/x.safetensors --block 0", "--block");
  expect_refused("forward " + m + " --ids 1 --out /tmp/x.safetensors --threads 100000", "--threads");
}

TEST(CliBounds, EndlessInputFilesAreAClearError) {
  const std::string m = "-m " + tiny_model_dir();
  RunOutput r = run("run " + m + " /dev/zero hi");
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("larger than 1024 MiB"), std::string::npos) << r.out;
  r = run("generate " + m + " --messages /dev/zero");
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("larger than"), std::string::npos) << r.out;
  r = run("run " + m + " /no/such/file.png hi");
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("cannot read image or video file"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace qwen35::test
