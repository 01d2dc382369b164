#include "text/chat_template_check.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/gguf.h"

namespace qwen35 {

namespace {

constexpr std::array<uint32_t, 64> kRoundConstants = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

void compress(std::array<uint32_t, 8>& h, const unsigned char* block) {
  uint32_t w[64];
  for (int i = 0; i < 16; ++i)
    w[i] = uint32_t(block[4 * i]) << 24 | uint32_t(block[4 * i + 1]) << 16 | uint32_t(block[4 * i + 2]) << 8 |
           uint32_t(block[4 * i + 3]);
  for (int i = 16; i < 64; ++i) {
    const uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
    const uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
  for (int i = 0; i < 64; ++i) {
    const uint32_t sum1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25), choose = (e & f) ^ (~e & g);
    const uint32_t sum0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22), majority = (a & b) ^ (a & c) ^ (b & c);
    const uint32_t t1 = hh + sum1 + choose + kRoundConstants[i] + w[i];
    const uint32_t t2 = sum0 + majority;
    hh = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += hh;
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot read ", path.string());
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

}  // namespace

std::string sha256_hex(std::string_view bytes) {
  std::array<uint32_t, 8> h = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                               0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
  size_t full = bytes.size() / 64 * 64;
  for (size_t i = 0; i < full; i += 64) compress(h, data + i);
  // Padding: 0x80, zeros, then the bit length big-endian in the last 8 bytes of a block.
  unsigned char tail[128] = {};
  const size_t rest = bytes.size() - full;
  std::copy(data + full, data + bytes.size(), tail);
  tail[rest] = 0x80;
  const size_t tail_len = rest < 56 ? 64 : 128;
  const uint64_t bits = uint64_t(bytes.size()) * 8;
  for (int k = 0; k < 8; ++k) tail[tail_len - 1 - k] = static_cast<unsigned char>(bits >> (8 * k));
  for (size_t i = 0; i < tail_len; i += 64) compress(h, tail + i);
  std::string hex;
  char buf[9];
  for (uint32_t v : h) {
    std::snprintf(buf, sizeof buf, "%08x", v);
    hex += buf;
  }
  return hex;
}

bool is_qwen35_chat_template(std::string_view text) {
  if (sha256_hex(text) == kQwen35ChatTemplateSha256) return true;
  std::string normalized;
  normalized.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i)
    if (!(text[i] == '\r' && i + 1 < text.size() && text[i + 1] == '\n')) normalized += text[i];
  while (!normalized.empty() && std::string_view(" \t\r\n").find(normalized.back()) != std::string_view::npos)
    normalized.pop_back();
  return sha256_hex(normalized) == kQwen35ChatTemplateSha256;
}

std::string_view qwen35_chat_template() {
  static constexpr std::string_view kText =
#include "text/qwen35_chat_template.inc"
      ;
  return kText;
}

std::string describe_template_difference(std::string_view text) {
  auto lines = [](std::string_view t) {
    std::vector<std::string_view> out;
    for (size_t a = 0; a <= t.size();) {
      const size_t e = std::min(t.find('\n', a), t.size());
      std::string_view l = t.substr(a, e - a);
      if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
      out.push_back(l);
      a = e + 1;
    }
    return out;
  };
  auto cut = [](std::string_view line) {
    std::string s(line.substr(0, 80));
    if (line.size() > 80) s += "...";
    return s;
  };
  const std::vector<std::string_view> mine = lines(text), official = lines(qwen35_chat_template());
  for (size_t i = 0; i < std::max(mine.size(), official.size()); ++i) {
    const std::string n = std::to_string(i + 1);
    if (i >= mine.size()) return "it ends at line " + n + " where the official template goes on with '" + cut(official[i]) + "'";
    if (i >= official.size()) return "line " + n + " '" + cut(mine[i]) + "' is past the end of the official template";
    if (mine[i] != official[i])
      return "line " + n + " has '" + cut(mine[i]) + "' where the official template has '" + cut(official[i]) + "'";
  }
  return "";
}

std::string chat_template_warning(const std::string& model_path) {
  const std::optional<ModelChatTemplate> t = read_model_chat_template(model_path);
  if (!t) return model_path + " has no chat template; prompts use the built-in Qwen3.5 chat format";
  if (is_qwen35_chat_template(t->text)) return "";
  return "the chat template of " + t->source + " is not the official Qwen3.5 template (sha256 " + sha256_hex(t->text) +
         "; " + describe_template_difference(t->text) + "); prompts use the official Qwen3.5 format, not this template";
}

std::optional<ModelChatTemplate> read_model_chat_template(const std::string& model_dir) {
  if (is_gguf_file(model_dir)) {
    auto f = GgufFile::open(model_dir);
    const auto text = f->get_string_opt("tokenizer.chat_template");
    if (!text) return std::nullopt;
    return ModelChatTemplate{std::string(*text), model_dir + " (tokenizer.chat_template)"};
  }
  const std::filesystem::path dir(model_dir);
  if (std::filesystem::is_regular_file(dir / "chat_template.jinja")) {
    const std::filesystem::path path = dir / "chat_template.jinja";
    return ModelChatTemplate{read_file(path), path.string()};
  }
  const std::filesystem::path config_path = dir / "tokenizer_config.json";
  if (!std::filesystem::is_regular_file(config_path)) return std::nullopt;
  const nlohmann::json config = nlohmann::json::parse(read_file(config_path), nullptr, false);
  if (config.is_discarded()) fail(config_path.string(), " is not valid JSON");
  const auto it = config.find("chat_template");
  if (it == config.end()) return std::nullopt;
  if (it->is_string()) return ModelChatTemplate{it->get<std::string>(), config_path.string()};
  if (it->is_array()) {
    for (const auto& entry : *it)
      if (entry.is_object() && entry.value("name", "") == "default" && entry.contains("template") &&
          entry["template"].is_string())
        return ModelChatTemplate{entry["template"].get<std::string>(), config_path.string()};
  }
  return std::nullopt;
}

}  // namespace qwen35
