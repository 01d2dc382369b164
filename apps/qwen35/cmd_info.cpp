// qwen35 info: what a model file or folder holds, without running it.
#include <cstdio>
#include <map>
#include <regex>
#include <string>

#include "apps/qwen35/args.h"
#include "apps/qwen35/engine_options.h"
#include "core/error.h"
#include "kernels/kernels.h"
#include "model/model.h"
#if QWEN35_HAVE_VULKAN
#include "kernels/vulkan/device.h"
#endif

namespace qwen35::app {
namespace {

const char* kUsage =
    "usage: qwen35 info [-m MODEL] [--mmproj FILE] [--no-mmproj] [--mtp FILE]\n"
    "       qwen35 info --devices\n"
    "\n"
    "Prints the architecture, the tensor types per tensor kind, sizes, context length and whether\n"
    "the model has a vision tower and an MTP block. MODEL is a Hugging Face folder or a GGUF file.\n"
    "--devices lists the Vulkan devices instead: memory, features, and the one chosen first.\n";

// "blk.7.ffn_down.weight" / "model.language_model.layers.7.mlp.down_proj.weight" -> the name without
// its layer (and expert) index, so every layer's tensor of one kind counts together.
std::string kind_of(const std::string& name) {
  static const std::regex layer_index(R"((^|\.)(blk|layers|blocks|experts)\.[0-9]+\.)");
  return std::regex_replace(name, layer_index, "$1$2.N.");
}

std::string mib(uint64_t bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f MiB", double(bytes) / double(1 << 20));
  return buf;
}

int print_devices() {
#if QWEN35_HAVE_VULKAN
  const std::vector<vk::DeviceInfo> devices = vk::list_devices();
  if (devices.empty()) {
    std::printf("vulkan: no driver found (Debian: mesa-vulkan-drivers gives the CPU's lavapipe)\n");
    return 0;
  }
  const int best = vk::best_device(devices);
  for (const vk::DeviceInfo& d : devices) {
    std::printf("vulkan:%d  %s (%s, Vulkan %u.%u, %s)%s\n", d.index, d.name.c_str(), d.type.c_str(),
                VK_API_VERSION_MAJOR(d.api_version), VK_API_VERSION_MINOR(d.api_version), d.driver.c_str(),
                d.index == best ? "  [chosen by auto]" : "");
    std::printf("          memory %s device-local; subgroup %u; shared %u KiB; f16 %s, f64 %s, int8 %s, int8 dot %s, "
                "subgroup arithmetic %s%s\n",
                mib(d.device_local_bytes).c_str(), d.subgroup_size, d.max_shared_bytes / 1024, d.float16 ? "yes" : "no",
                d.float64 ? "yes" : "no", d.int8 ? "yes" : "no", d.int_dot ? "yes" : "no", d.subgroup_arith ? "yes" : "no",
                d.usable ? "" : ("; unusable: no " + d.missing).c_str());
  }
#else
  std::printf("vulkan: this build has no Vulkan backend (configure with -DQWEN35_VULKAN=ON)\n");
#endif
  return 0;
}

}  // namespace

int cmd_info(int argc, char** argv) {
  Args args(argc, argv, {"-m", "--model", "--mmproj", "--mtp"}, {"--no-mmproj", "--devices", "--help", "-h"});
  if (args.has("--help") || args.has("-h")) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (args.has("--devices")) return print_devices();
  const std::string path = model_or_bundled(args);
  ModelLoadOptions files;
  files.prepare = false;  // the tensors as stored: no repacking for a kernel table
  files.mmproj = args.get_or("--mmproj", "");
  files.no_mmproj = args.has("--no-mmproj");
  files.mtp = args.get_or("--mtp", "");
  std::unique_ptr<Model> model = Model::load(path, files);
  const TextConfig& c = model->config().text;

  // kind -> type -> (count, bytes)
  std::map<std::string, std::map<std::string, std::pair<int, uint64_t>>> kinds;
  uint64_t file_bytes = 0;
  if (const GgufFile* f = model->gguf()) {
    file_bytes = f->file_bytes();
    for (const GgufTensor& t : f->tensors()) {
      auto& e = kinds[kind_of(t.name)][ggml_type_label(t.ggml_type)];
      e.first += 1;
      e.second += t.nbytes;
    }
  } else {
    for (const std::string& name : model->checkpoint().names()) {
      const TensorView& t = model->checkpoint().get(name);
      auto& e = kinds[kind_of(name)][std::string(dtype_name(t.dtype))];
      e.first += 1;
      e.second += t.nbytes;
    }
  }

  std::printf("model:         %s (%s)\n", path.c_str(),
              model->is_gguf() ? ("GGUF v" + std::to_string(model->gguf()->version()) +
                                  (model->gguf()->part_paths().size() > 1
                                       ? ", " + std::to_string(model->gguf()->part_paths().size()) + " parts"
                                       : std::string()))
                                     .c_str()
                               : "Hugging Face folder");
  if (c.is_moe()) {
    std::printf("architecture:  qwen35moe, %d layers (%d Gated DeltaNet, %d attention), hidden %lld\n", c.num_layers,
                c.num_deltanet_layers(), c.num_attention_layers(), (long long)c.hidden_size);
  } else {
    std::printf("architecture:  qwen35, %d layers (%d Gated DeltaNet, %d attention), hidden %lld, MLP %lld\n",
                c.num_layers, c.num_deltanet_layers(), c.num_attention_layers(), (long long)c.hidden_size,
                (long long)c.intermediate_size);
  }
  std::printf("               attention %d heads / %d KV, head %d; DeltaNet %d key / %d value heads of %d%s\n",
              c.num_heads, c.num_kv_heads, c.head_dim, c.linear_key_heads, c.linear_value_heads, c.linear_value_dim,
              model->is_gguf() ? " (tiled value heads)" : "");
  if (c.is_moe())
    std::printf("experts:       %d routed, %d per token, width %lld; shared expert width %lld\n", c.num_experts,
                c.num_experts_per_tok, (long long)c.moe_intermediate_size, (long long)c.shared_expert_intermediate_size);
  std::printf("file type:     %s\n", model->file_type().c_str());
  std::printf("weights:       %llu bytes (%s)%s\n", (unsigned long long)model->weight_bytes(),
              mib(model->weight_bytes()).c_str(),
              file_bytes ? (", file " + std::to_string(file_bytes) + " bytes").c_str() : "");
  std::printf("context:       %lld tokens\n", (long long)c.max_position_embeddings);
  std::printf("vocabulary:    %lld%s\n", (long long)c.vocab_size, c.tie_word_embeddings ? " (tied LM head)" : "");
  if (model->vision()) {
    const VisionConfig& v = model->vision()->config();
    std::printf("vision:        %s, %d blocks, hidden %lld, patch %d, merge %d\n",
                model->mmproj() ? ("mmproj " + model->mmproj()->path()).c_str() : "in the checkpoint", v.depth,
                (long long)v.hidden_size, v.patch_size, v.spatial_merge_size);
  } else {
    std::printf("vision:        none%s\n", model->is_gguf() ? " (give --mmproj FILE, or put mmproj-*.gguf beside it)" : "");
  }
  if (!model->nextn().empty())
    std::printf("MTP:           block %d in %s\n", model->nextn().layer, model->nextn().source.c_str());
  else if (!model->is_gguf() && model->checkpoint().find("mtp.fc.weight"))
    std::printf("MTP:           mtp.* tensors in the checkpoint\n");
  else
    std::printf("MTP:           none\n");
  std::printf("kernels:       %s\n", kernels::active_table_reason().c_str());
  std::printf("tensors by kind:\n");
  for (const auto& [kind, types] : kinds) {
    std::string line;
    for (const auto& [type, e] : types) {
      if (!line.empty()) line += ", ";
      line += type + " x" + std::to_string(e.first) + " (" + mib(e.second) + ")";
    }
    std::printf("  %-44s %s\n", kind.c_str(), line.c_str());
  }
  return 0;
}

}  // namespace qwen35::app
