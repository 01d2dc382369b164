// The stand-in vocabulary of the grammar benchmarks (grammar_bench, maskbench): 248,320 ids like
// Qwen3.5's, for when no tokenizer is given -- every single byte, then byte strings of 2 to 12 bytes
// drawn from English-like words with and without a leading space, digits, JSON punctuation runs
// and UTF-8 text (seeded, so every run has the same one); and greedy longest-match splitting of a
// text into its tokens.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace qwen35::bench {

inline constexpr int32_t kSyntheticVocabSize = 248320;

inline std::vector<std::pair<int32_t, std::string>> synthetic_vocab(int32_t n) {
  std::vector<std::pair<int32_t, std::string>> out;
  std::unordered_map<std::string, int> seen;
  for (int b = 0; b < 256; ++b) {
    out.emplace_back(int32_t(out.size()), std::string(1, char(b)));
    seen[out.back().second] = 1;
  }
  std::mt19937_64 rng(1234);
  const std::string letters = "etaoinshrdlcumwfgypbvkjxqzETAOINSHRDLC";
  const std::string punct = "{}[]\":,. \n-_/\\'()";
  const char* utf8[] = {"é", "ü", "ß", "の", "東", "京", "—", "“", "”", "😀"};
  while (int32_t(out.size()) < n) {
    std::string s;
    const int kind = int(rng() % 10);
    const int len = 2 + int(rng() % 9);
    if (kind < 6) {
      if (rng() % 2) s += ' ';
      while (int(s.size()) < len) s += letters[rng() % letters.size()];
    } else if (kind < 7) {
      while (int(s.size()) < len) s += char('0' + rng() % 10);
    } else if (kind < 9) {
      while (int(s.size()) < len) s += rng() % 3 ? punct[rng() % punct.size()] : letters[rng() % letters.size()];
    } else {
      while (int(s.size()) < len) s += utf8[rng() % 10];
    }
    if (seen.emplace(s, 1).second) out.emplace_back(int32_t(out.size()), s);
  }
  return out;
}

inline std::vector<int32_t> greedy_split(const std::string& text, const std::unordered_map<std::string, int32_t>& by_bytes) {
  std::vector<int32_t> ids;
  for (size_t p = 0; p < text.size();) {
    size_t best = 0;
    int32_t id = -1;
    for (size_t l = 1; l <= 16 && p + l <= text.size(); ++l)
      if (auto it = by_bytes.find(text.substr(p, l)); it != by_bytes.end()) {
        best = l;
        id = it->second;
      }
    if (id < 0) {
      std::fprintf(stderr, "byte %zu of an instance is in no token\n", p);
      std::exit(1);
    }
    ids.push_back(id);
    p += best;
  }
  return ids;
}

}  // namespace qwen35::bench
