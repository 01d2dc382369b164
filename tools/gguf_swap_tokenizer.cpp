// gguf_swap_tokenizer: copies a GGUF model with its tokenizer.* keys replaced by a Hugging Face
// folder's tokenizer, and optionally only its first N layers, for benchmarks on random weights.
//
//   gguf_swap_tokenizer --in qwen35-9b-Q8_0.gguf --out /tmp/qwen35-9b-L4-Q8_0.gguf [--layers 4]
//                       [--tokenizer tests/data/tiny-qwen35]
//
// shared/bench/make_random_gguf.py writes a synthetic vocabulary (the right size, but only three
// special tokens at their real ids): a prompt with an image or a video then has no
// <|vision_start|> or <|video_pad|> to find, so qwen35 cannot place the vision tokens. The default
// tokenizer is the bundled tiny model's, which is the real Qwen3.5 one (the 248320-row vocabulary
// and its special ids) with the real chat template. Every other key and every tensor is copied
// byte for byte. --layers N keeps blk.0 .. blk.N-1 and sets block_count to N (N = 4 keeps three
// DeltaNet layers and one full-attention layer), for when the text decoder is not what is measured
// (a vision benchmark then spends less time in the prefill); the MTP layers go with it.
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "core/error.h"
#include "io/gguf.h"
#include "io/gguf_writer.h"
#include "text/tokenizer_gguf.h"
#include "text/tokenizer_json.h"

using qwen35::fail;

namespace {

// The layer index of a "blk.N." tensor name, or -1.
int layer_of(const std::string& name) {
  if (name.rfind("blk.", 0) != 0) return -1;
  return std::atoi(name.c_str() + 4);
}

int run(int argc, char** argv) {
  std::string in, out, tokenizer_dir = std::string(QWEN35_SOURCE_DIR) + "/tests/data/tiny-qwen35";
  int layers = -1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&] {
      if (i + 1 >= argc) fail(a, " needs a value");
      return std::string(argv[++i]);
    };
    if (a == "--in") in = value();
    else if (a == "--out") out = value();
    else if (a == "--tokenizer") tokenizer_dir = value();
    else if (a == "--layers") layers = std::stoi(value());
    else if (a == "--help" || a == "-h") {
      std::printf("usage: gguf_swap_tokenizer --in MODEL.gguf --out OUT.gguf [--layers N] [--tokenizer HF_DIR]\n");
      return 0;
    } else fail("unknown option ", a);
  }
  if (in.empty() || out.empty()) fail("give --in MODEL.gguf and --out OUT.gguf");
  if (in == out) fail("--out must differ from --in");

  const std::unique_ptr<qwen35::GgufFile> f = qwen35::GgufFile::open(in);
  const std::string arch(f->get_string("general.architecture"));
  const int64_t blocks = f->get_int(arch + ".block_count");
  if (layers == 0 || layers < -1 || layers > blocks) fail("--layers must be in [1, ", blocks, "]");
  const qwen35::GgufTensor& embd = f->get_tensor("token_embd.weight");
  const int64_t vocab = embd.ne[1];

  qwen35::GgufWriter w;
  for (const auto& [key, value] : f->metadata()) {
    if (key.rfind("tokenizer.", 0) == 0) continue;
    if (layers > 0 && key == arch + ".block_count") {
      w.set_u32(key, uint32_t(layers));
      continue;
    }
    if (layers > 0 && key == arch + ".nextn_predict_layers") continue;  // the MTP layers are dropped
    if (layers > 0 && value.is_array() && value.count == uint64_t(blocks))
      fail(in, ": key '", key, "' has one entry per layer, which --layers does not cut");
    w.set_value(key, value);
  }
  const qwen35::TokenizerSpec spec = qwen35::load_tokenizer_json(tokenizer_dir);
  qwen35::write_tokenizer_gguf(spec, qwen35::tokenizer_keys_from_hf(tokenizer_dir, spec, vocab), w);

  for (const qwen35::GgufTensor& t : f->tensors()) {
    if (layers > 0 && layer_of(t.name) >= layers) continue;
    if (!t.dtype) fail(in, ": tensor '", t.name, "' has ggml type ", t.ggml_type, ", which cannot be copied");
    const qwen35::GgufTensor* src = &t;
    w.add_tensor(t.name, *t.dtype, t.shape(), [src](uint8_t* o) { std::memcpy(o, src->data, src->nbytes); });
  }
  w.write(out);
  std::fprintf(stderr, "done: %s (%zu tensors, vocabulary of %s)\n", out.c_str(), w.tensor_count(), tokenizer_dir.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gguf_swap_tokenizer: %s\n", e.what());
    return 1;
  }
}
