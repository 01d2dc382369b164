#include "apps/qwen35/commands.h"

namespace qwen35::app {

int cmd_forward(int argc, char** argv);
int cmd_generate(int argc, char** argv);
int cmd_run(int argc, char** argv);
int cmd_serve(int argc, char** argv);
int cmd_tokenize(int argc, char** argv);
int cmd_render(int argc, char** argv);
int cmd_convert(int argc, char** argv);
int cmd_info(int argc, char** argv);
int cmd_bench(int argc, char** argv);

const std::vector<Command>& commands() {
  static const std::vector<Command> table = {
      {"serve", "OpenAI-compatible API server with a browser chat UI", cmd_serve},
      {"run", "answer one prompt about an image (or '-' for text only)", cmd_run},
      {"generate", "generate tokens from ids or chat messages", cmd_generate},
      {"forward", "run the decoder on ids and write logits/hidden states/caches", cmd_forward},
      {"tokenize", "encode JSON lines of text to ids (--decode: the inverse)", cmd_tokenize},
      {"render", "render chat messages with the Qwen3.5 chat format", cmd_render},
      {"convert", "write a model as GGUF (HF folder or GGUF in; any type llama.cpp reads)", cmd_convert},
      {"info", "describe a model: architecture, tensor types, size, context, vision, MTP", cmd_info},
      {"bench", "measure prompt and generation speed (llama-bench style)", cmd_bench},
  };
  return table;
}

}  // namespace qwen35::app
