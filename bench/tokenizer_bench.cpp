// Tokenizer throughput on ~1 MB of mixed-language text (English, Japanese, Chinese, code), built
// deterministically below so every run measures the same input.
//
//   cmake --build build --target tokenizer_bench && build/bin/tokenizer_bench
//   (bytes_per_second is the throughput; QWEN35_TOKENIZER=path/to/tokenizer.json or a model
//   directory picks another tokenizer, default: the bundled tiny model's, Qwen3 vocabulary with
//   the Qwen3.5 pipeline)
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "text/streaming_decoder.h"
#include "text/tokenizer.h"

namespace {

const char* const kEnglish[] = {
    "The quick brown fox jumps over the lazy dog. ",
    "In 2024, researchers reported a 37.5% improvement on the benchmark; they didn't expect it. ",
    "Tokenizers split text into pieces, and engines must match them exactly.\n",
    "She said, \"It's not what you think — it's what you do.\" ",
    "Results: accuracy=0.913, recall=0.87, F1=0.89 (n=12,408).\n\n",
};
const char* const kJapanese[] = {
    "吾輩は猫である。名前はまだ無い。どこで生れたかとんと見当がつかぬ。",
    "東京都の人口は約1400万人で、日本最大の都市です。\n",
    "カタカナのテキストとひらがなのテキストが混ざっています。",
};
const char* const kChinese[] = {
    "生活的真谛是什么？这是一个古老的问题。",
    "机器学习模型需要大量的数据进行训练，计算资源也很重要。\n",
    "北京是中华人民共和国的首都，有三千多年的历史。",
};
const char* const kCode[] = {
    "def fibonacci(n: int) -> int:\n    if n < 2:\n        return n\n    return fibonacci(n - 1) + fibonacci(n - 2)\n\n",
    "for (size_t i = 0; i < tokens.size(); ++i) {\n  ids.push_back(vocab.at(tokens[i]));\n}\n",
    "{\"name\": \"qwen35\", \"version\": \"0.1.0\", \"tags\": [\"llm\", \"cpu\"], \"size\": 9000000000}\n",
    "SELECT id, name FROM users WHERE created_at > '2024-01-01' ORDER BY id DESC LIMIT 10;\n",
};

template <size_t N>
const char* pick(const char* const (&list)[N], uint64_t r) {
  return list[r % N];
}

// ~1 MB: English 40%, code 25%, Japanese 20%, Chinese 15% of the snippets, in a seeded order.
const std::string& mixed_text() {
  static const std::string text = [] {
    std::string t;
    uint64_t state = 0x9E3779B97F4A7C15ULL;
    while (t.size() < (1u << 20)) {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      uint64_t r = state >> 33;
      uint64_t kind = r % 20;
      if (kind < 8) t += pick(kEnglish, r >> 8);
      else if (kind < 13) t += pick(kCode, r >> 8);
      else if (kind < 17) t += pick(kJapanese, r >> 8);
      else t += pick(kChinese, r >> 8);
      if (r % 7 == 0) t += std::to_string(r % 100000) + " ";
    }
    return t;
  }();
  return text;
}

const qwen35::Tokenizer& tokenizer() {
  static const qwen35::Tokenizer tok = [] {
    const char* env = std::getenv("QWEN35_TOKENIZER");
    std::string path = env && *env ? std::string(env)
                                   : (std::filesystem::path(__FILE__).parent_path().parent_path() / "tests/data/tiny-qwen35").string();
    return qwen35::Tokenizer::from_file(path);
  }();
  return tok;
}

void BM_EncodeMixed1MB(benchmark::State& state) {
  const std::string& text = mixed_text();
  const qwen35::Tokenizer& tok = tokenizer();
  size_t n = 0;
  for (auto _ : state) {
    std::vector<int32_t> ids = tok.encode(text);
    n = ids.size();
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(text.size()));
  state.counters["tokens"] = double(n);
}
BENCHMARK(BM_EncodeMixed1MB)->Unit(benchmark::kMillisecond);

// A chat-message-sized input: fixed per-call costs matter here.
void BM_EncodeShort(benchmark::State& state) {
  const std::string text = mixed_text().substr(0, 400);
  const qwen35::Tokenizer& tok = tokenizer();
  for (auto _ : state) benchmark::DoNotOptimize(tok.encode(text));
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(text.size()));
}
BENCHMARK(BM_EncodeShort);

void BM_DecodeMixed1MB(benchmark::State& state) {
  const qwen35::Tokenizer& tok = tokenizer();
  const std::vector<int32_t> ids = tok.encode(mixed_text());
  for (auto _ : state) benchmark::DoNotOptimize(tok.decode(ids));
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(mixed_text().size()));
}
BENCHMARK(BM_DecodeMixed1MB)->Unit(benchmark::kMillisecond);

void BM_StreamingDecodeMixed1MB(benchmark::State& state) {
  const qwen35::Tokenizer& tok = tokenizer();
  const std::vector<int32_t> ids = tok.encode(mixed_text());
  for (auto _ : state) {
    qwen35::StreamingDecoder d(tok);
    size_t bytes = 0;
    for (int32_t id : ids) bytes += d.push(id).size();
    benchmark::DoNotOptimize(bytes);
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(mixed_text().size()));
}
BENCHMARK(BM_StreamingDecodeMixed1MB)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
