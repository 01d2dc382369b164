// `qwen35 tokenize` end to end: the built binary, JSON lines in and out.
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tokenizer_test_util.h"

namespace qwen35::test {
namespace {

struct CliRun {
  int status = -1;
  std::string out, err;
};

// Runs `qwen35 tokenize <args>` with `input` on stdin.
CliRun run_tokenize(const std::string& args, const std::string& input) {
  std::string dir = temp_dir("tokenize-cli");
  std::ofstream(dir + "/in.jsonl", std::ios::binary) << input;
  std::string cmd = std::string("'") + cli_binary() + "' tokenize " + args + " < '" + dir + "/in.jsonl' > '" + dir +
                    "/out' 2> '" + dir + "/err'";
  int raw = std::system(cmd.c_str());
  CliRun r;
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  r.out = read_text_file(dir + "/out");
  r.err = read_text_file(dir + "/err");
  return r;
}

std::vector<nlohmann::json> lines_of(const std::string& out) {
  std::vector<nlohmann::json> rows;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) rows.push_back(nlohmann::json::parse(line));
  return rows;
}

TEST(TokenizerCli, EncodesAndDecodesJsonLines) {
  ASSERT_TRUE(std::filesystem::exists(cli_binary())) << cli_binary() << " is missing: build the qwen35_cli target too";
  const std::string model = "-m '" + tiny_model_dir() + "'";
  const std::vector<std::string> texts = {"Hello from the tiny Qwen3.5 test model!",
                                          "<|im_start|>user\n日本語 and emoji 😊<|im_end|>\n", ""};
  std::string input;
  for (const std::string& t : texts) input += nlohmann::json{{"text", t}}.dump() + "\n";
  input += "\n";  // blank lines are skipped

  CliRun enc = run_tokenize(model, input);
  ASSERT_EQ(enc.status, 0) << enc.err;
  std::vector<nlohmann::json> rows = lines_of(enc.out);
  ASSERT_EQ(rows.size(), texts.size());
  std::string decode_input;
  for (size_t i = 0; i < texts.size(); ++i) {
    EXPECT_EQ(ids_of(rows[i]["ids"]), tiny_tokenizer().encode(texts[i])) << i;
    decode_input += nlohmann::json{{"ids", rows[i]["ids"]}}.dump() + "\n";
  }

  CliRun dec = run_tokenize(model + " --decode", decode_input);
  ASSERT_EQ(dec.status, 0) << dec.err;
  rows = lines_of(dec.out);
  ASSERT_EQ(rows.size(), texts.size());
  for (size_t i = 0; i < texts.size(); ++i) EXPECT_EQ(rows[i]["text"], texts[i]) << i;

  CliRun skip = run_tokenize(model + " --decode --skip-special", decode_input);
  ASSERT_EQ(skip.status, 0) << skip.err;
  EXPECT_EQ(lines_of(skip.out)[1]["text"], "user\n日本語 and emoji 😊\n");

  CliRun split = run_tokenize(model + " --split-special", R"({"text": "<|im_end|><think>"})" "\n");
  ASSERT_EQ(split.status, 0) << split.err;
  EXPECT_EQ(ids_of(lines_of(split.out)[0]["ids"]),
            tiny_tokenizer().encode("<|im_end|><think>", AddedTokenMode::kSplitSpecial));
}

TEST(TokenizerCli, BadLinesStopWithAMessage) {
  ASSERT_TRUE(std::filesystem::exists(cli_binary())) << cli_binary() << " is missing: build the qwen35_cli target too";
  const std::string model = "-m '" + tiny_model_dir() + "'";
  CliRun r = run_tokenize(model, "{\"text\": \"ok\"}\n{\"txt\": 1}\n{\"text\": \"never\"}\n");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(lines_of(r.out).size(), 1u);  // the line before the bad one was answered
  EXPECT_NE(r.err.find("line 2"), std::string::npos) << r.err;

  r = run_tokenize(model + " --decode", "{\"ids\": [1, \"two\"]}\n");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("ids must be integers"), std::string::npos) << r.err;

  r = run_tokenize(model, "not json\n");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("not valid JSON"), std::string::npos) << r.err;

  r = run_tokenize("-m /nonexistent", "");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("/nonexistent"), std::string::npos) << r.err;

  r = run_tokenize("", "");  // no -m: the bundled tiny model, as every command (and it says so)
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("bundled tiny test model"), std::string::npos) << r.err;

  r = run_tokenize("--help", "");
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("--decode"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace qwen35::test
