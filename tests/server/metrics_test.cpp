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

}  // namespace
}  // namespace qwen35::server
