// Constrained decoding end to end on the tiny model, whose random weights make a hostile
// generator: unconstrained it writes gibberish, so every answer that parses and validates below
// is the constraint's doing. Also: speculation (PLD, MTP) and sampling give the plain output,
// thinking stays free, and bad formats are refused before anything runs.
#include <gtest/gtest.h>

#include <cmath>

#include <nlohmann/json.hpp>

#include "runtime/engine_impl.h"
#include "runtime/engine_internal.h"
#include "runtime/output_constraint.h"
#include "runtime_harness.h"
#include "server/openai/tool_calls.h"

namespace qwen35::test {
namespace {

using json = nlohmann::ordered_json;

const char* kPersonSchema = R"({"type": "object", "properties": {
    "name": {"type": "string", "maxLength": 12},
    "age": {"type": "integer", "minimum": 0, "maximum": 120},
    "tags": {"type": "array", "items": {"enum": ["a", "b", "c"]}, "maxItems": 3},
    "email": {"type": "string", "format": "email"}},
  "required": ["name", "age"], "additionalProperties": false})";

// The checks a JSON Schema validator would make for kPersonSchema, written out.
void expect_person(const std::string& text) {
  json v;
  try {
    v = json::parse(text);
  } catch (const std::exception& e) {
    FAIL() << "not JSON: " << text;
  }
  ASSERT_TRUE(v.is_object()) << text;
  ASSERT_TRUE(v.contains("name") && v["name"].is_string()) << text;
  EXPECT_LE(v["name"].get<std::string>().size(), 12u * 4) << text;
  ASSERT_TRUE(v.contains("age") && v["age"].is_number_integer()) << text;
  EXPECT_GE(v["age"].get<int64_t>(), 0);
  EXPECT_LE(v["age"].get<int64_t>(), 120);
  for (auto it = v.begin(); it != v.end(); ++it)
    EXPECT_TRUE(it.key() == "name" || it.key() == "age" || it.key() == "tags" || it.key() == "email") << text;
  if (v.contains("tags")) {
    ASSERT_TRUE(v["tags"].is_array());
    EXPECT_LE(v["tags"].size(), 3u);
    for (const json& t : v["tags"]) EXPECT_TRUE(t == "a" || t == "b" || t == "c") << text;
  }
  if (v.contains("email")) {
    EXPECT_NE(v["email"].get<std::string>().find('@'), std::string::npos);
  }
}

ChatRequest ask(bool thinking) {
  ChatRequest r;
  r.messages.push_back(ChatMessage::Text("user", "Describe a person as JSON."));
  r.enable_thinking = thinking;
  return r;
}

SamplingParams constrained(OutputFormat::Kind kind, float temperature, SpecMode spec = SpecMode::kOff) {
  SamplingParams p;
  p.temperature = temperature;
  p.seed = 1234;
  p.max_tokens = 400;
  p.speculative.mode = spec;
  p.format.kind = kind;
  if (kind == OutputFormat::Kind::kJsonSchema) p.format.schema = kPersonSchema;
  return p;
}

GenerationResult run(const ChatRequest& r, const SamplingParams& p) {
  auto s = tiny_engine().new_session();
  Status st;
  GenerationResult res = s->chat(r, p, nullptr, &st);
  EXPECT_TRUE(st.ok()) << st.message;
  return res;
}

TEST(OutputFormat, UnconstrainedTinyModelWritesNoJson) {
  // The premise: without a format the answer is not the JSON asked for.
  SamplingParams p = constrained(OutputFormat::Kind::kNone, 0);
  p.max_tokens = 40;
  const GenerationResult r = run(ask(false), p);
  EXPECT_FALSE(json::accept(r.content)) << r.content;
}

TEST(OutputFormat, JsonSchemaAnswersValidateGreedyAndSampled) {
  for (float temperature : {0.0f, 1.0f, 1.5f}) {
    for (uint64_t seed : {1u, 2u, 3u}) {
      SamplingParams p = constrained(OutputFormat::Kind::kJsonSchema, temperature);
      p.seed = seed;
      const GenerationResult r = run(ask(false), p);
      SCOPED_TRACE(r.content);
      EXPECT_EQ(r.stop_reason, StopReason::kEos);  // the grammar ended, so the stop token came
      expect_person(r.content);
      if (temperature == 0) break;
    }
  }
}

TEST(OutputFormat, JsonObjectAndGbnf) {
  const GenerationResult obj = run(ask(false), constrained(OutputFormat::Kind::kJsonObject, 1.0f));
  if (obj.stop_reason == StopReason::kEos) {
    EXPECT_TRUE(json::accept(obj.content)) << obj.content;
    EXPECT_EQ(obj.content.front(), '{');
  } else {  // any object may run long: what was written is a prefix of one
    EXPECT_EQ(obj.stop_reason, StopReason::kMaxTokens);
    EXPECT_EQ(obj.content.front(), '{');
  }
  SamplingParams g = constrained(OutputFormat::Kind::kGrammar, 1.0f);
  g.format.grammar = "root ::= (\"yes\" | \"no\") \", \" [0-9]{1,3} \" times\"";
  const GenerationResult r = run(ask(false), g);
  EXPECT_EQ(r.stop_reason, StopReason::kEos);
  EXPECT_TRUE(r.content.rfind("yes, ", 0) == 0 || r.content.rfind("no, ", 0) == 0) << r.content;
  EXPECT_EQ(r.content.substr(r.content.size() - 6), " times") << r.content;
}

TEST(OutputFormat, ThinkingStaysFreeAndTheAnswerIsConstrained) {
  SamplingParams p = constrained(OutputFormat::Kind::kJsonSchema, 1.0f);
  p.reasoning_budget = 12;  // the budget still closes the thought
  const GenerationResult r = run(ask(true), p);
  EXPECT_GT(r.reasoning_tokens, 0);
  EXPECT_FALSE(json::accept(r.reasoning));
  EXPECT_EQ(r.stop_reason, StopReason::kEos);
  expect_person(r.content);
}

TEST(OutputFormat, SpeculationGivesThePlainOutput) {
  for (float temperature : {0.0f, 0.8f}) {
    const GenerationResult plain = run(ask(false), constrained(OutputFormat::Kind::kJsonSchema, temperature, SpecMode::kOff));
    expect_person(plain.content);
    for (SpecMode spec : {SpecMode::kPld, SpecMode::kMtp, SpecMode::kAuto}) {
      const GenerationResult r = run(ask(false), constrained(OutputFormat::Kind::kJsonSchema, temperature, spec));
      EXPECT_EQ(r.tokens, plain.tokens) << spec_mode_name(spec) << " at temperature " << temperature;
    }
  }
}

// Continuous batching: constrained generations stepped together give their solo outputs.
TEST(OutputFormat, BatchedEqualsSolo) {
  std::vector<SamplingParams> ps;
  for (float temperature : {0.0f, 1.0f, 1.2f}) ps.push_back(constrained(OutputFormat::Kind::kJsonSchema, temperature, SpecMode::kAuto));
  ps.push_back(constrained(OutputFormat::Kind::kNone, 1.0f));
  ps.back().max_tokens = 30;
  std::vector<GenerationResult> solo;
  for (const SamplingParams& p : ps) solo.push_back(run(ask(false), p));
  std::vector<std::unique_ptr<Session>> sessions;
  std::vector<std::unique_ptr<Generation>> gens;
  for (const SamplingParams& p : ps) {
    sessions.push_back(tiny_engine().new_session());
    Status st;
    gens.push_back(sessions.back()->start_chat(ask(false), p, nullptr, &st));
    ASSERT_TRUE(gens.back()) << st.message;
  }
  GenerationBatch batch(tiny_engine());
  std::vector<bool> running(gens.size(), true);
  for (;;) {
    std::vector<Generation*> round;
    std::vector<size_t> index;
    for (size_t i = 0; i < gens.size(); ++i) {
      if (running[i]) {
        round.push_back(gens[i].get());
        index.push_back(i);
      }
    }
    if (round.empty()) break;
    std::vector<GenerationBatch::Outcome> out;
    batch.step(round, out);
    for (size_t j = 0; j < round.size(); ++j) {
      ASSERT_FALSE(out[j].error);
      running[index[j]] = out[j].more;
    }
  }
  for (size_t i = 0; i < gens.size(); ++i) {
    EXPECT_EQ(gens[i]->result().tokens, solo[i].tokens) << "request " << i;
    if (i < 3) expect_person(gens[i]->result().content);
  }
}

TEST(OutputFormat, RequiredToolCallsParseAndFitTheirSchemas) {
  const json tools = json::parse(R"([
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
      "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1, "maximum": 7},
                     "unit": {"type": "string", "enum": ["c", "f"]}},
      "required": ["city", "days"]}}},
    {"type": "function", "function": {"name": "noop", "parameters": {"type": "object", "properties": {}}}}])");
  for (const std::string only : {"", "get_weather"}) {
    for (uint64_t seed : {5u, 6u}) {
      ChatRequest r = ask(false);
      r.tools_json = tools.dump();
      SamplingParams p = constrained(OutputFormat::Kind::kToolCalls, 1.0f);
      p.seed = seed;
      p.format.tools_json = tools.dump();
      p.format.tool_name = only;
      p.format.parallel = false;
      const GenerationResult res = run(r, p);
      SCOPED_TRACE(res.content);
      if (res.stop_reason != StopReason::kEos) {  // a raw city name may run to max_tokens
        EXPECT_EQ(res.stop_reason, StopReason::kMaxTokens);
        continue;
      }
      const server::ToolCallSplit split = server::parse_tool_calls(res.content, tools);
      ASSERT_EQ(split.calls.size(), 1u);
      const server::ParsedToolCall& c = split.calls[0];
      if (!only.empty()) {
        EXPECT_EQ(c.name, only);
      }
      const json args = json::parse(c.arguments_json);
      if (c.name == "get_weather") {
        ASSERT_TRUE(args.contains("city") && args["city"].is_string());
        ASSERT_TRUE(args.contains("days") && args["days"].is_number_integer());
        EXPECT_GE(args["days"].get<int>(), 1);
        EXPECT_LE(args["days"].get<int>(), 7);
        if (args.contains("unit")) {
          EXPECT_TRUE(args["unit"] == "c" || args["unit"] == "f");
        }
      } else {
        EXPECT_EQ(c.name, "noop");
        EXPECT_TRUE(args.empty());
      }
    }
  }
}

// tool_choice auto: the answer is free until the model writes <tool_call>, then the call is
// constrained; inside a thought only the stop tokens are refused.
TEST(OutputFormat, LazyToolCallsWaitForTheTrigger) {
  const EngineImpl& e = impl_of(tiny_engine());
  OutputFormat f;
  f.kind = OutputFormat::Kind::kToolCalls;
  f.tools_json = R"([{"type": "function", "function": {"name": "ping", "parameters": {"type": "object", "properties": {}}}}])";
  f.lazy = true;
  ASSERT_TRUE(tiny_engine().compile_output_format(&f).ok());
  const int64_t V = e.text_config().vocab_size;
  const int32_t hello = tiny_engine().tokenize("hello")[0], newline = tiny_engine().tokenize("\n")[0];
  const int32_t call = e.tokenizer->token_to_id("<tool_call>").value();
  const int32_t eos = e.eos_ids[0];
  OutputConstraint c(e, f, /*starts_in_thought=*/true, /*split_reasoning=*/true);
  std::vector<float> row(size_t(V), 0.0f);
  c.mask(row.data(), V);  // in the thought: only the stop tokens go
  EXPECT_TRUE(std::isinf(row[size_t(eos)]));
  EXPECT_EQ(row[size_t(hello)], 0.0f);
  c.observe(hello);
  c.observe(e.think_end_id);
  std::fill(row.begin(), row.end(), 0.0f);
  c.mask(row.data(), V);  // the answer, before any call: free
  EXPECT_EQ(row[size_t(eos)], 0.0f);
  EXPECT_EQ(row[size_t(hello)], 0.0f);
  c.observe(hello);
  c.observe(call);
  std::fill(row.begin(), row.end(), 0.0f);
  c.mask(row.data(), V);  // inside the call: its format only
  EXPECT_TRUE(std::isinf(row[size_t(eos)]));
  EXPECT_TRUE(std::isinf(row[size_t(hello)]));
  EXPECT_EQ(row[size_t(newline)], 0.0f);
  for (const char* piece : {"\n", "<function=", "ping>\n", "</function>\n</tool_call>"})
    for (int32_t t : tiny_engine().tokenize(piece)) c.observe(t);
  std::fill(row.begin(), row.end(), 0.0f);
  c.mask(row.data(), V);  // the call is complete: the stop token or another call
  EXPECT_EQ(row[size_t(eos)], 0.0f);
  EXPECT_EQ(row[size_t(newline)], 0.0f);
  EXPECT_TRUE(std::isinf(row[size_t(hello)]));
}

TEST(OutputFormat, RawCompletionsAreConstrainedToo) {
  auto s = tiny_engine().new_session();
  Status st;
  SamplingParams p = constrained(OutputFormat::Kind::kJsonSchema, 1.0f);
  const GenerationResult r = s->complete(tiny_engine().tokenize("A person: "), p, nullptr, &st);
  ASSERT_TRUE(st.ok()) << st.message;
  EXPECT_EQ(r.stop_reason, StopReason::kEos);
  expect_person(r.content);
}

TEST(OutputFormat, BadFormatsAreRefusedBeforeRunning) {
  OutputFormat f;
  f.kind = OutputFormat::Kind::kJsonSchema;
  f.schema = R"({"type": "object", "properties": {"x": {"type": "integer", "multipleOf": 3}}})";
  Status st = tiny_engine().compile_output_format(&f);
  EXPECT_EQ(st.code, StatusCode::kInvalidArgument);
  EXPECT_NE(st.message.find("'multipleOf' at #/properties/x"), std::string::npos) << st.message;
  f.strict = false;
  EXPECT_TRUE(tiny_engine().compile_output_format(&f).ok());
  EXPECT_TRUE(f.compiled);
  // Starting a generation compiles an uncompiled format, with the same error.
  SamplingParams p = constrained(OutputFormat::Kind::kGrammar, 0);
  p.format.grammar = "root ::= x";
  auto s = tiny_engine().new_session();
  auto g = s->start_chat(ask(false), p, nullptr, &st);
  EXPECT_FALSE(g);
  EXPECT_EQ(st.code, StatusCode::kInvalidArgument);
  EXPECT_NE(st.message.find("'x'"), std::string::npos) << st.message;
}

}  // namespace
}  // namespace qwen35::test
