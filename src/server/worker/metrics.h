// Server counters and their Prometheus text exposition (GET /metrics).
//
// Thread contract: every method is safe to call from any thread (one mutex; the counters are
// touched once per request, never per token).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "qwen35/engine.h"

namespace qwen35::server {

// Values read at scrape time from the worker and the prefix cache.
struct MetricGauges {
  bool model_loaded = false;
  int64_t queue_length = 0;
  int64_t active_generations = 0;
  int64_t parallel = 0;
  int64_t batched_passes = 0, batched_rows = 0;
  int64_t cache_hits = 0, cache_misses = 0;
  int64_t cache_bytes = 0, cache_budget_bytes = 0, cache_entries = 0;
};

class Metrics {
 public:
  // One answered HTTP request; `endpoint` should be a fixed route name (bounded label set).
  void count_request(const std::string& endpoint, int status);
  // One finished generation (or one that failed to start: `outcome` "error").
  void add_generation(const GenerationResult& r, const std::string& outcome);

  std::string render(const MetricGauges& g) const;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, int64_t> requests_;
  std::map<std::string, int64_t> generations_;  // by outcome: stop, length, cancelled, error
  int64_t prompt_tokens_ = 0, cached_tokens_ = 0, completion_tokens_ = 0;
  int64_t image_tokens_ = 0, video_tokens_ = 0;  // the prompts' <|image_pad|> and <|video_pad|> tokens
  int64_t prefill_tokens_ = 0, decode_tokens_ = 0;
  double prefill_ms_ = 0, decode_ms_ = 0, vision_ms_ = 0;
  int64_t mtp_drafted_ = 0, mtp_accepted_ = 0, pld_drafted_ = 0, pld_accepted_ = 0;
};

}  // namespace qwen35::server
