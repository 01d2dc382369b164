// The Prometheus exposition: counters summed over finished generations.
#include <gtest/gtest.h>

#include "server/worker/metrics.h"

namespace qwen35::server {
namespace {

TEST(Metrics, DraftTokensBySource) {
  Metrics m;
  GenerationResult r;
  r.completion_tokens = 10;
  r.mtp_drafted = 8;
  r.mtp_accepted = 6;
  r.pld_drafted = 4;
  r.pld_accepted = 1;
  m.add_generation(r, "stop");
  m.add_generation(r, "length");
  const std::string text = m.render({});
  for (const char* line : {"qwen35_draft_tokens_total{source=\"mtp\"} 16", "qwen35_draft_tokens_total{source=\"pld\"} 8",
                           "qwen35_draft_accepted_tokens_total{source=\"mtp\"} 12",
                           "qwen35_draft_accepted_tokens_total{source=\"pld\"} 2",
                           "# TYPE qwen35_draft_tokens_total counter", "qwen35_generated_tokens_total 20"})
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
}

TEST(Metrics, VisionTokensByKind) {
  Metrics m;
  GenerationResult image;
  image.prompt_tokens = 300;
  image.image_tokens = 256;
  GenerationResult video;
  video.prompt_tokens = 900;
  video.image_tokens = 64;
  video.video_tokens = 800;
  m.add_generation(image, "stop");
  m.add_generation(video, "stop");
  m.add_generation(video, "cancelled");
  const std::string text = m.render({});
  for (const char* line : {"# TYPE qwen35_prompt_vision_tokens_total counter",
                           "qwen35_prompt_vision_tokens_total{kind=\"image\"} 384",
                           "qwen35_prompt_vision_tokens_total{kind=\"video\"} 1600", "qwen35_prompt_tokens_total 2100"})
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
}

}  // namespace
}  // namespace qwen35::server
