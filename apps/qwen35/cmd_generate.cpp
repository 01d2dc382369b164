// qwen35 generate: generation from token ids or chat messages, for tests and debugging.
#include <cstdio>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "apps/qwen35/args.h"
#include "apps/qwen35/engine_options.h"
#include "apps/qwen35/input_files.h"
#include "core/error.h"
#include "server/openai/chat_json.h"

namespace qwen35::app {
namespace {

const char* kUsage =
    "usage: qwen35 generate [-m MODEL_DIR] (--ids 1,2,3 | --messages FILE.json) [-n N] [options]\n"
    "\n"
    "Greedy by default (--temp 0). --ids feeds raw token ids (no template); --messages renders\n"
    "OpenAI-style chat messages (text parts, image_url parts with a data: URI or a local path)\n"
    "with the model's chat format.\n"
    "\n"
    "options:\n"
    "  -n N                  tokens to generate (default 32; -1: until the end)\n"
    "  --kwargs JSON         chat_template_kwargs, e.g. '{\"enable_thinking\": false}'\n"
    "  --tools FILE          OpenAI tools array (JSON file)\n"
    "  --ignore-eos          keep generating after an end-of-sequence token\n"
    "  --json                print {\"ids\", \"text\", \"reasoning\", \"stop_reason\", \"speculative\", \"pld\",\n"
    "                        \"mtp\", \"usage\", \"timings\"}: speculative = {mode, draft_max, drafted, accepted},\n"
    "                        pld / mtp = {drafted, accepted} of each draft source\n";

std::string read_file(const std::string& path) { return read_capped(path, kMaxInputFileBytes, "file"); }

nlohmann::ordered_json parse_json(const std::string& text, const std::string& what) {
  try {
    return nlohmann::ordered_json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    fail(what, " is not valid JSON: ", e.what());
  }
}

ChatRequest request_from_files(const Args& args) {
  ChatRequest req;
  nlohmann::ordered_json doc = parse_json(read_file(args.require("--messages")), args.require("--messages"));
  nlohmann::ordered_json messages = doc.is_object() && doc.contains("messages") ? doc["messages"] : doc;
  server::ImageSourcePolicy policy;
  policy.allow_local_files = true;
  req.messages = server::parse_messages(messages, policy);
  if (doc.is_object() && doc.contains("tools")) req.tools_json = doc["tools"].dump();
  if (auto tools = args.get("--tools")) req.tools_json = parse_json(read_file(*tools), *tools).dump();
  if (auto kw = args.get("--kwargs")) {
    nlohmann::ordered_json k = parse_json(*kw, "--kwargs");
    if (!k.is_object()) fail("--kwargs must be a JSON object");
    if (k.contains("enable_thinking")) {
      if (!k["enable_thinking"].is_boolean()) fail("--kwargs enable_thinking must be true or false");
      req.enable_thinking = k["enable_thinking"].get<bool>();
    }
    if (k.contains("add_vision_id") && k["add_vision_id"].is_boolean()) req.add_vision_id = k["add_vision_id"].get<bool>();
  }
  return req;
}

int run_generate(int argc, char** argv) {
  std::set<std::string> with_value = {"--ids", "--messages", "-n", "--kwargs", "--tools"};
  with_value.insert(engine_option_names().begin(), engine_option_names().end());
  with_value.insert(sampling_option_names().begin(), sampling_option_names().end());
  Args args(argc, argv, with_value, {"--json", "--ignore-eos", "--help", "-h"});
  if (args.has("--help") || args.has("-h")) {
    std::printf("%s%s%s", kUsage, kEngineOptionsHelp, kSamplingOptionsHelp);
    return 0;
  }
  if (args.has("--ids") == args.has("--messages")) fail("give exactly one of --ids and --messages (see --help)");
  // Every option is checked before the model loads.
  const int64_t max_tokens = args.get_int_in("-n", 32, -1, int64_t(1) << 30);
  sampling_from(args, SamplingParams{});
  const ChatRequest chat_request = args.has("--messages") ? request_from_files(args) : ChatRequest{};
  const std::vector<int32_t> ids = args.has("--ids") ? parse_id_list(args.require("--ids")) : std::vector<int32_t>{};
  std::unique_ptr<Engine> engine = load_engine(engine_options_from(args));
  SamplingParams params = engine->default_sampling();
  params.temperature = 0;
  params = sampling_from(args, params);
  params.max_tokens = max_tokens;
  params.ignore_eos = args.has("--ignore-eos");
  const bool as_json = args.has("--json");

  std::unique_ptr<Session> session = engine->new_session();
  EventCallback print = [&](const GenerationEvent& ev) {
    if (!as_json && !ev.text.empty()) {
      std::fwrite(ev.text.data(), 1, ev.text.size(), stdout);
      std::fflush(stdout);
    }
    return true;
  };
  Status st;
  GenerationResult r;
  if (args.has("--ids")) {
    r = session->complete(ids, params, print, &st);
  } else {
    r = session->chat(chat_request, params, print, &st);
  }
  if (!st.ok()) fail(st.message);
  if (as_json) {
    nlohmann::ordered_json out;
    out["ids"] = r.tokens;
    out["text"] = r.content;
    out["reasoning"] = r.reasoning;
    out["stop_reason"] = stop_reason_name(r.stop_reason);
    out["speculative"] = {{"mode", spec_mode_name(params.speculative.mode)},
                          {"draft_max", params.speculative.draft_max},
                          {"drafted", r.drafted()},
                          {"accepted", r.accepted()}};
    out["pld"] = {{"drafted", r.pld_drafted}, {"accepted", r.pld_accepted}};
    out["mtp"] = {{"drafted", r.mtp_drafted}, {"accepted", r.mtp_accepted}};
    out["usage"] = {{"prompt_tokens", r.prompt_tokens},         {"cached_tokens", r.cached_tokens},
                    {"image_tokens", r.image_tokens},           {"video_tokens", r.video_tokens},
                    {"completion_tokens", r.completion_tokens}, {"reasoning_tokens", r.reasoning_tokens}};
    out["timings"] = {{"prefill_ms", r.timings.prefill_ms}, {"decode_ms", r.timings.decode_ms},
                      {"draft_ms", r.timings.draft_ms}, {"decode_tokens", r.timings.decode_tokens}};
    std::printf("%s\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    std::printf("\n");
  }
  return 0;
}

}  // namespace

// Errors (qwen35::Error) are reported by main() as "qwen35 generate: message", exit status 1.
int cmd_generate(int argc, char** argv) { return run_generate(argc, argv); }

}  // namespace qwen35::app
