// MaskBench correctness over JSONSchemaBench's real-world schemas: per schema, whether it compiles
// (or is refused, and by which keyword), whether every valid instance is accepted and every
// invalid one rejected. JSON output: the totals, refusals by keyword, per-subset counts, compile
// time p50/p99 (noisy on a shared machine) and every invalid instance accepted (must be none).
//
//   ninja -C build maskbench && build/bin/maskbench [--every N] [--max-bytes B] [--mask [--tokenizer PATH]] [--cpu-time] PATH... > maskbench.json
//
// PATH: a MaskBench file (maskbench/data/*.json of guidance-ai/jsonschemabench: {schema, tests:
// [{data, valid}]}), a folder of them (name order; --every N takes every Nth), or a .jsonl file of
// {file, schema, tests} lines (tests/data/grammar/maskbench_sample.jsonl). Instances are written
// as JSON text with their keys in the file's order and checked byte by byte with the matcher (the
// token mask is the matcher's exact image: tests/grammar/token_mask_test.cpp checks it against a
// brute-force oracle). A schema passes when it compiles, accepts all its valid instances and
// rejects all its invalid ones.
//
// --mask also times the token mask (TokenMasker::fill, 1 thread) before every token of every
// valid instance a compiled schema accepts, from a fresh masker per schema (so the lazy per-state
// work is counted), over a whole vocabulary: the tokenizer at --tokenizer (a tokenizer.json or a
// model folder; instances encoded with it), else the synthetic 248,320-id one of grammar_bench
// (synthetic_vocab.h; instances split by greedy longest match). It prints mask time per token
// p50/p90/p99/max, the 10 instances with the slowest single mask, and any instance with a token
// the mask refused (must be none). --cpu-time times masks and compiles by the thread's CPU clock
// instead of the wall clock: on a shared machine whose processes get paused, the wall clock
// counts the pauses.
#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "grammar/json_schema.h"
#include "grammar/matcher.h"
#include "grammar/token_mask.h"
#include "synthetic_vocab.h"
#include "text/tokenizer.h"

namespace {

using json = nlohmann::ordered_json;
using namespace qwen35;
using namespace qwen35::grammar;

struct Record {
  std::string file;
  json schema, tests;
};

struct Tally {
  int schemas = 0, compiled = 0, refused = 0, errors = 0, passing = 0;
  int valid = 0, valid_accepted = 0, invalid = 0, invalid_rejected = 0;
  json to_json() const {
    return {{"schemas", schemas},   {"compiled", compiled},          {"refused", refused},
            {"other_errors", errors}, {"passing", passing},          {"valid", valid},
            {"valid_accepted", valid_accepted}, {"invalid", invalid}, {"invalid_rejected", invalid_rejected}};
  }
};

// The wall clock, or with --cpu-time this thread's CPU time; in microseconds.
bool g_cpu_time = false;
double now_us() {
  if (g_cpu_time) {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) * 1e6 + double(ts.tv_nsec) * 1e-3;
  }
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

bool accepts(const std::shared_ptr<const Grammar>& g, const std::string& text) {
  GrammarMatcher m(g);
  return m.advance(text) && m.can_finish();
}

std::string subset_of(const std::string& file) {
  const std::string base = std::filesystem::path(file).filename().string();
  size_t end = base.find("---");
  if (end == std::string::npos) {
    end = base.size();
    for (size_t i = 0; i + 1 < base.size(); ++i)
      if (base[i] == '_' && std::isdigit(uint8_t(base[i + 1]))) {
        end = i;
        break;
      }
  }
  return base.substr(0, end);
}

// The vocabulary masks are timed over, and how an instance becomes its tokens.
struct MaskVocab {
  std::shared_ptr<const TokenVocab> vocab;
  std::optional<Tokenizer> tokenizer;
  std::unordered_map<std::string, int32_t> by_bytes;  // synthetic: for greedy splitting

  explicit MaskVocab(const std::string& tokenizer_path) {
    std::vector<std::pair<int32_t, std::string>> tokens;
    int32_t size = bench::kSyntheticVocabSize;
    if (tokenizer_path.empty()) {
      tokens = bench::synthetic_vocab(size);
      for (const auto& [id, b] : tokens) by_bytes.emplace(b, id);
    } else {
      tokenizer.emplace(Tokenizer::from_file(tokenizer_path));
      size = tokenizer->vocab_size();
      for (int32_t id = 0; id < size; ++id)
        if (tokenizer->is_valid_id(id) && !tokenizer->is_special(id)) tokens.emplace_back(id, std::string(tokenizer->token_bytes(id)));
    }
    vocab = std::make_shared<const TokenVocab>(size, tokens);
  }
  std::vector<int32_t> split(const std::string& text) const {
    return tokenizer ? tokenizer->encode(text, AddedTokenMode::kPlainText) : bench::greedy_split(text, by_bytes);
  }
};

// Walks `text` token by token, timing the mask before each; false when the mask refuses one of
// its tokens or the grammar cannot finish after them.
bool time_masks(const std::shared_ptr<const Grammar>& g, const MaskVocab& mv, const std::string& text, std::vector<double>& mask_us) {
  GrammarMatcher m(g);
  TokenMasker masker(g, mv.vocab);
  std::vector<uint64_t> bits(mv.vocab->words());
  for (int32_t id : mv.split(text)) {
    const double t0 = now_us();
    try {
      masker.fill(m, bits.data());
    } catch (const qwen35::Error&) {  // past the mask's work bound: counted as refused
      return false;
    }
    mask_us.push_back(now_us() - t0);
    if (!((bits[size_t(id) >> 6] >> (id & 63)) & 1) || !m.advance(mv.vocab->token_bytes(id))) return false;
  }
  return m.can_finish();
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, size_t(p * double(v.size())))];
}

}  // namespace

int main(int argc, char** argv) {
  int every = 1;
  size_t max_bytes = 0;
  bool mask = false;
  std::string tokenizer_path;
  std::vector<std::string> paths;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--every" && i + 1 < argc) {
      every = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--max-bytes" && i + 1 < argc) {
      max_bytes = size_t(std::atoll(argv[++i]));
    } else if (a == "--mask") {
      mask = true;
    } else if (a == "--cpu-time") {
      g_cpu_time = true;
    } else if (a == "--tokenizer" && i + 1 < argc) {
      tokenizer_path = argv[++i];
    } else {
      paths.push_back(a);
    }
  }
  if (paths.empty()) {
    std::fprintf(stderr, "usage: maskbench [--every N] [--max-bytes B] [--mask [--tokenizer PATH]] [--cpu-time] PATH...\n");
    return 2;
  }
  std::vector<Record> records;
  for (const std::string& p : paths) {
    if (std::filesystem::is_directory(p)) {
      std::vector<std::string> files;
      for (const auto& e : std::filesystem::directory_iterator(p))
        if (e.path().extension() == ".json") files.push_back(e.path().string());
      std::sort(files.begin(), files.end());
      for (size_t i = 0; i < files.size(); i += size_t(every)) {
        std::ifstream in(files[i]);
        const json j = json::parse(in, nullptr, false);
        if (j.is_discarded() || !j.contains("schema")) continue;
        if (max_bytes && j["schema"].dump().size() > max_bytes) continue;
        records.push_back({files[i], j["schema"], j.value("tests", json::array())});
      }
    } else if (p.size() > 6 && p.substr(p.size() - 6) == ".jsonl") {
      std::ifstream in(p);
      std::string line;
      while (std::getline(in, line)) {
        const json j = json::parse(line);
        records.push_back({j["file"], j["schema"], j["tests"]});
      }
    } else {
      std::ifstream in(p);
      const json j = json::parse(in);
      records.push_back({p, j["schema"], j.value("tests", json::array())});
    }
  }

  Tally total;
  std::map<std::string, Tally> by_subset;
  std::map<std::string, int> refused_by_keyword;
  std::map<std::string, int> errors_by_kind;
  json invalid_accepted = json::array(), valid_rejected = json::array(), refusals = json::array();
  std::vector<double> compile_ms, mask_us;
  std::optional<MaskVocab> mask_vocab;
  if (mask) mask_vocab.emplace(tokenizer_path);
  int mask_instances = 0;
  json mask_refused = json::array();
  std::vector<std::pair<double, std::string>> slowest;  // per instance: its slowest mask
  for (const Record& r : records) {
    Tally& sub = by_subset[subset_of(r.file)];
    ++total.schemas, ++sub.schemas;
    std::shared_ptr<const Grammar> g;
    const double t0 = now_us();
    try {
      g = compile_grammar(json_schema_to_grammar(r.schema));
    } catch (const SchemaError& e) {
      ++total.refused, ++sub.refused;
      ++refused_by_keyword[e.keyword()];
      refusals.push_back({{"file", r.file}, {"keyword", e.keyword()}, {"pointer", e.pointer()}, {"why", e.why()}});
      continue;
    } catch (const std::exception& e) {
      ++total.errors, ++sub.errors;
      std::string what = e.what();
      ++errors_by_kind[what.substr(0, std::min(what.find(':', what.find(':') + 1), size_t(60)))];
      refusals.push_back({{"file", r.file}, {"error", what}});
      continue;
    }
    compile_ms.push_back((now_us() - t0) * 1e-3);
    ++total.compiled, ++sub.compiled;
    bool pass = true;
    for (const json& t : r.tests) {
      const std::string text = t["data"].dump();
      const bool ok = accepts(g, text);
      if (t["valid"].get<bool>()) {
        ++total.valid, ++sub.valid;
        total.valid_accepted += ok, sub.valid_accepted += ok;
        if (!ok && valid_rejected.size() < 20) valid_rejected.push_back({{"file", r.file}, {"instance", text.substr(0, 300)}});
        if (ok && mask_vocab) {
          ++mask_instances;
          const size_t before = mask_us.size();
          if (!time_masks(g, *mask_vocab, text, mask_us)) mask_refused.push_back({{"file", r.file}, {"instance", text.substr(0, 300)}});
          if (mask_us.size() > before)
            slowest.emplace_back(*std::max_element(mask_us.begin() + std::ptrdiff_t(before), mask_us.end()), r.file);
        }
        pass = pass && ok;
      } else {
        ++total.invalid, ++sub.invalid;
        total.invalid_rejected += !ok, sub.invalid_rejected += !ok;
        if (ok) invalid_accepted.push_back({{"file", r.file}, {"instance", text.substr(0, 300)}});
        pass = pass && !ok;
      }
    }
    total.passing += pass, sub.passing += pass;
  }
  json out = total.to_json();
  out["refused_by_keyword"] = refused_by_keyword;
  out["other_errors_by_kind"] = errors_by_kind;
  out["by_subset"] = json::object();
  for (const auto& [k, v] : by_subset) out["by_subset"][k] = v.to_json();
  out["compile_ms_p50"] = percentile(compile_ms, 0.5);
  out["compile_ms_p99"] = percentile(compile_ms, 0.99);
  if (mask_vocab) {
    out["mask"] = {{"vocabulary", tokenizer_path.empty() ? "synthetic" : tokenizer_path},
                   {"vocab_size", mask_vocab->vocab->vocab_size()},
                   {"threads", 1},
                   {"clock", g_cpu_time ? "thread cpu" : "wall"},
                   {"instances", mask_instances},
                   {"tokens", mask_us.size()},
                   {"mask_us_p50", percentile(mask_us, 0.5)},
                   {"mask_us_p90", percentile(mask_us, 0.9)},
                   {"mask_us_p99", percentile(mask_us, 0.99)},
                   {"mask_us_max", percentile(mask_us, 1.0)},
                   {"instances_refused_by_mask", mask_refused}};
    std::sort(slowest.rbegin(), slowest.rend());
    json worst = json::array();
    for (size_t i = 0; i < std::min<size_t>(10, slowest.size()); ++i) worst.push_back({{"file", slowest[i].second}, {"mask_us", slowest[i].first}});
    out["mask"]["slowest_instances"] = worst;
  }
  out["invalid_accepted"] = invalid_accepted;
  out["valid_rejected_first_20"] = valid_rejected;
  out["refusals"] = refusals;
  std::printf("%s\n", out.dump(2).c_str());
  return invalid_accepted.empty() && mask_refused.empty() ? 0 : 1;
}
