#include "io/checkpoint.h"

#include <filesystem>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace qwen35 {
namespace fs = std::filesystem;

std::unique_ptr<Checkpoint> Checkpoint::open(const std::string& model_dir) {
  auto ck = std::unique_ptr<Checkpoint>(new Checkpoint());
  ck->dir_ = model_dir;
  const fs::path dir(model_dir);
  // The error_code forms: an unusable path (too long, no permission) is an Error, not a filesystem_error.
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) fail("model folder ", model_dir, " does not exist or is not a directory");

  std::vector<std::string> shard_names;
  const fs::path index_path = dir / "model.safetensors.index.json";
  std::map<std::string, std::string> weight_map;
  if (fs::exists(index_path, ec)) {
    std::ifstream in(index_path);
    nlohmann::json index;
    // A tensor listed twice in weight_map (a duplicate JSON key) is ambiguous; the parser would
    // silently keep the last one, so the keys are watched while parsing.
    std::string top_key, duplicate;
    std::set<std::string> listed;
    auto watch_keys = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
      if (event != nlohmann::json::parse_event_t::key) return true;
      if (depth == 1) top_key = parsed.get<std::string>();
      else if (depth == 2 && top_key == "weight_map" && !listed.insert(parsed.get<std::string>()).second &&
               duplicate.empty())
        duplicate = parsed.get<std::string>();
      return true;
    };
    try {
      index = nlohmann::json::parse(in, watch_keys);
    } catch (const nlohmann::json::exception& e) {
      fail(index_path.string(), ": not valid JSON (", e.what(), ")");
    }
    if (!duplicate.empty()) fail(index_path.string(), ": weight_map lists tensor '", duplicate, "' more than once");
    if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object())
      fail(index_path.string(), ": expected an object with a \"weight_map\" object");
    std::set<std::string> unique;
    for (auto it = index["weight_map"].begin(); it != index["weight_map"].end(); ++it) {
      if (!it.value().is_string()) fail(index_path.string(), ": weight_map entry '", it.key(), "' is not a file name");
      std::string file = it.value().get<std::string>();
      // The index names files inside the folder only; anything else is a hostile index.
      if (file.empty() || file.find('/') != std::string::npos || file.find('\\') != std::string::npos || file == "." ||
          file == "..")
        fail(index_path.string(), ": weight_map names an invalid shard file '", file, "'");
      weight_map[it.key()] = file;
      if (unique.insert(file).second) shard_names.push_back(file);
    }
    if (shard_names.empty()) fail(index_path.string(), ": weight_map is empty");
  } else if (fs::exists(dir / "model.safetensors", ec)) {
    shard_names.push_back("model.safetensors");
  } else {
    fail("model folder ", model_dir, " has neither model.safetensors nor model.safetensors.index.json");
  }

  std::map<std::string, const SafetensorsFile*> by_name;
  for (const std::string& name : shard_names) {
    ck->files_.push_back(std::make_unique<SafetensorsFile>((dir / name).string()));
    by_name[name] = ck->files_.back().get();
  }
  for (const auto& file : ck->files_) {
    for (const auto& [name, view] : file->tensors()) {
      if (!weight_map.empty()) {
        auto it = weight_map.find(name);
        // Tensors a shard holds but the index assigns elsewhere are ignored, as HF does.
        if (it == weight_map.end() || by_name[it->second] != file.get()) continue;
      }
      if (!ck->index_.emplace(name, &view).second) fail("tensor '", name, "' appears in more than one shard");
    }
  }
  for (const auto& [name, file] : weight_map) {
    if (!ck->index_.count(name))
      fail(index_path.string(), " lists tensor '", name, "' in ", file, " but that shard does not contain it");
  }
  return ck;
}

const TensorView* Checkpoint::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : it->second;
}

const TensorView& Checkpoint::get(const std::string& name) const {
  const TensorView* v = find(name);
  if (!v) fail("model folder ", dir_, ": missing tensor '", name, "'");
  return *v;
}

std::vector<std::string> Checkpoint::names() const {
  std::vector<std::string> out;
  for (const auto& [name, view] : index_) out.push_back(name);
  return out;
}

size_t Checkpoint::total_bytes() const {
  size_t n = 0;
  for (const auto& [name, view] : index_) n += view->nbytes;
  return n;
}

}  // namespace qwen35
