// `qwen35 bench`: llama-bench's fields, the read probes beside decode (a fresh buffer, the
// weights), and -np's batched decode (one model pass per step for all the sequences, as the
// server batches conversations).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "support/cli_run.h"
#include "support/test_data.h"

namespace qwen35::test {
namespace {

RunOutput run(const std::string& args) { return run_cli(args, 120, /*merge_stderr=*/false); }

TEST(CliBench, ParallelSequencesDecodeInOnePassPerStep) {
  const RunOutput r = run("bench -m " + tiny_model_dir() + " -p 8 -n 5 -np 1,3 -r 2 -t 1 --json");
  ASSERT_EQ(r.status, 0) << r.out;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 3u) << r.out;  // pp8, tg5, tg5 x3
  EXPECT_EQ(j[0]["n_prompt"], 8);
  EXPECT_EQ(j[0]["n_parallel"], 1);
  for (int i = 1; i < 3; ++i) {
    EXPECT_EQ(j[i]["n_gen"], 5);
    EXPECT_EQ(j[i]["n_parallel"], i == 1 ? 1 : 3);
    EXPECT_EQ(j[i]["samples_ts"].size(), 2u);
    EXPECT_GT(j[i]["avg_ts"].get<double>(), 0.0);
    // Every step is one batched pass: 5 passes whatever the number of sequences.
    EXPECT_EQ(j[i]["passes_per_run"], 5) << j[i].dump();
    // The read bandwidth is probed before each repetition, the share taken against their median.
    ASSERT_EQ(j[i]["read_bandwidth_samples_GBps"].size(), 2u) << j[i].dump();
    for (const auto& bw : j[i]["read_bandwidth_samples_GBps"]) EXPECT_GT(bw.get<double>(), 0.0);
    EXPECT_GT(j[i]["read_bandwidth_GBps"].get<double>(), 0.0);
    EXPECT_GT(j[i]["bandwidth_share"].get<double>(), 0.0);
    // And a plain read of the weights themselves, the same way.
    ASSERT_EQ(j[i]["weights_read_samples_GBps"].size(), 2u) << j[i].dump();
    for (const auto& bw : j[i]["weights_read_samples_GBps"]) EXPECT_GT(bw.get<double>(), 0.0);
    EXPECT_GT(j[i]["weights_read_GBps"].get<double>(), 0.0);
    EXPECT_GT(j[i]["weights_read_share"].get<double>(), 0.0);
  }
  // One stream's steps are clocked one by one: the fastest tenth beside the median (batched
  // steps and prompts are not).
  EXPECT_GT(j[1]["step_ms_p10"].get<double>(), 0.0) << j[1].dump();
  EXPECT_LE(j[1]["step_ms_p10"].get<double>(), j[1]["step_ms_median"].get<double>()) << j[1].dump();
  // Ten steps in all: no step can be slower than the whole of a repetition.
  EXPECT_LE(j[1]["step_ms_median"].get<double>() * 1e6, j[1]["samples_ns"][0].get<double>() + j[1]["samples_ns"][1].get<double>());
  EXPECT_GT(j[1]["p10_step_GBps"].get<double>(), 0.0) << j[1].dump();
  EXPECT_EQ(j[2]["step_ms_p10"].get<double>(), 0.0) << j[2].dump();
  EXPECT_EQ(j[0]["step_ms_p10"].get<double>(), 0.0) << j[0].dump();
  EXPECT_TRUE(j[0]["read_bandwidth_samples_GBps"].empty()) << j[0].dump();
  EXPECT_TRUE(j[0]["weights_read_samples_GBps"].empty()) << j[0].dump();
}

// A decoded token of a mixture-of-experts model reads k of each layer's E routed experts: the bytes
// a step reads (and so its GB/s and share of the bandwidth) leave the others out. The tiny MoE
// model: 8 layers, 16 experts of which 4 per token, gate / up / down of 32 x 64 in BF16, so at
// least 8 * 12 * 3 * 32 * 64 * 2 bytes are not read.
TEST(CliBench, MoeDecodeCountsOnlyTheChosenExperts) {
  const RunOutput r = run("bench -m " + tiny_moe_model_dir() + " -p 0 -n 2 -r 1 -t 1 --json");
  ASSERT_EQ(r.status, 0) << r.out;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 1u) << r.out;
  const int64_t unread = 8 * 12 * 3 * 32 * 64 * 2;
  EXPECT_LE(j[0]["weight_bytes_per_token"].get<int64_t>(), j[0]["model_size"].get<int64_t>() - unread) << j[0].dump();
  EXPECT_GT(j[0]["weight_bytes_per_token"].get<int64_t>(), 0);
}

// -np on a mixture-of-experts model: the sequences' rows share each step's expert passes, one
// batched model pass per step as for the dense model (what `bench -np 1,4` reports on a MoE file).
TEST(CliBench, MoeParallelSequencesDecodeInOnePassPerStep) {
  const RunOutput r = run("bench -m " + tiny_moe_model_dir() + " -p 0 -n 4 -np 1,3 -r 1 -t 2 --json");
  ASSERT_EQ(r.status, 0) << r.out;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 2u) << r.out;
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(j[i]["n_gen"], 4);
    EXPECT_EQ(j[i]["n_parallel"], i == 0 ? 1 : 3);
    EXPECT_EQ(j[i]["passes_per_run"], 4) << j[i].dump();
    EXPECT_GT(j[i]["avg_ts"].get<double>(), 0.0);
  }
}

// --weights-cache on means the default folder, not a folder named "on" beside the user.
TEST(CliBench, WeightsCacheOnIsTheDefaultFolder) {
  namespace fs = std::filesystem;
  const std::string dir = temp_dir("weights-cache-on");
  ASSERT_EQ(setenv("QWEN35_CACHE_DIR", dir.c_str(), 1), 0);
  const RunOutput r = run_cli("bench -m " + tiny_model_dir() + " --weights q8_0 --weights-cache on -p 0 -n 1 -r 1 -t 1 --json", 120);
  unsetenv("QWEN35_CACHE_DIR");
  ASSERT_EQ(r.status, 0) << r.out;
  size_t cached = 0;
  for (const auto& e : fs::directory_iterator(dir)) cached += e.path().extension() == ".q35w";
  EXPECT_EQ(cached, 1u) << r.out;
  EXPECT_FALSE(fs::exists(fs::current_path() / "on"));
}

TEST(CliBench, BadSequenceCountsAreRefusedByName) {
  for (const char* bad : {"-np 0", "-np 65", "-np 1,x", "-np ''"}) {
    const RunOutput r = run_cli("bench -m " + tiny_model_dir() + " -p 0 -n 1 " + bad, 120);
    EXPECT_EQ(r.status, 1) << bad << "\n" << r.out;
    EXPECT_NE(r.out.find("-np"), std::string::npos) << bad << "\n" << r.out;
  }
}

}  // namespace
}  // namespace qwen35::test
