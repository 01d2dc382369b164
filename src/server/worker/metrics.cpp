#include "server/worker/metrics.h"

#include <sstream>

namespace qwen35::server {
namespace {

// Prometheus label values escape backslash, quote and newline.
std::string label(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\', out += c;
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

void header(std::ostringstream& os, const char* name, const char* type, const char* help) {
  os << "# HELP " << name << ' ' << help << "\n# TYPE " << name << ' ' << type << '\n';
}

template <typename T>
void metric(std::ostringstream& os, const char* name, const char* type, const char* help, T value) {
  header(os, name, type, help);
  os << name << ' ' << value << '\n';
}

}  // namespace

void Metrics::count_request(const std::string& endpoint, int status) {
  std::lock_guard<std::mutex> lock(mu_);
  ++requests_[{endpoint, status}];
}

void Metrics::add_generation(const GenerationResult& r, const std::string& outcome) {
  std::lock_guard<std::mutex> lock(mu_);
  ++generations_[outcome];
  prompt_tokens_ += r.prompt_tokens;
  cached_tokens_ += r.cached_tokens;
  completion_tokens_ += r.completion_tokens;
  image_tokens_ += r.image_tokens;
  video_tokens_ += r.video_tokens;
  prefill_tokens_ += r.timings.prefill_tokens;
  prefill_ms_ += r.timings.prefill_ms;
  decode_tokens_ += r.timings.decode_tokens;
  decode_ms_ += r.timings.decode_ms;
  vision_ms_ += r.timings.vision_ms;
  mtp_drafted_ += r.mtp_drafted;
  mtp_accepted_ += r.mtp_accepted;
  pld_drafted_ += r.pld_drafted;
  pld_accepted_ += r.pld_accepted;
}

std::string Metrics::render(const MetricGauges& g) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::ostringstream os;
  os.precision(10);
  header(os, "qwen35_requests_total", "counter", "HTTP requests answered, by endpoint and status code.");
  for (const auto& [key, n] : requests_)
    os << "qwen35_requests_total{endpoint=\"" << label(key.first) << "\",status=\"" << key.second << "\"} " << n << '\n';
  header(os, "qwen35_generations_total", "counter", "Generations finished, by outcome (stop, length, cancelled, error).");
  for (const auto& [outcome, n] : generations_)
    os << "qwen35_generations_total{outcome=\"" << label(outcome) << "\"} " << n << '\n';
  metric(os, "qwen35_prompt_tokens_total", "counter", "Prompt tokens of finished generations (after image expansion).", prompt_tokens_);
  metric(os, "qwen35_prompt_cached_tokens_total", "counter", "Prompt tokens reused from a cache instead of computed.", cached_tokens_);
  header(os, "qwen35_prompt_vision_tokens_total", "counter",
         "Prompt tokens standing for images and videos (their vision tower outputs), by kind (image, video).");
  os << "qwen35_prompt_vision_tokens_total{kind=\"image\"} " << image_tokens_ << '\n';
  os << "qwen35_prompt_vision_tokens_total{kind=\"video\"} " << video_tokens_ << '\n';
  metric(os, "qwen35_generated_tokens_total", "counter", "Tokens generated.", completion_tokens_);
  metric(os, "qwen35_prefill_tokens_total", "counter", "Prompt tokens processed by prefill.", prefill_tokens_);
  metric(os, "qwen35_prefill_seconds_total", "counter", "Time spent in prefill.", prefill_ms_ / 1000.0);
  metric(os, "qwen35_prefill_tokens_per_second", "gauge", "Average prefill rate so far.",
         prefill_ms_ > 0 ? double(prefill_tokens_) * 1000.0 / prefill_ms_ : 0.0);
  metric(os, "qwen35_decode_tokens_total", "counter", "Tokens produced by decode steps.", decode_tokens_);
  metric(os, "qwen35_decode_seconds_total", "counter", "Time spent in decode steps.", decode_ms_ / 1000.0);
  metric(os, "qwen35_decode_tokens_per_second", "gauge", "Average decode rate so far.",
         decode_ms_ > 0 ? double(decode_tokens_) * 1000.0 / decode_ms_ : 0.0);
  header(os, "qwen35_draft_tokens_total", "counter", "Speculative draft tokens verified, by source (mtp, pld).");
  os << "qwen35_draft_tokens_total{source=\"mtp\"} " << mtp_drafted_ << '\n';
  os << "qwen35_draft_tokens_total{source=\"pld\"} " << pld_drafted_ << '\n';
  header(os, "qwen35_draft_accepted_tokens_total", "counter", "Draft tokens accepted (each one a decode step saved), by source.");
  os << "qwen35_draft_accepted_tokens_total{source=\"mtp\"} " << mtp_accepted_ << '\n';
  os << "qwen35_draft_accepted_tokens_total{source=\"pld\"} " << pld_accepted_ << '\n';
  metric(os, "qwen35_vision_seconds_total", "counter", "Time spent in the vision tower.", vision_ms_ / 1000.0);
  metric(os, "qwen35_prefix_cache_hits_total", "counter", "Prefix cache lookups that found a snapshot.", g.cache_hits);
  metric(os, "qwen35_prefix_cache_misses_total", "counter", "Prefix cache lookups that found none.", g.cache_misses);
  metric(os, "qwen35_prefix_cache_bytes", "gauge", "Bytes held by the prefix cache.", g.cache_bytes);
  metric(os, "qwen35_prefix_cache_budget_bytes", "gauge", "Byte budget of the prefix cache (--cache-ram).", g.cache_budget_bytes);
  metric(os, "qwen35_prefix_cache_entries", "gauge", "Snapshots in the prefix cache.", g.cache_entries);
  metric(os, "qwen35_queue_length", "gauge", "Requests waiting for a free session.", g.queue_length);
  metric(os, "qwen35_active_generations", "gauge", "Generations in progress.", g.active_generations);
  metric(os, "qwen35_batched_passes_total", "counter", "Model passes of rounds with several conversations active (each one batched forward).", g.batched_passes);
  metric(os, "qwen35_batched_rows_total", "counter", "Token rows those batched passes carried.", g.batched_rows);
  metric(os, "qwen35_parallel_sessions", "gauge", "Sessions (conversations that progress at once, --parallel).", g.parallel);
  metric(os, "qwen35_model_loaded", "gauge", "1 once the model is loaded and requests are served.", g.model_loaded ? 1 : 0);
  return os.str();
}

}  // namespace qwen35::server
