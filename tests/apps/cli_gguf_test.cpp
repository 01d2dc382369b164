// The GGUF side of the command line as a user runs it: convert (from a folder and requantizing a
// GGUF), info, tokenize, render and generate on GGUF files, and the errors for bad options.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "io/gguf.h"
#include "io/safetensors.h"
#include "support/cli_run.h"
#include "support/test_data.h"

namespace qwen35::test {
namespace {

RunOutput run(const std::string& args) { return run_cli(args); }

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(CliGguf, ConvertInfoTokenizeRenderGenerate) {
  const std::string dir = temp_dir("cli_gguf");
  const std::string model = dir + "/tiny.gguf", mmproj = dir + "/mmproj-tiny.gguf";
  RunOutput r = run("convert -m " + tiny_model_dir() + " --out " + model + " --mmproj " + mmproj);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(has(r.out, "tensor 123/123 (100%")) << r.out;  // the progress line
  auto f = GgufFile::open(model);
  EXPECT_EQ(f->get_int("general.file_type"), 32);  // BF16 by default for a folder
  EXPECT_EQ(f->get_string("general.name"), "tiny-qwen35");
  EXPECT_EQ(f->get_string("tokenizer.ggml.pre"), "qwen35");
  EXPECT_EQ(f->get_array("tokenizer.ggml.tokens").count, 248320u);

  r = run("info -m " + model);
  ASSERT_EQ(r.status, 0) << r.out;
  for (const char* line : {"architecture:  qwen35, 8 layers (6 Gated DeltaNet, 2 attention)", "file type:     BF16",
                           "context:       262144 tokens", "vision:        mmproj ", "MTP:           block 8",
                           "blk.N.attn_qkv.weight", "BF16 x6"})
    EXPECT_TRUE(has(r.out, line)) << line << "\n" << r.out;
  r = run("info -m " + model + " --no-mmproj");
  EXPECT_TRUE(has(r.out, "vision:        none")) << r.out;
  r = run("info -m " + tiny_model_dir());
  EXPECT_TRUE(has(r.out, "Hugging Face folder")) << r.out;
  EXPECT_TRUE(has(r.out, "MTP:           mtp.* tensors")) << r.out;

  // The same ids as tokenizer.json, through the GGUF's tokenizer.
  const std::string in = dir + "/in.jsonl";
  std::ofstream(in) << "{\"text\": \"Hello <|im_start|>user\\n caf\\u00e9 \\u0e1b\\u0e35 <think>\"}\n";
  const RunOutput a = run("tokenize -m " + model + " < " + in), b = run("tokenize -m " + tiny_model_dir() + " < " + in);
  EXPECT_EQ(a.status, 0);
  EXPECT_EQ(a.out, b.out);

  const std::string msgs = dir + "/m.json";
  std::ofstream(msgs) << R"([{"role": "user", "content": "Hi"}])";
  r = run("render -m " + model + " --messages " + msgs);
  EXPECT_EQ(r.status, 0);
  EXPECT_FALSE(has(r.out, "warning")) << r.out;  // the official template travelled with the file
  EXPECT_TRUE(has(r.out, "<|im_start|>user\nHi<|im_end|>")) << r.out;

  r = run("generate -m " + model + " --ids 248045,846,198 -n 4 --json");
  EXPECT_EQ(r.status, 0) << r.out;

  // forward --dump cache writes the DeltaNet state in the HF head order whatever the weights' order.
  const Golden golden("tiny-qwen35/golden/text_L7.safetensors");
  std::string ids;
  for (int64_t id : golden.i64("input_ids")) {
    if (!ids.empty()) ids += ",";
    ids += std::to_string(id);
  }
  r = run("forward -m " + model + " --ids " + ids + " --out " + dir + "/fwd.safetensors --dump cache");
  ASSERT_EQ(r.status, 0) << r.out;
  SafetensorsFile fwd(dir + "/fwd.safetensors");
  for (const std::string name : {"cache.0.conv_state", "cache.0.recurrent_state", "cache.6.recurrent_state"}) {
    const TensorView& t = fwd.get(name);
    EXPECT_LE(max_rel_error(std::vector<float>(t.as<float>(), t.as<float>() + t.numel()), golden.f32(name)), 1e-4) << name;
  }

  // Requantizing the GGUF: metadata and tokenizer kept, types changed.
  const std::string q8 = dir + "/tiny-q8.gguf";
  r = run("convert -m " + model + " --out " + q8 + " --type q8_0 --no-mtp");
  ASSERT_EQ(r.status, 0) << r.out;
  auto g = GgufFile::open(q8);
  EXPECT_EQ(g->get_int("general.file_type"), 7);
  EXPECT_EQ(g->get_string("general.name"), "tiny-qwen35");
  EXPECT_EQ(g->get_int("qwen35.block_count"), 8);
  EXPECT_EQ(g->get_tensor("blk.0.attn_qkv.weight").ggml_type, 8);  // Q8_0
  EXPECT_EQ(g->get_tensor("blk.0.ssm_a").ggml_type, 0);             // F32 stays
  EXPECT_EQ(g->get_string("tokenizer.chat_template"), f->get_string("tokenizer.chat_template"));
  std::filesystem::remove_all(dir);
}

TEST(CliGguf, BadOptionsAreClearErrors) {
  const std::string dir = temp_dir("cli_gguf_bad");
  RunOutput r = run("convert -m " + tiny_model_dir() + " --out " + dir + "/x.gguf --type q9_9");
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(has(r.out, "unknown --type 'q9_9' (one of: f32, f16, bf16, q8_0")) << r.out;
  r = run("convert -m " + data_path("gguf/llama-quantize/small-h64-Q8_0.gguf") + " --out " + dir + "/x.gguf");
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(has(r.out, "--type is required")) << r.out;
  r = run("info -m " + dir + "/absent.gguf");
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(has(r.out, "does not exist")) << r.out;
  std::ofstream(dir + "/junk.gguf") << "GGUF\x03";
  r = run("info -m " + dir + "/junk.gguf");
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(has(r.out, "not a valid GGUF file")) << r.out;
  r = run("info -m " + data_path("gguf/llama-quantize/small-h64-Q8_0.gguf") + " --mmproj " + dir + "/absent.gguf");
  EXPECT_EQ(r.status, 1);
  std::filesystem::remove_all(dir);
}

// The mixture-of-experts model: convert writes a qwen35moe file, info shows the experts, and
// generating from the file gives the folder's tokens; a quantizing preset writes the MoE mix.
TEST(CliGguf, MoeConvertInfoGenerate) {
  const std::string dir = temp_dir("cli_gguf_moe");
  const std::string model = dir + "/tiny-moe.gguf";
  RunOutput r = run("convert -m " + tiny_moe_model_dir() + " --out " + model);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(GgufFile::open(model)->get_string("general.architecture"), "qwen35moe");
  for (const std::string& m : {model, tiny_moe_model_dir()}) {
    r = run("info -m " + m);
    ASSERT_EQ(r.status, 0) << r.out;
    for (const char* line : {"architecture:  qwen35moe, 8 layers (6 Gated DeltaNet, 2 attention)",
                             "experts:       16 routed, 4 per token, width 32; shared expert width 48"})
      EXPECT_TRUE(has(r.out, line)) << line << "\n" << r.out;
  }
  const RunOutput a = run("generate -m " + model + " --ids 248045,846,198 -n 6 --json"),
                  b = run("generate -m " + tiny_moe_model_dir() + " --ids 248045,846,198 -n 6 --json");
  EXPECT_EQ(a.status, 0) << a.out;
  EXPECT_EQ(b.status, 0) << b.out;
  const auto ids = [](const std::string& out) { return out.substr(out.find("\"ids\"")); };
  if (has(a.out, "\"ids\"") && has(b.out, "\"ids\"")) {
    EXPECT_EQ(ids(a.out).substr(0, ids(a.out).find(']')), ids(b.out).substr(0, ids(b.out).find(']')));
  } else {
    ADD_FAILURE() << a.out << "\n" << b.out;
  }
  // A preset writes llama-quantize's MoE mix (the tiny model's rows of 32 and 64 take the K-quants'
  // fallbacks: ffn_down_exps Q8_0 in the "more bits" layers 0 and 7, Q5_0 in layer 2), and the file
  // generates what the BF16 file quantized at load does.
  r = run("convert -m " + tiny_moe_model_dir() + " --out " + dir + "/q.gguf --type q4_k_m");
  ASSERT_EQ(r.status, 0) << r.out;
  auto q = GgufFile::open(dir + "/q.gguf");
  EXPECT_EQ(q->get_int("general.file_type"), 15);
  EXPECT_EQ(q->get_tensor("blk.0.ffn_down_exps.weight").dtype, DType::Q8_0);
  EXPECT_EQ(q->get_tensor("blk.2.ffn_down_exps.weight").dtype, DType::Q5_0);
  EXPECT_EQ(q->get_tensor("blk.7.ffn_down_exps.weight").dtype, DType::Q8_0);
  EXPECT_EQ(q->get_tensor("blk.2.ffn_gate_inp.weight").dtype, DType::F32);
  const RunOutput c = run("generate -m " + dir + "/q.gguf --ids 248045,846,198 -n 6 --json"),
                  d = run("generate -m " + model + " --weights q4_k_m --ids 248045,846,198 -n 6 --json");
  ASSERT_TRUE(has(c.out, "\"ids\"") && has(d.out, "\"ids\"")) << c.out << "\n" << d.out;
  EXPECT_EQ(ids(c.out).substr(0, ids(c.out).find(']')), ids(d.out).substr(0, ids(d.out).find(']')));
}

// serve says what a MoE file needs in memory before it loads it, counting every expert (a later
// option error stops it here; the verdict itself: memory_need_test).
TEST(CliGguf, ServeSaysWhatAMoeFileNeedsInMemory) {
  const std::string dir = temp_dir("cli_gguf_moe_serve");
  const std::string model = dir + "/tiny-moe.gguf";
  RunOutput r = run("convert -m " + tiny_moe_model_dir() + " --out " + model);
  ASSERT_EQ(r.status, 0) << r.out;
  r = run("serve -m " + model + " --ctx 4096 --max-tokens 0");
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_TRUE(has(r.out, "qwen35 serve: tiny-moe.gguf needs about ")) << r.out;
  EXPECT_TRUE(has(r.out, "(all 16 experts of each of its 8 layers: any token may route to any of them)")) << r.out;
  EXPECT_TRUE(has(r.out, "for a 4096-token context; this process can use ")) << r.out;
  EXPECT_TRUE(has(r.out, "--max-tokens")) << r.out;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace qwen35::test
